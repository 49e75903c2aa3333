#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (C++ unit tests and the end-to-end CLI
# tests) through CTest. Usage: scripts/test.sh [preset]   (default, debug or asan)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-default}
scripts/setup.sh
scripts/build.sh "$preset"
ctest --preset "$preset" -j"$(nproc)"
