#!/usr/bin/env python3
"""GPU fidelity benchmark: each captured sample replayed at once on the same GPU, side by side.

For every sample of a capture manifest (scripts/capture_gpu_samples.py) it replays the execution
trace with its Kineto trace on the device, as the capture ran it: once plain, timed like the
original's unprofiled steps, and once under the profiler (`mimic replay --per-op --profile`),
read like the original's profiled steps. It sets the original beside the replay:

  iteration time  the original's unprofiled, GPU-synchronized step times (manifest) against the
                  plain replay's CUDA-event iteration times; ratio = replay median / original median;
                  and against a third replay with `--host-gaps none` (ops back to back: how much of
                  the replay's time is the recorded host gaps it waits)
  GPU active time per iteration: the union of the kernel, memcpy and memset intervals of each
                  ProfilerStep#N, from the original's Kineto trace and from the replay's profile
                  (the same code reads both); a device event belongs to the step during which the
                  host launched it (its runtime call, by correlation id), since the device runs
                  behind the host; median over steps
  predicted       the model's GPU active time for the GPU the Kineto trace names, against the
                  original's (`mimic predict --json`, which also gives the op classes below)
  kernel time per op class: each kernel's time attributed to the top-level op that launched it
                  (the outermost cpu_op around its launching op, on the launching thread), classed
                  by Mimic's own op table (`mimic predict --json` on the trace: op name -> class)
  peak memory     the caching allocator's peak: torch.cuda.max_memory_allocated() in the capture,
                  the executor's figure in the replay
  NVML            SM utilisation, power, SM clock during the timed steps (capture: pynvml; replay:
                  the executor's sampler)

  python3 bench/gpu_fidelity.py --samples DIR --mimic build/default/cli/mimic --work DIR \
      [--device cuda] [--json OUT.json] [--markdown OUT.md]
  python3 bench/gpu_fidelity.py --samples DIR --mimic build/default/cli/mimic --original-only
      (the originals' side alone, from the stored traces: no GPU needed)
  python3 bench/gpu_fidelity.py --samples DIR --mimic build/default/cli/mimic --kernels aten::linear
      (the kernels each call of an op ran in the original: no GPU needed)
"""

import argparse
import bisect
import gzip
import json
import re
import os
import statistics
import subprocess
import sys
from collections import defaultdict

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def fit_and_judge_args(description=None):
    """The arguments of a script that fits a platform figure on one H200 capture and judges it on
    another (--fit, --judge, --platform), and the platform's SM cycles a second (SMs x boost
    clock): (args, sm_hz)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--fit", default="resnet50_b128")
    ap.add_argument("--judge", default="resnet50_b64")
    ap.add_argument("--platform", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "..", "platforms", "h200.json"))
    a = ap.parse_args()
    with open(a.platform) as f:
        p = json.load(f)
    return a, p["sm_count"] * p["boost_clock_mhz"] * 1e6


def union_ms(intervals):
    """Total length of the union of (start, end) intervals, in ms (Kineto times are us)."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total / 1000.0


def top_level_ops(events, known=()):
    """{External id: name of the outermost cpu_op around that op on its thread}: the outermost
    whose name is in `known` where one is (Mimic's top-level ops: a replay's profile has no
    wrappers such as autograd's `evaluate_function: AddmmBackward0`, the original's has)."""
    by_tid = defaultdict(list)
    for e in events:
        if e.get("cat") == "cpu_op" and e.get("ph") == "X":
            by_tid[(e.get("pid"), e.get("tid"))].append(e)
    outer = {}
    for ops in by_tid.values():
        ops.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack = []  # open ops: (end, top name)
        for e in ops:
            while stack and stack[-1][0] <= e["ts"]:
                stack.pop()
            top = stack[-1][1] if stack else e["name"]  # the enclosing op's top
            if top not in known and e["name"] in known:
                top = e["name"]
            stack.append((e["ts"] + e.get("dur", 0), top))
            ext = e.get("args", {}).get("External id")
            if ext is not None:
                outer[ext] = top
    return outer


INTEGER_MIN_MAX = re.compile(r"(Min|Max)NanFunctor<(long|int|short|signed char|unsigned char|char|"
                             r"long long|unsigned short|unsigned int|unsigned long|int64_t|int32_t)>")


def observer_probes(events, launches):
    """Correlation ids of the execution-trace observer's integer-range probes: per launching
    thread in launch order, [integer min kernel, DtoH copy, integer max kernel, DtoH copy], each
    reduction after the same prelude of a contiguous copy and a memset where the tensor needed
    them. The rule of eg::kineto::ObserverProbes (eg/src/kineto_internal.h), so that the
    original's device time here is the one Mimic links, without the capture's own work."""
    def tag(e):
        name = e["name"]
        m = INTEGER_MIN_MAX.search(name)
        if m:
            return m.group(1)
        if name.startswith("Memcpy DtoH"):
            return "DtoH"
        if e.get("cat") == "gpu_memset":
            return "s"
        return "c" if "direct_copy_kernel" in name else None
    by_thread = defaultdict(list)
    for e in events:
        if e.get("cat") in DEVICE_CATEGORIES and e.get("ph") == "X":
            launch = launches.get(e.get("args", {}).get("correlation"))
            if launch is not None:
                by_thread[launch.get("tid")].append((e["args"]["correlation"], tag(e)))
    probes = set()
    for seq in by_thread.values():
        seq.sort(key=lambda ct: ct[0])  # a correlation may launch more than one device event
        i = 0
        while i < len(seq):
            for prelude in (2, 1, 0):
                tags = [t for _, t in seq[i:i + 2 * prelude + 4]]
                pre = tags[:prelude]
                if (len(tags) == 2 * prelude + 4 and all(t in ("s", "c") for t in pre)
                        and tags[prelude:prelude + 2] == ["Min", "DtoH"]
                        and tags[prelude + 2:2 * prelude + 2] == pre
                        and tags[2 * prelude + 2:] == ["Max", "DtoH"]):
                    probes.update(c for c, _ in seq[i:i + 2 * prelude + 4])
                    i += 2 * prelude + 3
                    break
            i += 1
    return probes


def analyse(trace_path, classes):
    """GPU active time and kernel time per class, per ProfilerStep (medians over the steps)."""
    events = load(trace_path)["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation")  # the host's span, not the device's
    outer = top_level_ops(events, classes)
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
    launched = {c: e["ts"] for c, e in launches.items()}
    probes = observer_probes(events, launches)
    active = defaultdict(list)
    per_class = defaultdict(lambda: defaultdict(float))
    starts = [s for s, _ in steps]
    for e in events:
        if e.get("cat") not in DEVICE_CATEGORIES or e.get("ph") != "X":
            continue
        if e.get("args", {}).get("correlation") in probes:
            continue
        at = launched.get(e.get("args", {}).get("correlation"), e["ts"])
        k = bisect.bisect_right(starts, at) - 1
        if k < 0 or at > steps[k][1]:
            continue
        active[k].append((e["ts"], e["ts"] + e["dur"]))
        name = outer.get(e.get("args", {}).get("External id"), "")
        per_class[k][classes.get(name, "other")] += e["dur"] / 1000.0
    n = len(steps)
    by_step = [union_ms(active[k]) for k in range(n)]
    gpu_active = statistics.median(by_step) if n else None
    class_names = {c for k in per_class for c in per_class[k]}
    by_class = {c: statistics.median([per_class[k].get(c, 0.0) for k in range(n)]) for c in class_names}
    return {"steps": n, "gpu_active_ms": gpu_active, "gpu_active_ms_by_step": by_step,
            "kernel_ms_by_class": by_class}


def model_view(mimic, et, kineto):
    """One `mimic predict --json` of the trace: Mimic's op class of every top-level op name (its
    one op table), and the model's GPU active time for the GPU the Kineto trace names (its
    deviceProperties) beside the kernels that trace recorded. A trace that names no GPU (a CPU
    capture) is classed under a GPU platform and has no prediction."""
    def predict(*platform):
        return subprocess.run([mimic, "predict", et, "--kineto", kineto, *platform, "--json"],
                              capture_output=True, text=True)
    r = predict()
    named = r.returncode == 0
    if not named and "records no GPU" in r.stderr:
        r = predict("--platform", "h100_sxm")
    if r.returncode != 0:
        raise RuntimeError(f"mimic predict {et}: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    classes = {op["name"]: op["op_class"] for op in out["ops"]}
    predicted = {"platform": out["platform"] if named else None,
                 "original_gpu_active_ms": out.get("original_gpu_active_ms") if named else None,
                 "predicted_gpu_active_ms": out.get("gpu_active_ms") if named else None}
    return classes, predicted


def ratio(a, b):
    return a / b if a is not None and b else None


def bench_sample(args, sample):
    name = sample["name"]
    et = os.path.join(args.samples, sample["et"])
    kineto = os.path.join(args.samples, sample["kineto"])
    report = os.path.join(args.work, f"{name}.fidelity.json")
    profile = os.path.join(args.work, f"{name}.fidelity.profile.json")
    gapless_report = os.path.join(args.work, f"{name}.fidelity.no_gaps.json")
    base = [args.mimic, "replay", et, "--kineto", kineto, "--device", args.device, "--warmup",
            str(args.warmup), "--iters", str(args.iters)]
    for cmd in (base + ["--report", report],
                base + ["--host-gaps", "none", "--report", gapless_report],
                base + ["--per-op", "--profile", profile]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-500:]}")
    rep = load(report)
    classes, predicted = model_view(args.mimic, et, kineto)
    original, replay = analyse(kineto, classes), analyse(profile, classes)
    orig_ms = statistics.median(sample["iteration_ms"])
    replay_ms = rep["iteration_ms"]["median"]
    gapless_ms = load(gapless_report)["iteration_ms"]["median"]
    return {
        "name": name,
        "device": sample.get("device"),
        "coverage": f'{rep["coverage"]["replayed"]}/{rep["coverage"]["total"]}',
        "skipped": rep["coverage"]["skipped_by_reason"],
        "original_ms": orig_ms, "replay_ms": replay_ms, "ratio": ratio(replay_ms, orig_ms),
        "replay_no_host_gaps_ms": gapless_ms, "no_host_gaps_ratio": ratio(gapless_ms, orig_ms),
        "original_gpu_active_ms": original["gpu_active_ms"], "replay_gpu_active_ms": replay["gpu_active_ms"],
        "gpu_active_ratio": ratio(replay["gpu_active_ms"], original["gpu_active_ms"]),
        "prediction": predicted,
        "predicted_gpu_active_ratio": ratio(predicted.get("predicted_gpu_active_ms"),
                                            predicted.get("original_gpu_active_ms")),
        "kernel_ms_by_class": {c: {"original": original["kernel_ms_by_class"].get(c, 0.0),
                                   "replay": replay["kernel_ms_by_class"].get(c, 0.0)}
                               for c in set(original["kernel_ms_by_class"]) | set(replay["kernel_ms_by_class"])},
        "original_peak_memory_bytes": sample.get("peak_memory_bytes"),
        "replay_peak_memory_bytes": rep["memory"]["peak_allocated_bytes"],
        "original_nvml": sample.get("nvml"), "replay_nvml": rep["executor"]["device_metrics"],
        # What the capture recorded besides its traces, and what the replay made of it.
        "host_timeline": (rep["host_gaps"].get("timeline") or {}).get("source"),
        "input_values": rep["memory"].get("input_values"),
    }


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def markdown(rows):
    out = ["| sample | coverage | original ms | replay ms | ratio | no host gaps: replay ms | ratio |"
           " GPU active orig ms | replay ms | ratio | predicted / orig | peak MiB orig | replay |"
           " SM % orig | replay | W orig | replay |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    mib = lambda b: None if b is None else b / 2**20
    for r in rows:
        o, p = r["original_nvml"] or {}, r["replay_nvml"] or {}
        out.append(f'| {r["name"]} | {r["coverage"]} | {fmt(r["original_ms"])} | {fmt(r["replay_ms"])} | '
                   f'{fmt(r["ratio"], ".3f")} | {fmt(r["replay_no_host_gaps_ms"])} | '
                   f'{fmt(r["no_host_gaps_ratio"], ".3f")} | {fmt(r["original_gpu_active_ms"])} | '
                   f'{fmt(r["replay_gpu_active_ms"])} | {fmt(r["gpu_active_ratio"], ".3f")} | '
                   f'{fmt(r["predicted_gpu_active_ratio"], ".3f")} | '
                   f'{fmt(mib(r["original_peak_memory_bytes"]), ".0f")} | '
                   f'{fmt(mib(r["replay_peak_memory_bytes"]), ".0f")} | '
                   f'{fmt(o.get("sm_utilization_pct_mean"), ".0f")} | {fmt(p.get("sm_utilization_pct_mean"), ".0f")} | '
                   f'{fmt(o.get("power_w_mean"), ".0f")} | {fmt(p.get("power_w_mean"), ".0f")} |')
    for r in rows:
        values = r["input_values"] or {}
        out += ["", f'{r["name"]}: host timeline {r["host_timeline"] or "none"}; value profile '
                    f'{values.get("profile") or "none"}, {values.get("leaves", 0)} prepared tensors filled']
    for r in rows:
        out += ["", f'Kernel time per op class, {r["name"]} (ms per iteration):', "",
                "| class | original | replay | ratio |", "|---|---|---|---|"]
        for c, v in sorted(r["kernel_ms_by_class"].items(), key=lambda kv: -kv[1]["original"]):
            out.append(f'| {c} | {fmt(v["original"], ".3f")} | {fmt(v["replay"], ".3f")} | '
                       f'{fmt(ratio(v["replay"], v["original"]), ".3f")} |')
    return "\n".join(out) + "\n"


def original_markdown(args):
    """The originals' side of the benchmark alone: GPU active time and kernel time per op class
    per step (medians), from each sample's stored Kineto trace."""
    out = ["| sample | class | original ms |", "|---|---|---:|"]
    for sample in load(os.path.join(args.samples, "manifest.json"))["samples"]:
        et = os.path.join(args.samples, sample["et"])
        kineto = os.path.join(args.samples, sample["kineto"])
        a = analyse(kineto, model_view(args.mimic, et, kineto)[0])
        out.append(f'| {sample["name"]} | GPU active | {fmt(a["gpu_active_ms"], ".3f")} |')
        for c, ms in sorted(a["kernel_ms_by_class"].items(), key=lambda kv: -kv[1]):
            out.append(f'| {sample["name"]} | {c} | {fmt(ms, ".3f")} |')
    return "\n".join(out)


def kernels_markdown(args):
    """Each sample's device events under each top-level call of op `args.kernels` in its first
    profiled step, in launch order, the observer's probes marked: what docs/benchmarks.md reads
    off the H200 captures (GPT-2's head GEMMs, cross_entropy_loss's cast, batch norm's kernels)."""
    out = ["| sample | call | device event | us | probe |", "|---|---:|---|---:|---|"]
    for sample in load(os.path.join(args.samples, "manifest.json"))["samples"]:
        events = load(os.path.join(args.samples, sample["kineto"]))["traceEvents"]
        launches = {e["args"]["correlation"]: e for e in events
                    if e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {})}
        probes = observer_probes(events, launches)
        step = min((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")
                   and e.get("cat") != "gpu_user_annotation")
        calls = sorted((e["ts"], e["ts"] + e["dur"], e["tid"]) for e in events
                       if e.get("cat") == "cpu_op" and e.get("name") == args.kernels
                       and step[0] <= e["ts"] <= step[1])
        calls = [c for i, c in enumerate(calls) if not any(  # the outermost calls only
            o[0] <= c[0] and c[1] <= o[1] and o[2] == c[2] for o in calls[:i])]
        device = sorted((e for e in events if e.get("cat") in DEVICE_CATEGORIES and e.get("ph") == "X"
                         and e.get("args", {}).get("correlation") in launches),
                        key=lambda e: e["args"]["correlation"])
        for n, (start, end, tid) in enumerate(calls, 1):
            for e in device:
                launch = launches[e["args"]["correlation"]]
                if launch["tid"] == tid and start <= launch["ts"] <= end:
                    probe = "yes" if e["args"]["correlation"] in probes else ""
                    out.append(f'| {sample["name"]} | {n} | `{e["name"][:90]}` | {e["dur"]:.1f} | {probe} |')
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--samples", required=True, help="folder with the samples and manifest.json")
    p.add_argument("--mimic", required=True)
    p.add_argument("--work", help="folder for the replays' reports and profiles")
    p.add_argument("--device", default="cuda")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--json")
    p.add_argument("--markdown")
    p.add_argument("--original-only", action="store_true",
                   help="read the originals' device time from the stored traces, replay nothing "
                        "(no GPU needed; --work is then unused)")
    p.add_argument("--kernels", metavar="OP",
                   help="instead: the device events under each top-level call of OP (an aten "
                        "name) in each sample's first profiled step (no GPU needed)")
    args = p.parse_args()
    if args.kernels:
        print(kernels_markdown(args))
        return
    if not args.original_only and not args.work:
        p.error("--work is required unless --original-only")
    if args.original_only:
        print(original_markdown(args))
        return
    os.makedirs(args.work, exist_ok=True)
    rows, failed = [], False
    for sample in load(os.path.join(args.samples, "manifest.json"))["samples"]:
        try:
            rows.append(bench_sample(args, sample))
            print(f'{sample["name"]}: ratio {fmt(rows[-1]["ratio"], ".3f")}, GPU active ratio '
                  f'{fmt(rows[-1]["gpu_active_ratio"], ".3f")}, predicted/original GPU active '
                  f'{fmt(rows[-1]["predicted_gpu_active_ratio"], ".3f")} '
                  f'({rows[-1]["prediction"]["platform"]})', flush=True)
        except Exception as e:  # pylint: disable=broad-except
            print(f'{sample["name"]}: FAILED: {e}', file=sys.stderr, flush=True)
            failed = True
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    text = markdown(rows)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    print(text)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
