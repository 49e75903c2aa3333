#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`: clang, ASan + UBSan) and runs each for a while,
# seeded with the real traces (../shared/traces, fleet_samples/) and the regression inputs in
# tests/fuzz_regressions/<target>/. A crash stops the run with a non-zero exit; its input is
# left in build/fuzz/crashes/<target>/ — add it to tests/fuzz_regressions/<target>/ once fixed.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 30 s; all targets)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(execution_trace kineto workload manifest chakra platform fleet_manifest job_log)

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)" --target "${targets[@]/%/_fuzz}" >/dev/null

work=build/fuzz/run
shared=../shared/traces
mkdir -p "$work"

# Seeds, decompressed: mutations of JSON reach the parsers, mutations of gzip mostly do not.
seed() {  # seed TARGET FILE...
  local dir=$work/corpus/$1
  shift
  mkdir -p "$dir"
  for f in "$@"; do
    [ -f "$f" ] || continue
    case "$f" in
      *.gz) gzip -dc "$f" | head -c 262144 >"$dir/$(basename "${f%.gz}")" ;;
      *) cp "$f" "$dir/" ;;
    esac
  done
}
seed execution_trace $shared/hta-simple-add/simple_add_et.json.gz $shared/param-pt2/pt2_et.json.gz \
  $shared/chakra-allgather/allgather_1.0.2_et.json.gz tests/bad_inputs/*.json
seed kineto $shared/hta-simple-add/simple_add_kineto.json.gz tests/bad_inputs/kineto_*.json \
  tests/data/kineto_observer_probes.json
seed workload tests/bad_inputs/*.mimic
seed manifest fleet_samples/manifest.json tests/data/capture_cost_manifest.json tests/data/value_profile.json
seed chakra $shared/astra-microbench/*.et
seed platform platforms/*.json
seed fleet_manifest fleet_samples/fleet.json
seed job_log tests/data/fleet_job_log.csv

status=0
for t in "${targets[@]}"; do
  bin=build/fuzz/fuzz/${t}_fuzz
  crashes=build/fuzz/crashes/$t
  mkdir -p "$crashes"
  regressions=(tests/fuzz_regressions/$t/*)
  if [ -e "${regressions[0]}" ]; then  # replay every recorded crash input first
    "$bin" "${regressions[@]}" >"$work/$t.regressions.log" 2>&1 ||
      { echo "fuzz: $t: a regression input fails again (see $work/$t.regressions.log)"; status=1; continue; }
  fi
  if "$bin" "$work/corpus/$t" -max_total_time="$seconds" -max_len=262144 -rss_limit_mb=2048 \
      -timeout=10 -artifact_prefix="$crashes/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t.log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz: $t: ${runs} executions in ${seconds} s, no crash"
  else
    echo "fuzz: $t: CRASH (input in $crashes/, log $work/$t.log)"
    tail -30 "$work/$t.log"
    status=1
  fi
done
exit $status
