"""End-to-end tests of `mimic calibrate`, `mimic predict` and `mimic compare`, and of the HTML
report rendered in headless Chromium (Debian package `chromium`, installed by scripts/setup.sh).

Checks the JSON against what the trace files hold (read here with Python's json module) and
the rendered page against the JSON.
"""

import atexit
import collections
import gzip
import html.parser
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "fleet_samples")
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))
# Host calibrations that compare and `calibrate --cache` keep go to a folder of this run's own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="mimic-test-cache.")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)


def mimic(*args, timeout=600):
    return subprocess.run([MIMIC, *args], capture_output=True, text=True, timeout=timeout)


def sample(name):
    return [os.path.join(SAMPLES, name + ".et.json.gz"), "--kineto", os.path.join(SAMPLES, name + ".kineto.json.gz")]


def first_step(name):
    """The ProfilerStep#1 span of the sample's Kineto trace."""
    with gzip.open(os.path.join(SAMPLES, name + ".kineto.json.gz"), "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    step = next(e for e in events if e["name"] == "ProfilerStep#1")
    return step


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class DomCollector(html.parser.HTMLParser):
    """Collects the rendered SVG rects and the summary table's cells."""

    def __init__(self):
        super().__init__()
        self.rects = []
        self.cells = {}   # (row, key) -> text
        self.body = {}
        self._row = None
        self._key = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        elif tag == "rect":
            self.rects.append(a)
        elif tag == "tr":
            self._row = a.get("data-row")
        elif tag == "td" and self._row:
            self._key = a.get("data-key")
            self.cells[(self._row, self._key)] = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self._key = None

    def handle_data(self, data):
        if self._row and self._key:
            self.cells[(self._row, self._key)] += data


class PredictTest(unittest.TestCase):

    def test_predicts_every_op_replay_selects_with_classes_adding_up(self):
        r = mimic("predict", *sample("mlp"), "--platform", "cpu_host", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        for key in ("platform", "selection", "iteration_ms", "gpu_active_ms", "exposed_comm_ms", "by_class", "ops"):
            self.assertIn(key, got)
        self.assertEqual(got["platform"], "cpu_host")
        self.assertEqual(got["selection"], "ProfilerStep#1")
        self.assertEqual(sum(c["ops"] for c in got["by_class"].values()), len(got["ops"]))
        for cls, c in got["by_class"].items():
            self.assertAlmostEqual(c["predicted_ms"],
                                   sum(o["predicted_us"] for o in got["ops"] if o["op_class"] == cls) / 1000, places=6)
        # The original side is the ops' own Kineto spans: they lie inside the profiled step.
        step = first_step("mlp")
        self.assertLess(sum(o["original_us"] for o in got["ops"]), step["dur"])
        self.assertGreater(got["iteration_ms"], 0)
        # The same ops as the replay.
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "r.json")
            r = mimic("replay", *sample("mlp"), "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(report) as f:
                replay = json.load(f)
        self.assertEqual(len(got["ops"]), replay["coverage"]["total"])

    def test_each_op_reports_the_tensor_inputs_its_trace_recorded(self):
        r = mimic("predict", *sample("mlp"), "--platform", "cpu_host", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        with gzip.open(sample("mlp")[0], "rt") as f:
            nodes = {n["id"]: n for n in json.load(f)["nodes"]}
        with_tensors = 0
        dtypes = {"Tensor(float)": "float32", "Tensor(long int)": "int64", "Tensor(nullptr (uninitialized))": "undefined"}
        for op in got["ops"]:
            recorded = nodes[op["id"]]["inputs"]
            tensors = [(shape, t) for shape, t in zip(recorded["shapes"], recorded["types"]) if t.startswith("Tensor(")]
            want = [None if "nullptr" in t else shape for shape, t in tensors]
            self.assertEqual([i["shape"] for i in op["inputs"]], want, op["name"])
            for i, (_, t) in zip(op["inputs"], tensors):
                self.assertEqual(i["dtype"], dtypes.get(t, i["dtype"]), op["name"])
            with_tensors += bool(want)
        self.assertGreater(with_tensors, 10)

    def test_each_op_says_what_set_its_time(self):
        # On the H200 GPT-2 capture: its GEMMs by their FLOPs, its elementwise ops by their
        # bytes, its head (a vocabulary of 50,257 rows, a misaligned GEMM) by its fallback
        # kernel's loads, a layer norm's backward by its dependent loads; views by nothing.
        r = mimic("predict", *sample("h200/gpt2"), "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        ops = json.loads(r.stdout)["ops"]
        limiters = {"flops", "bytes", "measured", "misaligned_loads", "block_starts", "dependent_loads",
                    "unrolled_elements", "sm_cycles", "min_kernel", "delay"}
        for op in ops:
            if op["compute_us"] > 0:
                self.assertIn(op["bound"], limiters, op["name"])
            else:
                self.assertIsNone(op["bound"], op["name"])
        def bounds(name, pred=lambda op: True):
            return {op["bound"] for op in ops if op["name"] == name and pred(op)}
        head = lambda op: any(i["shape"] and 50257 in i["shape"] for i in op["inputs"])
        self.assertEqual(bounds("aten::linear", head), {"misaligned_loads"})
        self.assertEqual(bounds("aten::linear", lambda op: not head(op)), {"flops"})
        self.assertEqual(bounds("aten::native_layer_norm_backward"), {"dependent_loads"})
        self.assertIn("bytes", bounds("aten::gelu"))
        self.assertEqual(bounds("aten::view"), {None})
        # The console sums the ops' compute time by limiter, the most first.
        want = collections.defaultdict(lambda: [0, 0.0])
        for op in ops:
            if op["bound"]:
                want[op["bound"]][0] += 1
                want[op["bound"]][1] += op["compute_us"] / 1000
        r = mimic("predict", *sample("h200/gpt2"))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        at = next(i for i, l in enumerate(lines) if l.split()[:2] == ["limited", "by"])
        rows = [l.split() for l in lines[at + 1:at + 1 + len(want)]]
        self.assertEqual({b: int(n) for b, n, _ in rows}, {b: v[0] for b, v in want.items()})
        for b, _, ms in rows:
            self.assertAlmostEqual(float(ms), want[b][1], delta=0.0006)
        self.assertEqual([float(ms) for _, _, ms in rows], sorted((float(ms) for _, _, ms in rows), reverse=True))
        self.assertEqual(rows[0][0], "misaligned_loads")  # the head: 13 of 37 ms

    def test_a_gpu_platform_predicts_a_cpu_capture_as_a_cross_platform_prediction(self):
        cpu = json.loads(mimic("predict", *sample("transformer"), "--platform", "cpu_host", "--json").stdout)
        r = mimic("predict", *sample("transformer"), "--platform", "h200", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        gpu = json.loads(r.stdout)
        self.assertEqual(gpu["platform"], "h200")
        self.assertEqual(len(gpu["ops"]), len(cpu["ops"]))
        self.assertTrue(any("no recorded kernels" in n for n in gpu["notes"]))
        self.assertLessEqual(gpu["gpu_active_ms"], gpu["iteration_ms"] + 1e-9)

    def test_bad_platform_file_is_bad_input_with_no_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                json.dump({"name": "x", "device_type": "cpu", "peak_flop": {}}, f)
            out = os.path.join(tmp, "p.json")
            r = mimic("predict", *sample("mlp"), "--platform", bad, "-o", out)
            self.assertEqual(r.returncode, 2)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(bad, r.stderr)
            self.assertIn("peak_flop", r.stderr)
            self.assertFalse(os.path.exists(out))
            r = mimic("predict", *sample("mlp"), "--platform", "no_such_platform")
            self.assertEqual(r.returncode, 2)
            self.assertIn("h200", r.stderr)


class CalibrateTest(unittest.TestCase):

    def test_a_cpu_platform_of_another_host_is_said_so_then_replaced_by_this_hosts(self):
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "XDG_CACHE_HOME": tmp}
            with open(os.path.join(ROOT, "platforms", "cpu_host.json")) as f:
                other = json.load(f)
            other["name"] = "other_cpu"
            other["calibrated_on"] = "elsewhere (Some Other CPU 9999, 512 cpus, 1 threads)"
            other["threads"] = 1
            path = os.path.join(tmp, "other.json")
            with open(path, "w") as f:
                json.dump(other, f)
            trace = os.path.join(ROOT, "fleet_samples", "mlp.et.json.gz")
            run = lambda *a: subprocess.run([MIMIC, *a], capture_output=True, text=True, env=env, timeout=600)
            r = run("predict", trace, "--platform", path, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            notes = " ".join(json.loads(r.stdout)["notes"])
            self.assertIn("Some Other CPU 9999", notes)
            self.assertIn("the prediction is for that machine", notes)
            r = run("calibrate", "--quick", "--trials", "1", "--threads", "1", "--name", "other_cpu", "--cache")
            self.assertEqual(r.returncode, 0, r.stderr)
            r = run("predict", trace, "--platform", path, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            notes = " ".join(json.loads(r.stdout)["notes"])
            self.assertIn("this host's calibration", notes)
            self.assertNotIn("the prediction is for that machine", notes)
            self.assertEqual(run("calibrate", "--quick").returncode, 2)  # neither -o nor --cache

    def test_quick_calibration_writes_a_platform_predict_accepts(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            r = mimic("calibrate", "--quick", "--trials", "2", "--threads", "1", "--name", "test_host", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                p = json.load(f)
            self.assertEqual(p["name"], "test_host")
            self.assertEqual(p["device_type"], "cpu")
            self.assertGreater(p["peak_flops"]["fp32"]["no_tensor_core"], 0)
            self.assertGreater(p["memory_bandwidth_bytes_per_s"], 0)
            self.assertGreater(p["cpu_overheads"]["dispatch_us"], 0)
            # The replay's own cost per op and the capture's per event boundary, on known loops.
            self.assertGreater(p["cpu_overheads"]["capture_cost_us"], 0)
            self.assertGreaterEqual(p["cpu_overheads"].get("framework_us", 0), 0)  # JSON omits a 0
            self.assertIn("framework_us = the replay's time per op", p["sources"]["cpu_overheads"])
            self.assertIn("capture_cost_us, capture_input_tensor_us = half the intercept", p["sources"]["cpu_overheads"])
            self.assertGreater(p["cpu_overheads"]["capture_input_tensor_us"], 0)
            # A dispatch once its code went cold, for ops that compute and for views: by the
            # distinct ops called in turn and by the bytes copied since the op's last call.
            cold = p["cpu_overheads"]
            for key, arg in (("in_turn", "distinct_ops"), ("in_turn_views", "distinct_ops"),
                             ("after_traffic", "bytes"), ("after_traffic_views", "bytes")):
                xs = [float(q[arg]) for q in cold[key]]
                self.assertGreaterEqual(len(xs), 5, key)
                self.assertEqual(xs, sorted(set(xs)), key)
                self.assertTrue(all(q.get("extra_us", 0) >= 0 for q in cold[key]), key)
            # 64 MiB through the caches cost the next call more than 16 KiB did.
            self.assertGreater(cold["after_traffic"][-1]["extra_us"], cold["after_traffic"][0].get("extra_us", 0))
            self.assertIn("in_turn, after_traffic = each call's time beyond", p["sources"]["cpu_overheads"])
            # The ops whose time their values set, each on zeros and on subnormals against a
            # uniform fill.
            slow = {v["kind"]: v for v in p["value_slowdown"]}
            self.assertEqual(sorted(slow), sorted(["sqrt", "rsqrt", "pow", "log", "exp", "reciprocal", "div",
                                                   "addcdiv"]))
            self.assertTrue(all(v["zeros"] > 0 and v["subnormals"] > 0 for v in slow.values()))
            self.assertGreater(slow["sqrt"]["subnormals"], 1)
            self.assertTrue(p["gemm_efficiency"] and p["conv_efficiency"] and p["bandwidth"])
            # Binary cross-entropy's scalar loops, a kind of their own: far below log's rate.
            rate = {(b["kind"], float(b["bytes"])): b["bytes_per_s"] for b in p["bandwidth"] if not b.get("cold")}
            self.assertLess(rate[("binary_cross_entropy", 8 * 2 ** 18)], rate[("log", 8 * 2 ** 18)])
            self.assertIn(("binary_cross_entropy_backward", 12 * 2 ** 18), rate)
            # The plain kinds and the math on bf16 tensors too, in cache only.
            bf16 = {(b["kind"], float(b["bytes"])) for b in p["bandwidth"] if b.get("dtype") == "bf16"}
            self.assertIn(("binary", 6 * 2 ** 18), bf16)
            self.assertIn(("sigmoid", 4 * 2 ** 18), bf16)
            self.assertFalse([b for b in p["bandwidth"] if b.get("dtype") == "bf16" and b.get("cold")])
            # Batch norm and max pooling on channels-last maps, an add and ReLU's backward on two
            # layouts, in cache (quick: 2^10 and 2^18 elements) and out of it (2^18).
            layouts = ("batch_norm_channels_last", "batch_norm_backward_channels_last", "mixed_layout",
                       "threshold_backward_mixed_layout", "pool_channels_last", "pool_backward_channels_last")

            def layout_points(q):
                return sorted((b["kind"], float(b["bytes"]), b.get("cold", False))
                              for b in q["bandwidth"] if b["kind"] in layouts)
            layout_grid = layout_points(p)
            self.assertEqual(len(layout_grid), 17, layout_grid)  # pooling's backward in cache only
            self.assertIn(("mixed_layout", 12 * 2 ** 18, True), layout_grid)
            self.assertIn(("batch_norm_backward_channels_last", 12 * 2 ** 10, False), layout_grid)
            self.assertIn(("pool_channels_last", 5 * 2 ** 18, True), layout_grid)
            # aten::sort of int64 keys by size, in cache: the input and both outputs, 24 bytes a key.
            sorts = sorted(float(b["bytes"]) for b in p["bandwidth"] if b["kind"] == "sort")
            self.assertEqual(sorts, [24 * 2 ** 10, 24 * 2 ** 18])
            for e in p["gemm_efficiency"]:
                self.assertTrue(0 < e["efficiency"] <= 1)
            # bf16 (autocast's CPU dtype) measured as such, against the best bf16 rate measured.
            for table in ("gemm_efficiency", "conv_efficiency"):
                self.assertEqual(sorted({e["dtype"] for e in p[table]}), ["bf16", "fp32"], table)
            self.assertGreater(p["peak_flops"]["bf16"]["no_tensor_core"], 0)
            self.assertIn("measured by mimic calibrate", p["sources"]["gemm_efficiency"])
            self.assertGreater(p["cpu_overheads"]["page_fault_us"], 0)
            self.assertIn("page_fault_us = median over", p["sources"]["cpu_overheads"])
            # oneDNN's LSTM layer, forward and backward, measured as a layer.
            self.assertEqual(sorted(e.get("pass") for e in p["rnn_efficiency"]), ["backward", "forward"])
            for e in p["rnn_efficiency"]:
                self.assertTrue(0 < e["efficiency"] <= 1 and e["time_us"] > 0, e)
            # Index/scatter ops by kind (quick grid: L 256, 2048 x D 16 x R 1024; cold: L 2048, the
            # tensors out of cache) and transposed convolutions under their own passes.
            kinds = {}
            for x in p["index_ops"]:
                self.assertGreater(x["time_us"], 0, x)
                kinds.setdefault(x["kind"], []).append(
                    (int(x["indices"]), int(x["row_width"]), int(x["rows"]), x.get("cold", False)))
            self.assertEqual(sorted(kinds), sorted(["index_select", "index", "gather", "scatter_add", "scatter_add_",
                                                    "index_add", "index_add_", "sparse_add_",
                                                    "index_put_accumulate",
                                                    "embedding_dense_backward", "embedding_bag_backward"]))
            for k, shapes in kinds.items():
                self.assertEqual(sorted(shapes), [(256, 16, 1024, False), (2048, 16, 1024, False),
                                                  (2048, 16, 1024, True)], k)
            self.assertIn("cold points", p["sources"]["index_ops"])
            passes = sorted(e.get("pass") for e in p["conv_efficiency"] if e.get("pass", "").startswith("transposed_"))
            self.assertEqual(passes, ["transposed_backward", "transposed_forward"])
            # Stride-2 convolutions under passes of their own, fp32 (quick: one 3x3 layer).
            strided = sorted(e.get("pass") for e in p["conv_efficiency"] if e.get("pass", "").startswith("strided_"))
            self.assertEqual(strided, ["strided_backward", "strided_backward_weight", "strided_forward"])
            self.assertIn("stride-2 convolutions", p["sources"]["conv_efficiency.strided"])
            # The grid's convolutions forward, backward and the weight's gradient alone, per dtype.
            grid = collections.Counter((e.get("pass"), e["dtype"]) for e in p["conv_efficiency"]
                                       if not e.get("pass", "").startswith(("transposed_", "strided_")))
            self.assertEqual(sorted(grid), [(ps, dt) for ps in ("backward", "backward_weight", "forward")
                                            for dt in ("bf16", "fp32")])
            self.assertEqual(len(set(grid.values())), 1, grid)
            r = mimic("predict", *sample("cnn_bn"), "--platform", out, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["platform"], "test_host")
            # One sweep alone into a copy of the base: its index_ops measured again, every other
            # figure the base's.
            only = os.path.join(tmp, "only.json")
            r = mimic("calibrate", "--quick", "--trials", "1", "--threads", "1", "--only", "index", "--base", out,
                      "-o", only)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(only) as f:
                q = json.load(f)
            self.assertEqual(len(q["index_ops"]), len(p["index_ops"]))
            self.assertIn("--only index", q["sources"]["index_ops"])
            for key in ("gemm_efficiency", "conv_efficiency", "bandwidth", "cpu_overheads", "peak_flops", "calibrated_at"):
                self.assertEqual(q[key], p[key], key)
            r = mimic("calibrate", "--quick", "--only", "index", "-o", only)  # no --base
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--base", r.stderr)
            # The cold-dispatch figures alone: measured again, said so, the rest kept.
            r = mimic("calibrate", "--trials", "1", "--threads", "1", "--only", "cold_dispatch", "--base", out,
                      "-o", only)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(only) as f:
                q = json.load(f)
            self.assertIn("--only cold_dispatch", q["sources"]["cpu_overheads.cold_dispatch"])
            self.assertIn("Cold dispatch (cpu_overheads.in_turn, after_traffic): measured by", q["description"])
            for key in ("in_turn", "in_turn_views", "after_traffic", "after_traffic_views"):
                self.assertEqual(len(q["cpu_overheads"][key]), len(p["cpu_overheads"][key]), key)
            for key in ("gemm_efficiency", "index_ops", "bandwidth", "peak_flops", "calibrated_at"):
                self.assertEqual(q[key], p[key], key)
            self.assertEqual(q["cpu_overheads"]["dispatch_us"], p["cpu_overheads"]["dispatch_us"])
            r = mimic("calibrate", "--trials", "1", "--threads", "1", "--only", "values", "--base", out, "-o", only)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(only) as f:
                q = json.load(f)
            self.assertEqual(sorted(v["kind"] for v in q["value_slowdown"]), sorted(slow))
            self.assertIn("--only values", q["sources"]["value_slowdown"])
            self.assertEqual(q["cpu_overheads"], p["cpu_overheads"])
            # The layout kinds alone: the same points measured again in place of the base's.
            r = mimic("calibrate", "--quick", "--trials", "1", "--threads", "1", "--only", "layouts", "--base", out,
                      "-o", only)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(only) as f:
                q = json.load(f)
            self.assertEqual(layout_points(q), layout_grid)
            self.assertIn("--only layouts", q["sources"]["bandwidth.layouts"])
            others = lambda x: [b for b in x["bandwidth"] if b["kind"] not in layouts]
            self.assertEqual(others(q), others(p))
            # The strided convolutions alone, likewise.
            r = mimic("calibrate", "--quick", "--trials", "1", "--threads", "1", "--only", "conv_strided", "--base",
                      out, "-o", only)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(only) as f:
                q = json.load(f)
            self.assertEqual(sorted(e["pass"] for e in q["conv_efficiency"] if e.get("pass", "").startswith("strided_")),
                             strided)
            self.assertIn("--only conv_strided", q["sources"]["conv_efficiency.strided"])
            self.assertEqual([e for e in q["conv_efficiency"] if not e.get("pass", "").startswith("strided_")],
                             [e for e in p["conv_efficiency"] if not e.get("pass", "").startswith("strided_")])
            # The sort kind alone, likewise.
            r = mimic("calibrate", "--quick", "--trials", "1", "--threads", "1", "--only", "sort", "--base", out,
                      "-o", only)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(only) as f:
                q = json.load(f)
            self.assertEqual(sorted(float(b["bytes"]) for b in q["bandwidth"] if b["kind"] == "sort"), sorts)
            self.assertIn("aten::sort of a 1-D int64 tensor", q["sources"]["bandwidth.sort"])
            self.assertEqual([b for b in q["bandwidth"] if b["kind"] != "sort"],
                             [b for b in p["bandwidth"] if b["kind"] != "sort"])

    def test_a_cpu_replay_takes_the_capture_cost_from_this_hosts_calibration(self):
        """`calibrate --cache` keeps this host's cpu_host; a replay with recorded host gaps then
        takes its capture cost from this host's calibration (that one, or the built-in one where
        it was calibrated on this host), not from a measurement at setup."""
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "XDG_CACHE_HOME": tmp}
            run = lambda *a: subprocess.run([MIMIC, *a], capture_output=True, text=True, env=env, timeout=600)
            out = os.path.join(tmp, "p.json")
            r = run("calibrate", "--quick", "--trials", "1", "--threads", "2", "--cache", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                cached = json.load(f)
            with open(os.path.join(ROOT, "platforms", "cpu_host.json")) as f:
                builtin = json.load(f)
            report = os.path.join(tmp, "r.json")
            r = run("replay", *sample("mlp"), "--device", "cpu", "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(report) as f:
                gaps = json.load(f)["host_gaps"]
            self.assertEqual(gaps["mode"], "recorded")
            prefix = "platform cpu_host calibrated on this host at "
            self.assertTrue(gaps["capture_cost_from"].startswith(prefix), gaps)
            used = {p["calibrated_at"]: p for p in (builtin, cached)}[gaps["capture_cost_from"][len(prefix):]]
            # The report writes 10 significant digits.
            close = lambda a, b: self.assertAlmostEqual(a, b, delta=1e-9 * max(1, abs(b)))
            close(gaps["capture_cost_us"], used["cpu_overheads"]["capture_cost_us"])
            console = next(line for line in r.stdout.splitlines() if "host gaps as recorded" in line)
            self.assertIn(f"the capture's {gaps['capture_cost_us']:.3f} us per event boundary", console)
            self.assertIn(f"taken off, {gaps['capture_cost_from']})", console)
            self.assertLessEqual(gaps["own_work_ms_per_iteration"], gaps["ms_per_iteration"])
            self.assertIn(f"{gaps['own_work_ms_per_iteration']:.3f} ms of it filled by the replay's own work", console)
            for key in ("capture_input_tensor_us", "capture_range_us_per_melem", "capture_range_strided_us_per_melem",
                        "capture_saved_us_per_mb"):
                close(gaps[key], used["cpu_overheads"].get(key, 0))
            r = run("replay", *sample("mlp"), "--device", "cpu", "--warmup", "0", "--iters", "1",
                    "--capture-cost-us", "0.25", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(report) as f:
                gaps = json.load(f)["host_gaps"]
            self.assertEqual((gaps["capture_cost_us"], gaps["capture_cost_from"]), (0.25, "given"))

    def test_compare_retimes_the_platforms_gemm_points_and_says_when_the_host_has_changed(self):
        """compare re-times some of the platform's calibrated GEMM points after the replay:
        their time now over their calibrated time is in the context; a platform whose points
        were twice as fast (as if calibrated on a quieter day) is met with a note."""
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "XDG_CACHE_HOME": tmp}
            run = lambda *a: subprocess.run([MIMIC, *a], capture_output=True, text=True, env=env, timeout=600)
            out, halved = os.path.join(tmp, "p.json"), os.path.join(tmp, "halved.json")
            # The minimum of five trials, each point's and each re-timing's: the least noise a
            # shared machine (or a sanitizer build) leaves in a ratio of two timings.
            r = run("calibrate", "--quick", "--trials", "5", "--statistic", "min", "--threads", "1", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                p = json.load(f)
            timed = "min of 5 round-robin trials"
            self.assertIn(timed, p["sources"]["gemm_efficiency"])
            for e in p["gemm_efficiency"]:
                e["time_us"] = e["time_us"] / 2
            with open(halved, "w") as f:
                json.dump(p, f)

            def speed(platform):
                report = os.path.join(tmp, "c.json")
                r = run("compare", *sample("mlp"), "--platform", platform, "--threads", "1", "--warmup", "0",
                        "--iters", "1", "--report", report)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(report) as f:
                    c = json.load(f)
                ctx = c["context"]
                self.assertIn("of the platform's GEMM points over their calibrated time", ctx["host_speed_how"])
                self.assertIn(f"{timed} each", ctx["host_speed_how"])  # as calibrate timed them
                return float(ctx["host_speed_after_replay"]), c["notes"], r.stdout

            same, _, _ = speed(out)
            twice, notes, console = speed(halved)
        self.assertTrue(0.4 < same < 2.5, same)
        self.assertTrue(1.3 < twice / same < 3.5, (same, twice))  # 2, give or take the machine
        note = next(n for n in notes if "GEMM points" in n)
        said = re.search(r"GEMM points ([0-9.]+)x as long after the replay as when it was calibrated", note)
        self.assertIsNotNone(said, note)
        self.assertAlmostEqual(float(said.group(1)), twice, delta=0.006)  # %.2f of what context gives to %.3f
        self.assertIn(note, console)

    def calibrate_only(self, out: str, *args: str):
        """`calibrate --only ... --base cpu_host -o out` with `args`; the run, the platform it wrote and
        the built-in cpu_host it started from, after checking that the base's other figures were
        kept."""
        r = mimic("calibrate", *args, "--base", "cpu_host", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            p = json.load(f)
        with open(os.path.join(ROOT, "platforms", "cpu_host.json")) as f:
            base = json.load(f)
        for key in ("gemm_efficiency", "bandwidth", "peak_flops", "calibrated_at", "calibrated_on"):
            self.assertEqual(p[key], base[key], key)
        return r, p, base

    def test_only_capture_measures_the_capture_cost_and_keeps_the_rest(self):
        """`calibrate --only capture`: the capture's cost per boundary, input tensor, integer
        element ranged and byte saved, where it was measured, every other figure of the base as
        it was."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            r, p, base = self.calibrate_only(out, "--only", "capture", "--trials", "3")
            c = p["cpu_overheads"]
            # The boundary and the input tensors are strong signals even under a sanitizer, over
            # the median of three runs (one run's boundary came out 0 under ASan on CI once); the
            # integer slopes can still be flattened to 0 by a burst of load (JSON then omits
            # them): replay's Executor.CaptureCostGrows... checks they grow.
            for key in ("capture_cost_us", "capture_input_tensor_us"):
                self.assertGreater(c[key], 0, key)
            self.assertIn("aten::sum of 1e5-1e6 int64 indices", p["sources"]["cpu_overheads.capture"])
            self.assertIn("capture: %.3f us per event boundary" % c["capture_cost_us"], r.stderr)
            self.assertIn("measured by `mimic calibrate --only capture`", p["sources"]["cpu_overheads.capture"])
            self.assertIn("Capture cost (cpu_overheads.capture_*): measured by `mimic calibrate --only capture`",
                          p["description"])
            for key in ("dispatch_us", "framework_us", "t1_forward_us"):
                self.assertAlmostEqual(c[key], base["cpu_overheads"][key], places=9)
            r = mimic("calibrate", "--only", "capture", "-o", out)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--only capture: give --base P", r.stderr)

    def test_only_page_faults_measures_a_fault_and_keeps_the_rest(self):
        """`calibrate --only page_faults`: what one minor page fault costs this host (a first
        write to each page of fresh anonymous memory on the intra-op threads, as the replay takes
        the original's faults, and the hand-back, over the faults the process counted), where it was
        measured, every other figure of the base as it was; a GPU device is refused."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            r, p, base = self.calibrate_only(out, "--only", "page_faults", "--trials", "1")
            us = p["cpu_overheads"]["page_fault_us"]
            # A fault maps and zeroes a page in the kernel: well above a cached store, well
            # under a millisecond on any host.
            self.assertTrue(0.05 < us < 1000, us)
            self.assertIn("page fault: %f us" % us, r.stderr)
            self.assertIn("64 MiB of fresh anonymous memory on the intra-op threads",
                          p["sources"]["cpu_overheads.page_fault_us"])
            self.assertIn("Page faults (cpu_overheads.page_fault_us): measured by", p["description"])
            for key in ("dispatch_us", "framework_us", "capture_cost_us"):
                self.assertAlmostEqual(p["cpu_overheads"][key], base["cpu_overheads"][key], places=9)
            r = mimic("calibrate", "--only", "page_faults", "--device", "cuda", "--base", "cpu_host", "-o", out)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--only page_faults: measures the CPU only", r.stderr)

    def test_only_host_gaps_measures_the_per_issuer_t1_and_keeps_the_rest(self):
        """`calibrate --only host_gaps` on Kineto-linked captures: the three per-issuer T1s,
        where they were measured, every other figure of the base as it was."""
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            mlp, cnn = (os.path.join(SAMPLES, n + ".et.json.gz") for n in ("mlp", "cnn_bn"))
            r, p, base = self.calibrate_only(out, "--only", "host_gaps", "--workload", mlp, "--workload", cnn)
            c = p["cpu_overheads"]
            for issuer in ("forward", "backward", "optimizer"):
                self.assertTrue(0 < c["t1_%s_us" % issuer] < 1000, c)
            how = p["sources"]["cpu_overheads.t1_by_issuer"]
            self.assertIn("captures %s, %s" % (mlp, cnn), how)
            self.assertIn("%.3f us per event boundary" % base["cpu_overheads"]["capture_cost_us"], how)
            self.assertIn("Per-issuer T1 (cpu_overheads.t1_*_us): measured by `mimic calibrate --only host_gaps`",
                          p["description"])
            for key in ("dispatch_us", "framework_us", "capture_cost_us"):
                self.assertAlmostEqual(c[key], base["cpu_overheads"][key], places=9)
            # A trace without its Kineto trace records no host gaps: bad input, nothing written.
            bare = os.path.join(tmp, "mlp.et.json.gz")
            shutil.copy(mlp, bare)
            out2 = os.path.join(tmp, "q.json")
            r = mimic("calibrate", "--only", "host_gaps", "--base", "cpu_host", "--workload", bare,
                      "-o", out2)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("no --workload capture has a Kineto trace linked", r.stderr)
            self.assertFalse(os.path.exists(out2))
            # Without the platform to start from: bad input, nothing written.
            r = mimic("calibrate", "--only", "host_gaps", "--workload", mlp, "-o", out2)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("--base", r.stderr)
            self.assertFalse(os.path.exists(out2))

    def test_unknown_device_is_bad_input(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "p.json")
            r = mimic("calibrate", "--device", "tpu:0", "-o", out)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertFalse(os.path.exists(out))


class HostGapsTest(unittest.TestCase):
    """Replay without a Kineto trace: the per-issuer T1s of the built-in cpu_host by default."""

    def test_modelled_host_gaps_by_default_without_a_kineto_trace(self):
        with open(os.path.join(ROOT, "platforms", "cpu_host.json")) as f:
            t1 = json.load(f)["cpu_overheads"]
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "XDG_CACHE_HOME": tmp}  # no calibration of this host
            run = lambda *a: subprocess.run([MIMIC, *a], capture_output=True, text=True, env=env, timeout=600)
            bare = os.path.join(tmp, "mlp.et.json.gz")  # no manifest beside it: no Kineto trace
            shutil.copy(os.path.join(SAMPLES, "mlp.et.json.gz"), bare)
            report = os.path.join(tmp, "r.json")
            gaps = {}
            for mode in (None, "modelled", "none"):
                flags = [] if mode is None else ["--host-gaps", mode]
                r = run("replay", bare, "--device", "cpu", "--warmup", "0", "--iters", "1", *flags,
                        "--report", report)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(report) as f:
                    gaps[mode] = json.load(f)["host_gaps"]
                if mode != "none":
                    self.assertIn("host gaps modelled: ", r.stdout)
            for mode in (None, "modelled"):
                g = gaps[mode]
                self.assertEqual(g["mode"], "modelled")
                for issuer in ("forward", "backward", "optimizer"):
                    self.assertAlmostEqual(g["modelled_t1_us"][issuer], t1["t1_%s_us" % issuer], places=6)
                self.assertTrue(g["modelled_from"].startswith("platform cpu_host (cpu_overheads.t1_<issuer>_us"), g)
                # Before every top-level op of the step: 9 forward, 43 backward, 24 optimizer.
                self.assertEqual(g["gaps"], 9 + 43 + 24)
                expect = 9 * t1["t1_forward_us"] + 43 * t1["t1_backward_us"] + 24 * t1["t1_optimizer_us"]
                self.assertAlmostEqual(g["ms_per_iteration"], expect / 1000, places=6)
            self.assertEqual(gaps["none"]["mode"], "none")
            self.assertEqual(gaps["none"]["gaps"], 0)
            self.assertEqual(gaps["none"]["modelled_t1_us"], {})
            # Without recorded gaps no capture cost was taken off: 0, not the "measure it" -1.
            for g in gaps.values():
                self.assertEqual((g["capture_cost_us"], g["capture_cost_from"]), (0, ""), g)
            r = run("replay", bare, "--host-gaps", "typical")
            self.assertEqual(r.returncode, 2, r.stderr)

    def test_recorded_gaps_longer_than_the_unprofiled_step_are_flagged(self):
        """Recorded host gaps that alone outlast the original's whole unprofiled step hold the
        capture's own cost: the report flags them. The same capture with its real unprofiled
        times is not flagged; with times shorter than its gaps (the manifest edited) it is."""
        with open(os.path.join(SAMPLES, "manifest.json")) as f:
            manifest = json.load(f)
        entry = next(s for s in manifest["samples"] if s["name"] == "mlp")
        flagged = {}
        for edited in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                for name in ("mlp.et.json.gz", "mlp.kineto.json.gz"):
                    shutil.copy(os.path.join(SAMPLES, name), tmp)
                e = dict(entry)
                if edited:
                    e["iteration_ms"] = [0.001] * len(entry["iteration_ms"])
                    e["iteration_ms_median"] = 0.001
                with open(os.path.join(tmp, "manifest.json"), "w") as f:
                    json.dump({**manifest, "samples": [e], "default": "mlp"}, f)
                report = os.path.join(tmp, "r.json")
                r = subprocess.run([MIMIC, "replay", os.path.join(tmp, "mlp.et.json.gz"), "--device", "cpu",
                                    "--warmup", "0", "--iters", "1", "--report", report],
                                   capture_output=True, text=True, timeout=600)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(report) as f:
                    g = json.load(f)["host_gaps"]
                self.assertEqual(g["mode"], "recorded")
                self.assertGreater(g["ms_per_iteration"], 0.001)
                flagged[edited] = g["exceed_original_step"]
                self.assertEqual("hold the capture's own cost" in r.stdout, edited, r.stdout)
        self.assertEqual(flagged, {False: False, True: True})


class CompareTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.json_path = os.path.join(cls.tmp, "r.json")
        cls.html_path = os.path.join(cls.tmp, "r.html")
        cls.compare = mimic("compare", *sample("mlp"), "--platform", "cpu_host", "--warmup", "0", "--iters", "2",
                        "--report", cls.json_path, "--html", cls.html_path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def report(self):
        self.assertEqual(self.compare.returncode, 0, self.compare.stderr)
        with open(self.json_path) as f:
            return json.load(f)

    def test_json_sets_the_three_sides_with_their_signed_errors(self):
        r = self.report()
        e = r["end_to_end"]
        for key in ("original_ms", "replay_ms", "predicted_ms", "error_replay_vs_original",
                    "error_predicted_vs_replay", "error_predicted_vs_original"):
            self.assertIn(key, e)
        with open(os.path.join(SAMPLES, "manifest.json")) as f:
            manifest = json.load(f)
        steps = sorted(next(s for s in manifest["samples"] if s["name"] == "mlp")["iteration_ms"])
        n = len(steps)
        median = steps[n // 2] if n % 2 else (steps[n // 2 - 1] + steps[n // 2]) / 2
        self.assertAlmostEqual(e["original_ms"], median, places=6)
        self.assertAlmostEqual(e["error_replay_vs_original"], (e["replay_ms"] - e["original_ms"]) / e["original_ms"], places=6)
        self.assertAlmostEqual(e["error_predicted_vs_replay"], (e["predicted_ms"] - e["replay_ms"]) / e["replay_ms"], places=6)
        self.assertAlmostEqual(e["error_predicted_vs_original"], (e["predicted_ms"] - e["original_ms"]) / e["original_ms"], places=6)
        self.assertIn("gemm", r["op_classes"])
        for name, c in r["op_classes"].items():
            for key in ("original_ms", "replay_ms", "predicted_ms", "error_replay_vs_original"):
                self.assertIn(key, c)
        self.assertEqual(sum(c["ops"] for c in r["op_classes"].values()), e["ops"])
        self.assertEqual(r["context"]["platform"], "cpu_host")
        self.assertIsNotNone(r["geomean_abs_error"]["predicted_vs_replay"])
        # No recorded kernels to set the ops against on a CPU platform.
        self.assertEqual(r["largest_differences"], [])

    def test_html_draws_its_charts_in_headless_chromium_with_the_json_numbers(self):
        r = self.report()
        chromium = chromium_binary()
        self.assertIsNotNone(chromium, "chromium is missing: scripts/setup.sh installs it")
        with open(self.html_path) as f:
            page = f.read()
        for needle in ('src="http', "src='http", 'href="http', "@import"):
            self.assertNotIn(needle, page)
        profile = os.path.join(self.tmp, "profile")
        dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                              "--no-first-run", "--disable-extensions", "--user-data-dir=" + profile,
                              "--virtual-time-budget=5000", "--dump-dom", "file://" + self.html_path],
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        c = DomCollector()
        c.feed(dom.stdout)
        self.assertEqual(c.body.get("data-rendered"), "ok", "the page's script did not finish")
        bars = [a for a in c.rects if "data-class" in a]
        self.assertEqual(len(bars), 3 * len(r["op_classes"]))
        for a in bars:
            want = r["op_classes"][a["data-class"]][a["data-side"]]
            if want is None:
                self.assertEqual(a["data-value"], "")
            else:
                self.assertAlmostEqual(float(a["data-value"]), want, places=9)
                self.assertGreater(float(a["width"]), 0)
        strips = {a.get("data-strip") for a in c.rects if "data-strip" in a}
        self.assertEqual(strips, {"original", "replay", "prediction"})
        fmt = lambda v: "\u2014" if v is None else "%.3f" % v
        for row, values in [("end_to_end", r["end_to_end"])] + list(r["op_classes"].items()):
            for key in ("original_ms", "replay_ms", "predicted_ms"):
                self.assertEqual(c.cells[(row, key)], fmt(values[key]), (row, key))
            self.assertEqual(c.cells[(row, "ops")], str(values["ops"]))

    def test_compare_prices_the_prediction_at_the_replays_page_faults_too(self):
        """A CPU prediction charges the original's page faults a step (the capture manifest's);
        compare also prices it at the replay's own count and notes the difference where the two
        counts differ (here a replay that keeps its heap and takes none on purpose,
        --no-heap-trim). A manifest without a count gives neither."""
        with open(os.path.join(SAMPLES, "manifest.json")) as f:
            manifest = json.load(f)
        entry = next(s for s in manifest["samples"] if s["name"] == "mlp")
        with open(os.path.join(ROOT, "platforms", "cpu_host.json")) as f:
            us = json.load(f)["cpu_overheads"]["page_fault_us"]
        self.assertGreater(us, 0)
        reports = {}
        for faults in (None, 100000):
            with tempfile.TemporaryDirectory() as tmp:
                for name in ("mlp.et.json.gz", "mlp.kineto.json.gz"):
                    shutil.copy(os.path.join(SAMPLES, name), tmp)
                e = dict(entry, **({} if faults is None else {"page_faults_per_step": faults}))
                with open(os.path.join(tmp, "manifest.json"), "w") as f:
                    json.dump({**manifest, "samples": [e], "default": "mlp"}, f)
                report = os.path.join(tmp, "c.json")
                r = subprocess.run([MIMIC, "compare", os.path.join(tmp, "mlp.et.json.gz"), "--platform", "cpu_host",
                                    "--no-heap-trim", "--warmup", "1", "--iters", "2", "--report", report],
                                   capture_output=True, text=True, timeout=600)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(report) as f:
                    reports[faults] = json.load(f), r.stdout
        self.assertNotIn("page_faults", reports[None][0]["end_to_end"])
        c, console = reports[100000]
        e, f = c["end_to_end"], c["end_to_end"]["page_faults"]
        replay = f["replay_per_iteration"]
        self.assertEqual((f["original_per_iteration"], f["us_each"]), (100000, us))
        # The context rounds half away from zero (std::lround), Python's round() half to even.
        self.assertLessEqual(abs(replay - int(c["context"]["replay_page_faults_per_iteration"])), 0.5)
        self.assertLess(replay, 50000)  # mlp's replay takes nothing like the edited count
        self.assertAlmostEqual(f["predicted_ms_at_replays"], e["predicted_ms"] - (100000 - replay) * us / 1000, places=6)
        self.assertAlmostEqual(f["error_predicted_vs_replay_at_replays"],
                               (f["predicted_ms_at_replays"] - e["replay_ms"]) / e["replay_ms"], places=6)
        note = next(n for n in c["notes"] if n.startswith("the replay page-faulted"))
        self.assertIn(f"{replay:.0f} times a step, the original 100000", note)
        self.assertIn(f"the prediction is {f['predicted_ms_at_replays']:.3f} ms", note)
        self.assertIn(note, console)


TRACES = os.environ.get("MIMIC_TRACES") or os.path.join(ROOT, "..", "shared", "traces")
LINEAR = [os.path.join(TRACES, "param-linear", "linear_et.json.gz"),
          "--kineto", os.path.join(TRACES, "param-linear", "linear_kineto.json.gz")]


def all_kernels_union_ms():
    """The union of every device event in the Kineto trace, read here with Python's json."""
    with gzip.open(LINEAR[2], "rt") as f:
        events = json.load(f)["traceEvents"]
    iv = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    total, cur = 0.0, None
    for s, e in iv:
        if cur is None or s > cur[1]:
            total += cur[1] - cur[0] if cur else 0
            cur = [s, e]
        else:
            cur[1] = max(cur[1], e)
    return (total + (cur[1] - cur[0] if cur else 0)) / 1000


@unittest.skipUnless(os.path.isdir(TRACES), "public traces not present")
class CompareGpuKernelsTest(unittest.TestCase):
    """compare --no-replay against the kernels a real GPU recorded (PARAM's RTX 2080 Ti trace)."""

    def compare(self, *extra):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("compare", *LINEAR, "--no-replay", "--report", report, *extra)
            data = json.load(open(report)) if os.path.exists(report) else None
        return r, data

    def test_gpu_active_time_is_the_recorded_kernels_union_and_the_platform_comes_from_device_properties(self):
        r, data = self.compare()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(data["platform"]["name"], "rtx_2080_ti")
        e2e = data["end_to_end"]
        # The execution trace covers a window of the Kineto trace: its kernels' union is no more
        # than the whole trace's, no more than the sum of its kernels' durations (the classes'
        # recorded kernel time), and no less than any one class's union.
        self.assertGreater(e2e["original_gpu_active_ms"], 0)
        self.assertLess(e2e["original_gpu_active_ms"], all_kernels_union_ms())
        classes = data["op_classes"].values()
        self.assertLessEqual(e2e["original_gpu_active_ms"], sum(c["original_ms"] or 0 for c in classes) + 1e-9)
        self.assertGreaterEqual(e2e["original_gpu_active_ms"], max(c["original_gpu_active_ms"] or 0 for c in classes))
        self.assertGreater(e2e["predicted_gpu_active_ms"], 0)
        self.assertAlmostEqual(e2e["error_predicted_vs_original_gpu_active"],
                               (e2e["predicted_gpu_active_ms"] - e2e["original_gpu_active_ms"]) / e2e["original_gpu_active_ms"])
        gemm = data["op_classes"]["gemm"]
        self.assertGreater(gemm["original_gpu_active_ms"], 0)
        self.assertLessEqual(gemm["original_gpu_active_ms"], e2e["original_gpu_active_ms"])
        self.assertIn("gemm", r.stdout)
        self.assertIn("note: no replay", r.stdout)
        # No collective and no op the models cannot see into: compute is all of it.
        for key in ("compute_gpu_active", "modelled_gpu_active"):
            self.assertAlmostEqual(e2e[key]["original_ms"], e2e["original_gpu_active_ms"])
            self.assertAlmostEqual(e2e[key]["predicted_ms"], e2e["predicted_gpu_active_ms"])
        self.assertEqual(data["unmodelled"]["ops"], 0)
        self.assertEqual(data["unmodelled"]["by_name"], [])

    def test_the_ops_farthest_from_their_recorded_kernels_are_grouped_by_name_and_inputs(self):
        r, data = self.compare()
        self.assertEqual(r.returncode, 0, r.stderr)
        p = mimic("predict", *LINEAR, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        # The groups, from predict's own ops: modelled compute ops of one name and inputs, their
        # recorded kernel time against the predicted.
        groups = {}
        for o in json.loads(p.stdout)["ops"]:
            if o["unmodelled"] or o["op_class"] == "collective" or o["original_us"] is None:
                continue
            inputs = ", ".join(i["dtype"] + ("" if i["shape"] is None else str(i["shape"])) for i in o["inputs"])
            g = groups.setdefault((o["name"], inputs), {"ops": 0, "original_ms": 0.0, "predicted_ms": 0.0,
                                                       "bound": o["bound"], "op_class": o["op_class"]})
            g["ops"] += 1
            g["original_ms"] += o["original_us"] / 1000
            g["predicted_ms"] += o["compute_us"] / 1000
        gap = lambda g: abs(g["predicted_ms"] - g["original_ms"])
        rows = data["largest_differences"]
        self.assertEqual(len(rows), min(12, len(groups)))
        for row in rows:
            g = groups.pop((row["name"], row["inputs"]))
            self.assertEqual(row["ops"], g["ops"])
            self.assertEqual(row["op_class"], g["op_class"])
            self.assertEqual(row["bound"], g["bound"])
            self.assertAlmostEqual(row["original_ms"], g["original_ms"], places=6)
            self.assertAlmostEqual(row["predicted_ms"], g["predicted_ms"], places=6)
            self.assertAlmostEqual(row["error_predicted_vs_original"],
                                   (g["predicted_ms"] - g["original_ms"]) / g["original_ms"], places=6)
        gaps = [gap(row) for row in rows]
        self.assertEqual(gaps, sorted(gaps, reverse=True))
        # No group left out is farther from its kernels than the last one listed.
        self.assertLessEqual(max(map(gap, groups.values()), default=0), gaps[-1] + 1e-9)
        self.assertGreater(gaps[0], 0)
        # The console lists them, the farthest first, with what limited each.
        table = r.stdout[r.stdout.index("farthest from the recorded kernels"):]
        first = table.splitlines()[1].split()
        self.assertEqual(first[0], rows[0]["name"])
        self.assertEqual(first[-1], rows[0]["bound"])
        self.assertIn(rows[0]["inputs"], table)

    def test_html_shows_the_gpu_active_rows_of_the_json(self):
        chromium = chromium_binary()
        self.assertIsNotNone(chromium, "chromium is missing: scripts/setup.sh installs it")
        with tempfile.TemporaryDirectory() as d:
            page, report = os.path.join(d, "r.html"), os.path.join(d, "r.json")
            r = mimic("compare", *LINEAR, "--no-replay", "--report", report, "--html", page)
            self.assertEqual(r.returncode, 0, r.stderr)
            data = json.load(open(report))
            dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                  "--no-first-run", "--disable-extensions", "--user-data-dir=" + os.path.join(d, "p"),
                                  "--virtual-time-budget=5000", "--dump-dom", "file://" + page],
                                 capture_output=True, text=True, timeout=600)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        c = DomCollector()
        c.feed(dom.stdout)
        self.assertEqual(c.body.get("data-rendered"), "ok", "the page's script did not finish")
        for row in ("compute_gpu_active", "modelled_gpu_active"):
            self.assertEqual(c.cells[(row, "original_gpu_active_ms")], "%.3f" % data["end_to_end"][row]["original_ms"])
            self.assertEqual(c.cells[(row, "predicted_gpu_active_ms")], "%.3f" % data["end_to_end"][row]["predicted_ms"])
        self.assertIn("the models see every op", dom.stdout)
        for i, row in enumerate(data["largest_differences"]):
            self.assertEqual(c.cells[("difference%d" % i, "name")], row["name"])
            self.assertEqual(c.cells[("difference%d" % i, "inputs")], row["inputs"])
            self.assertEqual(c.cells[("difference%d" % i, "original_ms")], "%.3f" % row["original_ms"])
            self.assertEqual(c.cells[("difference%d" % i, "predicted_ms")], "%.3f" % row["predicted_ms"])
            self.assertEqual(c.cells[("difference%d" % i, "bound")], row["bound"])
        self.assertGreater(len(data["largest_differences"]), 0)

    def test_another_platform_is_labelled_a_cross_platform_prediction(self):
        r, data = self.compare("--platform", "h100_sxm")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(data["platform"]["name"], "h100_sxm")
        self.assertTrue(any("cross-platform prediction" in n for n in data["notes"]))
        self.assertIn("cross-platform prediction", r.stdout)

    def test_an_unknown_gpu_is_bad_input_naming_the_platform_option(self):
        with gzip.open(LINEAR[2], "rt") as f:
            trace = json.load(f)
        for p in trace["deviceProperties"]:
            p["name"], p["numSms"] = "Imaginary GPU 9000", 7
        with tempfile.TemporaryDirectory() as d:
            kineto = os.path.join(d, "k.json")
            json.dump(trace, open(kineto, "w"))
            report = os.path.join(d, "r.json")
            r = mimic("compare", LINEAR[0], "--kineto", kineto, "--no-replay", "--report", report)
            self.assertEqual(r.returncode, 2)
            self.assertIn("--platform", r.stderr)
            self.assertIn("Imaginary GPU 9000", r.stderr)
            self.assertFalse(os.path.exists(report))


if __name__ == "__main__":
    unittest.main()
