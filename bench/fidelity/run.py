#!/usr/bin/env python3
"""Fidelity over the zoo (bench/fidelity/zoo.py): each run captures every model fresh on this
machine and replays each capture at once with `mimic replay` (same torch, same threads); prints
one markdown table per run and a summary of the median ratio over the runs. The per-op
attribution is the three op names whose replay time differs most from the original's spans on
the capture's host timeline (under the whole capture where it has none); the system figures
are both processes' per step (getrusage). Nothing is tuned here.

With --baseline BIN, each capture is also replayed by another mimic binary (an older build, say),
right before or after (the two take turns going first, run by run), and the table sets its ratio
beside this one's: a change measured side by side on the same captures in one run.

Each model is captured in a process of its own and replayed right after; --one-process captures
them all in one process first (as before 2026-11-27).

Usage: python3 bench/fidelity/run.py [--runs 5] [--only a,b] [--work DIR] [--host-gaps recorded|none]
                                     [--baseline BIN] [--one-process]
Environment: MIMIC (default build/default/cli/mimic)."""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MIMIC = os.environ.get("MIMIC", os.path.join(ROOT, "build", "default", "cli", "mimic"))


def replay(work: str, name: str, args: argparse.Namespace, mimic: str = MIMIC, tag: str = "") -> dict:
    report = os.path.join(work, f"{name}.replay{tag}.json")
    cmd = [mimic, "replay", os.path.join(work, f"{name}.et.json.gz"), "--warmup", str(args.warmup),
           "--iters", str(args.iters), "--host-gaps", args.host_gaps, "--report", report]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr[-500:]}")
    with open(report) as f:
        return json.load(f)


def attribution(rep: dict) -> str:
    """The three op names whose replay time differs most from the original's: its spans on the
    capture's host timeline where it has one (marked "timeline"), else under the whole capture
    (inflated several-fold by the observer)."""
    timeline = any(op.get("original_timeline_ms") is not None for op in rep["ops"])
    key = "original_timeline_ms" if timeline else "original_profiled_ms"
    diffs = [(op["replay_ms"] - op[key], op["name"]) for op in rep["ops"]
             if op.get("replay_ms") is not None and op.get(key) is not None]
    diffs.sort(key=lambda d: -abs(d[0]))
    where = " (timeline)" if timeline else ""
    return ", ".join(f"{n.removeprefix('aten::')} {d:+.2f}" for d, n in diffs[:3]) + where


def sqrt_ms(rep: dict) -> str:
    """The optimizer's sqrt (aten::sqrt, aten::_foreach_sqrt): its replay time against its time on
    the capture's host timeline, per iteration, and how many prepared tensors the replay filled
    with the capture's value profile (docs/replay.md, Input values)."""
    rows = [f"{op['replay_ms']:.2f}/{op['original_timeline_ms']:.2f} "
            f"({op['replay_ms'] / op['original_timeline_ms']:.2f})" for op in rep["ops"]
            if op["name"] in ("aten::sqrt", "aten::_foreach_sqrt") and op.get("replay_ms") is not None
            and op.get("original_timeline_ms")]
    filled = (rep["memory"].get("input_values") or {}).get("leaves")  # None: a build without it
    return (", ".join(rows) or "-") + ("" if filled is None else f" ({filled} filled)")


def system(s: dict | None) -> str:
    if not s:
        return "-"
    return f"{s['cpu_utilization']:.2f} cores, {s['minor_faults']:.0f} flt, {s['peak_rss_bytes'] / 2**20:.0f} MiB"


def capture_cost(rep: dict) -> str:
    """The capture's cost per event boundary the replay took off the recorded gaps (and the host
    timeline's, where the gaps came from it), and where it came from: this VM's figure moves by
    2x between minutes (docs/benchmarks.md §2)."""
    g = rep.get("host_gaps") or {}
    if g.get("mode") != "recorded":
        return "-"
    source = g.get("capture_cost_from", "")
    where = ("capture time" if source.startswith("measured at capture time") else
             "replay setup" if source == "measured at setup" else source.split(" (")[0])
    timeline = g.get("timeline")
    backward = g.get("capture_timeline_backward_boundary_us", 0)
    on_timeline = (f", timeline {g['capture_timeline_boundary_us']:.2f} us"
                   + (f" ({backward:.2f} in a backward)" if backward > 0 else "")
                   if timeline and timeline["ops"] and "not used" not in timeline["source"] else "")
    return f"{g['capture_cost_us']:.2f} us{on_timeline} ({where})"


def cpu_ratio(rep: dict) -> str:
    """Replay CPU time per iteration / original CPU time per step (user + sys, getrusage): on a
    machine shared with other jobs, less disturbed by time slicing than wall time is (with one
    intra-op thread; with more, idle threads spin at barriers while others wait for a CPU)."""
    r, o = rep["system"]["replay"], rep["system"]["original"]
    if not r or not o or not o.get("cpu_user_ms"):
        return "-"
    return f"{(r['cpu_user_ms'] + r['cpu_sys_ms']) / (o['cpu_user_ms'] + o['cpu_sys_ms']):.3f}"


def drift(rep: dict) -> str:
    """How far the original's unprofiled step moved from before its profiled steps to right after
    them: this machine's own drift during the capture, against which a ratio can be read."""
    d = rep["original"].get("drift")
    return "-" if d is None else f"{d * 100:+.0f}%"


def capture(work: str, names: list[str]) -> None:
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "fidelity", "zoo.py"), "--out", work,
                    "--only", ",".join(names)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_run(k: int, args: argparse.Namespace, names: list[str]) -> dict[str, tuple[float, float | None]]:
    work = os.path.join(args.work, f"run{k}")
    os.makedirs(work, exist_ok=True)
    if args.one_process:
        capture(work, names)
    ratios = {}
    start = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    when = "after the captures" if args.one_process else "at the start"
    print(f"\n### Run {k} ({start}, 1-minute load {os.getloadavg()[0]:.2f} {when})\n")
    base_col = " baseline ratio |" if args.baseline else ""
    print(f"| model | original ms | original's drift | replay ms | ratio |{base_col} CPU ratio | coverage |"
          " capture's cost taken off | largest per-op differences (ms) | sqrt replay/timeline ms |"
          " original system | replay system |")
    print("|---|---:|---:|---:|---:|" + ("---:|" if args.baseline else "") + "---:|---|---|---|---|---|---|")
    for name in names:
        # Each model in a process of its own, as its replay runs in one: a process that already
        # trained other models has another heap and RSS (cnn_bf16, captured tenth, replayed
        # 0.68-1.01x its original that way). Then its replay, at once.
        if not args.one_process:
            capture(work, [name])
        # The two builds take turns going first, so that neither always meets the machine as the
        # other one left it.
        if args.baseline and k % 2 == 0:
            base_rep = replay(work, name, args, args.baseline, ".baseline")
            rep = replay(work, name, args)
        else:
            rep = replay(work, name, args)
            base_rep = replay(work, name, args, args.baseline, ".baseline") if args.baseline else None
        base = base_rep["ratio"] if base_rep else None
        sqrt_cell = sqrt_ms(rep) + (f"; baseline {sqrt_ms(base_rep)}" if base_rep else "")
        ratio = rep["ratio"]
        ratios[name] = (ratio, base)
        cov = rep["coverage"]
        base_cell = f" {base:.3f} |" if args.baseline else ""
        print(f"| {name} | {rep['original_iteration_ms']:.2f} | {drift(rep)} | {rep['iteration_ms']['median']:.2f} | "
              f"{ratio:.3f} |{base_cell} {cpu_ratio(rep)} | {cov['replayed']}/{cov['total']} | {capture_cost(rep)} | "
              f"{attribution(rep)} | {sqrt_cell} | "
              f"{system(rep['system']['original'])} | {system(rep['system']['replay'])} |", flush=True)
    return ratios


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--only", default="")
    p.add_argument("--work", default="")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--host-gaps", default="recorded", choices=("recorded", "none"))
    p.add_argument("--baseline", default="", help="another mimic binary to replay each capture with too")
    p.add_argument("--one-process", action="store_true",
                   help="capture every model in one process before any replay (the harness before "
                        "2026-11-27), not each in its own process right before its replay")
    args = p.parse_args()
    args.work = args.work or tempfile.mkdtemp(prefix="mimic_zoo.")
    listed = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "fidelity", "zoo.py"), "--list"],
                            check=True, capture_output=True, text=True).stdout.split()
    names = [n for n in args.only.split(",") if n] or listed
    print(f"captures and reports in {args.work}; host gaps {args.host_gaps}", file=sys.stderr)
    runs = [one_run(k + 1, args, names) for k in range(args.runs)]
    print("\n### Median over the runs\n")
    print("| model | median ratio | within +-5% |" + (" baseline median ratio | within +-5% |" if args.baseline else ""))
    print("|---|---:|---|" + ("---:|---|" if args.baseline else ""))
    within = lambda m: "yes" if abs(m - 1) <= 0.05 else "no"
    sides = [0, 1] if args.baseline else [0]
    medians = {name: [statistics.median(r[name][k] for r in runs) for k in sides] for name in names}
    for name in names:
        print(f"| {name} | " + " | ".join(f"{m:.3f} | {within(m)}" for m in medians[name]) + " |")
    # Over the models: how many land within +-5 %, and the mean distance of the ratio from 1.
    counts = [sum(abs(medians[n][k] - 1) <= 0.05 for n in names) for k in range(len(sides))]
    means = [statistics.mean(abs(medians[n][k] - 1) for n in names) for k in range(len(sides))]
    print("| **within +-5 %, mean \\|ratio - 1\\|** | " + " | ".join(
        f"{c} of {len(names)} | {m:.3f}" for c, m in zip(counts, means)) + " |")


if __name__ == "__main__":
    main()
