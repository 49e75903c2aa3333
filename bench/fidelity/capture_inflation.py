#!/usr/bin/env python3
"""How much a zoo model's capture inflates its step, split into ops and host gaps: the
unprofiled step, then one step under the capture's host timeline (Kineto, host activity only),
one under Kineto alone (shapes and memory events) and one under the whole capture (Kineto and
the execution-trace observer, as scripts/capture_fleet_samples.py records), each cut into the
top-level ops' spans and the host gaps between them; three rounds, alternated. Then the op names
whose spans the observer inflates most.

The replay takes the capture's cost off the recorded gaps at calibrate's price (docs/replay.md,
Host gaps); where this shows the capture's gaps far above that price and the unprofiled step
leaving no room for them, the gaps hold capture cost the price misses (docs/benchmarks.md §2).

Usage: OMP_NUM_THREADS=2 python3 bench/fidelity/capture_inflation.py MODEL [--rounds 3]"""
import argparse
import collections
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)
import capture_fleet_samples as cfs  # noqa: E402  (sets the observer's environment first)
import torch  # noqa: E402
import zoo  # noqa: E402


def ops_and_gaps(events: list[dict]) -> tuple[float, float]:
    """The top-level aten ops' summed spans and the rest of their extent (ms)."""
    tops = cfs.top_level_ops(events)
    ops = sum(e["dur"] for e in tops)
    extent = tops[-1]["ts"] + tops[-1]["dur"] - tops[0]["ts"]
    return ops / 1e3, (extent - ops) / 1e3


def spans_by_name(events: list[dict]) -> dict[str, list[float]]:
    out = collections.defaultdict(list)
    for e in events:
        if e["cat"] == "cpu_op":
            out[e["name"]].append(e["dur"])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("model", choices=sorted(zoo.ZOO))
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    torch.manual_seed(cfs.SEED)
    step = zoo.ZOO[args.model]().step
    for _ in range(10):
        step()
    tmp = tempfile.mkdtemp()
    print("| round | unprofiled step ms | host timeline: ops + gaps ms | Kineto alone: ops + gaps ms "
          "| whole capture: ops + gaps ms |")
    print("|---|---:|---|---|---|")
    for r in range(1, args.rounds + 1):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            step()
            times.append((time.perf_counter() - start) * 1e3)
        timeline = cfs.host_events_under_capture(step, tmp, "host_timeline")
        kineto = cfs.host_events_under_capture(step, tmp, "kineto")
        capture = cfs.host_events_under_capture(step, tmp)
        cells = [f"{a:.2f} + {b:.2f}" for a, b in map(ops_and_gaps, (timeline, kineto, capture))]
        print(f"| {r} | {statistics.median(times):.2f} | {' | '.join(cells)} |", flush=True)
    before, after = spans_by_name(kineto), spans_by_name(capture)
    rows = [(sum(after[n]) - sum(before[n]), n, len(after[n]), statistics.median(before[n]),
             statistics.median(after[n])) for n in after if len(before.get(n, [])) == len(after[n])]
    print("\n| op | calls | added by the observer, ms | median span, Kineto alone -> capture, us |")
    print("|---|---:|---:|---|")
    for added, name, calls, a, b in sorted(rows, reverse=True)[:8]:
        print(f"| {name} | {calls} | {added / 1e3:.2f} | {a:.1f} -> {b:.1f} |")


if __name__ == "__main__":
    main()
