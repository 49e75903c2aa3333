#!/usr/bin/env python3
"""Two mimic builds replaying the same captures, alternately, on a machine whose speed moves by
the minute: each round replays every capture once with each build, back to back, and the table
gives each build's median replayed step over the rounds, its ratio to the original's unprofiled
step (the capture's manifest), the after build's host-gap figures, and each build's page faults
per measured iteration beside the original's (the manifest's page_faults_per_step), with the
mean |log| of their ratio (+10 each: a few faults either way count little).

Usage: python3 bench/replay_ab.py --dir WORK --before BIN --after BIN [--rounds 5] [--only a,b]
                                  [--host-gaps recorded|none]
WORK is a capture folder of bench/fidelity/run.py (manifest.json and each model's traces)."""
import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile


def run_report(cmd, report):
    """Runs a mimic command that writes a JSON report to `report`; the report (exits on failure)."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr[-500:]}")
    with open(report) as f:
        return json.load(f)


def replay(mimic, work, name, warmup, iters, host_gaps):
    with tempfile.TemporaryDirectory() as d:
        report = os.path.join(d, "r.json")
        cmd = [mimic, "replay", os.path.join(work, f"{name}.et.json.gz"), "--warmup", str(warmup),
               "--iters", str(iters), "--report", report] + (["--host-gaps", host_gaps] if host_gaps else [])
        return run_report(cmd, report)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", default="")
    ap.add_argument("--host-gaps", default="", help="passed to mimic replay (default: its own)")
    args = ap.parse_args()
    with open(os.path.join(args.dir, "manifest.json")) as f:
        samples = {s["name"]: s for s in json.load(f)["samples"]}
    names = [n for n in samples if not args.only or n in args.only.split(",")]
    steps = {n: {"before": [], "after": []} for n in names}
    faults = {n: {"before": [], "after": []} for n in names}
    gaps = {}
    for _ in range(args.rounds):
        for n in names:
            for tag, mimic in (("before", args.before), ("after", args.after)):
                r = replay(mimic, args.dir, n, args.warmup, args.iters, args.host_gaps)
                steps[n][tag].append(r["iteration_ms"]["median"])
                faults[n][tag].append(r["memory"]["page_faults_per_iteration"])
                if tag == "after":
                    gaps.setdefault(n, []).append(r["host_gaps"])
    print("| model | original ms | before: replay ms | ratio | after: replay ms | ratio | "
          "after - before ms | host gaps ms | of which the replay's own work ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in names:
        orig = samples[n]["iteration_ms_median"]
        b, a = statistics.median(steps[n]["before"]), statistics.median(steps[n]["after"])
        own = statistics.median(g.get("own_work_ms_per_iteration", 0) for g in gaps[n])
        print(f"| {n} | {orig:.2f} | {b:.2f} | {b / orig:.3f} | {a:.2f} | {a / orig:.3f} | "
              f"{a - b:+.2f} | {gaps[n][0]['ms_per_iteration']:.2f} | {own:.2f} |")
    within = lambda tag: sum(abs(statistics.median(steps[n][tag]) / samples[n]["iteration_ms_median"] - 1) <= 0.05
                             for n in names)
    mean = lambda tag: statistics.mean(abs(statistics.median(steps[n][tag]) / samples[n]["iteration_ms_median"] - 1)
                                       for n in names)
    print(f"| **within +-5 %, mean \\|ratio - 1\\|** | | | {within('before')} of {len(names)}, "
          f"{100 * mean('before'):.1f} % | | {within('after')} of {len(names)}, {100 * mean('after'):.1f} % | | | |")
    # How far one build's rounds fall apart: (max - min) / median of its replayed steps.
    spread = lambda tag: statistics.mean((max(steps[n][tag]) - min(steps[n][tag])) / statistics.median(steps[n][tag])
                                         for n in names)
    print(f"\nspread of a model's rounds, (max - min) / median, mean over the models: before "
          f"{100 * spread('before'):.1f} %, after {100 * spread('after'):.1f} %")
    print("\n| model | original's faults a step | before: replay's | after: replay's |")
    print("|---|---:|---:|---:|")
    original = lambda n: samples[n].get("page_faults_per_step")
    for n in names:
        shown = lambda tag: "/".join(f"{f:.0f}" for f in faults[n][tag])
        print(f"| {n} | {original(n) if original(n) is not None else '-'} | {shown('before')} | {shown('after')} |")
    known = [n for n in names if original(n) is not None]
    off = lambda tag: statistics.mean(abs(math.log((statistics.median(faults[n][tag]) + 10) / (original(n) + 10)))
                                      for n in known)
    if known:
        print(f"| **mean \\|log(replay's / original's)\\|** | | {off('before'):.2f} | {off('after'):.2f} |")


if __name__ == "__main__":
    main()
