#!/usr/bin/env bash
# Comm-only replay of the multi-rank fleet samples: each collective of the first profiled step
# run alone on buffers of its recorded size (nccl-tests style), on N local ranks over Gloo, and
# the full replay's time for it (issue to completion, overlapping the compute as the job did),
# next to the time the original trace recorded for it (its gloo:* span in the Kineto trace). A
# rank's span also holds its wait for the slower ranks; the last rank to arrive waits for no one,
# so the minimum over ranks is the closest the traces come to the collective's own time.
# Prints one markdown table per world size (docs/benchmarks.md).
# Usage: bench/comm_replay.sh [ITERS]   (default 20 measured iterations)
set -euo pipefail
cd "$(dirname "$0")/.."
MIMIC=${MIMIC:-$PWD/build/default/cli/mimic}
iters=${1:-20}
work=$(mktemp -d)
for world in 2 4; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  for mode in comm full; do
    python3 -m torch.distributed.run --nproc-per-node "$world" --master-port "$port" --no-python \
      "$MIMIC" replay --trace-dir "fleet_samples/ddp_mlp_${world}r" --mode "$mode" --warmup 3 --iters "$iters" \
      --timeout 120 --report "$work/$mode-$world-{rank}.json" >"$work/$mode-$world.log" 2>&1
  done
  python3 - "$work" "$world" <<'PY'
import json, statistics, sys
work, world = sys.argv[1], int(sys.argv[2])
reports = [json.load(open(f"{work}/comm-{world}-{r}.json")) for r in range(world)]
full = [json.load(open(f"{work}/full-{world}-{r}.json")) for r in range(world)]
full_us = {}
for rep in full:
    for row in rep["collectives"]["per_size"]:
        full_us.setdefault((row["type"], row["size_bytes"], row["dtype"]), []).append(row["time_us"])
print(f"\n{world} ranks (gloo, loopback), comm mode, {len(reports[0]['iteration_ms']['samples'])} iterations; "
      "time = median over ranks of each rank's median")
print("| collective | size (B) | dtype | calls/step | comm-only time (us) | algbw (GB/s) | busbw (GB/s) | full replay, issue to end (us) | original span, median over ranks (us) | original span, min over ranks (us) | issued = trace |")
print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")
rows = {}
for rep in reports:
    for row in rep["collectives"]["per_size"]:
        rows.setdefault((row["type"], row["size_bytes"], row["dtype"]), []).append(row)
ok = all(r["collectives"]["issued"] == r["collectives"]["expected"]["issued"] and
         r["collectives"]["bytes"] == r["collectives"]["expected"]["bytes"] for r in reports)
for (kind, size, dtype), rs in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    t = statistics.median(r["time_us"] for r in rs)
    factor = 2 * (world - 1) / world if kind == "all_reduce" else (world - 1) / world if kind in ("all_gather", "reduce_scatter", "all_to_all") else 1
    orig = [r["original_us"] for r in rs if r["original_us"] is not None]
    algbw = size / t / 1e3
    print(f"| {kind} | {size} | {dtype} | {rs[0]['calls']} | {t:.1f} | {algbw:.3f} | {algbw * factor:.3f} | "
          f"{statistics.median(full_us[(kind, size, dtype)]):.1f} | "
          f"{statistics.median(orig):.1f} | {min(orig):.1f} | {'yes' if ok else 'NO'} |")
PY
done
