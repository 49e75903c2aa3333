#!/usr/bin/env python3
"""How far two calibrations of one host differ (docs/benchmarks.md section 5).

Each side is one platform JSON or several, comma-separated, whose per-point times are taken
by their median. For every point both sides measured (GEMM, convolution, RNN and attention
efficiency points by shape, dtype and pass; bandwidth points by kind, bytes, dtype and cold),
the ratio of B's time to A's; printed per table and size of point (under 50 us, to 1 ms,
above), as the median and the 10th and 90th percentiles.

  python3 bench/compare_platforms.py /tmp/c1.json /tmp/c2.json
  python3 bench/compare_platforms.py old1.json,old2.json new1.json,new2.json
"""
import collections
import json
import statistics
import sys

TABLES = ("gemm_efficiency", "conv_efficiency", "rnn_efficiency", "attention_efficiency")


def times(path):
    """Microseconds per point, keyed by what identifies the point."""
    with open(path) as f:
        p = json.load(f)
    out = {}
    for table in TABLES:
        for e in p.get(table, []):
            if e.get("time_us"):
                key = (table, e.get("m"), e.get("n"), e.get("k"), e.get("batch"), e.get("dtype"), e.get("pass"))
                out[key] = float(e["time_us"])
    for b in p.get("bandwidth", []):
        key = ("bandwidth", b["kind"], b["bytes"], b.get("dtype", ""), b.get("cold", False))
        out[key] = float(b["bytes"]) / b["bytes_per_s"] * 1e6
    return out


def side(arg):
    runs = [times(path) for path in arg.split(",")]
    common = set.intersection(*(set(r) for r in runs))
    return {k: statistics.median(r[k] for r in runs) for k in common}


def size(us):
    return "under 50 us" if us < 50 else "50 us - 1 ms" if us <= 1000 else "above 1 ms"


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    a, b = side(sys.argv[1]), side(sys.argv[2])
    groups = collections.defaultdict(list)
    for key in a.keys() & b.keys():
        groups[(key[0], size(a[key]))].append(b[key] / a[key])
    print("| table | points | size | median B/A | p10 | p90 |")
    print("|---|---:|---|---:|---:|---:|")
    for (table, sz), ratios in sorted(groups.items()):
        ratios.sort()
        print(f"| {table} | {len(ratios)} | {sz} | {statistics.median(ratios):.3f} | "
              f"{ratios[len(ratios) // 10]:.3f} | {ratios[9 * len(ratios) // 10]:.3f} |")


if __name__ == "__main__":
    main()
