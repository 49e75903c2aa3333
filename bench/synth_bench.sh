#!/usr/bin/env bash
# Synthesis timings (docs/benchmarks.md): `mimic pack` and `mimic build-benchmark` of the
# largest fleet sample, and the standalone benchmark's start-up, each the median of N runs.
# Usage: bench/synth_bench.sh [RUNS]   (default 7)
set -euo pipefail
cd "$(dirname "$0")/.."
MIMIC=${MIMIC:-build/default/cli/mimic}
runs=${1:-7}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
largest=$(ls -S fleet_samples/*.et.json.gz | head -1)
name=$(basename "$largest" .et.json.gz)

median_ms() {  # median_ms COMMAND...: runs it $runs times, prints the median wall time in ms
  python3 - "$runs" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append((time.perf_counter() - t0) * 1000)
print(f"{statistics.median(times):.1f}")
PY
}

pack=$(median_ms "$MIMIC" pack "$largest" --kineto "fleet_samples/$name.kineto.json.gz" -o "$work/b.bundle")
build=$(median_ms "$MIMIC" build-benchmark "$work/b.bundle" -o "$work/bench")
help=$(median_ms "$work/bench" --help)
echo "| step | input | median ms ($runs runs) |"
echo "|---|---|---:|"
echo "| mimic pack | $largest ($(stat -c %s "$largest") B gz) | $pack |"
echo "| mimic build-benchmark | bundle of $(stat -c %s "$work/b.bundle") B, binary of $(stat -c %s "$MIMIC") B | $build |"
echo "| ./benchmark --help (start-up: finds and checks its bundle) | | $help |"
