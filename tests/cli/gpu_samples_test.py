"""End-to-end tests on the project's own H200 captures (fleet_samples/h200): real GPU training
steps whose Kineto traces hold the device's kernels. Runs on any machine: the GPU's times are the
traces' own.

The expected figures are read here from the trace files themselves (Python's json module, through
bench/gpu_fidelity.py's reader of device time per step), never from Mimic.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "fleet_samples", "h200")
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import gpu_fidelity  # pylint: disable=wrong-import-position

with open(os.path.join(SAMPLES, "manifest.json")) as f:
    MANIFEST = json.load(f)["samples"]


def mimic(*args):
    return subprocess.run([MIMIC, *args], capture_output=True, text=True, timeout=600)


def paths(sample):
    return os.path.join(SAMPLES, sample["et"]), os.path.join(SAMPLES, sample["kineto"])


class H200Samples(unittest.TestCase):
    def test_every_kernel_links_to_the_op_that_launched_it(self):
        for sample in MANIFEST:
            with self.subTest(sample["name"]):
                et, kineto = paths(sample)
                r = mimic("inspect", et, "--kineto", kineto, "--json")
                self.assertEqual(r.returncode, 0, r.stderr)
                k = json.loads(r.stdout)["kineto"]
                device = [e for e in gpu_fidelity.load(kineto)["traceEvents"]
                          if e.get("ph") == "X" and e.get("cat") in gpu_fidelity.DEVICE_CATEGORIES]
                self.assertEqual(k["kernels_total"], len(device))
                # Every device event is on its op, but the ET observer's integer-range probes
                # (the capture's work, launched inside the ops it records): on no op, counted.
                self.assertGreater(k["observer_probe_events"], 0)
                self.assertEqual(k["kernels_linked"] + k["observer_probe_events"], k["kernels_total"])
                self.assertEqual(k["host_ops_linked"], k["host_ops"])

    def test_compare_picks_the_h200_and_reads_each_steps_device_time(self):
        # The device runs behind the host, so a step's kernels end well after its host span:
        # Mimic's GPU active time of step N (--iteration N) must hold every kernel the host
        # launched in step N, as the bench's independent reader counts them.
        for sample in MANIFEST:
            et, kineto = paths(sample)
            by_step = gpu_fidelity.analyse(kineto, {})["gpu_active_ms_by_step"]
            self.assertEqual(len(by_step), len(sample["profiled_steps"]))
            for n, expected in zip(sample["profiled_steps"], by_step):
                with self.subTest(sample=sample["name"], step=n), tempfile.TemporaryDirectory() as d:
                    report = os.path.join(d, "r.json")
                    r = mimic("compare", et, "--kineto", kineto, "--no-replay", "--iteration", str(n),
                              "--report", report)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(report) as f:
                        rep = json.load(f)
                    self.assertEqual(rep["platform"]["name"], "h200")
                    got = rep["end_to_end"]["original_gpu_active_ms"]
                    self.assertAlmostEqual(got, expected, delta=0.02 * expected)
                    # The Kineto trace alone holds the same device work.
                    r = mimic("compare", kineto, "--no-replay", "--iteration", str(n), "--report", report)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(report) as f:
                        alone = json.load(f)["end_to_end"]["original_gpu_active_ms"]
                    self.assertAlmostEqual(alone, expected, delta=0.02 * expected)


if __name__ == "__main__":
    unittest.main()
