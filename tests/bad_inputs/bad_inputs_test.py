"""Runs mimic on every case of the bad-input corpus (tests/bad_inputs/*.expect).

Each case must end with exit code 2, exactly one line on stderr that names the case file and
contains the expected error, no output file left behind, and memory bounded well below what the
input claims.
"""

import glob
import os
import resource
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIMIC = os.environ.get("MIMIC_BIN", os.path.join(ROOT, "build", "default", "cli", "mimic"))
MAX_RSS_MIB = 1024


def read_expect(path):
    spec = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(": ")
            spec[key] = value
    return spec


class BadInputTest(unittest.TestCase):

    def test_every_case(self):
        cases = sorted(glob.glob(os.path.join(HERE, "*.expect")))
        self.assertGreaterEqual(len(cases), 20)
        for expect in cases:
            case = expect[: -len(".expect")]
            rel = os.path.relpath(case, ROOT)
            spec = read_expect(expect)
            with self.subTest(case=os.path.basename(case)), tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "out")
                args = [a.format(case=rel, out=out) for a in spec["args"].split()]
                r = subprocess.run([MIMIC, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
                rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                self.assertEqual(r.returncode, 2, f"{rel}: exit {r.returncode}\n{r.stderr}")
                lines = r.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, r.stderr)
                self.assertIn(rel, lines[0])
                self.assertIn(spec["error"], lines[0])
                self.assertEqual(os.listdir(d), [], f"{rel}: output left behind")
                # The largest child so far: every case stays far below what the inputs claim.
                self.assertLess(rss_mib, MAX_RSS_MIB, f"{rel}: peak RSS {rss_mib:.0f} MiB")


if __name__ == "__main__":
    unittest.main()
