#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: `mimic run` (replay of the embedded
# default fleet sample, compared with the original run). Extra arguments go to `mimic run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default
exec build/default/cli/mimic run "$@"
