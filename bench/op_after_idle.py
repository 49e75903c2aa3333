#!/usr/bin/env python3
"""How much slower an op runs right after the calling thread was busy elsewhere for G us than
back to back (docs/benchmarks.md section 5, "Unseen models on a quiet machine"): calibrate times
ops back to back, while an original and a replay with --host-gaps recorded run them after gaps.

Run: python3 bench/op_after_idle.py [--threads 2] [--calls 300]
Prints the median microseconds per call for each op and gap.
"""

import argparse
import statistics
import time

import torch


def spin(us):
    end = time.perf_counter_ns() + us * 1000
    while time.perf_counter_ns() < end:
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--calls", type=int, default=300)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    x, y, out = torch.randn(1 << 20), torch.randn(1 << 20), torch.empty(1 << 20)
    ops = {
        "add 2^20 floats": lambda: torch.add(x, y, out=out),
        "add 4096 floats": lambda: torch.add(x[:4096], y[:4096], out=out[:4096]),
    }
    print(f"threads {a.threads}; median us per call after a spin of G us")
    for name, op in ops.items():
        row = []
        for gap in (0, 5, 20, 50, 100, 300, 1000, 3000):
            times = []
            for _ in range(a.calls):
                spin(gap)
                t0 = time.perf_counter_ns()
                op()
                times.append((time.perf_counter_ns() - t0) / 1e3)
            row.append(f"G={gap}: {statistics.median(times[20:]):.1f}")
        print(f"{name}: " + ", ".join(row))


if __name__ == "__main__":
    main()
