"""End-to-end tests of a Kineto trace given alone (no execution trace): inspect, predict,
compare --no-replay and convert read it; replay refuses it with a one-line hint.

The expected figures are read here from the trace files themselves (Python's json module), on
public traces from other people's machines (../shared/traces) and the CPU samples in
fleet_samples/.
"""

import atexit
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.environ.get("MIMIC_TRACES") or os.path.join(os.path.dirname(ROOT), "shared", "traces")
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="mimic-test-cache.")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

BACKWARD = os.path.join(TRACES, "hta-backward-thread", "backward_thread_kineto.json")
EVENT_SYNC = os.path.join(TRACES, "hta-event-sync", "event_sync_kineto.json.gz")
V100 = os.path.join(TRACES, "hta-gpu-kineto", "trace_diff_test_kineto.json.gz")
SAMPLED = os.path.join(TRACES, "hta-gpu-kineto", "sampled_rank0_kineto.json.gz")
MLP = os.path.join(ROOT, "fleet_samples", "mlp.kineto.json.gz")


def mimic(*args, timeout=600):
    return subprocess.run([MIMIC, *args], capture_output=True, text=True, timeout=timeout)


def events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def union_ms(intervals):
    total, end = 0.0, None
    start = None
    for s, e in sorted(intervals):
        if end is None or s > end:
            if end is not None:
                total += end - start
            start, end = s, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total / 1000


@unittest.skipUnless(os.path.exists(V100), "needs ../shared/traces")
class InspectTest(unittest.TestCase):

    def test_json_counts_what_the_trace_holds(self):
        r = mimic("inspect", V100, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        ev = events(V100)
        host = [e for e in ev if e.get("cat") in ("cpu_op", "user_annotation")]
        device = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        self.assertTrue(got["kineto_only"])
        self.assertEqual(got["schema"], "kineto")
        self.assertEqual(got["ops"], len(host))
        self.assertEqual(got["ops_with_schema"], 0)
        self.assertEqual(got["threads"], len({e["tid"] for e in host}))
        self.assertEqual(got["iterations"], sum(e["name"].startswith("ProfilerStep#") for e in host))
        self.assertEqual(got["kineto"]["kernels_total"], len(device))
        self.assertLessEqual(got["kineto"]["kernels_linked"], len(device))
        self.assertGreater(got["kineto"]["kernels_linked"], 0.9 * len(device))
        streams = {(e["args"].get("device"), e["args"].get("stream")) for e in device}
        self.assertGreater(got["kineto"]["streams"], 1)
        self.assertLessEqual(got["kineto"]["streams"], len(streams))
        self.assertEqual(got["devices"][0], "Tesla V100-SXM2-16GB")
        self.assertEqual(got["world_size"], 2)
        # The first step holds the autograd thread's ops too.
        in_step = [t for t in got["per_thread"] if t["first_step_replayable_ops"] > 0]
        self.assertEqual(len(in_step), 2)

    def test_text_says_it_is_a_kineto_trace_alone(self):
        r = mimic("inspect", BACKWARD)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("a Kineto trace alone", r.stdout)
        self.assertIn("kernels linked 1/1", r.stdout)
        self.assertIn("on 1 streams", r.stdout)


@unittest.skipUnless(os.path.exists(V100), "needs ../shared/traces")
class PredictTest(unittest.TestCase):

    def test_platform_from_device_properties(self):
        r = mimic("predict", EVENT_SYNC, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        p = json.loads(r.stdout)
        self.assertEqual(p["platform"], "a100_40gb")  # NVIDIA A100-PG509-200, 40 GiB, 108 SMs
        self.assertEqual(p["selection"], "ProfilerStep#100")
        self.assertTrue(any("deviceProperties" in n for n in p["notes"]))
        self.assertTrue(any("Kineto trace alone" in n for n in p["notes"]))
        names = [o["name"] for o in p["ops"]]
        self.assertIn("aten::sum", names)
        self.assertGreater(p["iteration_ms"], 0)

    def test_backward_on_its_own_thread_is_priced_as_a_gemm(self):
        r = mimic("predict", BACKWARD, "--platform", "a100_40gb", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        p = json.loads(r.stdout)
        self.assertEqual(p["selection"], "ProfilerStep#552")
        self.assertEqual([o["name"] for o in p["ops"]], ["aten::mm"])
        mm = p["ops"][0]
        self.assertEqual(mm["model"], "gemm")
        self.assertEqual(mm["flops"], 2 * 2048 * 2048 * 256)  # from the recorded Input Dims

    def test_no_device_properties_is_bad_input_naming_the_platform_option(self):
        r = mimic("predict", SAMPLED)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("--platform", r.stderr)
        self.assertIn("sampled_rank0_kineto.json.gz", r.stderr)
        r = mimic("predict", SAMPLED, "--platform", "a100_80gb", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(json.loads(r.stdout)["gpu_active_ms"], 0)

    def test_a_cpu_trace_predicts_on_the_cpu_platform(self):
        r = mimic("predict", MLP, "--platform", "cpu_host", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        p = json.loads(r.stdout)
        self.assertEqual(p["selection"], "ProfilerStep#1")
        # nn.Linear: aten::linear over aten::addmm, priced whole from the recorded input shapes.
        gemm = [o for o in p["ops"] if o["name"] == "aten::linear"]
        self.assertTrue(gemm)
        self.assertEqual(gemm[0]["model"], "gemm")
        self.assertEqual(gemm[0]["flops"], 2 * 256 * 1024 * 1024)


@unittest.skipUnless(os.path.exists(V100), "needs ../shared/traces")
class CompareTest(unittest.TestCase):

    def test_no_replay_sets_the_prediction_beside_the_recorded_kernels(self):
        with tempfile.TemporaryDirectory() as d:
            report, page = os.path.join(d, "r.json"), os.path.join(d, "r.html")
            r = mimic("compare", V100, "--no-replay", "--report", report, "--html", page)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(report) as f:
                data = json.load(f)
            self.assertTrue(os.path.getsize(page) > 0)
        self.assertEqual(data["platform"]["name"], "v100_16gb")
        e2e = data["end_to_end"]
        ev = events(V100)
        # The original: the median of the six profiled step spans.
        steps = sorted(e["dur"] / 1000 for e in ev if e["name"].startswith("ProfilerStep#"))
        self.assertEqual(len(steps), 6)
        self.assertAlmostEqual(e2e["original_ms"], (steps[2] + steps[3]) / 2)
        kernels = [(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        self.assertGreater(e2e["original_gpu_active_ms"], 0)
        self.assertLess(e2e["original_gpu_active_ms"], union_ms(kernels))
        self.assertGreater(e2e["predicted_gpu_active_ms"], 0)
        self.assertIn("gemm", data["op_classes"])
        self.assertTrue(any("no replay" in n for n in data["notes"]))
        # Compute judged on compute: the same figures without communication and without the
        # ops no model sees into, which are listed apart.
        for key in ("compute_gpu_active", "modelled_gpu_active"):
            self.assertGreater(e2e[key]["original_ms"], 0)
            self.assertLess(e2e[key]["original_ms"], e2e["original_gpu_active_ms"])
            self.assertGreater(e2e[key]["predicted_ms"], 0)
        names = [b["name"] for b in data["unmodelled"]["by_name"]]
        self.assertIn("CompiledFunctionBackward", names)
        self.assertIn("unmodelled:", r.stdout)

    def test_replaying_it_is_refused_with_the_hint(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            for args in (["replay", BACKWARD, "--device", "cpu", "--report", report],
                         ["compare", BACKWARD, "--report", report]):
                r = mimic(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn("but a Kineto trace", r.stderr)
                self.assertIn("--kineto", r.stderr)
                self.assertFalse(os.path.exists(report))


def launched_in(ev, span):
    """The device events whose launch call lies in host span `span` (same thread)."""
    launch = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "cuda_runtime"}
    out = []
    for e in ev:
        if e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        call = launch.get(e["args"].get("correlation"))
        if call and call["tid"] == span["tid"] and span["ts"] <= call["ts"] <= span["ts"] + span["dur"]:
            out.append(e)
    return out


@unittest.skipUnless(os.path.exists(V100), "needs ../shared/traces")
class GpuKernelModelTest(unittest.TestCase):
    """What the GPU kernel models make of the V100 trace's first step, against its own events."""

    @classmethod
    def setUpClass(cls):
        cls.ev = events(V100)
        cls.step = next(e for e in cls.ev if e["name"] == "ProfilerStep#1009")
        r = mimic("predict", V100, "--json")
        assert r.returncode == 0, r.stderr
        cls.pred = json.loads(r.stdout)
        with open(os.path.join(ROOT, "platforms", "v100_16gb.json")) as f:
            cls.platform = json.load(f)

    def in_step(self, name):
        s = self.step
        return [e for e in self.ev if e["name"] == name and e.get("cat") == "cpu_op"
                and s["ts"] <= e["ts"] <= s["ts"] + s["dur"] and e["tid"] == s["tid"]]

    def test_host_to_device_copies_cross_pcie_at_the_platforms_pinned_rate(self):
        # The bytes each pinned host-to-device memcpy under an aten::to moved, as the trace's
        # memcpy events record them (not the Input Dims the model reads).
        recorded = []
        for op in self.in_step("aten::to"):
            copies = [e for e in launched_in(self.ev, op) if e["name"] == "Memcpy HtoD (Pinned -> Device)"]
            recorded += [e["args"]["bytes"] for e in copies]
        rate = self.platform["host_device_copy"]["h2d_pinned_bytes_per_s"]
        # Where the link's rate, not the shortest kernel, sets the time.
        big = self.platform["min_kernel_us"] * 1e-6 * rate
        recorded = [b for b in recorded if b > big]
        self.assertGreaterEqual(len(recorded), 5)
        priced = [o["bytes"] for o in self.pred["ops"] if o["name"] == "aten::to" and o["model"] == "memcpy"
                  and o["bytes"] > big and abs(o["compute_us"] - o["bytes"] / rate * 1e6) < 1e-6 * o["compute_us"]]
        self.assertEqual(sorted(priced), sorted(recorded))

    def test_compiled_regions_are_unmodelled_with_their_recorded_kernels(self):
        by_name = {o["name"]: o for o in self.pred["ops"]}
        for name in ("CompiledFunction", "CompiledFunctionBackward"):
            self.assertEqual(by_name[name]["unmodelled"], "compiled code")
        region = self.in_step("CompiledFunction")
        self.assertEqual(len(region), 1)
        kernels = sum(e["dur"] for e in launched_in(self.ev, region[0]))
        self.assertAlmostEqual(by_name["CompiledFunction"]["original_us"], kernels, places=6)
        # Predicted at a floor, never the recording copied.
        self.assertLess(by_name["CompiledFunction"]["compute_us"], kernels)
        u = self.pred["unmodelled"]
        self.assertEqual(u["reasons"]["compiled code"], 2)
        self.assertEqual(u["ops"], sum(1 for o in self.pred["ops"] if o["unmodelled"]))

    def test_gpu_active_is_reported_with_and_without_communication(self):
        s = self.step
        launch = {e["args"]["correlation"]: e for e in self.ev if e.get("cat") == "cuda_runtime"}
        device = [e for e in self.ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
                  and e["args"].get("correlation") in launch
                  and s["ts"] <= launch[e["args"]["correlation"]]["ts"] <= s["ts"] + s["dur"]]
        nccl = [(e["ts"], e["ts"] + e["dur"]) for e in device if e["name"].startswith("nccl")]
        compute = [(e["ts"], e["ts"] + e["dur"]) for e in device if not e["name"].startswith("nccl")]
        p = self.pred
        self.assertTrue(nccl)
        self.assertLess(p["original_gpu_active_compute_ms"], p["original_gpu_active_ms"])
        self.assertLessEqual(p["original_gpu_active_compute_ms"], union_ms(compute) + 1e-9)
        self.assertGreaterEqual(p["original_gpu_active_compute_ms"], p["original_gpu_active_ms"] - union_ms(nccl))
        self.assertLessEqual(p["original_gpu_active_modelled_ms"] + p["unmodelled"]["original_gpu_active_ms"],
                             p["original_gpu_active_compute_ms"] * 1.5)
        self.assertGreaterEqual(p["original_gpu_active_modelled_ms"] + p["unmodelled"]["original_gpu_active_ms"],
                                p["original_gpu_active_compute_ms"] - 1e-9)
        self.assertLess(p["gpu_active_compute_ms"], p["gpu_active_ms"])
        self.assertLessEqual(p["gpu_active_modelled_ms"], p["gpu_active_compute_ms"] + 1e-9)


@unittest.skipUnless(os.path.exists(V100), "needs ../shared/traces")
class ConvertTest(unittest.TestCase):

    def test_the_workload_predicts_as_the_trace_does_and_is_not_replayed(self):
        with tempfile.TemporaryDirectory() as d:
            w = os.path.join(d, "w.mimic")
            r = mimic("convert", EVENT_SYNC, "-o", w)
            self.assertEqual(r.returncode, 0, r.stderr)
            a = mimic("predict", EVENT_SYNC, "--json")
            # The workload keeps the trace's deviceProperties: its GPU is found without --platform.
            b = mimic("predict", w, "--json")
            self.assertEqual(b.returncode, 0, b.stderr)
            self.assertEqual(json.loads(b.stdout)["platform"], "a100_40gb")
            self.assertEqual(json.loads(a.stdout)["iteration_ms"], json.loads(b.stdout)["iteration_ms"])
            r = mimic("inspect", w, "--json")
            self.assertTrue(json.loads(r.stdout)["kineto_only"])
            r = mimic("replay", w, "--device", "cpu", "--report", os.path.join(d, "r.json"))
            self.assertEqual(r.returncode, 2)
            self.assertIn("Kineto trace alone", r.stderr)


if __name__ == "__main__":
    unittest.main()
