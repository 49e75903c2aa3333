#!/usr/bin/env bash
# Replay fidelity of the fleet samples: for each sample, capture a fresh original on this
# machine (unprofiled step times + ET + Kineto trace), replay that capture at once with
# `mimic replay`, and print markdown tables comparing the two. See docs/benchmarks.md.
#
# Usage: bench/replay_fidelity.sh [SAMPLE...]   (default: mlp cnn_bn transformer embbag_rec)
# Environment:
#   MIMIC        the mimic binary (default: build/default/cli/mimic)
#   WORK         folder for the captures, reports and logs (default: a new mktemp -d; kept)
#   WARMUP, ITERS  replay warm-up and measured iterations (default: 3 and 20)
#   REPLAY_FLAGS   more `mimic replay` flags, e.g. --heap-trim (default: none)
#
# Writes nothing outside $WORK; fleet_samples/ is only read (never written).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MIMIC="${MIMIC:-build/default/cli/mimic}"
WARMUP="${WARMUP:-3}"
ITERS="${ITERS:-20}"
WORK="${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/mimic_fidelity.XXXXXX")}"
mkdir -p "$WORK"
if [[ $# -gt 0 ]]; then SAMPLES=("$@"); else SAMPLES=(mlp cnn_bn transformer embbag_rec); fi

[[ -x "$MIMIC" ]] || { echo "replay_fidelity: $MIMIC is not built (cmake --build build/default --target mimic)" >&2; exit 1; }

echo "replay_fidelity: captures, reports and logs in $WORK" >&2
for name in "${SAMPLES[@]}"; do
  echo "replay_fidelity: $name: capturing" >&2
  # --out is $WORK: the script writes NAME.et.json.gz, NAME.kineto.json.gz and manifest.json
  # (this sample's unprofiled step times) there; fleet_samples/ is left alone.
  python3 scripts/capture_fleet_samples.py --out "$WORK" --only "$name" >"$WORK/$name.capture.log" 2>&1 ||
    { cat "$WORK/$name.capture.log" >&2; exit 1; }
  echo "replay_fidelity: $name: replaying" >&2
  # mimic picks up $WORK/manifest.json beside the trace as the original's measurement.
  cut -d' ' -f1 /proc/loadavg >"$WORK/$name.loadavg"  # 1-minute load: other work on the host
  "$MIMIC" replay "$WORK/$name.et.json.gz" --kineto "$WORK/$name.kineto.json.gz" \
    --warmup "$WARMUP" --iters "$ITERS" ${REPLAY_FLAGS:-} --report "$WORK/$name.report.json" \
    >"$WORK/$name.replay.txt" 2>"$WORK/$name.replay.log" ||
    { cat "$WORK/$name.replay.log" >&2; exit 1; }
done

python3 - "$WORK" "${SAMPLES[@]}" <<'EOF'
import json
import os
import sys

work, names = sys.argv[1], sys.argv[2:]


def pct(xs, p):
    """Percentile by linear interpolation between closest ranks (as mimic::Percentile)."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


with open(os.path.join(work, "manifest.json")) as f:
    manifest = {s["name"]: s for s in json.load(f)["samples"]}

rows, detail, ctx = [], [], None
for name in names:
    with open(os.path.join(work, name + ".report.json")) as f:
        r = json.load(f)
    ctx = ctx or r["context"]
    rep = r["iteration_ms"]["samples"]
    orig = r["original"]["samples"]
    ratio = r["ratio"]
    within = ratio is not None and abs(ratio - 1.0) <= 0.10
    cov = r["coverage"]
    ops = r["ops"]
    top = "; ".join("%s %.2f ms (x%d)" % (o["name"], o["replay_ms"], o["calls"]) for o in ops[:3])
    faults = lambda v: "-" if v is None else "%.0f" % v
    rows.append("| %s | %.2f | %.2f / %.2f | %.2f | %.2f / %.2f | %s | %s | %s / %s | %d/%d | %s |" % (
        name, pct(orig, 50), pct(orig, 10), pct(orig, 90), pct(rep, 50), pct(rep, 10), pct(rep, 90),
        "%.3f" % ratio if ratio is not None else "-", "yes" if within else "**no**",
        faults(r["original"].get("page_faults_per_iteration")), faults(r["memory"].get("page_faults_per_iteration")),
        cov["replayed"], cov["total"], top))
    # Where the time goes: per-op replay times (mean per measured iteration, ops that ran) next
    # to the same ops' Kineto CPU spans (measured under the profiler) and the step times.
    ran = [o for o in ops if o["replay_ms"] > 0]
    sum_replay = sum(o["replay_ms"] for o in ran)
    both = [o for o in ran if o["original_profiled_ms"] is not None]
    sum_rep_both = sum(o["replay_ms"] for o in both)
    sum_kin_both = sum(o["original_profiled_ms"] for o in both)
    prof = manifest.get(name, {}).get("profiled_iteration_ms") or []
    with open(os.path.join(work, name + ".loadavg")) as f:
        load = f.read().strip()
    detail.append("| %s | %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |" % (
        name, r["context"]["num_threads"], load, pct(orig, 50), pct(prof, 50) if prof else float("nan"),
        pct(rep, 50), sum_replay, sum_rep_both, sum_kin_both,
        "%.2f" % (sum_rep_both / sum_kin_both) if sum_kin_both > 0 else "-"))

print("Host: %s; torch %s; replay threads as recorded; warm-up %s, %s measured iterations." % (
    ctx["cpu"], ctx["torch_version"], os.environ.get("WARMUP", "3"), os.environ.get("ITERS", "20")))
print()
print("| sample | original median ms | original p10 / p90 | replay median ms | replay p10 / p90 | ratio | within ±10% | page faults per step, original / replay | coverage replayed/total | top 3 ops by replay time (ms per iteration, calls) |")
print("|---|---:|---:|---:|---:|---:|---|---:|---:|---|")
print("\n".join(rows))
print()
print("Per-op view (the replayed step; per-op replay times are means per measured iteration, "
      "Kineto spans are from the captured step, under the profiler):")
print()
print("| sample | threads | load avg before replay | original unprofiled median ms | original profiled step median ms (Kineto) | replay median ms | Σ per-op replay ms | Σ replay ms, ops with a Kineto span | Σ Kineto span ms, same ops | replay / Kineto, same ops |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print("\n".join(detail))
EOF
