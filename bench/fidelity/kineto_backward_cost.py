#!/usr/bin/env python3
"""What Kineto alone (host activity only, as the capture's host timeline records) costs per event
boundary in a forward and in a backward: a chain of 300 tanh(x * 1.01 + 0.1) on an 8 x 8 tensor
requiring grad, its forward (recording the graph) and its backward each timed with the profiler
and without, fifteen rounds in turn, the difference of the medians over twice the events the
profiler recorded. The autograd engine records each node twice (its evaluate_function span and
the node's own) around the ops it runs; `mimic calibrate --only capture` measures the backward's
figure (capture_timeline_backward_boundary_us) on a loop of its own in C++ (docs/replay.md).

Run: OMP_NUM_THREADS=1 python3 bench/fidelity/kineto_backward_cost.py
"""
import statistics
import time

import torch
from torch import profiler

NODES, ROUNDS = 300, 15


def graph(w: torch.Tensor) -> torch.Tensor:
    x = w
    for _ in range(NODES):
        x = torch.tanh(x * 1.01 + 0.1)
    return x.sum()


def timed(fn, prof: bool):
    """(ms, events recorded) of one call of fn, under Kineto or not."""
    if not prof:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3, 0
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU]) as p:
        t0 = time.perf_counter()
        fn()
        ms = (time.perf_counter() - t0) * 1e3
    return ms, len(p.events())


def main() -> None:
    torch.set_num_threads(1)
    w = torch.randn(8, 8, requires_grad=True)
    # Each pass's call, made afresh for each timing (the backward's graph built before it).
    passes = {"forward (graph recorded)": lambda: lambda: graph(w),
              "backward": lambda: (lambda y=graph(w): y.backward())}
    print("| pass | unprofiled ms | profiled ms | events | us a boundary |")
    print("|---|---:|---:|---:|---:|")
    for name, make in passes.items():
        plain, prof, events = [], [], 0
        for _ in range(ROUNDS + 1):  # round 0 warms both
            plain.append(timed(make(), False)[0])
            ms, events = timed(make(), True)
            prof.append(ms)
        plain, prof = plain[1:], prof[1:]
        d = statistics.median(prof) - statistics.median(plain)
        print(f"| {name} | {statistics.median(plain):.3f} | {statistics.median(prof):.3f} | {events} "
              f"| {d * 1e3 / (2 * events):.3f} |")


if __name__ == "__main__":
    main()
