#!/usr/bin/env python3
"""Where the capture's own cost lands and what it grows with (docs/replay.md, Host gaps): Python
loops of small and large ops in turn, recorded as the capture scripts record (Kineto with shapes
and memory, the execution-trace observer with integer ranges on). Prints, per op, the median
gap before and after it, and the observer's cost per MiB of integer inputs saved for indices
no call read before against the same indices again. Nothing here is used by Mimic itself:
`mimic calibrate` measures the figures it keeps on its own C++ loops (replay::MeasureCaptureCost).

Usage: python3 bench/capture_cost_loops.py [--threads 2]"""
import argparse
import json
import os
import statistics
import tempfile

import torch
from torch import profiler


def record(body, save_ops: str = "") -> tuple[list[dict], str]:
    """Runs body() once under the capture; returns the outermost aten spans in start order."""
    tmp = tempfile.mkdtemp()
    kineto, et = os.path.join(tmp, "k.json"), os.path.join(tmp, "e.json")
    os.environ["ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_RANGE"] = "1"
    os.environ["ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA"] = save_ops
    os.makedirs(os.path.join(tmp, "e_resources"))
    observer = profiler.ExecutionTraceObserver().register_callback(et)
    with profiler.profile(activities=[profiler.ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                          execution_trace_observer=observer,
                          schedule=profiler.schedule(wait=0, warmup=1, active=1, repeat=1),
                          on_trace_ready=lambda p: p.export_chrome_trace(kineto)) as prof:
        for _ in range(2):
            body()
            prof.step()
    events = sorted((e for e in json.load(open(kineto))["traceEvents"]
                     if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"].startswith("aten::")),
                    key=lambda e: (e["ts"], -e["dur"]))
    outer, end = [], -1.0
    for e in events:
        if e["ts"] >= end:
            outer.append(e)
            end = e["ts"] + e["dur"]
    return outer, tmp


def gaps_around(names: list[str], calls, rounds: int = 100) -> None:
    """The median gap before and after each of `calls` (in turn, `rounds` times)."""
    outer, _ = record(lambda: [f() for _ in range(rounds) for f in calls])
    before = {n: [] for n in names}
    after = {n: [] for n in names}
    for i in range(1, len(outer)):
        gap = outer[i]["ts"] - outer[i - 1]["ts"] - outer[i - 1]["dur"]
        before[names[i % len(names)]].append(gap)
        after[names[(i - 1) % len(names)]].append(gap)
    for n in names:
        print(f"  {n:28s} gap before {statistics.median(before[n]):8.1f} us, after {statistics.median(after[n]):8.1f} us")


def saved_cost(fresh: bool) -> float:
    """us per MiB the observer adds to the gap before aten::sum when it saves its int64 input."""
    sizes = [100000, 1000000, 2000000]
    inputs = [[torch.randint(0, 64, (n,)) for n in sizes] for _ in range(5 if fresh else 1)]
    def slope(save: bool) -> float:
        body = lambda: [torch.sum(inputs[r % len(inputs)][j]) for r in range(5) for j in range(3)]
        outer, _ = record(body, "aten::sum" if save else "")
        per = {n: [] for n in sizes}
        for i in range(1, len(outer)):
            per[sizes[i % 3]].append(outer[i]["ts"] - outer[i - 1]["ts"] - outer[i - 1]["dur"])
        return (statistics.median(per[sizes[2]]) - statistics.median(per[sizes[0]])) / (sizes[2] - sizes[0])
    return (slope(True) - slope(False)) / 8 * 2 ** 20


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--threads", type=int, default=2)
    torch.set_num_threads(p.parse_args().threads)
    one, many = [torch.ones(1)], [torch.ones(1) for _ in range(128)]
    print("128-tensor ops between one-tensor cats:")
    gaps_around(["cat(1)", "cat(128)", "cat(1) after cat", "stack(128)", "cat(1) after stack",
                 "_foreach_add_(128)", "cat(1) after foreach"],
                [lambda: torch.cat(one), lambda: torch.cat(many), lambda: torch.cat(one), lambda: torch.stack(many),
                 lambda: torch.cat(one), lambda: torch._foreach_add_(many, 1.0), lambda: torch.cat(one)])
    flat, deep = torch.ones(1), torch.ones([1] * 24)
    print("the same op on a 1- and a 24-dimensional tensor:")
    gaps_around(["add(1-d)", "add(24-d)"], [lambda: torch.add(flat, flat), lambda: torch.add(deep, deep)])
    print("saving integer inputs (aten::sum of 1e5-2e6 int64 indices):")
    print(f"  new indices every call  {saved_cost(True):8.1f} us per MiB")
    print(f"  the same indices again  {saved_cost(False):8.1f} us per MiB")


if __name__ == "__main__":
    main()
