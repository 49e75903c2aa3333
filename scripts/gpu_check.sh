#!/usr/bin/env bash
# The one command that checks Mimic's CUDA path on a GPU machine (docs/gpu.md). It
#   1. records the machine (nvidia-smi, torch, nvcc, CMake),
#   2. builds Mimic (the C++ dependencies from the system, else from .gpu_carry: scripts/gpu_carry.sh),
#   3. runs the CUDA tests (which must run, not skip),
#   4. replays every GPU trace of the public traces on the GPU (--per-op, --profile), and the
#      committed H200 samples at twice their batch (mimic synth --batch-scale 2),
#   5. captures the GPU fleet samples (scripts/capture_gpu_samples.py),
#   6. runs the GPU fidelity benchmark on them (bench/gpu_fidelity.py),
#   7. calibrates the GPU's platform figures (mimic calibrate --device cuda: platform.json),
#   8. runs the whole CTest suite as CI does (the GPU hidden), last,
# and writes everything into one folder: summary.md (what passed, how long), fidelity.md (the
# benchmark's table), results.json (the figures), platform.json, logs.tar.gz, reports.tar.gz
# (replay and prediction reports), profiles.tar.gz (the replays' Kineto profiles), samples.tar.gz
# (the captured samples with their manifest).
#
#   scripts/gpu_check.sh [OUT_DIR]   (default: $OUT where the device tool sets it, else ./gpu_check)
#   GPU_CHECK_STEPS="build tests traces batch capture fidelity calibrate"   the steps (default: all;
#                                                           "tests" is "cuda ctest")
#   GPU_CHECK_SAMPLES=gpt2,dlrm                               the samples to capture (default: all)
#
# Exit code: 0 when every step passed, 1 otherwise (the folder is written either way).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=$(realpath -m "${1:-${OUT:-gpu_check}}")
mkdir -p "$out"
work=$(mktemp -d)
mkdir -p "$work/logs" "$work/reports" "$work/samples"
summary=$out/summary.md
steps=${GPU_CHECK_STEPS:-build tests traces batch capture fidelity calibrate}
steps=${steps//tests/cuda ctest}
failed=0
export PYTHONUNBUFFERED=1

echo "# Mimic GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >"$summary"

# run NAME COMMAND...: the command's output goes to logs/NAME.log; the summary says how it went.
run() {
  local name=$1 t0=$SECONDS
  shift
  echo "gpu_check: $name" >&2
  if "$@" >"$work/logs/$name.log" 2>&1; then
    echo "- $name: ok ($((SECONDS - t0)) s)" >>"$summary"
  else
    echo "- $name: FAILED ($((SECONDS - t0)) s; logs/$name.log)" >>"$summary"
    tail -n 20 "$work/logs/$name.log" | sed 's/^/    /' >>"$summary"
    failed=1
  fi
}
wants() { [[ " $steps " == *" $1 "* ]]; }

# The folder is written however the script ends, a time limit's signal included.
finish() {
  tar czf "$out/logs.tar.gz" -C "$work" logs
  # The profiles apart: together they outgrow what a device run brings back (16 MiB a file).
  tar czf "$out/reports.tar.gz" -C "$work" --exclude '*profile.json' reports
  if compgen -G "$work/reports/*profile.json" >/dev/null; then
    tar czf "$out/profiles.tar.gz" -C "$work" --wildcards 'reports/*profile.json'
  fi
  tar czf "$out/samples.tar.gz" -C "$work" samples
  echo "gpu_check: wrote $out ($(ls "$out" | tr '\n' ' '))" >&2
  rm -rf "$work"
}
trap finish EXIT
trap 'echo "- stopped by a signal" >>"$summary"; exit 1' INT TERM

machine() {
  nvidia-smi || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(),
              torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
  nvcc --version | tail -n 1
  cmake --version | head -n 1
  g++ --version | head -n 1
  command -v python3
  nproc
}
run machine machine

# The build's dependencies: the system's where present, else the carried prefix.
if [ -d .gpu_carry/prefix ]; then
  carry=$root/.gpu_carry/prefix
  export CMAKE_PREFIX_PATH=$carry${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export LD_LIBRARY_PATH=$carry/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PATH=$carry/bin:$PATH
  export CPATH=$carry/include${CPATH:+:$CPATH}
  echo "- dependencies: carried prefix .gpu_carry/prefix" >>"$summary"
fi
# zlib's and OpenSSL's headers where the image has the libraries but not the headers: the carried
# headers, and links to the system's own libraries for the linker.
sysdev() {
  local lib=$1 header=$2 so
  echo "#include <$header>" | g++ -E -x c++ - >/dev/null 2>&1 && return
  [ -d .gpu_carry/sysdev ] || return
  so=$(ldconfig -p | awk -v l="lib$lib.so." '$1 ~ "^"l {print $NF; exit}')
  [ -n "$so" ] || return
  mkdir -p "$work/sysdev/lib"
  ln -sf "$so" "$work/sysdev/lib/lib$lib.so"
  export CMAKE_PREFIX_PATH=$work/sysdev:$root/.gpu_carry/sysdev${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CPATH=$root/.gpu_carry/sysdev/include:$root/.gpu_carry/sysdev/include/x86_64-linux-gnu${CPATH:+:$CPATH}
  export LIBRARY_PATH=$work/sysdev/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
  echo "- $header: carried header, the system's $so" >>"$summary"
}
sysdev z zlib.h
sysdev crypto openssl/evp.h
traces=${TRACES:-}
for t in .gpu_carry/traces ../shared/traces shared/traces; do
  [ -z "$traces" ] && [ -d "$t" ] && traces=$(realpath "$t")
done
[ -n "$traces" ] && export MIMIC_TRACES=$traces  # where the tests find them too

mimic=$root/build/default/cli/mimic
build() {
  # The GPU's own architecture, so that nothing is JIT-compiled at run time.
  local arch
  arch=$(python3 -c 'import torch; p = torch.cuda.get_device_capability(); print(f"{p[0]}.{p[1]}")')
  cmake --preset default -DTORCH_CUDA_ARCH_LIST="$arch" &&
    cmake --build --preset default -j"$(nproc)" &&
    [ -x build/default/tests/cuda_test ]  # built in CUDA builds only
}
wants build && run build build

cuda_tests() {
  # On a GPU machine the CUDA tests must run: a skip is a failure here.
  build/default/tests/cuda_test --gtest_output="json:$work/reports/cuda_test.json" &&
    python3 - "$work/reports/cuda_test.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
skipped = [t["name"] for s in r["testsuites"] for t in s["testsuite"] if t.get("result") == "SKIPPED"]
print("ran", r["tests"], "CUDA tests; skipped:", skipped)
sys.exit(1 if skipped or r["tests"] == 0 else 0)
PY
}
if wants cuda; then
  run cuda_tests cuda_tests
  run devices "$mimic" devices --json
  cp "$work/logs/devices.log" "$work/reports/devices.json"
fi

# Every GPU trace of the public traces, replayed on the GPU, with its Kineto trace where it has one.
replay_traces() {
  [ -n "$traces" ] || { echo "no traces folder (TRACES, .gpu_carry/traces, ../shared/traces)"; return 1; }
  local rc=0 et name kineto
  while read -r et; do
    name=$(basename "$(dirname "$et")")
    kineto=$(ls "$(dirname "$et")"/*kineto*.json* 2>/dev/null | head -n 1)
    echo "== $name: $et ${kineto:+(kineto $kineto)}"
    "$mimic" replay "$et" ${kineto:+--kineto "$kineto"} --device cuda --per-op --warmup 3 --iters 10 \
      --profile "$work/reports/$name.profile.json" --report "$work/reports/$name.json" || rc=1
  done < <(find "$traces" -name '*et.json*' | sort)
  return $rc
}
wants traces && run traces replay_traces

# The committed H200 samples at twice their batch (mimic synth --batch-scale 2, a GPU capture's
# shapes propagated on the meta device), each replayed on the GPU with every op and no output of
# another shape; resnet50_b64 scaled to 128 runs the step that resnet50_b128 captured.
scale_batches() {
  local rc=0 s
  for s in gpt2 dlrm resnet50_b64 resnet50_b128; do
    echo "== $s x2"
    "$mimic" synth "fleet_samples/h200/$s.et.json.gz" --batch-scale 2 -o "$work/reports/$s.x2.mimic" &&
      "$mimic" replay "$work/reports/$s.x2.mimic" --device cuda --warmup 3 --iters 10 \
        --report "$work/reports/$s.x2.json" &&
      python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
c, o = r["coverage"], r["outputs"]
print("replayed %d of %d ops, %d outputs of another shape, median step %.2f ms" % (c["replayed"], c["total"], o["mismatched"], r["iteration_ms"]["median"]))
sys.exit(c["skipped"] > 0 or o["mismatched"] > 0)' "$work/reports/$s.x2.json" || rc=1
  done
  return $rc
}
wants batch && run batch scale_batches

wants capture && run capture python3 scripts/capture_gpu_samples.py --out "$work/samples" \
  ${GPU_CHECK_SAMPLES:+--only "$GPU_CHECK_SAMPLES"}
wants fidelity && run fidelity python3 bench/gpu_fidelity.py --samples "$work/samples" --mimic "$mimic" \
  --work "$work/reports" --json "$out/results.json" --markdown "$out/fidelity.md"

# The GPU's own figures (GEMM, convolution, attention, bandwidth, overheads) on calibrate's
# generic grid, starting from the datasheet platform of this GPU where one is shipped: what the
# model's GPU platforms have never had. No --workload: fitting the samples' own shapes would fit
# what the benchmarks report on.
calibrate() {
  local base
  base=$(python3 -c 'import torch; n = torch.cuda.get_device_name(0).lower()
print("h200" if "h200" in n else "h100_sxm" if "h100" in n else "")')
  "$mimic" calibrate --device cuda ${base:+--base "$base" --name "${base}_measured"} \
    -o "$out/platform.json"
}
wants calibrate && run calibrate calibrate

# The whole suite as CI runs it, on this machine's image, last (it is CI's job too). The GPU is
# hidden from it: its tests expect a CPU's op outputs (embedding_bag's offset2bag, say) and
# sixteen test processes sharing one GPU took minutes each; the CUDA path is the steps above.
wants ctest && run ctest env CUDA_VISIBLE_DEVICES= ctest --preset default -j"$(nproc)"

exit $failed
