#!/usr/bin/env python3
"""Misaligned tensor-core GEMMs as the GPU ran them: cuBLAS's fallback kernels
(CUTLASS's `*tensorop*_align1`, one element a load) in the bytes their output tiles read per SM
cycle; the fit of the model's `kMisalignedLoadBytesPerSmCycle` (model/src/op_models.cc,
docs/model.md) on one trace and its error on another.

Reads the Kineto traces only (no GPU, no mimic). A kernel belongs to the mm/bmm/addmm/matmul
whose host span holds its launch (kernels_by_op.py's rule) and takes that op's recorded shapes:
batch x (m x k) . (k x n). Its tiles are the model's: 64 or 128 along m and along n, whichever
pads the dimension less (128 on a tie); each reads its rows of A and its columns of B through
all of k, in the operands' dtype (2 bytes for the bf16/fp16 kernels, else 4: TF32 reads fp32).

  python3 bench/misaligned_gemm_rate.py     # fit on the public A100 trace, judge on the H200 GPT-2
"""
import argparse
import json
import math
import os
import statistics

from gpu_fidelity import load
from kernels_by_op import kernels_under, launches_by_thread

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TRACES = {
    "sampled_rank0": (os.path.join(ROOT, "..", "shared", "traces", "hta-gpu-kineto",
                                   "sampled_rank0_kineto.json.gz"), "a100_80gb"),
    "h200_gpt2": (os.path.join(ROOT, "fleet_samples", "h200", "gpt2.kineto.json.gz"), "h200"),
}
GEMMS = ("aten::mm", "aten::bmm", "aten::addmm", "aten::matmul")


def gemm_shape(name, dims):
    """(batch, m, n, k) of a GEMM op's recorded input dims, else None."""
    d = [x for x in dims if x]
    if name == "aten::addmm" and len(d) >= 3:
        return 1, d[1][0], d[2][1], d[1][1]
    if name == "aten::addmm" or len(d) != 2:
        return None
    a, b = d
    if len(a) == 3 and len(b) == 2:  # matmul folds the batch into the rows
        return 1, a[0] * a[1], b[1], a[2]
    return (a[0] if len(a) == 3 else 1), a[-2], b[-1], a[-1]


def tile_edge(size):
    return 64 if math.ceil(size / 64) * 64 < math.ceil(size / 128) * 128 else 128


def tile_bytes(batch, m, n, k, itemsize):
    tm, tn = tile_edge(m), tile_edge(n)
    return batch * math.ceil(m / tm) * math.ceil(n / tn) * (tm + tn) * k * itemsize


def kernels(path):
    """[(bytes the tiles read, kernel us)] for each align1 tensor-core kernel of a GEMM op, once
    (a matmul and the mm under it hold the same kernel)."""
    events = load(path)["traceEvents"]
    calls, device = launches_by_thread(events)
    by_correlation = {}
    for e in events:
        if e.get("cat") != "cpu_op" or e["name"] not in GEMMS:
            continue
        ks = [k for k in kernels_under(e, calls, device)
              if "align1" in k["name"] and "tensorop" in k["name"]]
        shape = gemm_shape(e["name"], e["args"].get("Input Dims", []))
        if len(ks) != 1 or shape is None:
            continue
        itemsize = 2 if "f16" in ks[0]["name"] else 4
        by_correlation[ks[0]["args"].get("correlation")] = (tile_bytes(*shape, itemsize),
                                                            ks[0]["dur"])
    return list(by_correlation.values())


def sm_cycles_per_us(platform):
    with open(os.path.join(ROOT, "platforms", f"{platform}.json")) as f:
        p = json.load(f)
    return p["sm_count"] * p["boost_clock_mhz"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", default="sampled_rank0", choices=TRACES)
    ap.add_argument("--judge", default="h200_gpt2", choices=TRACES)
    a = ap.parse_args()
    print("| trace (platform) | align1 kernels | kernel ms | bytes a cycle per SM: over all, "
          "median, range |")
    print("|---|---|---|---|")
    rows = {}
    for name in (a.fit, a.judge):
        path, platform = TRACES[name]
        ks = kernels(path)
        cycles = sm_cycles_per_us(platform)
        rates = [b / (us * cycles) for b, us in ks]
        total = sum(b for b, _ in ks) / (sum(us for _, us in ks) * cycles)
        rows[name] = (ks, cycles, total)
        print(f"| {name} ({platform}) | {len(ks)} | {sum(us for _, us in ks) / 1e3:.2f} "
              f"| {total:.2f}, {statistics.median(rates):.2f}, {min(rates):.2f}-{max(rates):.2f} |")
    rate = rows[a.fit][2]
    ks, cycles, _ = rows[a.judge]
    recorded = sum(us for _, us in ks)
    priced = sum(b for b, _ in ks) / (rate * cycles)
    print(f"\nfitted on {a.fit}: {rate:.2f} bytes a cycle per SM; {a.judge}'s align1 kernels "
          f"priced {priced / 1e3:.2f} ms against {recorded / 1e3:.2f} recorded "
          f"({100 * (priced - recorded) / recorded:+.1f} %)")


if __name__ == "__main__":
    main()
