#!/usr/bin/env python3
"""The performance model against the kernels real GPUs recorded: `mimic compare --no-replay` on
every GPU trace in ../shared/traces (ET + Kineto pairs, and Kineto-only traces where this build
loads them) and on the H200 captures in fleet_samples/h200, the platform chosen from each trace's deviceProperties. Prints one markdown table
row per trace (recorded vs predicted GPU active time: all of it, without communication kernels,
and of the ops the models see into), one per trace with the ops no model sees into, and one per
major op class, for docs/benchmarks.md. Nothing is fitted to these traces: the platforms are
datasheet figures and published measurements.

usage: bench/gpu_model_accuracy.py [--mimic build/default/cli/mimic] [--traces ../shared/traces]
                                  [--ops N]
       bench/gpu_model_accuracy.py --rates N [--by-shape]
"""

import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, execution trace or None, Kineto trace), relative to the traces folder.
TRACES = [
    ("param-linear", "param-linear/linear_et.json.gz", "param-linear/linear_kineto.json.gz"),
    ("hta-simple-add", "hta-simple-add/simple_add_et.json.gz", "hta-simple-add/simple_add_kineto.json.gz"),
    ("hta-event-sync", None, "hta-event-sync/event_sync_kineto.json.gz"),
    ("hta-event-sync-multi", None, "hta-event-sync/event_sync_multi_stream_kineto.json.gz"),
    ("hta-backward-thread", None, "hta-backward-thread/backward_thread_kineto.json"),
    ("hta-trace-diff (V100)", None, "hta-gpu-kineto/trace_diff_test_kineto.json.gz"),
    ("hta-sampled-rank0", None, "hta-gpu-kineto/sampled_rank0_kineto.json.gz"),
]
# Traces that record no deviceProperties, run on a guess: their GEMM kernels are sm80 builds
# (cutlass_80_*, ampere_sgemm_*), an A100 or another GA100 part. The row says "guessed".
GUESSED = {"hta-backward-thread": "a100_80gb", "hta-sampled-rank0": "a100_80gb"}
# The project's own H200 captures (fleet_samples/h200, scripts/gpu_check.sh), ET + Kineto.
H200 = os.path.join(ROOT, "fleet_samples", "h200")
with open(os.path.join(H200, "manifest.json")) as _f:
    TRACES += [(f'h200 {s["name"]}', os.path.join(H200, s["et"]), os.path.join(H200, s["kineto"]))
               for s in json.load(_f)["samples"]]
# Captures a platform figure was fitted on (docs/model.md): their rows say so, and they judge
# that figure in-sample.
FITTED = {"h200 resnet50_b128": "batch_norm_channels_last, max_pool_channels_last", "h200 dlrm": "embedding_bag_step_ns"}
MAJOR = 0.10  # a class is major when it holds at least this share of the recorded GPU active time


def pct(v):
    return "-" if v is None else f"{100 * v:+.1f}%"


def ms(v):
    return "-" if v is None else f"{v:.3f}"


def run(mimic, traces, et, kineto, platform=None):
    with tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "r.json")
        args = [mimic, "compare"]
        args += [os.path.join(traces, et), "--kineto", os.path.join(traces, kineto)] if et else [os.path.join(traces, kineto)]
        args += ["--platform", platform] if platform else []
        r = subprocess.run(args + ["--no-replay", "--report", report], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            return None, last.split(": ")[-1]
        with open(report) as f:
            return json.load(f), None


def rates(mimic, top, by_shape=False):
    """Per op name on each H200 capture (the ops `mimic predict --json` prices, on the platform
    the trace names): the kernel time recorded under those ops against the time priced, and the
    FLOP and byte rates each implies, for the op names that hold the most recorded time; with
    by_shape, per op name and input shapes."""
    for name, et, kineto in TRACES:
        if not name.startswith("h200 "):
            continue
        r = subprocess.run([mimic, "predict", et, "--kineto", kineto, "--json"], capture_output=True,
                           text=True, timeout=600)
        if r.returncode != 0:
            print(f"{name}: {r.stderr.strip()}")
            continue
        by = {}
        for op in json.loads(r.stdout)["ops"]:
            if (op.get("original_us") or 0) <= 0:
                continue
            label = op["name"]
            if by_shape:
                label += " " + str([i["shape"] for i in op.get("inputs", [])]).replace(" ", "")
            b = by.setdefault((label, op["op_class"]), [0, 0.0, 0.0, 0.0, 0.0])
            b[0] += 1
            b[1] += op["original_us"]
            b[2] += op["compute_us"]
            b[3] += op["flops"]
            b[4] += op["bytes"]
        print(f"\n{name}\n")
        print("| op | class | ops | recorded ms | priced ms | recorded / priced | recorded TFLOP/s "
              "| priced TFLOP/s | recorded GB/s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for (op, cls), (n, orig, comp, flops, nbytes) in sorted(by.items(), key=lambda kv: -kv[1][1])[:top]:
            tflops = lambda us: f"{flops / us / 1e6:.0f}" if flops and us > 0 else "-"
            print(f"| {op} | {cls} | {n} | {orig / 1e3:.3f} | {comp / 1e3:.3f} | "
                  f"{orig / comp if comp > 0 else float('nan'):.2f} | {tflops(orig)} | {tflops(comp)} | "
                  f"{nbytes / orig / 1e3:.0f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mimic", default=os.path.join(ROOT, "build", "default", "cli", "mimic"))
    ap.add_argument("--rates", type=int, metavar="N",
                    help="instead: per op name on the H200 captures, the N names with the most "
                         "recorded time, recorded against priced time and rates")
    ap.add_argument("--by-shape", action="store_true",
                    help="with --rates: one row per op name and input shapes")
    ap.add_argument("--ops", type=int, default=0, metavar="N",
                    help="also: per trace, the N groups of ops (one name and inputs) farthest from "
                         "their recorded kernels, with their limiter (compare's largest_differences)")
    ap.add_argument("--traces", default=os.environ.get("MIMIC_TRACES",
                                                       os.path.join(ROOT, "..", "shared", "traces")))
    a = ap.parse_args()
    if a.rates:
        rates(a.mimic, a.rates, a.by_shape)
        return
    print("| trace | platform | GPU active: recorded ms | predicted ms | error "
          "| no comm: recorded ms | predicted ms | error | modelled ops: recorded ms | predicted ms | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    classes, unmodelled, farthest = [], [], []
    for name, et, kineto in TRACES:
        data, err = run(a.mimic, a.traces, et, kineto, GUESSED.get(name))
        if data is None:
            print(f"| {name} | - | - | - | not run: {err.replace('|', '/')} | | | | | | |")
            continue
        e = data["end_to_end"]
        row = [ms(e["original_gpu_active_ms"]), ms(e["predicted_gpu_active_ms"]),
               pct(e["error_predicted_vs_original_gpu_active"])]
        for key in ("compute_gpu_active", "modelled_gpu_active"):
            g = e[key]
            row += [ms(g["original_ms"]), ms(g["predicted_ms"]), pct(g["error_predicted_vs_original"])]
        platform = data["platform"]["name"] + (" (guessed)" if name in GUESSED else "")
        if name in FITTED:
            platform += f" ({FITTED[name]} fitted on it)"
        print(f"| {name} | {platform} | " + " | ".join(row) + " |")
        u = data["unmodelled"]
        if u["ops"]:
            reasons = ", ".join(f"{n} {r}" for r, n in u["reasons"].items())
            top = ", ".join(f"`{b['name'][:48]}` {ms(b['original_ms'])}/{ms(b['predicted_ms'])}" for b in u["by_name"][:4])
            unmodelled.append(f"| {name} | {u['ops']} ({reasons}) | {ms(u['original_gpu_active_ms'])} | "
                              f"{ms(u['predicted_ms'])} | {top} |")
        for g in data["largest_differences"][:a.ops]:
            farthest.append(f"| {name} | `{g['name'][:48]}` | {g['inputs'][:60]} | {g['ops']} | "
                            f"{ms(g['original_ms'])} | {ms(g['predicted_ms'])} | "
                            f"{pct(g['error_predicted_vs_original'])} | {g['bound'] or '-'} |")
        total = e["original_gpu_active_ms"] or 0
        for cls, c in data["op_classes"].items():
            if total > 0 and (c["original_gpu_active_ms"] or 0) >= MAJOR * total:
                classes.append((name, cls, c))
    print()
    print("| trace | unmodelled ops | recorded ms | predicted (floor) ms | largest, recorded/predicted ms |")
    print("|---|---|---|---|---|")
    print("\n".join(unmodelled))
    print()
    print("| trace | major op class | ops | recorded kernel ms | predicted ms | error |")
    print("|---|---|---|---|---|---|")
    for name, cls, c in classes:
        print(f"| {name} | {cls} | {c['ops']} | {ms(c['original_gpu_active_ms'])} | {ms(c['predicted_gpu_active_ms'])} | "
              f"{pct(c['error_predicted_vs_original_gpu_active'])} |")
    if farthest:
        print()
        print("| trace | op | inputs | ops | recorded kernel ms | predicted ms | error | limited by |")
        print("|---|---|---|---|---|---|---|---|")
        print("\n".join(farthest))


if __name__ == "__main__":
    main()
