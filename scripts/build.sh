#!/usr/bin/env bash
# Configures and builds Mimic with a CMake preset (default: "default"; also "debug", "asan").
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j"$(nproc)"
