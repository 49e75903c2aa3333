#!/usr/bin/env bash
# Installs what Mimic needs and is missing: Debian packages and pip torch (LibTorch + the same
# torch for the capture scripts). Idempotent and fast when everything is present.
set -euo pipefail

TORCH_VERSION=2.11.0
DEB_PACKAGES=(build-essential cmake ninja-build ccache pkg-config python3 python3-pip
  libprotobuf-dev protobuf-compiler libsimdjson-dev zlib1g-dev libssl-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  libgloo-dev  # ProcessGroupGloo's header needs Gloo's headers (LibTorch's wheel lacks them)
  openmpi-bin  # mpirun, one of the launchers tests/cli/multirank_test.py runs
  chromium)    # tests/cli/model_cli_test.py renders the compare HTML report headless

log() { echo "setup: $*" >&2; }

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

have_torch() {
  python3 - "$TORCH_VERSION" <<'PY' 2>/dev/null
import sys, torch
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] else 1)
PY
}
if ! have_torch; then
  log "installing torch==${TORCH_VERSION} (pip)"
  pip_args=(-q --disable-pip-version-check)
  python3 -m pip install "${pip_args[@]}" "torch==${TORCH_VERSION}" numpy 2>/dev/null ||
    python3 -m pip install "${pip_args[@]}" --break-system-packages "torch==${TORCH_VERSION}" numpy ||
    { log "pip refused torch==${TORCH_VERSION}; falling back to Debian's libtorch-dev (older LibTorch)";
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libtorch-dev >/dev/null; }
fi
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q --disable-pip-version-check numpy
log "ready"
