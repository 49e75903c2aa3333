"""Coverage of every execution trace Mimic ships with or reads in place: each public trace in
../shared/traces, each fleet sample and each capture in tests/data (with its Kineto trace where
there is one) replays on the
CPU, one iteration, with every compute op run. The only ops allowed to be skipped are those
no CPU replay can run by design: extension libraries' own operators (custom_operator, named in
the report) and compiled kernels whose code the trace does not carry (compiled_kernel).
Collectives are left out (--mode compute): a one-process replay has no process groups.

Run: MIMIC_BIN=build/default/cli/mimic python3 -m unittest -v tests/cli/coverage_test.py
"""

import glob
import gzip
import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("MIMIC_TRACES") or os.path.join(os.path.dirname(ROOT), "shared", "traces")
SAMPLES = os.path.join(ROOT, "fleet_samples")
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))

ALLOWED = {"custom_operator", "compiled_kernel"}
# The H200's ResNet-50 steps take 2-4 minutes each on a 2-core CPU; their ops (cuDNN convolution
# and batch-norm, channels-last bf16) are those of the public param-resnet-1gpu trace, checked here.
TOO_BIG_FOR_A_CPU = ("h200/resnet50_b64.et.json.gz", "h200/resnet50_b128.et.json.gz")


def execution_traces():
    """(name, argv) per execution trace: the ET and its Kineto trace when one lies beside it."""
    out = []
    for et in sorted(glob.glob(os.path.join(SHARED, "*", "*et.json.gz"))):
        kineto = et.replace("_et.json.gz", "_kineto.json.gz")
        extra = ["--kineto", kineto] if kineto != et and os.path.exists(kineto) else []
        out.append((os.path.relpath(et, SHARED), [et, *extra]))
    captures = glob.glob(os.path.join(ROOT, "tests", "data", "*.et.json.gz"))
    for et in sorted(glob.glob(os.path.join(SAMPLES, "**", "*.et.json.gz"), recursive=True)) + sorted(captures):
        if et.endswith(TOO_BIG_FOR_A_CPU):
            continue
        kineto = et.replace(".et.json.gz", ".kineto.json.gz")
        extra = ["--kineto", kineto] if os.path.exists(kineto) else []
        out.append((os.path.relpath(et, ROOT), [et, *extra]))
    return out


class Coverage(unittest.TestCase):
    def test_every_trace_replays_on_the_cpu_but_named_custom_ops(self):
        traces = execution_traces()
        self.assertGreater(len(traces), 5, "no traces found")
        with tempfile.TemporaryDirectory() as tmp:
            for name, argv in traces:
                with self.subTest(trace=name):
                    report = os.path.join(tmp, "report.json")
                    run = subprocess.run(
                        [MIMIC, "replay", *argv, "--device", "cpu", "--warmup", "0", "--iters", "1",
                         "--mode", "compute", "--lazy-alloc", "--report", report],
                        capture_output=True, text=True, timeout=300)
                    if "nothing to replay" in run.stderr:  # collectives only: nothing to compute
                        continue
                    self.assertEqual(run.returncode, 0, run.stderr[-2000:])
                    with open(report) as f:
                        coverage = json.load(f)["coverage"]
                    self.assertGreater(coverage["total"], 0)
                    bad = [s for s in coverage["skipped_ops"] if s["reason"] not in ALLOWED]
                    self.assertEqual(bad, [], f"{name}: {len(bad)} ops skipped")
                    for s in coverage["skipped_ops"]:
                        self.assertTrue(s["name"], "a skipped op is reported by name")
                    self.assertEqual(coverage["replayed"] + len(coverage["skipped_ops"]), coverage["total"])
                    self.assertEqual(report_json(report)["outputs"]["mismatched"], 0)

    def test_gpu_trace_records_its_portable_rewrites(self):
        et = os.path.join(SHARED, "param-resnet-1gpu", "resnet_1gpu_et.json.gz")
        if not os.path.exists(et):
            self.skipTest("missing " + et)
        with open(et, "rb") as f:
            trace = json.loads(gzip.decompress(f.read()))
        vendor = {n["name"] for n in trace["nodes"] if n["name"].startswith("aten::cudnn_")}
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report.json")
            run = subprocess.run([MIMIC, "replay", et, "--device", "cpu", "--warmup", "0", "--iters", "1",
                                  "--mode", "compute", "--report", report],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr[-2000:])
            r = report_json(report)
        portable = [t for t in r["transformations"] if t["name"] == "portable"]
        self.assertEqual(len(portable), 1)
        self.assertEqual(portable[0]["params"]["target"], "cpu")
        self.assertEqual(set(portable[0]["params"]) - {"target"}, vendor)
        self.assertEqual(r["coverage"]["replayed"], r["coverage"]["total"])

    def test_custom_operators_are_skipped_by_name(self):
        et = os.path.join(SAMPLES, "mlp.et.json.gz")
        with open(et, "rb") as f:
            trace = json.loads(gzip.decompress(f.read()))
        renamed = 0
        for n in trace["nodes"]:
            if n["name"] == "aten::relu":
                n["name"] = "fbgemm::relu_fake"
                for a in n["attrs"]:
                    if a["name"] == "op_schema":
                        a["value"] = a["value"].replace("aten::relu", "fbgemm::relu_fake", 1)
                renamed += 1
        self.assertGreater(renamed, 0)
        with tempfile.TemporaryDirectory() as tmp:
            custom = os.path.join(tmp, "custom.json")
            with open(custom, "w") as f:
                json.dump(trace, f)
            report = os.path.join(tmp, "report.json")
            run = subprocess.run([MIMIC, "replay", custom, "--device", "cpu", "--warmup", "0", "--iters", "1",
                                  "--report", report], capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr[-2000:])
            self.assertIn("custom_operator", run.stdout)
            coverage = report_json(report)["coverage"]
        skipped = coverage["skipped_ops"]
        self.assertGreater(len(skipped), 0)
        self.assertEqual({(s["name"], s["reason"]) for s in skipped}, {("fbgemm::relu_fake", "custom_operator")})
        self.assertEqual(coverage["skipped_by_reason"], {"custom_operator": len(skipped)})


def report_json(path):
    with open(path) as f:
        return json.load(f)


if __name__ == "__main__":
    unittest.main()
