#!/usr/bin/env python3
"""How fast a GPU starts thread blocks: per kernel of the H200 captures, its SM cycles per block
(the kernel's time in cycles of the platform's boost clock over the blocks each SM ran), the
fastest first. A kernel of many small blocks that do little (a fill, a row gather) runs at the
rate its blocks start, not its bytes'. The model's `kBlockStartCycles` (model/src/op_models.cc,
docs/model.md) is the fewest any kernel of the fitting captures took; the held-out capture's
row gathers (the DLRM's sparse embedding-bag backward: one 32-thread block per looked-up row)
are then priced at it.

Reads the Kineto traces only (no GPU, no mimic).

  python3 bench/block_start_rate.py      # fit on GPT-2 and ResNet-50, judge on the DLRM
"""
import argparse
import json
import math
import os

from gpu_fidelity import load

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SAMPLES = os.path.join(ROOT, "fleet_samples", "h200")
GATHER = "vectorized_gather_kernel"


def kernels(sample, sms, mhz):
    """[(cycles a block per SM, blocks, us, name)] of every kernel with a recorded grid."""
    out = []
    for e in load(os.path.join(SAMPLES, f"{sample}.kineto.json.gz"))["traceEvents"]:
        grid = e.get("args", {}).get("grid")
        if e.get("cat") != "kernel" or not grid or e["dur"] <= 0:
            continue
        blocks = math.prod(grid)
        out.append((e["dur"] * mhz / math.ceil(blocks / sms), blocks, e["dur"], e["name"]))
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", default="gpt2,resnet50_b128,resnet50_b64")
    ap.add_argument("--judge", default="dlrm")
    ap.add_argument("--top", type=int, default=4)
    a = ap.parse_args()
    with open(os.path.join(ROOT, "platforms", "h200.json")) as f:
        p = json.load(f)
    sms, mhz = p["sm_count"], p["boost_clock_mhz"]
    print("| capture | cycles a block per SM | blocks | kernel us | kernel |")
    print("|---|---:|---:|---:|---|")
    fastest = math.inf
    for sample in a.fit.split(",") + [a.judge]:
        ks = kernels(sample, sms, mhz)
        if sample != a.judge:
            fastest = min(fastest, ks[0][0])
        for cycles, blocks, us, name in ks[:a.top]:
            print(f"| {sample} | {cycles:.0f} | {blocks} | {us:.1f} | `{name[:70]}` |")
    gathers = [k for k in kernels(a.judge, sms, mhz) if GATHER in k[3]]
    recorded = sum(us for _, _, us, _ in gathers)
    priced = sum(math.ceil(b / sms) * fastest / mhz for _, b, _, _ in gathers)
    print(f"\nfitted ({a.fit}): {fastest:.0f} cycles a block per SM; {a.judge}'s {len(gathers)} "
          f"row gathers priced {priced:.1f} us at it against {recorded:.1f} recorded "
          f"({100 * (priced - recorded) / recorded:+.1f} %)")


if __name__ == "__main__":
    main()
