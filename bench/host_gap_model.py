#!/usr/bin/env python3
"""Host gaps without a Kineto trace (--host-gaps modelled) against the recorded ones, none, and
the original, on Kineto-linked captures that the per-issuer T1s were NOT measured on (the
built-in cpu_host's were measured on fleet_samples/). For each capture, in alternating rounds:
  recorded: mimic replay CAPTURE (its manifest links the Kineto trace: --host-gaps recorded)
  modelled: the ET alone, copied where no manifest links a Kineto trace (auto: modelled)
  none:     the same ET alone, --host-gaps none
and the model's end-to-end prediction (cpu_host) of the ET alone, with the per-issuer T1s and
without them (the same platform with t1_*_us cleared: its single t1_us), beside the prediction
with the Kineto trace. Prints a markdown table of medians over the rounds, ratio = replay or
prediction / the original's unprofiled median (the capture manifest's).

Usage: python3 bench/host_gap_model.py DIR [--rounds 3] [--iters 10] [--only a,b] [--threads T]
Environment: MIMIC (default build/default/cli/mimic)."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MIMIC = os.environ.get("MIMIC", os.path.join(ROOT, "build", "default", "cli", "mimic"))


def run(*args):
    r = subprocess.run([MIMIC, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"mimic {' '.join(args)}: exit {r.returncode}: {r.stderr[-500:]}")
    return r


def replay(trace, tmp, iters, threads, *flags):
    report = os.path.join(tmp, "r.json")
    run("replay", trace, "--device", "cpu", "--warmup", "2", "--iters", str(iters), *threads, *flags,
        "--report", report)
    with open(report) as f:
        rep = json.load(f)
    return rep["iteration_ms"]["median"], rep["host_gaps"]


def predict(trace, platform, *flags):
    return json.loads(run("predict", trace, "--platform", platform, *flags, "--json").stdout)["iteration_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", type=int, default=0, help="replay's intra-op threads (0: the capture's)")
    a = ap.parse_args()
    with open(os.path.join(a.dir, "manifest.json")) as f:
        samples = json.load(f)["samples"]
    if a.only:
        samples = [s for s in samples if s["name"] in a.only.split(",")]
    tmp = tempfile.mkdtemp(prefix="hostgaps.")
    with open(os.path.join(ROOT, "platforms", "cpu_host.json")) as f:
        p = json.load(f)
    for k in ("t1_forward_us", "t1_backward_us", "t1_optimizer_us"):
        p["cpu_overheads"].pop(k, None)
    p["sources"].pop("cpu_overheads.t1_by_issuer", None)
    single = os.path.join(tmp, "cpu_host_single_t1.json")
    with open(single, "w") as f:
        json.dump(p, f)
    print(f"load average at start: {os.getloadavg()}")
    print("| capture | original ms | replay recorded | modelled | none | gaps ms/step recorded, modelled |"
          " predict Kineto | predict ET alone, single t1_us | ET alone, per-issuer T1 |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
    for s in samples:
        name = s["name"]
        linked = os.path.join(a.dir, s["et"])
        bare = os.path.join(tmp, s["et"])
        shutil.copy(linked, bare)
        orig = s["iteration_ms_median"]
        t = {"recorded": [], "modelled": [], "none": []}
        g = {}
        for _ in range(a.rounds):
            for mode, trace, flags in (("recorded", linked, []), ("modelled", bare, []),
                                       ("none", bare, ["--host-gaps", "none"])):
                threads = ["--threads", str(a.threads)] if a.threads else []
                ms, gaps = replay(trace, tmp, a.iters, threads, *flags)
                if mode != "none" and gaps["mode"] != mode:
                    raise SystemExit(f"{name}: {mode} replay ran host gaps {gaps['mode']}")
                t[mode].append(ms)
                g[mode] = gaps["ms_per_iteration"]
        kin = predict(linked, "cpu_host", "--kineto", os.path.join(a.dir, s["kineto"]))
        p_single = predict(bare, single)
        p_issuer = predict(bare, "cpu_host")
        r = lambda v: f"{statistics.median(v) / orig:.3f}"
        print(f"| {name} | {orig:.2f} | {r(t['recorded'])} | {r(t['modelled'])} | {r(t['none'])} | "
              f"{g['recorded']:.2f}, {g['modelled']:.2f} | {kin / orig:.3f} | {p_single / orig:.3f} | "
              f"{p_issuer / orig:.3f} |", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
