"""Runs mimic on every case of the bad-input corpus (tests/bad_inputs/*.expect).

Each case must end with exit code 2, exactly one line on stderr that names the case file and
contains the expected error, no output file left behind, and memory bounded well below what the
input claims.
"""

import glob
import os
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))
# Memory a case may use beyond what `mimic --version` needs (libraries, sanitizer shadow).
MAX_EXTRA_RSS_MIB = 512


def run(args):
    """Runs mimic; returns (exit code, stderr, peak RSS in MiB of that process alone)."""
    p = subprocess.Popen([MIMIC, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stderr.close()
    return p.returncode, err, usage.ru_maxrss / 1024


def read_expect(path):
    spec = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(": ")
            spec[key] = value
    return spec


class BadInputTest(unittest.TestCase):

    def test_every_case(self):
        # The baseline is the executable the command runs in: `mimic` alone, or with LibTorch
        # loaded (mimic-torch, docs/cli.md) for the commands that replay or measure.
        baseline = {False: run(["--version"])[2], True: run(["devices"])[2]}
        torch_commands = {"replay", "run", "synth", "pack", "build-benchmark", "calibrate", "compare", "devices"}
        cases = sorted(glob.glob(os.path.join(HERE, "*.expect")))
        self.assertGreaterEqual(len(cases), 20)
        for expect in cases:
            case = expect[: -len(".expect")]
            rel = os.path.relpath(case, ROOT)
            spec = read_expect(expect)
            with self.subTest(case=os.path.basename(case)), tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "out")
                args = [a.format(case=rel, out=out) for a in spec["args"].split()]
                code, err, rss_mib = run(args)
                baseline_mib = baseline[args[0] in torch_commands]
                self.assertEqual(code, 2, f"{rel}: exit {code}\n{err}")
                lines = err.strip().splitlines()
                self.assertEqual(len(lines), 1, err)
                self.assertIn(rel, lines[0])
                self.assertIn(spec["error"], lines[0])
                self.assertEqual(os.listdir(d), [], f"{rel}: output left behind")
                # Far below what the inputs claim (petabytes, for some).
                self.assertLess(rss_mib - baseline_mib, MAX_EXTRA_RSS_MIB,
                                f"{rel}: peak RSS {rss_mib:.0f} MiB, baseline {baseline_mib:.0f} MiB")


if __name__ == "__main__":
    unittest.main()
