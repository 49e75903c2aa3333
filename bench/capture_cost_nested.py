#!/usr/bin/env python3
"""What the capture adds to the spans of small ops and to the gaps between them, op by op: Python
loops of one op each, recorded once under Kineto alone (shapes and memory events) and once under
the whole capture (Kineto and the execution-trace observer, as scripts/capture_fleet_samples.py
records), alternated over rounds with an unprofiled pass. For each op: how many ops the observer
recorded per call (the op and those it calls), an unprofiled call, the median top-level span and
gap under each, what the replay takes off that gap at this host's figures (`mimic calibrate
--only capture`: two boundaries, the op's input tensors, other input values and ranged integer
tensors; docs/replay.md, Host gaps), and what the replay then waits: the host's own time between
two calls (a few tenths of a microsecond of Python loop, more where Python wraps a number in a
tensor) plus whatever the figures miss.

The ops differ in one thing at a time: `p.add_(t)` of a float 0-dim tensor calls nothing, of a
long one calls aten::to -> _to_copy -> empty_strided + copy_ (what `p.add_(1)` and
`p.mul_(0.9)` on a float tensor do, as optimizers' loops are full of); `aten::stack` calls
`aten::cat`; `empty_strided` of lists of 2 and 16 items differs in its input values alone.

Usage: OMP_NUM_THREADS=1 python3 bench/capture_cost_nested.py [--rounds 3]
Environment: MIMIC (default build/default/cli/mimic), the binary that measures the figures."""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402  (sets the observer's environment first)
import torch  # noqa: E402

CALLS = 16  # calls per loop pass; 20 passes are recorded


def bodies() -> dict:
    ps = [torch.randn(128, 128) for _ in range(CALLS)]
    qs = [torch.randn(128, 128) for _ in range(CALLS)]
    xs = [torch.randn(64) for _ in range(4)]
    half, one = torch.tensor(0.5), torch.tensor(1)
    return {
        "p.add_(q)": lambda: [p.add_(q) for p, q in zip(ps, qs)],
        "p.add_(float 0-dim)": lambda: [p.add_(half) for p in ps],
        "p.add_(long 0-dim)": lambda: [p.add_(one) for p in ps],
        "p.add_(1)": lambda: [p.add_(1) for p in ps],
        "p.mul_(0.9)": lambda: [p.mul_(0.9) for p in ps],
        "cat of 4": lambda: [torch.cat(xs) for _ in ps],
        "stack of 4": lambda: [torch.stack(xs) for _ in ps],
        "empty_strided, 2-item lists": lambda: [torch.empty_strided((128, 128), (128, 1)) for _ in ps],
        "empty_strided, 16-item lists": lambda: [torch.empty_strided([1] * 16, [1] * 16) for _ in ps],
    }


def spans_and_gaps(events: list[dict]) -> tuple[float, float]:
    """The median span of the top-level aten ops and the median gap between them (us)."""
    tops = cfs.top_level_ops(events)
    gaps = [b["ts"] - a["ts"] - a["dur"] for a, b in zip(tops, tops[1:])]
    return statistics.median(e["dur"] for e in tops), statistics.median(gaps)


def count_inputs(node: dict) -> tuple[int, int, int]:
    """The tensors, the other values and the ranged tensors among an ET node's inputs, list items
    each counted."""
    tensors = values = 0

    def add(value, type_name: str) -> None:
        nonlocal tensors, values
        if type_name.startswith("Tensor"):
            tensors += 1
        elif isinstance(value, list):
            inner = type_name[type_name.find("[") + 1:-1] if "[" in type_name else ""
            kinds = split_types(inner)
            for i, v in enumerate(value):
                add(v, kinds[min(i, len(kinds) - 1)] if kinds else "")
        else:
            values += 1

    for v, t in zip(node["inputs"]["values"], node["inputs"]["types"]):
        add(v, t)
    ranges = next((a["value"] for a in node["attrs"] if a["name"] == "tensor_range"), "")
    return tensors, values, len(json.loads(ranges)) if ranges else 0


def split_types(s: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, c in enumerate(s):
        depth += c in "[(<"
        depth -= c in "])>"
        if c == "," and depth == 0:
            out.append(s[start:i])
            start = i + 1
    if s:
        out.append(s[start:])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    figures = cfs.measure_capture_cost(torch.get_num_threads())  # as a capture measures them
    if figures is None:
        sys.exit("capture_cost_nested: no figures (build mimic first)")
    keys = ("boundary_us", "input_tensor_us", "input_value_us", "range_tensor_us")
    print("figures: " + ", ".join(f"{k} {figures.get(k, 0):.3f}" for k in keys))
    tmp = tempfile.mkdtemp()
    rows: dict[str, list] = {}
    for _ in range(args.rounds):
        for name, body in bodies().items():
            for _ in range(20):
                body()
            passes = []
            for _ in range(50):
                start = time.perf_counter()
                body()
                passes.append((time.perf_counter() - start) * 1e6 / CALLS)
            loop = lambda: [body() for _ in range(20)]  # noqa: E731
            kineto = spans_and_gaps(cfs.host_events_under_capture(loop, tmp, "kineto"))
            whole = spans_and_gaps(cfs.host_events_under_capture(loop, tmp))
            with open(os.path.join(tmp, "et.json")) as f:
                nodes = [n for n in json.load(f)["nodes"] if n["name"].startswith("aten::")]
            top = min(nodes, key=lambda n: n["id"])
            counts = (2, *count_inputs(top))
            priced = sum(n * figures.get(k, 0) for n, k in zip(counts, keys))
            rows.setdefault(name, []).append((*kineto, *whole, len(nodes) / (20 * CALLS), priced,
                                              statistics.median(passes)))
    print("\n| op | ops recorded per call | unprofiled call us | span, Kineto alone -> whole capture, "
          "us | gap, Kineto alone -> whole capture, us | priced | gap less priced |")
    print("|---|---:|---:|---|---|---:|---:|")
    for name, r in rows.items():
        med = [statistics.median(x[i] for x in r) for i in range(7)]
        print(f"| {name} | {med[4]:.0f} | {med[6]:.1f} | {med[0]:.1f} -> {med[2]:.1f} | "
              f"{med[1]:.1f} -> {med[3]:.1f} | {med[5]:.1f} | {med[3] - med[5]:+.1f} |")


if __name__ == "__main__":
    main()
