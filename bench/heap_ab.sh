#!/usr/bin/env bash
# Heap kept vs glibc's trimming (`mimic replay --heap-trim`), on captures that
# bench/replay_fidelity.sh left behind: each capture replayed once each way, back to back, and
# a table of the replay/original ratios and page faults per sample (docs/benchmarks.md §2).
#
# Usage: bench/heap_ab.sh WORK_DIR...   (the WORK folders of replay_fidelity.sh runs)
# Environment: MIMIC (default build/default/cli/mimic), WARMUP (3), ITERS (20).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MIMIC="${MIMIC:-$ROOT/build/default/cli/mimic}"
[[ $# -gt 0 ]] || { echo "usage: bench/heap_ab.sh WORK_DIR..." >&2; exit 2; }
OUT="$(mktemp -d "${TMPDIR:-/tmp}/mimic_heap_ab.XXXXXX")"
for work in "$@"; do
  for et in "$work"/*.et.json.gz; do
    name="$(basename "$et" .et.json.gz)"
    for mode in kept trim; do
      flag=(); [[ $mode == trim ]] && flag=(--heap-trim)
      "$MIMIC" replay "$et" --kineto "$work/$name.kineto.json.gz" --warmup "${WARMUP:-3}" --iters "${ITERS:-20}" \
        "${flag[@]}" --report "$OUT/$(basename "$work").$name.$mode.json" >/dev/null 2>"$OUT/last.log" ||
        { cat "$OUT/last.log" >&2; exit 1; }
    done
  done
done
python3 - "$OUT" <<'PY'
import collections, glob, json, os, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    _, name, mode, _ = os.path.basename(path).rsplit(".", 3)
    r = json.load(open(path))
    rss = lambda s: (s or {}).get("peak_rss_bytes", 0) / 2**20
    rows[name][mode].append((r["ratio"], r["memory"]["page_faults_per_iteration"],
                             r["original"].get("page_faults_per_iteration"),
                             rss(r["system"]["replay"]), rss(r["system"]["original"])))
print("| sample | ratio median (range), heap kept | ratio median (range), `--heap-trim` | "
      "replay faults per iteration, kept / trim | original faults per step | "
      "peak RSS MiB, kept / trim / original |")
print("|---|---|---|---|---|---|")
for name, m in rows.items():
    def ratios(mode):
        v = [x[0] for x in m[mode]]
        return "%.3f (%.3f-%.3f)" % (statistics.median(v), min(v), max(v))
    def faults(mode):
        v = [x[1] for x in m[mode]]
        return "%.0f-%.0f" % (min(v), max(v))
    orig = [x[2] for x in m["kept"] if x[2] is not None]
    peak = lambda mode, k: "%.0f" % max(x[k] for x in m[mode])
    print("| %s | %s | %s | %s / %s | %s | %s / %s / %s |" % (name, ratios("kept"), ratios("trim"), faults("kept"), faults("trim"),
          "%.0f-%.0f" % (min(orig), max(orig)) if orig else "-", peak("kept", 3), peak("trim", 3), peak("kept", 4)))
PY
