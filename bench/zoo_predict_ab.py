#!/usr/bin/env python3
"""Before/after prediction error against the same replays (issue #16).

Takes the replays from compare reports already written (DIR/NAME.compare.json, one replay per
model) and predicts each capture twice: with the `before` binary and platform and with the
`after` ones. Per op class, the replay side is the report's per-op timeline grouped by the
after binary's op classes, so both predictions are judged on the same ops. Prints Markdown.

  python3 bench/zoo_predict_ab.py --dir /tmp/zooq \\
      --before-bin /work/main/build/default/cli/mimic --before-platform /work/main/platforms/cpu_host.json \\
      --after-bin build/default/cli/mimic --after-platform platforms/cpu_host.json
  python3 bench/zoo_predict_ab.py --dir D --before-bin B --after-bin B --after-platform P \\
      --before-without cpu_overheads.in_turn,value_slowdown   # one build, P less some figures
  python3 bench/zoo_predict_ab.py --dir D --replays 3 ...   # against D/NAME.rep{1,2,3}.json,
      # and per class of --classes against the replays and the original
"""
import argparse, collections, json, os, statistics, subprocess, tempfile

NAMES = "gpt_mini,vit_tiny,moe,dlrm_adagrad,wide_deep,conv_ae,graph_sage,lstm_tagger"


def predict(binary, platform, d, n):
    r = subprocess.run([binary, "predict", f"{d}/{n}.et.json.gz", "--kineto", f"{d}/{n}.kineto.json.gz",
                        "--platform", platform, "--json"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def err(a, b):
    return f"{100 * (a - b) / b:+.1f}%"


def class_row(n, cls, reps, replayed, B, A):
    """One class of one model: its ops (by name, classed as the after build classes them)
    replayed (median of the replays), in the original (the capture's host timeline where it has
    one, else its profiled time) and predicted before and after, in ms."""
    names = {x["name"] for x in A["ops"] if x["op_class"] == cls} & set(replayed)
    if not names:
        return None
    original = {op["name"]: op.get("original_timeline_ms") or op.get("original_profiled_ms") or 0
                for op in reps[0]["ops"]}
    sums = [sum(statistics.median(replayed[k]) for k in names), sum(original[k] for k in names)]
    sums += [sum(x["predicted_us"] for x in P["ops"] if x["op_class"] == cls) / 1000 for P in (B, A)]
    return f"| {n} | {cls} | " + " | ".join(f"{v:.3f}" for v in sums) + " |"


def judge_on_replays(a):
    """Each model's step and the ops whose prediction moved, against the median of N replays;
    then each of --classes against both the replays and the original."""
    print("| model | replay ms (median of %d) | before: predicted ms | vs replay | after: predicted ms | vs replay |"
          " ops whose prediction moved: replayed / before / after ms |" % a.replays)
    print("|---|---:|---:|---:|---:|---:|---|")
    eb, ea, classes = [], [], []
    for n in a.only.split(","):
        reps = [json.load(open(f"{a.dir}/{n}.rep{i}.json")) for i in range(1, a.replays + 1)]
        rm = statistics.median(r["iteration_ms"]["median"] for r in reps)
        replayed = collections.defaultdict(list)
        for r in reps:
            for op in r["ops"]:
                replayed[op["name"]].append(op["replay_ms"])
        B = predict(a.before_bin, a.before_platform, a.dir, n)
        A = predict(a.after_bin, a.after_platform, a.dir, n)
        moved = collections.defaultdict(lambda: [0.0, 0.0])
        for b, x in zip(B["ops"], A["ops"]):
            if abs(b["predicted_us"] - x["predicted_us"]) > 0.05:
                moved[x["name"]][0] += b["predicted_us"] / 1000
                moved[x["name"]][1] += x["predicted_us"] / 1000
        cells = [f"`{k}` {statistics.median(replayed[k]):.3f} / {v[0]:.3f} / {v[1]:.3f}"
                 for k, v in sorted(moved.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]))[:3] if k in replayed]
        eb.append(abs(B["iteration_ms"] - rm) / rm)
        ea.append(abs(A["iteration_ms"] - rm) / rm)
        print(f"| {n} | {rm:.2f} | {B['iteration_ms']:.2f} | {err(B['iteration_ms'], rm)} | {A['iteration_ms']:.2f} | "
              f"{err(A['iteration_ms'], rm)} | {'; '.join(cells) or '-'} |")
        classes += [row for cls in a.classes.split(",") if (row := class_row(n, cls, reps, replayed, B, A))]
    within = lambda e: sum(x <= 0.05 for x in e)
    print(f"| mean \\|error\\|, within 5 % | | | {100 * sum(eb) / len(eb):.1f}%, {within(eb)} of {len(eb)} | | "
          f"{100 * sum(ea) / len(ea):.1f}%, {within(ea)} of {len(ea)} | |\n")
    print("| model | class | replay ms | original ms | before ms | after ms |")
    print("|---|---|---:|---:|---:|---:|")
    print("\n".join(classes))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--before-bin", required=True)
    ap.add_argument("--before-platform", help="default: the after platform less --before-without")
    ap.add_argument("--before-without", default="",
                    help="comma-separated platform fields (cpu_overheads.X or X, or a list's items: "
                         "X[key=value]) taken out of the after platform to make the before one, e.g. "
                         "cpu_overheads.in_turn,value_slowdown,gemm_efficiency[dtype=bf16],peak_flops.bf16")
    ap.add_argument("--after-bin", required=True)
    ap.add_argument("--after-platform", required=True)
    ap.add_argument("--classes", default="embedding,conv,reduction_norm,elementwise")
    ap.add_argument("--only", default=NAMES, help="the models, comma-separated (default: %(default)s)")
    ap.add_argument("--replays", type=int, default=0,
                    help="judge on DIR/NAME.rep1..N.json (`mimic replay --report`: the median step, and per op "
                         "name the median of its replayed time) instead of one compare report, and list the "
                         "ops whose prediction moved")
    a = ap.parse_args()
    if not a.before_platform:
        if not a.before_without:
            raise SystemExit("give --before-platform or --before-without")
        platform = json.load(open(a.after_platform))
        for field in a.before_without.split(","):
            match = None  # "gemm_efficiency[dtype=bf16]": that list's items with that value
            if field.endswith("]") and "[" in field:
                field, cond = field[:-1].split("[", 1)
                match = tuple(cond.split("=", 1))
            *path, key = field.split(".")
            node = platform
            for part in path:
                node = node.get(part, {})
            if match is None:
                node.pop(key, None)
            else:
                node[key] = [x for x in node.get(key, []) if str(x.get(match[0])) != match[1]]
        a.before_platform = os.path.join(tempfile.mkdtemp(), "before.json")
        with open(a.before_platform, "w") as f:
            json.dump(platform, f)
    if a.replays:
        return judge_on_replays(a)
    rows, cls_rows, eb, ea = [], [], [], []
    for n in a.only.split(","):
        c = json.load(open(f"{a.dir}/{n}.compare.json"))
        B = predict(a.before_bin, a.before_platform, a.dir, n)
        A = predict(a.after_bin, a.after_platform, a.dir, n)
        rep = c["timeline"]["replay"]
        if not (len(rep) == len(A["ops"]) == len(B["ops"])):
            raise SystemExit(f"{n}: the report's ops and the predictions' differ")
        R, PB, PA = (collections.defaultdict(float) for _ in range(3))
        for r, b, x in zip(rep, B["ops"], A["ops"]):
            k = x["op_class"]
            R[k] += r["duration_ms"]
            PB[k] += b["predicted_us"] / 1000
            PA[k] += x["predicted_us"] / 1000
        rm = c["end_to_end"]["replay_ms"]
        eb.append(abs(B["iteration_ms"] - rm) / rm)
        ea.append(abs(A["iteration_ms"] - rm) / rm)
        rows.append(f"| {n} | {rm:.2f} | {B['iteration_ms']:.2f} | {err(B['iteration_ms'], rm)} | "
                    f"{A['iteration_ms']:.2f} | {err(A['iteration_ms'], rm)} |")
        for k in a.classes.split(","):
            if R.get(k, 0) > 0.005:
                cls_rows.append(f"| {n} | {k} | {R[k]:.3f} | {PB[k]:.3f} ({err(PB[k], R[k])}) | "
                                f"{PA[k]:.3f} ({err(PA[k], R[k])}) |")
    print("| model | replay ms | before: predicted ms | vs replay | after: predicted ms | vs replay |")
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print(f"| mean \\|error\\| | | | {100 * sum(eb) / len(eb):.1f}% | | {100 * sum(ea) / len(ea):.1f}% |\n")
    print("| model | class | replay ms | before ms (vs replay) | after ms (vs replay) |")
    print("|---|---|---:|---:|---:|")
    print("\n".join(cls_rows))


if __name__ == "__main__":
    main()
