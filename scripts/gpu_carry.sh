#!/usr/bin/env bash
# Gathers what scripts/gpu_check.sh needs on a GPU machine that has no package registries (it has
# the NVIDIA driver, CUDA's nvcc, CMake and python3 with a CUDA torch): the C++ build's
# dependencies from this machine's Debian packages (headers, shared libraries, CMake configs,
# protoc) into .gpu_carry/prefix, and the public traces into .gpu_carry/traces. Run it here
# (after scripts/setup.sh), then let .gpu_carry travel with the tree (it is git-ignored):
#   scripts/gpu_carry.sh && <device tool> run --carry .gpu_carry 'scripts/gpu_check.sh'
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.gpu_carry
rm -rf "$dest"
mkdir -p "$dest/prefix"
packages=(libprotobuf-dev libprotobuf32 protobuf-compiler libprotoc32 libsimdjson-dev libsimdjson14
  libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian libgloo-dev)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "gpu_carry: $p is not installed here: run scripts/setup.sh first" >&2; exit 2; }
  # Headers, libraries (and their links) and CMake configs keep their layout under /usr, so
  # the configs stay relocatable; static archives with a shared library beside them stay behind.
  dpkg -L "$p" | while read -r f; do
    [ -f "$f" ] || [ -L "$f" ] || continue
    case "$f" in
      /usr/share/* | /usr/src/* | /usr/lib/x86_64-linux-gnu/libproto*.a) continue ;;
    esac
    rel=${f#/usr/}
    mkdir -p "$dest/prefix/$(dirname "$rel")"
    cp -a "$f" "$dest/prefix/$rel"
  done
done
# zlib's and OpenSSL's headers, for an image whose system has the libraries but not their
# headers: gpu_check.sh uses them only then, linking the system's own libraries.
for p in zlib1g-dev libssl-dev; do
  dpkg -L "$p" | grep '^/usr/include/.*\.h$' | while read -r f; do
    mkdir -p "$dest/sysdev/$(dirname "${f#/usr/}")"
    cp -a "$f" "$dest/sysdev/${f#/usr/}"
  done
done
traces=${TRACES:-../shared/traces}
[ -d "$traces" ] && cp -r "$traces" "$dest/traces"
du -sh "$dest" | awk '{print "gpu_carry: " $1 " in .gpu_carry (the tree travels up to 64 MiB)"}' >&2
