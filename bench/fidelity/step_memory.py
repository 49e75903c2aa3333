#!/usr/bin/env python3
"""A zoo model's step memory peak as Kineto's CPU [memory] events give it without the
execution-trace observer: two profiler sessions of three steps each (after one warm-up step),
each step's most bytes allocated, what was allocated as it began and its peak above that (the
rule Mimic's Kineto reader applies, eg/src/kineto.cc, RecordStepMemory). Shows how the figure
depends on the session and the step (docs/benchmarks.md §2).

Usage: OMP_NUM_THREADS=2 python3 bench/fidelity/step_memory.py MODEL"""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)
import torch  # noqa: E402
from torch import profiler  # noqa: E402
import zoo  # noqa: E402


def main() -> None:
    torch.set_num_threads(2)
    w = zoo.ZOO[sys.argv[1]]()
    for _ in range(3):
        w.step()
    for session in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.json")
            with profiler.profile(activities=[profiler.ProfilerActivity.CPU], profile_memory=True,
                                  schedule=profiler.schedule(wait=0, warmup=1, active=3, repeat=1),
                                  on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
                for _ in range(4):
                    w.step()
                    prof.step()
            with open(path) as f:
                events = json.load(f)["traceEvents"]
        memory = sorted((e["ts"], e["args"]["Total Allocated"]) for e in events
                        if e.get("name") == "[memory]" and e["args"].get("Device Type", 0) == 0)
        steps = sorted((e for e in events if e.get("ph") == "X"
                        and e.get("name", "").startswith("ProfilerStep#")), key=lambda e: e["ts"])
        for s in steps:
            during = [t for ts, t in memory if s["ts"] <= ts <= s["ts"] + s["dur"]]
            before = [t for ts, t in memory if ts < s["ts"]]
            base = before[-1] if before else 0
            print(f"session {session} {s['name']}: most {max(during) / 1e6:.2f} MB, "
                  f"at its start {base / 1e6:.2f} MB, peak above it {(max(during) - base) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
