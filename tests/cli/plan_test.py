"""End-to-end tests of `mimic plan` (docs/fleet.md): the fleet samples as a fleet, planned
against the CPU host (measured by replay) and the H200 (predicted); a job log with failed and
cancelled jobs; bad manifests. Figures are checked against what the inputs themselves hold
(the CSV read here) and against each other (the allocation timeline against the GPU-hours)."""

import atexit
import csv
import html.parser
import json
import math
import os
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
FAST = ["--warmup", "0", "--iters", "2"]


def mimic(*args, timeout=600):
    return subprocess.run([MIMIC, *args], capture_output=True, text=True, timeout=timeout)


def fleet_manifest(**changes):
    with open(os.path.join(SAMPLES, "fleet.json")) as f:
        m = json.load(f)
    for c in m["classes"]:
        for key in ("trace", "kineto"):
            c[key] = os.path.join(SAMPLES, c[key])
    m["arrivals"]["poisson"]["numJobs"] = 3000
    m.update(changes)
    return m


class Charts(html.parser.HTMLParser):
    """Collects the report's SVG charts, their polylines and the GPUs-needed cells."""

    def __init__(self):
        super().__init__()
        self.charts = {}
        self.current = None
        self.gpus_needed = {}
        self.scenario = None
        self.in_cell = False
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if key in a and not a[key].startswith("#"):
                self.external.append(a[key])
        if tag == "svg":
            self.current = a["id"]
            self.charts[self.current] = []
        elif tag == "polyline" and self.current:
            points = [p for p in a["points"].split() if p]
            self.charts[self.current].append((a["data-series"], len(points)))
        elif tag == "tr" and "data-scenario" in a:
            self.scenario = a["data-scenario"]
        elif tag == "td" and a.get("class") == "gpus-needed":
            self.in_cell = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None
        elif tag == "td":
            self.in_cell = False

    def handle_data(self, data):
        if self.in_cell:
            self.gpus_needed[self.scenario] = int(data)


class PlanTest(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write_manifest(self, m, name="fleet.json"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(m, f)
        return path

    def check_consistent(self, report):
        """Totals and simulations agree with each other in every scenario."""
        jobs = report["arrivals"]["jobs"]
        today = report["scenarios"][0]
        self.assertEqual(today["kind"], "today")
        for s in report["scenarios"]:
            with self.subTest(scenario=s["name"]):
                self.assertAlmostEqual(sum(s["class_gpu_hours"].values()), s["gpu_hours"], delta=1e-6 * s["gpu_hours"])
                self.assertAlmostEqual(s["relative_throughput"], today["gpu_hours"] / s["gpu_hours"], places=6)
                self.assertAlmostEqual(s["offered_load_gpus"], s["gpu_hours"] / report["arrivals"]["span_hours"],
                                       delta=1e-6 * s["offered_load_gpus"])
                self.assertEqual(s["gpus_needed"],
                                 math.ceil(s["offered_load_gpus"] / report["target_utilization"] - 1e-9))
                for sim in s["simulation"]:
                    self.assertEqual(sim["jobs"] + sim["unplaceable"], jobs)
                    self.assertEqual(sim["unplaceable"], 0)
                    # The allocation over time holds exactly the GPU-hours of the jobs.
                    t, g = sim["allocation"]["t_s"], sim["allocation"]["gpus"]
                    area_h = sum(g) * (sim["makespan_s"] / len(t)) / 3600
                    self.assertAlmostEqual(area_h, s["gpu_hours"], delta=1e-6 * s["gpu_hours"])
                    self.assertEqual(len(sim["jct_quantiles_s"]), 100)
                    # JCT = queueing + run time, and a job's run time is its class's iterations
                    # at that platform's step time: the mean from the classes' own figures.
                    def platform(c):
                        return c["platform"] if s["kind"] == "today" else s["name"]
                    mean_run_s = sum(c["jobs"] * c["mean_iterations"] * c["step_ms"][platform(c)]["ms"] / 1000
                                     for c in report["classes"]) / jobs
                    self.assertAlmostEqual(sim["mean_jct_s"] - sim["mean_queue_s"], mean_run_s, delta=1e-6 * mean_run_s)
                    self.assertLessEqual(sim["peak_allocated_gpus"], report["inventory_gpus"])
                    self.assertLessEqual(sim["utilization"], 1.0)

    def test_a_mistyped_target_is_rejected_before_anything_is_measured(self):
        path = self.write_manifest(fleet_manifest())
        r = mimic("plan", path, "--target", "cpu_host", "--target", "h2OO", *FAST)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--target", r.stderr)
        self.assertIn("h2OO", r.stderr)
        self.assertNotIn("measuring", r.stderr)

    def test_fleet_samples_against_cpu_host_and_h200(self):
        m = fleet_manifest(pricePerGpuHour={"h200": 4.0, "cpu_host": 1.5})
        path = self.write_manifest(m)
        report, page = os.path.join(self.tmp, "plan.json"), os.path.join(self.tmp, "plan.html")
        r = mimic("plan", path, "--target", "cpu_host", "--target", "h200", "--report", report, "--html", page, *FAST)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("simulating fifo on h200", r.stderr)  # progress
        with open(report) as f:
            got = json.load(f)
        self.assertEqual([c["name"] for c in got["classes"]], [c["name"] for c in m["classes"]])
        self.assertEqual(got["arrivals"]["jobs"], 3000)
        self.assertEqual(sum(c["jobs"] for c in got["classes"]), 3000)
        for c in got["classes"]:
            with self.subTest(cls=c["name"]):
                self.assertEqual(c["step_ms"]["cpu_host"]["source"], "measured")
                self.assertEqual(c["step_ms"]["h200"]["source"], "predicted")
                for s in c["step_ms"].values():
                    self.assertGreater(s["ms"], 0)
        self.assertEqual([s["name"] for s in got["scenarios"]], ["today", "cpu_host", "h200"])
        today, cpu, h200 = got["scenarios"]
        # Today is the CPU host: the same measured step times, the same simulation.
        self.assertEqual(today["gpu_hours"], cpu["gpu_hours"])
        self.assertEqual(today["simulation"][0]["mean_jct_s"], cpu["simulation"][0]["mean_jct_s"])
        # Each class's GPU-hours on the H200 scale with its step time.
        for c in got["classes"]:
            ratio = c["step_ms"]["h200"]["ms"] / c["step_ms"]["cpu_host"]["ms"]
            self.assertAlmostEqual(h200["class_gpu_hours"][c["name"]], today["class_gpu_hours"][c["name"]] * ratio,
                                   delta=1e-6 * today["class_gpu_hours"][c["name"]])
        self.assertAlmostEqual(h200["cost"], h200["gpu_hours"] * 4.0, delta=1e-6 * h200["cost"])
        self.assertEqual(h200["price_per_gpu_hour"], 4.0)
        # Today runs every class on the CPU host: its cost at the CPU host's price, as the target's.
        self.assertAlmostEqual(today["cost"], today["gpu_hours"] * 1.5, delta=1e-6 * today["cost"])
        self.assertAlmostEqual(cpu["cost"], today["cost"], delta=1e-6 * today["cost"])
        table = r.stdout.split("GPUs needed")[1].split("\n\n")[0].strip().splitlines()[1:]
        self.assertEqual(len(table), 3)
        for line in table:  # the console's cost column: a figure for every scenario
            self.assertRegex(line, r"\d$")
        # A predicted step the host sets says so, in the report and on the console.
        for c in got["classes"]:
            step = c["step_ms"]["h200"]
            host_bound = "host-bound" in step["detail"]
            self.assertEqual(host_bound, f'note: {c["name"]} on h200 is host-bound' in r.stdout)
        self.check_consistent(got)

        with open(page) as f:
            charts = Charts()
            charts.feed(f.read())
        self.assertEqual(charts.external, [])  # self-contained
        for policy in ("fifo", "sjf"):
            for kind in ("allocation", "jct"):
                series = charts.charts[f"{kind}-{policy}"]
                self.assertEqual([name for name, _ in series], ["today", "cpu_host", "h200"])
                for _, points in series:
                    self.assertGreater(points, 1)
        self.assertEqual(charts.gpus_needed, {s["name"]: s["gpus_needed"] for s in got["scenarios"]})

    def test_job_log_with_failed_and_cancelled_jobs(self):
        rows = [["job_id", "user", "vc", "gpu_num", "submit_time", "duration", "state"]]
        states = ["COMPLETED", "FAILED", "CANCELLED", "COMPLETED", "NODE_FAIL", "Killed"]
        for i in range(600):
            rows.append([f"j{i}", f"u{i % 5}", ["vision", "nlp", "rec"][i % 3], [1, 2, 4, 0][i % 4],
                         f"2020-04-01 {i // 60:02d}:{i % 60:02d}:00", 300 + 37 * (i % 11), states[i % 6]])
        log = os.path.join(self.tmp, "jobs.csv")
        with open(log, "w", newline="") as f:
            csv.writer(f).writerows(rows)
        m = fleet_manifest()
        m["arrivals"] = {"jobLog": {"path": log, "classByVc": {"vision": "cnn_bn", "nlp": "transformer"},
                                    "defaultClass": "mlp"}}
        path = self.write_manifest(m)
        report = os.path.join(self.tmp, "plan.json")
        r = mimic("plan", path, "--target", "cpu_host", "--report", report, "--quiet", *FAST)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        with open(report) as f:
            got = json.load(f)
        gpu_rows = [row for row in rows[1:] if row[3] > 0]
        self.assertEqual(got["arrivals"]["jobs"], len(gpu_rows))
        self.assertEqual(got["arrivals"]["cpu_only_rows"], len(rows) - 1 - len(gpu_rows))
        self.assertAlmostEqual(got["arrivals"]["span_hours"], (599 - 1) / 60)  # row 599 is a CPU job
        by_state = {"completed": 0, "failed": 0, "cancelled": 0}
        hours = dict(by_state)
        for row in gpu_rows:
            state = {"COMPLETED": "completed", "FAILED": "failed", "NODE_FAIL": "failed"}.get(row[6], "cancelled")
            by_state[state] += 1
            hours[state] += row[3] * row[5] / 3600
        for state, n in by_state.items():
            self.assertEqual(got["arrivals"]["by_state"][state]["jobs"], n)
            # Today's GPU-hours come from the log's own durations, failed jobs included.
            self.assertAlmostEqual(got["arrivals"]["by_state"][state]["gpu_hours_today"], hours[state], places=6)
        classes = {c["name"]: c["jobs"] for c in got["classes"]}
        self.assertEqual(classes["cnn_bn"], sum(1 for row in gpu_rows if row[2] == "vision"))
        self.assertEqual(classes["transformer"], sum(1 for row in gpu_rows if row[2] == "nlp"))
        self.assertEqual(classes["mlp"], sum(1 for row in gpu_rows if row[2] == "rec"))
        self.assertAlmostEqual(got["scenarios"][0]["gpu_hours"], sum(hours.values()), places=6)
        self.check_consistent(got)

    def assert_bad(self, m, field, code=2, name="bad.json"):
        path = self.write_manifest(m, name) if isinstance(m, dict) else m
        report = os.path.join(self.tmp, "out.json")
        r = mimic("plan", path, "--target", "cpu_host", "--report", report, *FAST)
        self.assertEqual(r.returncode, code, r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertIn(field, lines[0])
        self.assertIn(path, lines[0])
        self.assertFalse(os.path.exists(report))
        self.assertEqual(r.stdout, "")

    def test_bad_manifests_exit_2_naming_the_field(self):
        m = fleet_manifest()
        m["arrivals"] = {"jobLog": {"path": os.path.join(SAMPLES, "manifest.json"), "classByVc": {"vc1": "gpt3"}}}
        self.assert_bad(m, 'arrivals.job_log.class_by_vc["vc1"]: unknown class \'gpt3\'')
        m = fleet_manifest()
        m["classes"][2]["trace"] = os.path.join(self.tmp, "missing.et.json.gz")
        self.assert_bad(m, "classes[2].trace: no such file")
        m = fleet_manifest()
        m["inventory"][0]["nodes"] = -3
        self.assert_bad(m, "inventory[0].nodes: must be > 0, got -3")
        m = fleet_manifest()
        m["classes"][1]["gpusPerJob"] = -1
        self.assert_bad(m, "classes[1].gpus_per_job: must be > 0, got -1")
        m = fleet_manifest()
        m["arrivals"]["poisson"]["numJobs"] = -10
        self.assert_bad(m, "arrivals.poisson.num_jobs")
        m = fleet_manifest()
        m["classes"][0]["gpuz"] = 1
        self.assert_bad(m, "gpuz")
        path = os.path.join(self.tmp, "truncated.json")
        with open(path, "w") as f:
            f.write(json.dumps(fleet_manifest())[:100])
        self.assert_bad(path, "truncated.json:byte 100: ")

    def test_a_class_in_the_log_that_the_manifest_lacks(self):
        log = os.path.join(self.tmp, "jobs.csv")
        with open(log, "w") as f:
            f.write("job_id,gpu_num,submit_time,duration,class\n1,1,0,60,mlp\n2,1,5,60,bert\n")
        m = fleet_manifest()
        m["arrivals"] = {"jobLog": {"path": log}}
        report = os.path.join(self.tmp, "out.json")
        r = mimic("plan", self.write_manifest(m), "--target", "cpu_host", "--report", report, *FAST)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("jobs.csv:3: class: unknown class 'bert'", r.stderr)
        self.assertFalse(os.path.exists(report))

    def test_a_target_a_class_does_not_allow(self):
        m = fleet_manifest()
        m["classes"][3]["allowedGpuTypes"] = ["cpu_host"]
        r = mimic("plan", self.write_manifest(m), "--target", "h200", *FAST)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("classes[3].allowed_gpu_types", r.stderr)

    def test_multi_gpu_classes_carry_their_collectives_at_their_rank_count(self):
        """A DDP rank's trace (ddp_mlp_2r: two ranks over Gloo) as classes of 4 and 16 GPUs per
        job on GPU platforms (predicted, no replay): each step prices the trace's collectives at
        the class's GPUs per job on that platform, as `mimic predict --world-size` does, and the
        report gives the collectives' share of the step."""
        d = os.path.join(SAMPLES, "ddp_mlp_2r")
        trace, kineto = os.path.join(d, "rank-0.et.json.gz"), os.path.join(d, "rank-0.kineto.json.gz")
        ddp = lambda name, gpus: {"name": name, "trace": trace, "kineto": kineto, "jobShare": 0.5,
                                  "gpusPerJob": gpus, "iterations": {"fixed": 1000}, "platform": "h100_sxm"}
        m = {"format": 1, "name": "ddp", "inventory": [{"gpuType": "h100_sxm", "nodes": 2, "gpusPerNode": 8}],
             "classes": [ddp("ddp4", 4), ddp("ddp16", 16)],
             "arrivals": {"poisson": {"jobsPerHour": 10, "numJobs": 40, "seed": 1}}}
        report = os.path.join(self.tmp, "plan.json")
        r = mimic("plan", self.write_manifest(m), "--target", "h200", "--report", report, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(report) as f:
            got = json.load(f)
        shares = {}
        for c in got["classes"]:
            gpus = {"ddp4": 4, "ddp16": 16}[c["name"]]
            for platform in ("h100_sxm", "h200"):
                with self.subTest(cls=c["name"], platform=platform):
                    s = c["step_ms"][platform]
                    self.assertEqual(s["source"], "predicted")
                    self.assertEqual(s["ranks"], gpus)
                    p = mimic("predict", trace, "--kineto", kineto, "--platform", platform, "--world-size",
                              str(gpus), "--json")
                    self.assertEqual(p.returncode, 0, p.stderr)
                    want = json.loads(p.stdout)
                    self.assertGreater(want["collectives"], 0)
                    self.assertAlmostEqual(s["ms"], want["iteration_ms"], delta=1e-9 * want["iteration_ms"])
                    self.assertGreater(s["collective_ms"], 0)
                    self.assertAlmostEqual(s["collective_ms"], want["comm_ms"], delta=1e-9 * want["comm_ms"])
                    self.assertAlmostEqual(s["exposed_collective_ms"], want["exposed_comm_ms"], delta=1e-9)
                    self.assertAlmostEqual(s["collective_share"], s["collective_ms"] / s["ms"], places=9)
                    self.assertLessEqual(s["exposed_collective_ms"], s["collective_ms"] + 1e-9)
                    self.assertIn(f"collectives: {c['name']} on {platform} at {gpus} ranks", r.stdout)
                    shares[(c["name"], platform)] = s["collective_ms"]
        # 16 ranks span two nodes: the collectives cross the NIC and take longer than on 4 GPUs.
        for platform in ("h100_sxm", "h200"):
            self.assertGreater(shares[("ddp16", platform)], shares[("ddp4", platform)])


if __name__ == "__main__":
    unittest.main()
