"""Markdown tables from bench/model_accuracy.sh's compare reports: end to end and per op class."""
import json
import math
import os
import sys


def pct(v):
    return "—" if v is None else "%+.1f%%" % (100 * v)


def ms(v):
    return "—" if v is None else "%.2f" % v


def main():
    out, samples = sys.argv[1], sys.argv[2:]
    loads = {}
    if os.path.exists(os.path.join(out, "loads.txt")):
        with open(os.path.join(out, "loads.txt")) as f:
            for line in f:
                p, s, l = line.split()
                loads[(p, s)] = l
    for platform in ("cpu_host", "cpu_host_grid"):
        reports = {}
        for s in samples:
            path = os.path.join(out, "%s.%s.json" % (platform, s))
            if os.path.exists(path):
                with open(path) as f:
                    reports[s] = json.load(f)
        if not reports:
            continue
        print("\n### Platform `%s`\n" % platform)
        print("| sample | load avg | original ms | replay ms | predicted ms | replay vs original | predicted vs replay | predicted vs original | geomean \\|pred vs replay\\| over classes |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        abs_pr, abs_po = [], []
        for s, r in reports.items():
            e = r["end_to_end"]
            g = r["geomean_abs_error"]["predicted_vs_replay"]
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                s, loads.get((platform, s), "?"), ms(e["original_ms"]), ms(e["replay_ms"]), ms(e["predicted_ms"]), pct(e["error_replay_vs_original"]),
                pct(e["error_predicted_vs_replay"]), pct(e["error_predicted_vs_original"]),
                "—" if g is None else "%.1f%%" % (100 * g)))
            if e["error_predicted_vs_replay"] is not None:
                abs_pr.append(abs(e["error_predicted_vs_replay"]))
            if e["error_predicted_vs_original"] is not None:
                abs_po.append(abs(e["error_predicted_vs_original"]))
        if abs_pr:
            print("| mean \\|error\\| | | | | | | %.1f%% | %.1f%% | |" % (100 * sum(abs_pr) / len(abs_pr), 100 * sum(abs_po) / max(len(abs_po), 1)))
        print("\nPer op class, predicted vs replay (ms, signed error); classes above 10% of the replayed step in bold:\n")
        classes = sorted({c for r in reports.values() for c in r["op_classes"]})
        print("| sample | " + " | ".join(classes) + " |")
        print("|---|" + "---:|" * len(classes))
        for s, r in reports.items():
            total = r["end_to_end"]["replay_ms"] or 0
            cells = []
            for c in classes:
                v = r["op_classes"].get(c)
                if not v or v["replay_ms"] is None:
                    cells.append("—")
                    continue
                cell = "%s / %s = %s" % (ms(v["predicted_ms"]), ms(v["replay_ms"]), pct(v["error_predicted_vs_replay"]))
                cells.append("**%s**" % cell if total and v["replay_ms"] > 0.1 * total else cell)
            print("| %s | %s |" % (s, " | ".join(cells)))
        ctx = next(iter(reports.values()))["context"]
        print("\nPlatform calibrated at %s on %s." % (ctx["platform_calibrated_at"], ctx["platform_calibrated_on"]))


if __name__ == "__main__":
    main()
