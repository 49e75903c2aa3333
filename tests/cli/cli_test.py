"""End-to-end tests of the mimic command line: the contract scripts depend on.

Runs the built binary ($MIMIC_BIN) on the public traces in ../shared/traces and the fleet
samples, and checks its JSON against what the trace files themselves hold (read here with
Python's json module, independently of Mimic's reader).
"""

import atexit
import gzip
import hashlib
import json
import os
import random
import re
import signal
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("MIMIC_TRACES") or os.path.join(os.path.dirname(ROOT), "shared", "traces")
SAMPLES = os.path.join(ROOT, "fleet_samples")
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))
# Host calibrations that compare and `calibrate --cache` keep go to a folder of this run's own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="mimic-test-cache.")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

SHARED_ETS = [
    "param-linear/linear_et.json.gz",
    "hta-simple-add/simple_add_et.json.gz",
    "chakra-allgather/allgather_1.0.2_et.json.gz",
    "param-resnet-1gpu/resnet_1gpu_et.json.gz",
    "param-pt2/pt2_et.json.gz",
]


def mimic(*args, timeout=600):
    return subprocess.run([MIMIC, *args], capture_output=True, text=True, timeout=timeout)


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def op_schema(node):
    if "op_schema" in node:
        return node["op_schema"]
    return next((a["value"] for a in node.get("attrs", []) if a["name"] == "op_schema"), "")


class InspectTest(unittest.TestCase):

    def test_every_shared_trace_parses_with_counts_matching_the_json(self):
        for rel in SHARED_ETS:
            path = os.path.join(SHARED, rel)
            with self.subTest(trace=rel):
                r = mimic("inspect", path, "--json")
                self.assertEqual(r.returncode, 0, r.stderr)
                got = json.loads(r.stdout)
                et = load_json(path)
                self.assertEqual(got["schema"], et["schema"])
                self.assertEqual(got["ops"], len(et["nodes"]))
                self.assertEqual(got["ops_with_schema"], sum(1 for n in et["nodes"] if op_schema(n)))
                self.assertEqual(got["iterations"],
                                 sum(1 for n in et["nodes"] if n["name"].startswith("ProfilerStep#")))
                for key in ("replayable_ops", "tensors", "collectives"):
                    self.assertIn(key, got)
                self.assertLessEqual(got["replayable_ops"], got["ops_with_schema"])
                self.assertIsNone(got["kineto"])

    def test_allgather_trace_parses_to_ten_all_gathers_on_a_two_rank_group(self):
        path = os.path.join(SHARED, "chakra-allgather/allgather_1.0.2_et.json.gz")
        r = mimic("inspect", path, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        et = load_json(path)
        # Each all-gather is recorded three times (c10d::allgather_ > record_param_comms >
        # nccl:all_gather); it is one communication.
        issued = sum(1 for n in et["nodes"] if n["name"] == "c10d::allgather_")
        self.assertEqual(issued, 10)
        c = got["collectives"]
        self.assertEqual(c["issued"], issued)
        self.assertEqual(list(c["by_type"]), ["all_gather"])
        self.assertEqual(c["by_type"]["all_gather"]["count"], 10)
        # One float per rank gathered from 2 ranks: 8 bytes (nccl-tests' S) each.
        self.assertEqual(c["by_type"]["all_gather"]["bytes"], 10 * 2 * 4)
        self.assertEqual(c["by_group"], {"0": {"count": 10, "bytes": 80}})
        self.assertEqual([(g["name"], g["size"]) for g in got["process_groups"]], [("0", 2)])

    def test_kineto_linking_on_the_paired_traces(self):
        for et, kineto in [("param-linear/linear_et.json.gz", "param-linear/linear_kineto.json.gz"),
                           ("hta-simple-add/simple_add_et.json.gz", "hta-simple-add/simple_add_kineto.json.gz")]:
            with self.subTest(trace=et):
                r = mimic("inspect", os.path.join(SHARED, et), "--kineto", os.path.join(SHARED, kineto), "--json")
                self.assertEqual(r.returncode, 0, r.stderr)
                k = json.loads(r.stdout)["kineto"]
                self.assertGreater(k["kernels"], 0)
                self.assertEqual(k["kernels_linked"], k["kernels"])
                self.assertEqual(k["host_ops_linked"], k["host_ops"])
                kt = load_json(os.path.join(SHARED, kineto))
                device = sum(1 for e in kt["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
                self.assertEqual(k["kernels_total"], device)


class BadInputTest(unittest.TestCase):
    """Bad input: exit 2, one line naming the file, no output file left behind."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def assert_refused(self, args, names):
        out = self.path("out.mimic")
        r = mimic("convert", *args, "-o", out)
        self.assertEqual(r.returncode, 2, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(names, lines[0])
        self.assertTrue(lines[0].startswith("mimic: error: "), lines[0])
        self.assertFalse(any(n.startswith("out.mimic") for n in os.listdir(self.dir.name)))

    def test_truncated_gzip(self):
        data = read_bytes(os.path.join(SAMPLES, "mlp.et.json.gz"))
        bad = self.path("truncated.json.gz")
        write_bytes(bad, data[: len(data) // 2])
        self.assert_refused([bad], bad)

    def test_random_bytes(self):
        bad = self.path("random.bin")
        rng = random.Random(7)
        write_bytes(bad, bytes(rng.randrange(256) for _ in range(4096)))
        self.assert_refused([bad], bad)

    def test_valid_json_that_is_not_a_trace(self):
        bad = self.path("not_a_trace.json")
        write_bytes(bad, json.dumps({"hello": [1, 2, 3], "nodes_missing": True}).encode())
        self.assert_refused([bad], bad)

    def test_kineto_trace_of_another_run(self):
        kineto = os.path.join(SHARED, "param-linear/linear_kineto.json.gz")
        self.assert_refused([os.path.join(SAMPLES, "mlp.et.json.gz"), "--kineto", kineto], kineto)

    def test_empty_file_and_directory(self):
        empty = self.path("empty.json")
        write_bytes(empty, b"")
        self.assert_refused([empty], empty)
        self.assert_refused([SAMPLES], SAMPLES)

    def test_integer_data_files_that_cannot_be_values(self):
        # The capture's saved integer inputs beside the trace are untrusted too: a folder in a
        # file's place, or a file larger than any tensor of the trace, is refused by name.
        data = os.path.join(ROOT, "tests", "data")
        et = self.path("hot_embedding.et.json.gz")
        write_bytes(et, read_bytes(os.path.join(data, "hot_embedding.et.json.gz")))
        resources = self.path("hot_embedding.et_resources")
        os.mkdir(resources)
        bad = os.path.join(resources, "nid_5_tid_1.dat")
        os.mkdir(bad)
        self.assert_refused([et], bad + ":byte 0: not a regular file")
        os.rmdir(bad)
        write_bytes(bad, b"\0" * (1 << 22))
        self.assert_refused([et], bad + ":byte 0: 4194304 bytes, more than any tensor")

    def test_usage_errors_exit_2(self):
        self.assertEqual(mimic("replay").returncode, 2)
        self.assertEqual(mimic("replay", "x", "--iters", "0").returncode, 2)
        self.assertEqual(mimic("frobnicate").returncode, 2)
        self.assertEqual(mimic("--help").returncode, 0)


class ReplayTest(unittest.TestCase):

    def test_replay_report_of_a_fleet_sample(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(SAMPLES, "cnn_bn.et.json.gz"),
                      "--kineto", os.path.join(SAMPLES, "cnn_bn.kineto.json.gz"),
                      "--warmup", "1", "--iters", "3", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("original", r.stdout)
            rep = load_json(report)
        for key in ("host", "device", "torch_version", "mimic_version", "input_sha256"):
            self.assertTrue(rep["context"][key], key)
        self.assertEqual(rep["context"]["input_sha256"],
                         hashlib.sha256(read_bytes(os.path.join(SAMPLES, "cnn_bn.et.json.gz"))).hexdigest())
        samples = rep["iteration_ms"]["samples"]
        self.assertEqual(len(samples), 3)
        self.assertAlmostEqual(rep["iteration_ms"]["median"], sorted(samples)[1], places=3)
        self.assertLessEqual(rep["iteration_ms"]["p10"], rep["iteration_ms"]["p90"])
        manifest = load_json(os.path.join(SAMPLES, "manifest.json"))
        entry = next(s for s in manifest["samples"] if s["name"] == "cnn_bn")
        times = sorted(entry["iteration_ms"])
        n = len(times)
        median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
        self.assertAlmostEqual(rep["original_iteration_ms"], median, places=3)
        assert_ratio_or_why_not(self, rep, r.stdout)
        if rep["comparable"]:
            self.assertAlmostEqual(rep["ratio"], rep["iteration_ms"]["median"] / median, places=3)
        cov = rep["coverage"]
        self.assertEqual(cov["replayed"], cov["total"])
        self.assertEqual(cov["skipped_by_reason"], {})
        self.assertEqual(rep["outputs"]["mismatched"], 0)
        self.assertEqual(sum(op["calls"] for op in rep["ops"]), cov["total"])
        # With the Kineto trace linked, the original's host gaps are waited by default, less the
        # capture's cost per event boundary (a few microseconds): this host's calibration's, else
        # measured at setup.
        gaps = rep["host_gaps"]
        self.assertEqual(gaps["mode"], "recorded")
        self.assertTrue(0 < gaps["capture_cost_us"] < 50, gaps)
        self.assertTrue(gaps["capture_cost_from"] == "measured at setup" or
                        gaps["capture_cost_from"].startswith("platform cpu_host calibrated on this host"), gaps)
        self.assertGreater(gaps["gaps"], 0)
        self.assertLess(gaps["ms_per_iteration"], rep["original_iteration_ms"])

    def replay_with_manifest_entry(self, entry, d):
        """Replays a fleet sample's capture, copied into `d` beside a manifest of `entry` alone,
        one iteration; returns the run and its JSON report."""
        for f in (entry["et"], entry["kineto"]):
            shutil.copy(os.path.join(SAMPLES, f), d)
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump({"samples": [entry]}, f)
        report = os.path.join(d, "r.json")
        r = mimic("replay", os.path.join(d, entry["et"]), "--warmup", "0", "--iters", "1",
                  "--report", report)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r, load_json(report)

    def test_the_captures_own_cost_is_taken_off_its_gaps(self):
        # A capture that measured its own cost (scripts/capture_fleet_samples.py, right after
        # the profiled steps) has it taken off its recorded gaps, not this host's: the gaps
        # were recorded there and then. A larger figure leaves less gap time.
        manifest = load_json(os.path.join(SAMPLES, "manifest.json"))
        entry = next(s for s in manifest["samples"] if s["name"] == "cnn_bn")
        waited = {}
        for boundary_us in (0.75, 3.0):
            with tempfile.TemporaryDirectory() as d:
                own = dict(entry, capture_cost={"boundary_us": boundary_us, "input_tensor_us": 0.25,
                                                "source": "the test's figures"})
                r, report = self.replay_with_manifest_entry(own, d)
                gaps = report["host_gaps"]
                self.assertEqual(gaps["capture_cost_from"], "measured at capture time (the test's figures)")
                self.assertEqual((gaps["capture_cost_us"], gaps["capture_input_tensor_us"]), (boundary_us, 0.25))
                self.assertIn("measured at capture time", r.stdout)
                waited[boundary_us] = gaps["ms_per_iteration"]
                p = mimic("predict", os.path.join(d, entry["et"]), "--platform", "cpu_host", "--json")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("as the capture measured it", p.stdout)
        self.assertGreater(waited[0.75], waited[3.0])

    def test_a_fresh_captures_gaps_come_from_its_host_timeline(self):
        # scripts/capture_fleet_samples.py records a host timeline (Kineto, host activity alone)
        # after the profiled steps; the replay places its median step over the captured step and
        # reads the gaps from it, less the timeline's own cost, which the capture measured.
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run(["python3", os.path.join(ROOT, "scripts", "capture_fleet_samples.py"),
                                "--out", d, "--only", "mlp", "--steps", "1", "--timed-steps", "3",
                                "--warmup-steps", "2"], env={**os.environ, "MIMIC": MIMIC},
                               capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            entry = load_json(os.path.join(d, "manifest.json"))["samples"][0]
            self.assertEqual(entry["host_timeline"], "mlp.host_timeline.json.gz")
            self.assertGreater(entry["capture_cost"]["timeline_boundary_us"], 0)
            waited = {}
            for with_timeline in (True, False):
                if not with_timeline:
                    del entry["host_timeline"]
                    with open(os.path.join(d, "manifest.json"), "w") as f:
                        json.dump({"samples": [entry]}, f)
                report = os.path.join(d, "r.json")
                r = mimic("replay", os.path.join(d, "mlp.et.json.gz"), "--warmup", "0", "--iters",
                          "1", "--report", report)
                self.assertEqual(r.returncode, 0, r.stderr)
                rep = load_json(report)
                gaps = rep["host_gaps"]
                waited[with_timeline] = gaps["ms_per_iteration"]
                # Each op name's time on the timeline beside its time under the whole capture.
                self.assertEqual(all(op["original_timeline_ms"] is not None for op in rep["ops"]),
                                 with_timeline)
                self.assertEqual("timeline** ms" in r.stdout, with_timeline)
                self.assertEqual(gaps["capture_timeline_boundary_us"],
                                 entry["capture_cost"]["timeline_boundary_us"])
                if not with_timeline:
                    self.assertIsNone(gaps["timeline"])
                    continue
                timeline = gaps["timeline"]
                self.assertRegex(timeline["source"],
                                 r"^mlp\.host_timeline\.json\.gz, ProfilerStep#\d+ \(the median of 3 steps\)$")
                self.assertGreater(timeline["ops"], 0)
                self.assertEqual(timeline["ops_matched"], timeline["ops"])
                self.assertIn("host timeline: mlp.host_timeline.json.gz", r.stdout)
                # The value profile of a step after the timeline's is placed on the trace's ops.
                self.assertEqual(entry["values"], "mlp.values.json.gz")
                values = rep["memory"]["input_values"]
                placed = re.fullmatch(r"mlp\.values\.json\.gz, (\d+) of (\d+) inputs placed", values["profile"])
                self.assertIsNotNone(placed, values)
                self.assertGreater(int(placed[1]), 0)
                self.assertIn("input values: mlp.values.json.gz", r.stdout)
                # Naming the Kineto trace captured with it changes nothing.
                r = mimic("replay", os.path.join(d, "mlp.et.json.gz"), "--kineto",
                          os.path.join(d, "mlp.kineto.json.gz"), "--warmup", "0", "--iters", "1",
                          "--report", report)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(load_json(report)["host_gaps"]["timeline"], timeline)
            # A timeline that cannot be read leaves the trace's gaps, and the report says why.
            entry["host_timeline"] = "mlp.host_timeline.json.gz"
            with open(os.path.join(d, "manifest.json"), "w") as f:
                json.dump({"samples": [entry]}, f)
            write_bytes(os.path.join(d, entry["host_timeline"]), gzip.compress(b"not json"))
            write_bytes(os.path.join(d, entry["values"]), gzip.compress(b'{"format": 2}'))
            r = mimic("replay", os.path.join(d, "mlp.et.json.gz"), "--warmup", "0", "--iters", "1",
                      "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(load_json(report)["memory"]["input_values"]["profile"],
                             f"not used: {d}/mlp.values.json.gz: \"format\" must be 1")
            timeline = load_json(report)["host_gaps"]["timeline"]
            self.assertRegex(timeline["source"], r"^not used: .*mlp\.host_timeline\.json\.gz")
            self.assertEqual(timeline["ops"], 0)
            self.assertEqual(load_json(report)["host_gaps"]["ms_per_iteration"], waited[False])
        self.assertNotEqual(waited[True], waited[False])

    def test_an_original_whose_speed_moved_during_the_capture_is_flagged(self):
        # The capture times unprofiled steps before and right after the profiled ones; a replay
        # reports how far the original's median moved (its drift) and, from 10 % on, says that a
        # ratio cannot be read closer than that.
        manifest = load_json(os.path.join(SAMPLES, "manifest.json"))
        entry = next(s for s in manifest["samples"] if s["name"] == "mlp")
        for factor, flagged in ((1.5, True), (1.0, False)):
            with tempfile.TemporaryDirectory() as d:
                moved = dict(entry, iteration_ms_after=[ms * factor for ms in entry["iteration_ms"]])
                r, report = self.replay_with_manifest_entry(moved, d)
                original = report["original"]
                self.assertAlmostEqual(original["drift"], factor - 1, places=6)
                self.assertEqual(len(original["samples_after"]), len(entry["iteration_ms"]))
                self.assertEqual("unsteady original" in r.stdout, flagged, r.stdout)
                if flagged:
                    self.assertIn("moved +50%", r.stdout)

    def test_integer_inputs_from_the_values_the_capture_saved(self):
        # tests/data/make_hot_embedding.py saved its four integer inputs beside the trace; the
        # replay fills those tensors with them and says so.
        data = os.path.join(ROOT, "tests", "data")
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(data, "hot_embedding.et.json.gz"),
                      "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(report)
        saved = os.listdir(os.path.join(data, "hot_embedding.et_resources"))
        self.assertEqual(rep["memory"]["integer_inputs"],
                         {"leaves": len(saved), "recorded": len(saved), "rejected": []})
        self.assertEqual(rep["coverage"]["replayed"], rep["coverage"]["total"])

    def test_trace_without_original_reports_null_ratio(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(SHARED, "hta-simple-add/simple_add_et.json.gz"),
                      "--device", "cpu", "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(report)
        self.assertIsNone(rep["original_iteration_ms"])
        self.assertIsNone(rep["ratio"])

    def test_convert_then_replay_the_workload(self):
        with tempfile.TemporaryDirectory() as d:
            w = os.path.join(d, "mlp.mimic")
            r = mimic("convert", os.path.join(SAMPLES, "mlp.et.json.gz"),
                      "--kineto", os.path.join(SAMPLES, "mlp.kineto.json.gz"), "-o", w)
            self.assertEqual(r.returncode, 0, r.stderr)
            a = json.loads(mimic("inspect", w, "--json").stdout)
            b = json.loads(mimic("inspect", os.path.join(SAMPLES, "mlp.et.json.gz"),
                                 "--kineto", os.path.join(SAMPLES, "mlp.kineto.json.gz"), "--json").stdout)
            self.assertEqual(a, b)
            r = mimic("replay", w, "--warmup", "0", "--iters", "1", "--report", os.path.join(d, "r.json"))
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(os.path.join(d, "r.json"))
            self.assertEqual(rep["coverage"]["replayed"], rep["coverage"]["total"])

    def test_run_replays_the_embedded_sample(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "run.json")
            r = mimic("run", "--warmup", "1", "--iters", "3", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(report)
        self.assertIn("original", r.stdout)
        assert_ratio_or_why_not(self, rep, r.stdout)
        self.assertEqual(rep["coverage"]["replayed"], rep["coverage"]["total"])
        self.assertIn("manifest", rep["original"]["source"])


def assert_ratio_or_why_not(test: unittest.TestCase, rep: dict, stdout: str) -> None:
    """A fleet sample's replay has a ratio to its original where both ran on this CPU model with
    the same threads and torch; on another host no ratio, and the report and console say why."""
    if rep["comparable"]:
        test.assertGreater(rep["ratio"], 0)
        test.assertEqual(rep["not_comparable_because"], [])
        return
    test.assertIsNone(rep["ratio"])
    test.assertTrue(rep["not_comparable_because"])
    for why in rep["not_comparable_because"]:
        test.assertIn("no ratio: " + why, stdout)


class SynthTest(unittest.TestCase):

    def test_synth_records_transformations_and_replays(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.mimic")
            r = mimic("synth", os.path.join(SAMPLES, "transformer.et.json.gz"), "--iteration", "2",
                      "--dtype", "bf16", "--repeat", "2", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name in ("select", "dtype", "repeat"):
                self.assertIn(f"mimic: {name}:", r.stderr)
            report = os.path.join(d, "r.json")
            r = mimic("replay", out, "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(report)
            self.assertEqual(rep["coverage"]["replayed"], rep["coverage"]["total"])
            self.assertEqual(rep["outputs"]["mismatched"], 0)
            self.assertIsNone(rep["original_iteration_ms"])  # bf16 never ran originally
            r = mimic("synth", os.path.join(SAMPLES, "mlp.et.json.gz"), "--dtype", "int8", "-o", out)
            self.assertEqual(r.returncode, 2)

    def test_a_selected_step_keeps_its_backward_on_the_autograd_thread(self):
        # tests/data/make_autograd_thread.py: the backward ran on a thread of its own.
        data = os.path.join(ROOT, "tests", "data")
        with tempfile.TemporaryDirectory() as d:
            out, report = os.path.join(d, "step.mimic"), os.path.join(d, "r.json")
            r = mimic("synth", os.path.join(data, "autograd_thread.et.json.gz"), "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = mimic("replay", out, "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            ops = {op["name"]: op["calls"] for op in load_json(report)["ops"]}
            cov = load_json(report)["coverage"]
        self.assertEqual(ops.get("aten::convolution_backward"), 2)
        self.assertEqual(cov["replayed"], cov["total"])

    def test_pack_then_replay_the_bundle_with_its_seed(self):
        with tempfile.TemporaryDirectory() as d:
            bundle = os.path.join(d, "mlp.bundle")
            r = mimic("pack", os.path.join(SAMPLES, "mlp.et.json.gz"), "--kineto",
                      os.path.join(SAMPLES, "mlp.kineto.json.gz"), "--seed", "99", "-o", bundle)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("seed 99", r.stderr)
            report = os.path.join(d, "r.json")
            r = mimic("replay", bundle, "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(report)
            self.assertEqual(rep["coverage"]["replayed"], rep["coverage"]["total"])
            # The manifest's unprofiled originals travel inside the bundle.
            self.assertIn("manifest", rep["original"]["source"])


    def test_standalone_benchmark_runs_its_embedded_bundle(self):
        with tempfile.TemporaryDirectory() as d:
            bundle = os.path.join(d, "emb.bundle")
            self.assertEqual(mimic("pack", os.path.join(SAMPLES, "embbag_rec.et.json.gz"), "--seed", "5",
                                   "-o", bundle).returncode, 0)
            exe = os.path.join(d, "embbag_bench")
            r = mimic("build-benchmark", bundle, "-o", exe)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.access(exe, os.X_OK))
            h = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
            self.assertEqual(h.returncode, 0, h.stderr)
            self.assertIn("embbag_bench", h.stdout)
            self.assertIn("--iters", h.stdout)
            report = os.path.join(d, "r.json")
            b = subprocess.run([exe, "--device", "cpu", "--warmup", "0", "--iters", "2", "--report", report],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(b.returncode, 0, b.stderr)
            rep = load_json(report)
            self.assertEqual(len(rep["iteration_ms"]["samples"]), 2)
            self.assertEqual(rep["coverage"]["replayed"], rep["coverage"]["total"])
            self.assertIn("manifest", rep["original"]["source"])
            self.assertEqual(subprocess.run([exe, "--iters", "0"], capture_output=True).returncode, 2)
            # Nothing in it points into this machine's site-packages: LibTorch is looked up where it
            # runs (MIMIC_TORCH_LIB first), and a wrong MIMIC_TORCH_LIB is named.
            for elf in (exe, MIMIC + "-torch"):
                dyn = subprocess.run(["readelf", "-d", elf], capture_output=True, text=True).stdout
                self.assertNotIn("RUNPATH", dyn, elf)
                self.assertNotIn("RPATH", dyn, elf)
            env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
            torch_lib = subprocess.run(["python3", "-c", "import os, torch; print(os.path.join("
                                        "os.path.dirname(torch.__file__), 'lib'))"],
                                       capture_output=True, text=True).stdout.strip()
            ok = subprocess.run([exe, "--warmup", "0", "--iters", "1"], capture_output=True, text=True,
                                env={**env, "MIMIC_TORCH_LIB": torch_lib}, timeout=300)
            self.assertEqual(ok.returncode, 0, ok.stderr)
            bad = subprocess.run([exe, "--iters", "1"], capture_output=True, text=True,
                                 env={**env, "MIMIC_TORCH_LIB": d}, timeout=60)
            self.assertEqual(bad.returncode, 2, bad.stderr)
            self.assertIn("MIMIC_TORCH_LIB=" + d, bad.stderr)

    def test_commands_without_libtorch_never_load_it(self):
        # The dynamic loader lists every library it opens under LD_DEBUG=files.
        env = {**os.environ, "LD_DEBUG": "files"}
        trace = os.path.join(SAMPLES, "mlp.et.json.gz")
        tmp = tempfile.mkdtemp()
        for args in (["--version"], ["inspect", trace], ["predict", trace, "--platform", "h100_sxm"],
                     ["export-chakra", trace, "-o", os.path.join(tmp, "mlp")]):
            with self.subTest(args=args[0]):
                r = subprocess.run([MIMIC, *args], capture_output=True, text=True, env=env, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertNotIn("libtorch", r.stderr)
        r = subprocess.run([MIMIC, "devices"], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("libtorch_cpu.so", r.stderr)


class FaultTest(unittest.TestCase):

    def test_sigint_mid_replay_keeps_the_completed_iterations(self):
        for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
            with self.subTest(signal=name), tempfile.TemporaryDirectory() as d:
                report = os.path.join(d, "r.json")
                p = subprocess.Popen([MIMIC, "replay", os.path.join(SAMPLES, "mlp.et.json.gz"), "--warmup", "0",
                                      "--iters", "100000", "--report", report],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                seen = 0
                for line in p.stderr:  # progress lines: "mimic: iteration K/N: ..."
                    seen += "iteration" in line
                    if seen >= 3:
                        break
                p.send_signal(sig)
                _, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, 1, err)
                self.assertIn(f"interrupted by {name}", err)
                rep = load_json(report)
                self.assertFalse(rep["completed"])
                self.assertEqual(rep["stop_reason"], f"interrupted by {name}")
                self.assertGreaterEqual(len(rep["iteration_ms"]["samples"]), 3)
                self.assertEqual(os.listdir(d), ["r.json"])

    def test_compiled_kernels_are_never_executed(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(SHARED, "param-pt2/pt2_et.json.gz"), "--device", "cpu",
                      "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = load_json(report)
        self.assertEqual(rep["coverage"]["skipped_by_reason"], {"compiled_kernel": 1})
        self.assertIn("does not execute code", rep["coverage"]["skipped_ops"][0]["detail"])

    def test_out_of_memory_stops_the_replay_with_exit_1(self):
        # A real trace whose aten::zeros asks for 4 TiB (its recorded output stays small, so the
        # plan cannot see it coming): the replay stops, it is not 1 skipped op and a success.
        et = load_json(os.path.join(SHARED, "hta-simple-add/simple_add_et.json.gz"))
        for n in et["nodes"]:
            if n["name"] == "aten::zeros":
                n["inputs"][0] = [1 << 40]
        with tempfile.TemporaryDirectory() as d:
            trace, report = os.path.join(d, "oom.json"), os.path.join(d, "r.json")
            with open(trace, "w") as f:
                json.dump(et, f)
            # AddressSanitizer's allocator aborts on such a request unless told to fail it.
            env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1")
            r = subprocess.run([MIMIC, "replay", trace, "--device", "cpu", "--warmup", "0", "--iters", "2",
                                "--report", report], capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("out of memory in op 17 (aten::zeros)", r.stderr)
            rep = load_json(report)
        self.assertFalse(rep["completed"])
        self.assertIn("out of memory", rep["stop_reason"])
        self.assertEqual(rep["iteration_ms"]["samples"], [])
        self.assertNotIn("exception", rep["coverage"]["skipped_by_reason"])

    def test_strict_stops_with_exit_1_and_a_report(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(SHARED, "chakra-allgather/allgather_1.0.2_et.json.gz"), "--device",
                      "cpu", "--strict", "--warmup", "0", "--iters", "1", "--report", report)
            self.assertEqual(r.returncode, 1, r.stderr)
            rep = load_json(report)
        self.assertFalse(rep["completed"])
        self.assertIn("(--strict): collective", rep["stop_reason"])
        self.assertEqual(rep["iteration_ms"]["samples"], [])

    def test_report_on_stdout_is_json_alone(self):
        r = mimic("replay", os.path.join(SAMPLES, "mlp.et.json.gz"), "--device", "cpu", "--warmup", "0", "--iters",
                  "1", "--report", "-")
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(r.stdout)  # nothing but the JSON
        self.assertEqual(rep["coverage"]["skipped"], 0)
        self.assertIn("median ms", r.stderr)  # the console table went to stderr


class ExecutorTest(unittest.TestCase):

    def test_devices_lists_the_cpu_executor(self):
        r = mimic("devices", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        types = {e["type"]: e for e in got["executors"]}
        self.assertEqual(types["cpu"]["devices"][0]["name"], "cpu")
        self.assertGreater(types["cpu"]["devices"][0]["memory_bytes"], 0)
        self.assertIn(got["best"], types)

    def test_step_memory_of_the_replay_beside_the_originals(self):
        # tests/data/make_foreach_optimizers.py captures with profile_memory=True: the Kineto
        # trace's "[memory]" events give the original step's own peak.
        data = os.path.join(ROOT, "tests", "data")
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(data, "foreach_optimizers.et.json.gz"), "--kineto",
                      os.path.join(data, "foreach_optimizers.kineto.json.gz"), "--warmup", "1", "--iters", "3",
                      "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            mem = load_json(report)["memory"]
        self.assertIn("Kineto [memory] events", mem["original_step_peak_source"])
        self.assertGreater(mem["original_step_peak_bytes"], 0)
        self.assertGreater(mem["step_peak_bytes"], 0)
        ratio = mem["step_peak_bytes"] / mem["original_step_peak_bytes"]
        self.assertTrue(0.75 < ratio < 1.33, mem)

    def test_compare_sets_the_replay_profile_beside_the_original_per_op(self):
        with tempfile.TemporaryDirectory() as d:
            report, profile = os.path.join(d, "c.json"), os.path.join(d, "p.json")
            r = mimic("compare", os.path.join(SAMPLES, "mlp.et.json.gz"), "--warmup", "1", "--iters", "2",
                      "--report", report, "--profile", profile)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("both under the profiler", r.stdout)
            got = load_json(report)["profiled_ops"]
            trace = load_json(profile)
        steps = [e for e in trace["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
        self.assertEqual(len(steps), 2)
        mm = got["aten::mm"]
        self.assertGreater(mm["calls"], 0)
        self.assertGreater(mm["original_ms"], 0)
        self.assertGreater(mm["replay_ms"], 0)
        # The replay's side is its profile's: the aten::mm spans inside the steps, per step.
        spans = sum(e["dur"] for e in trace["traceEvents"]
                    if e.get("name") == "aten::mm" and e.get("cat") == "cpu_op"
                    and any(s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in steps)) / 1000 / len(steps)
        self.assertLessEqual(mm["replay_ms"], spans * 1.0001)
        self.assertGreater(mm["replay_ms"], 0.5 * spans)

    def test_profile_is_a_kineto_trace_of_the_replayed_ops(self):
        with tempfile.TemporaryDirectory() as d:
            profile, report = os.path.join(d, "p.json"), os.path.join(d, "r.json")
            r = mimic("replay", os.path.join(SAMPLES, "cnn_bn.et.json.gz"), "--device", "cpu", "--warmup", "1",
                      "--iters", "2", "--profile", profile, "--report", report)
            self.assertEqual(r.returncode, 0, r.stderr)
            trace = load_json(profile)
            rep = load_json(report)
        events = trace["traceEvents"]
        steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
        self.assertEqual(len(steps), 2)
        host_ops = {}
        for e in events:
            if e.get("cat") == "cpu_op":
                host_ops[e["name"]] = host_ops.get(e["name"], 0) + 1
        for op in rep["ops"]:  # each replayed op, composites included, once per measured iteration
            self.assertGreaterEqual(host_ops.get(op["name"], 0), 2 * op["calls"], op["name"])
        self.assertEqual(rep["executor"]["profile"], profile)


if __name__ == "__main__":
    unittest.main()
