#!/usr/bin/env python3
"""CPU prediction accuracy on models the model was never tuned on (docs/benchmarks.md section 5):
the fidelity zoo (bench/fidelity/zoo.py), captured on this machine, each replayed and predicted by
`mimic compare` with a fresh calibration of this host. Nothing in the calibration comes from the
zoo (the generic grid only, no --workload shapes), and nothing is tuned here.

The reference is the replay, two ways: its median wall-clock iteration, and its process's CPU
time per iteration (user + sys; with one intra-op thread, the replay's work without the time other
processes held the CPU on a shared machine; host-gap spins cut short by a preemption count less).

"before" prices the same calibration without the per-op constants the model gained in this
change (cpu_overheads.framework_us and the capture_* figures set to 0, the model's formula before it),
with the `mimic` given by --before-mimic (default: the same binary), beside the same replay.

Usage: python3 bench/zoo_model_accuracy.py --work DIR [--only a,b] [--capture] [--calibrate]
           [--threads 2] [--trials 7] [--iters 20] [--before-mimic PATH] [--reuse]
Environment: MIMIC (default build/default/cli/mimic)."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MIMIC = os.environ.get("MIMIC", os.path.join(ROOT, "build", "default", "cli", "mimic"))
DEFAULT = "gpt_mini,vit_tiny,moe,dlrm_adagrad,wide_deep,conv_ae,graph_sage,lstm_tagger"


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr[-800:]}")
    return r


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def pct(a, b):
    return None if a is None or not b else (a - b) / b


def fmt(e):
    return "—" if e is None else "%+.1f%%" % (100 * e)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--work", required=True)
    p.add_argument("--only", default=DEFAULT)
    p.add_argument("--capture", action="store_true", help="capture the models into --work first")
    p.add_argument("--calibrate", action="store_true", help="calibrate this host into --work first")
    p.add_argument("--threads", default="2")
    p.add_argument("--trials", default="7")
    p.add_argument("--iters", default="20")
    p.add_argument("--before-mimic", default=MIMIC)
    p.add_argument("--reuse", action="store_true", help="keep compare reports already in --work")
    a = p.parse_args()
    names = [n for n in a.only.split(",") if n]
    os.makedirs(a.work, exist_ok=True)
    if a.capture:
        print(f"capturing {a.only} (load {load()})", file=sys.stderr)
        run([sys.executable, os.path.join(ROOT, "bench", "fidelity", "zoo.py"), "--out", a.work, "--only", a.only,
             "--warmup-steps", "3", "--timed-steps", "10"])
    after, before = os.path.join(a.work, "cpu_host.json"), os.path.join(a.work, "cpu_host_before.json")
    if a.calibrate:
        print(f"calibrating (load {load()})", file=sys.stderr)
        run([MIMIC, "calibrate", "--threads", a.threads, "--statistic", "min", "--trials", a.trials, "-o", after])
    with open(after) as f:
        platform = json.load(f)
    for key in ("framework_us", "capture_cost_us", "capture_input_tensor_us", "capture_input_value_us",
                "capture_range_tensor_us", "capture_range_us_per_melem",
                "capture_range_strided_us_per_melem", "capture_saved_us_per_mb"):
        platform["cpu_overheads"].pop(key, None)
    with open(before, "w") as f:
        json.dump(platform, f)

    loads_path = os.path.join(a.work, "loads.json")
    loads = json.load(open(loads_path)) if os.path.exists(loads_path) else {}
    rows = []
    for name in names:
        trace = os.path.join(a.work, f"{name}.et.json.gz")
        report = os.path.join(a.work, f"{name}.compare.json")
        if not (a.reuse and os.path.exists(report)):
            loads[name] = load()
            print(f"compare {name} (load {loads[name]})", file=sys.stderr)
            run([MIMIC, "compare", trace, "--platform", after, "--warmup", "3", "--iters", a.iters, "--report", report])
            with open(loads_path, "w") as f:
                json.dump(loads, f)
        with open(report) as f:
            c = json.load(f)
        l = loads.get(name, "?")
        b = json.loads(run([a.before_mimic, "predict", trace, "--platform", before, "--json"]).stdout)
        rows.append((name, l, c, b))

    print("| model | load | replay ms (wall) | replay CPU ms | before: predicted ms | vs wall | vs CPU | "
          "after: predicted ms | vs wall | vs CPU | worst class after (replay ms, before, after) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    errs = {"before wall": [], "before cpu": [], "after wall": [], "after cpu": []}
    for name, l, c, b in rows:
        replay = c["end_to_end"]["replay_ms"]
        cpu = float(c["context"].get("replay_cpu_ms_per_iteration", "nan"))
        after_ms = c["end_to_end"]["predicted_ms"]
        e = {"before wall": pct(b["iteration_ms"], replay), "before cpu": pct(b["iteration_ms"], cpu),
             "after wall": pct(after_ms, replay), "after cpu": pct(after_ms, cpu)}
        for k, v in e.items():
            errs[k].append(abs(v))
        worst = None
        for cls, v in c["op_classes"].items():
            if v.get("replay_ms") is None or v["replay_ms"] < 0.1 * replay:
                continue
            err = pct(v["predicted_ms"], v["replay_ms"])
            if worst is None or abs(err) > abs(worst[1]):
                worst = (cls, err, v["replay_ms"], pct(b["by_class"].get(cls, {}).get("predicted_ms"), v["replay_ms"]))
        wc = "—" if worst is None else f"{worst[0]} ({worst[2]:.2f}, {fmt(worst[3])}, {fmt(worst[1])})"
        print(f"| {name} | {l} | {replay:.2f} | {cpu:.2f} | {b['iteration_ms']:.2f} | {fmt(e['before wall'])} | "
              f"{fmt(e['before cpu'])} | {after_ms:.2f} | {fmt(e['after wall'])} | {fmt(e['after cpu'])} | {wc} |")
    n = len(rows)
    mean = {k: "%.1f%%" % (100 * sum(v) / n) for k, v in errs.items()}
    print(f"| mean \\|error\\| | | | | | {mean['before wall']} | {mean['before cpu']} | | {mean['after wall']} | "
          f"{mean['after cpu']} | |")
    within = {k: sum(x <= 0.05 for x in v) for k, v in errs.items()}
    print(f"\nwithin 5% of the replay (wall / CPU): before {within['before wall']} / {within['before cpu']} of {n}, "
          f"after {within['after wall']} / {within['after cpu']} of {n}")

    classes = sorted({cls for _, _, c, _ in rows for cls in c["op_classes"]})
    print("\nPer op class, replay ms / before / after (signed error of the prediction against the replay):\n")
    print("| model | " + " | ".join(classes) + " |")
    print("|---|" + "---|" * len(classes))
    for name, _, c, b in rows:
        cells = []
        for cls in classes:
            v = c["op_classes"].get(cls)
            if not v or v.get("replay_ms") is None:
                cells.append("—")
                continue
            cells.append(f"{v['replay_ms']:.2f} / {fmt(pct(b['by_class'].get(cls, {}).get('predicted_ms'), v['replay_ms']))}"
                         f" / {fmt(pct(v['predicted_ms'], v['replay_ms']))}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
