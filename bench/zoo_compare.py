#!/usr/bin/env python3
"""`mimic compare` over every capture of a bench/fidelity/run.py run folder, each replayed now
and predicted with platform P: per model the prediction's error against the replay and the
original, and how fast the host ran P's GEMM points right after the replay against when P was
calibrated (compare's host_speed_after_replay; above 1: slower), and the error against the replay
with the prediction priced at the replay's own page faults (end_to_end.page_faults: by default
the replay takes the original's count, with --heap-trim as many as glibc's heap makes), each
side's faults beside it. Issue #16's CPU target
(within 5 % of the replay after host calibration) read on one machine at one time; run it right
after `mimic calibrate` on a quiet machine. Markdown.

  python3 bench/zoo_compare.py --dir /tmp/fidJ/run2 --platform P.json [--rounds 2]
"""
import argparse, glob, os, statistics, tempfile

from replay_ab import run_report


def compare(mimic, d, name, platform, out):
    return run_report([mimic, "compare", f"{d}/{name}.et.json.gz", "--kineto", f"{d}/{name}.kineto.json.gz",
                       "--platform", platform, "--report", out], out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="a capture folder of bench/fidelity/run.py")
    ap.add_argument("--platform", required=True)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--mimic", default="build/default/cli/mimic")
    a = ap.parse_args()
    names = sorted(os.path.basename(f)[:-len(".et.json.gz")] for f in glob.glob(f"{a.dir}/*.et.json.gz"))
    rows = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.rounds):
            for n in names:
                c = compare(a.mimic, a.dir, n, a.platform, os.path.join(tmp, "c.json"))
                e = c["end_to_end"]
                f = e.get("page_faults") or {}
                rows[n].append((e["error_predicted_vs_replay"], e["error_predicted_vs_original"],
                                float(c["context"].get("host_speed_after_replay", "nan")),
                                f.get("error_predicted_vs_replay_at_replays"),
                                (f.get("original_per_iteration"), f.get("replay_per_iteration"))))
    print(f"{a.rounds} round(s) of {a.dir}, platform {a.platform}\n")
    print("| model | predicted vs replay | vs original | host speed after the replay "
          "| vs replay at its page faults | page faults a step: original, replay |")
    print("|---|---:|---:|---:|---:|---:|")
    pct = lambda v: "/".join("-" if x is None else f"{100 * x:+.1f} %" for x in v)
    num = lambda x: "-" if x is None else f"{x:.0f}"
    for n in names:
        rep, orig, speed, at_faults, faults = zip(*rows[n])
        counts = "/".join(f"{num(o)}, {num(r)}" for o, r in faults)
        print(f"| {n} | {pct(rep)} | {pct(orig)} | {'/'.join(f'{s:.2f}' for s in speed)} "
              f"| {pct(at_faults)} | {counts} |")
    for col, label in ((0, "vs replay"), (3, "vs replay at its page faults")):
        med = [statistics.median(r[col] for r in rows[n]) for n in names
               if all(r[col] is not None for r in rows[n])]
        if med:
            print(f"\nmean |error| {label} (medians over rounds): "
                  f"{100 * statistics.mean(abs(v) for v in med):.1f} %, "
                  f"{sum(abs(v) <= 0.05 for v in med)} of {len(med)} within 5 %")


if __name__ == "__main__":
    main()
