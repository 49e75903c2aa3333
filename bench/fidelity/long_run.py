#!/usr/bin/env python3
"""How a zoo model's original settles over many steps in a fresh process: the median step time
and page faults per step (getrusage minor faults) by stretch of steps. A capture times 20 steps
after 5 warm-up steps; this says whether those steps are the process's steady state, and
whether its heap (glibc's thresholds follow the process's history) ever stops faulting.

Run: OMP_NUM_THREADS=2 python3 bench/fidelity/long_run.py MODEL [--steps 400] [--threads 2]
"""
import argparse
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402  (imports capture_fleet_samples, which sets the capture's environment)

import torch  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=sorted(zoo.ZOO))
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    step = zoo.ZOO[a.model]().step
    rows = []
    for _ in range(a.steps):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        step()
        rows.append((time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults))
    print(f"| {a.model}: steps | median ms | median page faults per step |")
    print("|---|---:|---:|")
    for lo, hi in ((0, 5), (5, 25), (25, 100), (100, 200), (200, 400), (400, a.steps)):
        part = rows[lo:hi]
        if not part:
            break
        print(f"| {lo}-{lo + len(part)} | {1000 * statistics.median(r[0] for r in part):.2f} | "
              f"{statistics.median(r[1] for r in part):.0f} |")


if __name__ == "__main__":
    main()
