#!/usr/bin/env python3
"""The time of one dependent step on a GPU (the platform's `embedding_bag_step_ns`), fitted on
some of the H200 captures and judged on the others. The kernels that wait out their loads one
after another (PyTorch's EmbeddingBag forward, its column sums, layer norm backward's weight
gradients, index_add: docs/model.md) each take a whole number of such steps by the model;
every op the model bounds by them (`bound` "dependent_loads" in `mimic predict --json`) is
priced here at two step times, so that its price is a + b x step, and the step that makes the
fitting captures' ops add up to their recorded kernels is taken. The held-out captures' ops are
then priced at it.

Runs `mimic predict` (no GPU); reads nothing but the captures and platforms/h200.json.

  python3 bench/dependent_step.py     # fit on the DLRM capture, judge on GPT-2 and the ResNet-50s
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SAMPLES = os.path.join(ROOT, "fleet_samples", "h200")
BOUND = "dependent_loads"
STEPS_NS = (500.0, 1000.0)  # any two on the step branch of every op


def predict(mimic, sample, platform):
    """{op id: op} of `mimic predict --json` on a capture."""
    args = [mimic, "predict", os.path.join(SAMPLES, f"{sample}.et.json.gz"), "--kineto",
            os.path.join(SAMPLES, f"{sample}.kineto.json.gz"), "--platform", platform, "--json"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return {o["id"]: o for o in json.loads(out)["ops"]}


def step_ops(mimic, sample):
    """[(family, recorded us, a, b)] of the capture's ops priced by their steps at both step
    times: their price is a + b x step (step in ns)."""
    with open(os.path.join(ROOT, "platforms", "h200.json")) as f:
        platform = json.load(f)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for ns in STEPS_NS:
            platform["embedding_bag_step_ns"] = ns
            path = os.path.join(d, f"h200_{ns:.0f}.json")
            with open(path, "w") as f:
                json.dump(platform, f)
            runs.append(predict(mimic, sample, path))
    out = []
    for i, lo in runs[0].items():
        hi = runs[1][i]
        if lo["bound"] != BOUND or hi["bound"] != BOUND or lo["original_us"] is None:
            continue
        b = (hi["compute_us"] - lo["compute_us"]) / (STEPS_NS[1] - STEPS_NS[0])
        family = lo["name"] + ("" if lo["name"] == "aten::embedding_bag" else
                               " " + str([x["shape"] for x in lo["inputs"][:1]]))
        out.append((family, lo["original_us"], lo["compute_us"] - b * STEPS_NS[0], b))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mimic", default=os.path.join(ROOT, "build", "default", "cli", "mimic"))
    ap.add_argument("--fit", default="dlrm")
    ap.add_argument("--judge", default="gpt2,resnet50_b128,resnet50_b64")
    a = ap.parse_args()
    fit, judge = a.fit.split(","), a.judge.split(",")
    ops = {s: step_ops(a.mimic, s) for s in fit + judge}
    print("| capture | ops of one kind | n | recorded us each | step each op implies, ns (median) |")
    print("|---|---|---:|---:|---:|")
    for sample, rows in ops.items():
        by = collections.defaultdict(list)
        for family, rec, lo, b in rows:
            by[family].append((rec, lo, b))
        for family, rs in sorted(by.items(), key=lambda kv: -sum(r for r, _, _ in kv[1])):
            implied = statistics.median((r - lo) / b for r, lo, b in rs)
            print(f"| {sample} | `{family}` | {len(rs)} | {statistics.mean(r for r, _, _ in rs):.1f} "
                  f"| {implied:.0f} |")
    with open(os.path.join(ROOT, "platforms", "h200.json")) as f:
        shipped = json.load(f)["embedding_bag_step_ns"]
    fitted = [r for s in fit for r in ops[s]]
    step = (sum(r for _, r, _, _ in fitted) - sum(lo for _, _, lo, _ in fitted)) / \
        sum(b for _, _, _, b in fitted)
    print(f"\nfitted on {a.fit}: {step:.0f} ns a step ({len(fitted)} ops)")
    for sample in fit + judge:
        rows = ops[sample]
        recorded = sum(r for _, r, _, _ in rows)
        at = [sum(lo + b * ns for _, _, lo, b in rows) for ns in (step, shipped)]
        print(f"{sample}{' (fitted)' if sample in fit else ''}: {len(rows)} ops, {recorded:.1f} us "
              f"recorded; priced {at[0]:.1f} us at the fitted step "
              f"({100 * (at[0] - recorded) / recorded:+.1f} %), {at[1]:.1f} at platforms/h200.json's "
              f"{shipped:.0f} ns ({100 * (at[1] - recorded) / recorded:+.1f} %)")


if __name__ == "__main__":
    main()
