#!/usr/bin/env bash
# Start-up cost of the mimic binaries: wall time and peak RSS (whole process, /usr/bin/time) of
# `--version` and of `inspect` on a small trace, for `mimic` (no LibTorch) and `mimic-torch` (the
# whole command line with LibTorch, what `mimic` was before the split), run alternately.
# Usage: bench/startup_bench.sh [BUILD_DIR] [RUNS]   (default build/default, 21 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/default}
runs=${2:-21}
trace=fleet_samples/mlp.et.json.gz
torch_lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
nvidia_libs=$(ls -d "$torch_lib"/../../nvidia/*/lib 2>/dev/null | paste -sd: || true)
export LD_LIBRARY_PATH="$torch_lib:$nvidia_libs"

measure() {  # prints "milliseconds kilobytes" of one run
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%M" "$@" >/dev/null 2>/tmp/startup_bench.$$ || true
  t1=$(date +%s%N)
  echo "$(((t1 - t0) / 1000)) $(tail -1 /tmp/startup_bench.$$)" | awk '{print $1 / 1000, $2}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-28s %-12s %12s %12s\n" "command" "binary" "median ms" "median MB"
for cmd in "--version" "inspect $trace"; do
  for bin in mimic mimic-torch; do : >"/tmp/startup_bench.$bin.$$"; done
  for _ in $(seq "$runs"); do
    for bin in mimic mimic-torch; do
      # shellcheck disable=SC2086
      measure "$build/cli/$bin" $cmd >>"/tmp/startup_bench.$bin.$$"
    done
  done
  for bin in mimic mimic-torch; do
    ms=$(awk '{print $1}' "/tmp/startup_bench.$bin.$$" | median)
    mb=$(awk '{print $2 / 1024}' "/tmp/startup_bench.$bin.$$" | median)
    printf "%-28s %-12s %12.1f %12.1f\n" "${cmd%% *}" "$bin" "$ms" "$mb"
  done
done
rm -f /tmp/startup_bench.*.$$ /tmp/startup_bench.$$
