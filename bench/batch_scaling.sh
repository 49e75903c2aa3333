#!/usr/bin/env bash
# Batch scaling against reality: for each fleet sample, in one run on this machine, capture a
# fresh original at K times the batch (scripts/capture_fleet_samples.py --batch-scale K), then
# replay the committed sample scaled by `mimic synth --batch-scale K`, and compare the replay's
# median step time with that original's. Prints a markdown table (docs/benchmarks.md).
# Usage: bench/batch_scaling.sh [K] [SAMPLE...]   (default K=2, all samples)
set -euo pipefail
cd "$(dirname "$0")/.."
MIMIC=${MIMIC:-build/default/cli/mimic}
k=${1:-2}
shift || true
samples=("$@")
[ ${#samples[@]} -gt 0 ] || samples=(mlp cnn_bn transformer embbag_rec)
work=${WORK:-$(mktemp -d)}
echo "| sample | batch | original at that batch, median ms | scaled replay, median ms | ratio | coverage |"
echo "|---|---:|---:|---:|---:|---:|"
for name in "${samples[@]}"; do
  python3 scripts/capture_fleet_samples.py --out "$work" --only "$name" --batch-scale "$k" >"$work/$name.capture.log" 2>&1
  "$MIMIC" synth "fleet_samples/$name.et.json.gz" --batch-scale "$k" -o "$work/$name.x$k.mimic" 2>"$work/$name.synth.log"
  "$MIMIC" replay "$work/$name.x$k.mimic" --warmup 3 --iters 20 --report "$work/$name.report.json" >/dev/null 2>&1
  python3 - "$work" "$name" <<'PY'
import json, statistics, sys
work, name = sys.argv[1], sys.argv[2]
manifest = json.load(open(f"{work}/manifest.json"))
sample = next(s for s in manifest["samples"] if s["name"] == name)
report = json.load(open(f"{work}/{name}.report.json"))
original = statistics.median(sample["iteration_ms"])
replay = report["iteration_ms"]["median"]
cov = report["coverage"]
print(f"| {name} | {sample['batch_size']} | {original:.2f} | {replay:.2f} | {replay / original:.3f} | {cov['replayed']}/{cov['total']} |")
PY
done
