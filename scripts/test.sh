#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test:
#   1. the unit and end-to-end suite (CTest) on the `default` preset;
#   2. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer (`asan` preset);
#   3. each libFuzzer target for FUZZ_SECONDS (default 30) under ASan + UBSan (`fuzz` preset).
# Usage: scripts/test.sh [--quick]   (--quick: step 1 only)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/setup.sh
scripts/build.sh default
ctest --preset default -j"$(nproc)"
[ $quick -eq 1 ] && exit 0

scripts/build.sh asan
# halt_on_error: the first report fails the test; leaks are reported too (none are suppressed).
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --preset asan -j"$(nproc)"

scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
