#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job on this machine, trace to comparison:
# captures a fresh original of the default fleet sample here (unprofiled step times, then its
# execution trace and Kineto trace; scripts/capture_fleet_samples.py), then `mimic run --from`
# replays it and sets it beside that original. Extra arguments go to `mimic run`.
# MIMIC_RUN_EMBEDDED=1 skips the capture and replays the sample embedded in the binary, whose
# original ran on the machine it was captured on (the report then says why it prints no ratio).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default
if [ "${MIMIC_RUN_EMBEDDED:-0}" = 1 ]; then
  exec build/default/cli/mimic run "$@"
fi
sample=$(python3 -c 'import json; print(json.load(open("fleet_samples/manifest.json"))["default"])')
out=build/run-sample
rm -rf "$out"
echo "run: capturing a fresh original of '$sample' on this machine into $out" >&2
python3 scripts/capture_fleet_samples.py --only "$sample" --out "$out" >&2
exec build/default/cli/mimic run --from "$out" "$@"
