#!/usr/bin/env python3
"""Host time in a captured step that lies outside every ATen op: the step's span in the Kineto
trace minus the union of its outermost cpu_op spans (Python, the autograd engine's own work, the
optimizer's Python loop). The replay issues only the ops, so it does not repeat this time.
Usage: python3 bench/host_gap.py WORK/NAME.kineto.json.gz... [--step N]  (default ProfilerStep#1)"""
import gzip
import json
import sys

args = sys.argv[1:]
step = "ProfilerStep#%s" % (args[args.index("--step") + 1] if "--step" in args else "1")
paths = [a for i, a in enumerate(args) if a != "--step" and (i == 0 or args[i - 1] != "--step")]
print("| trace | step ms | outside all ops, ms | share |")
print("|---|---:|---:|---:|")
for path in paths:
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    s = next(e for e in events if e.get("name") == step)
    lo, hi = s["ts"], s["ts"] + s["dur"]
    ops = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                 if e.get("cat") == "cpu_op" and e.get("tid") == s["tid"] and lo <= e["ts"] < hi)
    covered, end = 0.0, lo
    for a, b in ops:  # union of the op intervals
        a, b = max(a, end), min(b, hi)
        if b > a:
            covered += b - a
            end = b
    gap = (hi - lo) - covered
    print("| %s | %.2f | %.2f | %.0f %% |" % (path.split("/")[-1], (hi - lo) / 1e3, gap / 1e3, 100 * gap / (hi - lo)))
