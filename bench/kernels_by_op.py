#!/usr/bin/env python3
"""The device kernels each host op of a Kineto trace launched, with the launch each got (grid,
block) and the time each took: what a kernel model has to explain. A kernel belongs to the op
whose span on its thread holds the runtime or driver call that launched it (matched by
correlation id); ops of one name and input shapes are grouped, the execution-trace observer's
integer-range probes left out (gpu_fidelity.observer_probes: the rule Mimic's own Kineto reader
applies).

usage: bench/kernels_by_op.py KINETO_TRACE OP[,OP...] [--top N] [--kernels K]
  e.g. bench/kernels_by_op.py fleet_samples/h200/gpt2.kineto.json.gz aten::sum,aten::layer_norm
"""

import argparse
import bisect
import collections

from gpu_fidelity import DEVICE_CATEGORIES, LAUNCH_CATEGORIES, load, observer_probes


def launches_by_thread(events):
    """Each thread's launch calls, (start, correlation), sorted, and the device work by
    correlation, the observer's probes left out."""
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
    probes = observer_probes(events, launches)
    device = {e["args"].get("correlation"): e for e in events
              if e.get("cat") in DEVICE_CATEGORIES and e["args"].get("correlation") not in probes}
    calls = collections.defaultdict(list)
    for c, e in launches.items():
        if c in device:
            calls[e["tid"]].append((e["ts"], c))
    for v in calls.values():
        v.sort()
    return calls, device


def kernels_under(op, calls, device):
    thread = calls[op["tid"]]
    i = bisect.bisect_left(thread, (op["ts"], -1))
    while i < len(thread) and thread[i][0] <= op["ts"] + op["dur"]:
        yield device[thread[i][1]]
        i += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("ops", help="op names, comma-separated (exact: aten::sum)")
    ap.add_argument("--top", type=int, default=12, help="groups to print, most kernel time first")
    ap.add_argument("--kernels", type=int, default=3, help="kernels to print per group")
    a = ap.parse_args()
    names = set(a.ops.split(","))
    events = load(a.trace)["traceEvents"]
    calls, device = launches_by_thread(events)
    groups = collections.defaultdict(lambda: [0, 0.0, collections.Counter()])
    for e in events:
        if e.get("cat") != "cpu_op" or e["name"] not in names:
            continue
        g = groups[(e["name"], str(e["args"].get("Input Dims")), str(e["args"].get("Input type")))]
        g[0] += 1
        for k in kernels_under(e, calls, device):
            g[1] += k["dur"]
            g[2][(k["name"][:100], str(k["args"].get("grid")), str(k["args"].get("block")))] += k["dur"]
    for (name, dims, types), (n, us, kernels) in sorted(groups.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print(f"{name} x{n}: {us / n:.1f} us of kernels each; inputs {dims} {types}")
        for (kernel, grid, block), kus in kernels.most_common(a.kernels):
            print(f"    {kus / n:9.1f} us  grid {grid} block {block}  {kernel}")


if __name__ == "__main__":
    main()
