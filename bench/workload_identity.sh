#!/usr/bin/env bash
# Checks that two builds of `mimic` read every trace at hand into the same workload: for a change
# to a reader that must not change what it reads. Each execution trace in ../shared/traces,
# fleet_samples and tests/data is converted alone and with its Kineto trace, and each Kineto
# trace alone, by both binaries (`mimic convert`, whose output is deterministic); the files are
# compared byte for byte. An input both refuse counts as the same when the messages agree.
#
#   bench/workload_identity.sh OLD_MIMIC NEW_MIMIC
#
# OLD_MIMIC is typically main's, built in a worktree:
#   git worktree add /tmp/base main && cmake -S /tmp/base -B /tmp/base/build \
#     -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/base/build --target mimic
# Prints one line per input that differs and a closing count; exits 1 when any differs.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: $0 OLD_MIMIC NEW_MIMIC" >&2; exit 2; }
old=$1 new=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# "ET KINETO" pairs, KINETO "-" for none: each execution trace alone and with its Kineto trace,
# then each Kineto trace alone.
inputs() {
  local et k
  for et in $(find ../shared/traces fleet_samples tests/data \( -name '*et.json*' -o -name '*.et' \) \
    -not -name fleet.json | sort); do
    echo "$et -"
    for k in "${et/.et.json/.kineto.json}" "${et/_et.json/_kineto.json}"; do
      [ "$k" != "$et" ] && [ -f "$k" ] && echo "$et $k"
    done
  done
  for k in $(find ../shared/traces fleet_samples tests/data -name '*kineto*.json*' | sort); do
    echo "$k -"
  done
}

# convert BINARY OUT TRACE KINETO: the workload file, or the error message in its place.
convert() {
  local args=("$3" -o "$2")
  [ "$4" != - ] && args+=(--kineto "$4")
  "$1" convert "${args[@]}" >/dev/null 2>"$2.err" || cp "$2.err" "$2"
}

n=0 differ=0
while read -r et k; do
  n=$((n + 1))
  convert "$old" "$work/old.mimic" "$et" "$k"
  convert "$new" "$work/new.mimic" "$et" "$k"
  if ! cmp -s "$work/old.mimic" "$work/new.mimic"; then
    differ=$((differ + 1))
    echo "differs: $et $k"
  fi
done < <(inputs)
echo "$((n - differ)) identical, $differ differ (of $n inputs)"
[ "$differ" -eq 0 ]
