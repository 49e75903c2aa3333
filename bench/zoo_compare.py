#!/usr/bin/env python3
"""`mimic compare` over every capture of a bench/fidelity/run.py run folder, each replayed now
and predicted with platform P: per model the prediction's error against the replay and the
original, and how fast the host ran P's GEMM points right after the replay against when P was
calibrated (compare's host_speed_after_replay; above 1: slower). Issue #16's CPU target (within
5 % of the replay after host calibration) read on one machine at one time; run it right after
`mimic calibrate` on a quiet machine. Markdown.

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
                rows[n].append((e["error_predicted_vs_replay"], e["error_predicted_vs_original"],
                                float(c["context"].get("host_speed_after_replay", "nan"))))
    print(f"{a.rounds} round(s) of {a.dir}, platform {a.platform}\n")
    print("| model | predicted vs replay | vs original | host speed after the replay |")
    print("|---|---:|---:|---:|")
    pct = lambda v: "/".join(f"{100 * x:+.1f} %" for x in v)
    for n in names:
        rep, orig, speed = zip(*rows[n])
        print(f"| {n} | {pct(rep)} | {pct(orig)} | {'/'.join(f'{s:.2f}' for s in speed)} |")
    med = {n: statistics.median(r[0] for r in rows[n]) for n in names}
    print(f"| **mean \\|error\\| vs replay (medians), within 5 %** | "
          f"{100 * statistics.mean(abs(v) for v in med.values()):.1f} %, "
          f"{sum(abs(v) <= 0.05 for v in med.values())} of {len(names)} | | |")


if __name__ == "__main__":
    main()
