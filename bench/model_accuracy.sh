#!/usr/bin/env bash
# Prediction accuracy on the fleet samples (docs/benchmarks.md, "Prediction accuracy"):
# calibrates this host twice (the generic grid alone, and the grid plus the samples' own GEMM,
# convolution, attention and embedding shapes), then runs `mimic compare` on every sample with
# each platform and prints markdown tables of original vs replay vs prediction.
#
#   bench/model_accuracy.sh [OUT_DIR]     (env: MIMIC, STATISTIC=median|min, TRIALS, ITERS, THREADS)
#
# THREADS (default 2, as the samples were captured) sets the intra-op threads of both the
# calibration and the replays; on a shared 2-core machine THREADS=1 keeps other jobs from
# stalling every parallel region.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MIMIC=${MIMIC:-$ROOT/build/default/cli/mimic}
OUT=${1:-/tmp/mimic_model_accuracy}
STATISTIC=${STATISTIC:-median}
TRIALS=${TRIALS:-7}
ITERS=${ITERS:-20}
THREADS=${THREADS:-2}
SAMPLES=(mlp cnn_bn transformer embbag_rec)
mkdir -p "$OUT"

workloads=()
for s in "${SAMPLES[@]}"; do workloads+=(--workload "$ROOT/fleet_samples/$s.et.json.gz"); done
echo "calibrating (grid) ... (load $(cut -d' ' -f1 /proc/loadavg))" >&2
"$MIMIC" calibrate --threads "$THREADS" --statistic "$STATISTIC" --trials "$TRIALS" --name cpu_host_grid -o "$OUT/cpu_host_grid.json"
echo "calibrating (grid + the samples' shapes) ..." >&2
"$MIMIC" calibrate --threads "$THREADS" --statistic "$STATISTIC" --trials "$TRIALS" "${workloads[@]}" -o "$OUT/cpu_host.json"

: > "$OUT/loads.txt"
for platform in cpu_host cpu_host_grid; do
  for s in "${SAMPLES[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "$platform $s $load" >> "$OUT/loads.txt"
    echo "compare $s on $platform (load $load) ..." >&2
    "$MIMIC" compare "$ROOT/fleet_samples/$s.et.json.gz" --kineto "$ROOT/fleet_samples/$s.kineto.json.gz" \
      --platform "$OUT/$platform.json" --warmup 3 --iters "$ITERS" --threads "$THREADS" \
      --report "$OUT/$platform.$s.json" --html "$OUT/$platform.$s.html" > "$OUT/$platform.$s.txt"
  done
done
python3 "$ROOT/bench/model_accuracy_table.py" "$OUT" "${SAMPLES[@]}"
