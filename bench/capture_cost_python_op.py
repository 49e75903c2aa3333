#!/usr/bin/env python3
"""The capture's cost in the gap before an op issued from Python, against what calibrate's C++
loop prices for it: a Python loop of `a.add_(b, alpha=0.5)` (two 64x64 tensors), timed
unprofiled, under Kineto alone (shapes, memory) and under the whole capture (Kineto and the
execution-trace observer, as scripts/capture_fleet_samples.py records). The loop's own Python
time per call is the unprofiled time per call less the op's span under Kineto alone; the
capture's cost in the gap is the recorded gap less that (docs/benchmarks.md §2).

Usage: OMP_NUM_THREADS=2 python3 bench/capture_cost_python_op.py"""
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import capture_fleet_samples  # noqa: E402  (sets the observer's environment as the capture does)
import torch  # noqa: E402

torch.set_num_threads(2)
a, b = torch.randn(64, 64), torch.randn(64, 64)
N = 2000


def loop() -> None:
    for _ in range(N):
        a.add_(b, alpha=0.5)


def unprofiled() -> float:
    t0 = time.perf_counter()
    loop()
    return (time.perf_counter() - t0) / N * 1e6


tmp = tempfile.mkdtemp()


def profiled(et: bool) -> tuple[float, float]:
    """Median recorded gap between two calls and median span of a call (us)."""
    ev = sorted((e for e in capture_fleet_samples.host_events_under_capture(
                     loop, tmp, "capture" if et else "kineto")
                 if e["name"] == "aten::add_"), key=lambda e: e["ts"])
    gaps = [b["ts"] - a["ts"] - a["dur"] for a, b in zip(ev, ev[1:])]
    return statistics.median(gaps), statistics.median(e["dur"] for e in ev)


for _ in range(3):
    loop()
# The three measurements alternate within each round: this VM's speed moves between minutes,
# and a round whose parts ran at different speeds shows it (a negative Kineto-alone cost).
print("| round | unprofiled us/call | Kineto alone: gap, span | whole capture: gap, span | "
      "Python's own us/call | capture's cost in the gap us | Kineto alone's us |")
print("|---|---:|---|---|---:|---:|---:|")
for r in range(1, 6):
    tu = statistics.median(unprofiled() for _ in range(3))
    gk, sk = profiled(False)
    gf, sf = profiled(True)
    host = tu - sk
    print(f"| {r} | {tu:.2f} | {gk:.2f}, {sk:.2f} | {gf:.2f}, {sf:.2f} | {host:.2f} | {gf - host:.2f} | {gk - host:.2f} |")
