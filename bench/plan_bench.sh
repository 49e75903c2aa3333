#!/usr/bin/env bash
# End-to-end time of `mimic plan` on the fleet-samples manifest (docs/benchmarks.md): load the
# manifest, replay the four samples on this CPU (measured step times), predict them on the H200,
# draw 20,000 Poisson arrivals and simulate FIFO and SJF on today's cluster, the CPU host and the
# H200. Median wall time of N runs, and the parts the JSON report times (simulation).
# Usage: bench/plan_bench.sh [RUNS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
MIMIC=${MIMIC:-build/default/cli/mimic}
runs=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$runs" "$MIMIC" "$work" <<'PY'
import json, statistics, subprocess, sys, time
runs, mimic, work = int(sys.argv[1]), sys.argv[2], sys.argv[3]
cmd = [mimic, "plan", "fleet_samples/fleet.json", "--target", "cpu_host", "--target", "h200",
       "--report", f"{work}/plan.json", "--html", f"{work}/plan.html", "--quiet"]
wall, sim, sim_jobs = [], [], 0
for _ in range(runs):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall.append(time.perf_counter() - t0)
    with open(f"{work}/plan.json") as f:
        r = json.load(f)
    sim.append(r["simulation"]["seconds"])
    sim_jobs = r["simulation"]["simulated_jobs"]
print(f"command: {' '.join(cmd[:7])} --quiet")
print(f"| runs | median wall s | min s | max s | median simulation s | simulated jobs | jobs/s in simulation |")
print(f"|---|---|---|---|---|---|---|")
print(f"| {runs} | {statistics.median(wall):.2f} | {min(wall):.2f} | {max(wall):.2f} | "
      f"{statistics.median(sim):.3f} | {sim_jobs} | {sim_jobs / statistics.median(sim):.0f} |")
PY
