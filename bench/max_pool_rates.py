#!/usr/bin/env python3
"""ATen's channels-last max-pooling kernels on the H200 ResNet-50 captures: the window visits
each makes, the SM cycles a visit takes, and the fit of the platform figure
`max_pool_channels_last` (docs/model.md) on one capture with its error on the other.

A visit is one (output, window element) pair of the forward, whose threads walk each output's
window an element a step (max_pool_forward_nhwc), and one (input, covering window) pair of the
backward, whose threads read each covering window's index, and its gradient where it matches
(max_pool_backward_nhwc). The backward's zero fill of grad_input (a separate kernel) is left
out: the model prices it by its bytes. Reads the Kineto traces only (no GPU, no mimic); each
kernel is the kernel of the op whose host span holds its launch (kernels_by_op.py's rule), the
window from the op's recorded arguments.

  python3 bench/max_pool_rates.py            # fit on resnet50_b128, judge on resnet50_b64
  python3 bench/max_pool_rates.py --fit resnet50_b64 --judge resnet50_b128
"""
import ast
import os

from gpu_fidelity import fit_and_judge_args, load as load_trace
from kernels_by_op import kernels_under, launches_by_thread

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SAMPLES = os.path.join(ROOT, "fleet_samples", "h200")
PASSES = {"forward": ("aten::max_pool2d_with_indices", "max_pool_forward_nhwc"),
          "backward": ("aten::max_pool2d_with_indices_backward", "max_pool_backward_nhwc")}


def forward_visits(size, out, k, s, p, d):
    """Elements of every output's window along one dim, clipped as the NHWC kernel clips them
    (it steps its window one element at a time whatever the dilation)."""
    total = 0
    for o in range(out):
        start = o * s - p
        end = min(start + (k - 1) * d + 1, size)
        while start < 0:
            start += d
        total += max(end - start, 0)
    return total


def backward_visits(size, out, k, s, p, d):
    """Windows covering each input element along one dim (the kernel's p_start and p_end)."""
    total = 0
    for i in range(size):
        start = 0 if i + p < (k - 1) * d + 1 else (i + p - ((k - 1) * d + 1)) // s + 1
        total += max(min((i + p) // s + 1, out) - start, 0)
    return total


def visits(op: dict, backward: bool) -> float:
    args = op["args"]
    dims, concrete = args["Input Dims"], args["Concrete Inputs"]
    grad_out, x = (dims[0], dims[1]) if backward else (None, dims[0])
    first = 2 if backward else 1
    k, s, p, d = (ast.literal_eval(concrete[first + i] or "[]") for i in range(4))
    s = s or k
    p = p if len(p) == 2 else p * 2
    d = d if len(d) == 2 else (d or [1]) * 2
    n, c, h, w = x
    oh, ow = grad_out[2:] if backward else (None, None)
    if not backward:  # the output's size, as ATen computes it (ceil_mode off)
        oh, ow = ((size + 2 * pp - dd * (kk - 1) - 1) // ss + 1
                  for size, kk, ss, pp, dd in zip((h, w), k, s, p, d))
    count = backward_visits if backward else forward_visits
    return n * c * count(h, oh, k[0], s[0], p[0], d[0]) * count(w, ow, k[1], s[1], p[1], d[1])


def load(sample: str) -> dict:
    """{pass: [(visits, kernel us)]} over the capture's channels-last max-pooling ops."""
    events = load_trace(os.path.join(SAMPLES, f"{sample}.kineto.json.gz"))["traceEvents"]
    calls, device = launches_by_thread(events)
    out = {pas: [] for pas in PASSES}
    for e in events:
        if e.get("cat") != "cpu_op" or e.get("ph") != "X":
            continue
        for pas, (op, kernel) in PASSES.items():
            if e["name"] != op:
                continue
            us = sum(k["dur"] for k in kernels_under(e, calls, device) if kernel in k["name"])
            if us > 0:
                out[pas].append((visits(e, pas == "backward"), us))
    return out


def main():
    a, sm_hz = fit_and_judge_args(__doc__.splitlines()[0])
    fit, judge = load(a.fit), load(a.judge)
    print(f"| pass | fitted on {a.fit}: ops, visits, kernel us, cycles a visit "
          f"| {a.judge}: ops, recorded us, priced us, error |")
    print("|---|---|---|")
    for pas in PASSES:
        v, us = sum(r[0] for r in fit[pas]), sum(r[1] for r in fit[pas])
        cycles = us * 1e-6 * sm_hz / v
        rec = sum(r[1] for r in judge[pas])
        priced = sum(r[0] for r in judge[pas]) * cycles / sm_hz * 1e6
        print(f"| {pas} | {len(fit[pas])}, {v:.4g}, {us:.1f}, {cycles:.3f} "
              f"| {len(judge[pas])}, {rec:.1f}, {priced:.1f}, {100 * (priced - rec) / rec:+.1f} % |")


if __name__ == "__main__":
    main()
