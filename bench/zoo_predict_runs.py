#!/usr/bin/env python3
"""Prediction error over fidelity runs, with and without some platform figures (issue #16).

`bench/fidelity/run.py --runs N --work W` captures every zoo model fresh, each in a process of its
own, and replays each capture at once (W/runK/MODEL.replay.json). This predicts every capture
with platform P and with P less the figures --without names (dotted paths, as
bench/zoo_predict_ab.py's --before-without), and prints per model the median over the runs of
the prediction's error against the replay and against the original (the capture's unprofiled
step median), then the mean |error| and how many models come within 5 %. Markdown.

  python3 bench/zoo_predict_runs.py --work /tmp/fidI --platform P.json \\
      --without cpu_overheads.page_fault_us
"""
import argparse, glob, json, os, statistics, subprocess, tempfile


def predict(binary, platform, d, n):
    r = subprocess.run([binary, "predict", f"{d}/{n}.et.json.gz", "--kineto", f"{d}/{n}.kineto.json.gz",
                        "--platform", platform, "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def without(platform, paths, tmp):
    """A copy of `platform` with each dotted path of `paths` removed; its file name."""
    with open(platform) as f:
        p = json.load(f)
    for path in paths:
        *parents, leaf = path.split(".")
        node = p
        for key in parents:
            node = node.get(key, {})
        node.pop(leaf, None)
    out = os.path.join(tmp, "without.json")
    with open(out, "w") as f:
        json.dump(p, f)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="bench/fidelity/run.py's --work folder (its run* folders)")
    ap.add_argument("--platform", required=True)
    ap.add_argument("--without", required=True, help="comma-separated dotted paths left out of the 'before' platform")
    ap.add_argument("--mimic", default="build/default/cli/mimic")
    a = ap.parse_args()
    runs = sorted(glob.glob(os.path.join(a.work, "run*")))
    models = sorted({os.path.basename(f)[:-len(".replay.json")] for r in runs
                     for f in glob.glob(os.path.join(r, "*.replay.json"))})
    with tempfile.TemporaryDirectory() as tmp:
        plats = {"without": without(a.platform, a.without.split(","), tmp), "with": a.platform}
        print(f"{len(runs)} runs of {a.work}; errors are medians over the runs, (predicted - x) / x\n")
        print("| model | original's faults a step | without: vs replay | vs original | with: vs replay | vs original |")
        print("|---|---:|---:|---:|---:|---:|")
        summary = {k: ([], []) for k in plats}
        for n in models:
            errs = {k: ([], []) for k in plats}
            faults = []
            for d in runs:
                path = os.path.join(d, f"{n}.replay.json")
                if not os.path.exists(path):
                    continue
                with open(path) as f:
                    r = json.load(f)
                replay, original = r["iteration_ms"]["median"], r.get("original_iteration_ms")
                faults.append(r.get("original", {}).get("page_faults_per_iteration") or 0)
                for k, platform in plats.items():
                    ms = predict(a.mimic, platform, d, n)["iteration_ms"]
                    errs[k][0].append(ms / replay - 1)
                    if original:
                        errs[k][1].append(ms / original - 1)
            cells = []
            for k in plats:
                for i in (0, 1):
                    e = statistics.median(errs[k][i]) if errs[k][i] else None
                    if e is not None:
                        summary[k][i].append(abs(e))
                    cells.append(f"{100 * e:+.1f}%" if e is not None else "-")
            print(f"| {n} | {statistics.median(faults):.0f} | " + " | ".join(cells) + " |")
        cells = []
        for k in plats:
            for i in (0, 1):
                v = summary[k][i]
                cells.append(f"{100 * statistics.mean(v):.1f} %, {sum(x <= 0.05 for x in v)} of {len(v)}"
                             if v else "-")
        print("| mean \\|error\\|, within 5 % | | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
