#!/usr/bin/env python3
"""ATen's channels-last batch-norm kernels on the H200 ResNet-50 captures: per kernel and input
shape, the elements it got through a second; then the fit of the platform figure
`batch_norm_channels_last` (docs/model.md) on one capture and its error on the other.

Reads the Kineto traces only (no GPU, no mimic): each kernel is attributed to the
aten::native_batch_norm(_backward) whose host span holds its launch, and takes that op's input
shape. A forward is the statistics and the normalize kernels, a backward the reduce and the
grad-input kernels; their time over the op's input elements, in cycles of the platform's SMs
at its boost clock, is the figure.

  python3 bench/batch_norm_rates.py            # fit on resnet50_b128, judge on resnet50_b64
  python3 bench/batch_norm_rates.py --fit resnet50_b64 --judge resnet50_b128
"""
import collections
import math
import os

from gpu_fidelity import fit_and_judge_args, load as load_trace
from kernels_by_op import kernels_under, launches_by_thread

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SAMPLES = os.path.join(ROOT, "fleet_samples", "h200")
PASSES = {
    "forward": ("batch_norm_collect_statistics_channels_last_kernel",
                "batch_norm_transform_input_channels_last_kernel"),
    "backward": ("batch_norm_backward_reduce_channels_last_kernel",
                 "batch_norm_backward_elemt_channels_last_kernel"),
}
OPS = ("aten::native_batch_norm", "aten::native_batch_norm_backward")


def kernel_family(name: str) -> str:
    return name.split("(")[0].replace("void at::native::", "").split("<")[0]


def load(sample: str) -> dict:
    """{(kernel family, input shape): [durations us]} for the channels-last batch-norm kernels,
    each the kernel of the op whose host span holds its launch (kernels_by_op.py's rule)."""
    events = load_trace(os.path.join(SAMPLES, f"{sample}.kineto.json.gz"))["traceEvents"]
    calls, device = launches_by_thread(events)
    out = collections.defaultdict(list)
    for e in events:
        if e.get("cat") != "cpu_op" or e.get("ph") != "X" or e["name"] not in OPS:
            continue
        shape = tuple(e["args"]["Input Dims"][0])
        for k in kernels_under(e, calls, device):
            if k.get("cat") == "kernel" and "channels_last" in k["name"]:
                out[(kernel_family(k["name"]), shape)].append(k["dur"])
    return out


def per_pass(rows: dict) -> dict:
    """{pass: {shape: (input elements over the ops, kernel us)}}: each op's elements once."""
    out = {p: collections.defaultdict(lambda: [0.0, 0.0]) for p in PASSES}
    for (family, shape), durations in rows.items():
        for p, families in PASSES.items():
            if family in families:
                cell = out[p][shape]
                cell[1] += sum(durations)
                if family == families[0]:
                    cell[0] += math.prod(shape) * len(durations)
    return out


def main():
    a, sm_hz = fit_and_judge_args(__doc__.splitlines()[0])
    rows = {s: load(s) for s in (a.fit, a.judge)}

    print("| kernel | Gelem/s over the shapes (" + ", ".join(rows) + ") |")
    print("|---|---|")
    for family in sum(PASSES.values(), ()):
        rates = [math.prod(shape) / (sorted(d)[len(d) // 2] * 1e3)
                 for r in rows.values() for (fam, shape), d in r.items() if fam == family]
        print(f"| `{family}` | {min(rates):.0f}-{max(rates):.0f} (median of each shape's calls) |")

    fit, judge = per_pass(rows[a.fit]), per_pass(rows[a.judge])
    print(f"\n| pass | fitted on {a.fit}: elements, kernel ms, cycles an element "
          f"| {a.judge}: recorded ms, priced ms, error, per shape |")
    print("|---|---|---|")
    for pas in PASSES:
        elements = sum(c[0] for c in fit[pas].values())
        us = sum(c[1] for c in fit[pas].values())
        cycles = us * 1e-6 * sm_hz / elements
        rec = sum(c[1] for c in judge[pas].values())
        priced = sum(c[0] for c in judge[pas].values()) * cycles / sm_hz * 1e6
        shapes = sorted((c[0] * cycles / sm_hz * 1e6 - c[1]) / c[1] for c in judge[pas].values())
        print(f"| {pas} | {elements:.3g}, {us / 1e3:.2f}, {cycles:.3f} "
              f"| {rec / 1e3:.2f}, {priced / 1e3:.2f}, {100 * (priced - rec) / rec:+.1f} %, "
              f"{100 * shapes[0]:+.0f} %..{100 * shapes[-1]:+.0f} % |")


if __name__ == "__main__":
    main()
