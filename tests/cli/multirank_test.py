"""Multi-rank replay end to end: the DDP-over-Gloo fleet samples replayed by `mimic replay`
launched with torchrun (and by hand, as any launcher would), checked against the traces
themselves, plus the faults: a rank killed or hung mid-replay.

Run from the repository root with MIMIC_BIN pointing at the built binary.
"""

import atexit
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

MIMIC = os.environ.get("MIMIC_BIN", "build/default/cli/mimic")
# Host calibrations that compare and `calibrate --cache` keep go to a folder of this run's own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="mimic-test-cache.")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)
SAMPLES = "fleet_samples"
TIMEOUT_S = 8  # --timeout of the fault tests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_collectives(et_path: str, step: int = 1) -> dict:
    """Counts and bytes of the c10d collectives in ProfilerStep#step, read from the raw ET."""
    with gzip.open(et_path) as f:
        nodes = json.load(f)["nodes"]
    by_id = {n["id"]: n for n in nodes}

    def in_step(n):
        seen = set()
        while n and n["id"] not in seen:
            seen.add(n["id"])
            if n["name"] == f"ProfilerStep#{step}":
                return True
            n = by_id.get(n["ctrl_deps"])
        return False

    names = {"c10d::allreduce_": "all_reduce", "c10d::broadcast_": "broadcast"}
    out = {"issued": 0, "bytes": 0, "by_type": {}}
    for n in nodes:
        if not n["name"].startswith("c10d::") or not in_step(n):
            continue
        kind = names[n["name"]]  # the DDP samples hold only these two
        tensor = n["inputs"]["values"][0][0]  # [id, storage, offset, numel, itemsize, device]
        size = tensor[3] * tensor[4]
        out["issued"] += 1
        out["bytes"] += size
        t = out["by_type"].setdefault(kind, {"count": 0, "bytes": 0})
        t["count"] += 1
        t["bytes"] += size
    return out


def torchrun(nproc: int, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}",
           f"--master-port={free_port()}", "--no-python", MIMIC, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def launch(rank: int, world: int, port: int, *args: str) -> subprocess.Popen:
    """Starts one rank with the variables torchrun would set."""
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    return subprocess.Popen([MIMIC, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_iteration(proc: subprocess.Popen, n: int) -> None:
    """Reads proc's stderr until it reports iteration n."""
    for line in proc.stderr:
        if f"iteration {n}/" in line:
            return
    raise AssertionError(f"rank ended before iteration {n} (exit {proc.wait()})")


def write_subgroup_trace(path: str, rank: int) -> None:
    """A schema-1.1.0 trace of one rank of 3: an all-reduce on the world, then one on the
    sub-group of ranks 0 and 1 (rank 2 is not in it), as NCCL's record_param_comms records them."""
    def node(id_, parent, name, inputs=(), types=(), attrs=()):
        return {"id": id_, "name": name, "ctrl_deps": parent,
                "inputs": {"values": list(inputs), "shapes": [[] for _ in inputs], "types": list(types)},
                "outputs": {"values": [], "shapes": [], "types": []},
                "attrs": [{"name": "rf_id", "type": "uint64", "value": id_},
                          {"name": "tid", "type": "uint64", "value": 1}] + list(attrs)}

    def comm(id_, tensor_id, numel, group, size, seq):
        attrs = [{"name": "collective_name", "type": "string", "value": "allreduce"},
                 {"name": "pg_name", "type": "string", "value": group},
                 {"name": "pg_size", "type": "uint64", "value": size},
                 {"name": "in_msg_nelems", "type": "uint64", "value": numel},
                 {"name": "out_msg_nelems", "type": "uint64", "value": numel}]
        return node(id_, 3, "record_param_comms",
                    [[[tensor_id, tensor_id, 0, numel, 4, "cpu"]], seq, [group, ""], rank, "allreduce", numel,
                     numel, "Float", [], [], 0, 1, size],
                    ["GenericList[Tensor(float)]", "Int", "Tuple[String,String]", "Int", "String", "Int", "Int",
                     "String", "GenericList[]", "GenericList[]", "Int", "Int", "Int"], attrs)

    groups = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo", "ranks": [], "group_size": 3},
              {"pg_name": "1", "pg_desc": "pair", "backend_config": "cpu:gloo", "ranks": [0, 1], "group_size": 2}]
    nodes = [node(1, 0, "[pytorch|profiler|execution_trace|thread]"),
             node(2, 1, "## process_group:init ##", [json.dumps(groups)], ["String"]),
             node(3, 1, "ProfilerStep#1"),
             comm(4, 10, 1000, "0", 3, 1)]
    if rank in (0, 1):
        nodes.append(comm(5, 11, 300, "1", 2, 2))
    with open(path, "w") as f:
        json.dump({"schema": "1.1.0-chakra.0.0.4", "pid": 100 + rank, "time": "t", "start_ts": 0,
                   "nodes": nodes}, f)


class MultiRankReplay(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def check_ranks(self, world: int, mode: str) -> list:
        trace_dir = os.path.join(SAMPLES, f"ddp_mlp_{world}r")
        report = os.path.join(self.tmp.name, "r-{rank}.json")
        r = torchrun(world, "replay", "--trace-dir", trace_dir, "--mode", mode, "--iters", "2",
                     "--warmup", "1", "--timeout", "120", "--report", report)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        reports = []
        for rank in range(world):
            with open(report.format(rank=rank)) as f:
                got = json.load(f)
            expected = expected_collectives(os.path.join(trace_dir, f"rank-{rank}.et.json.gz"))
            c = got["collectives"]
            self.assertEqual((got["rank"], got["world_size"], got["mode"]), (rank, world, mode))
            self.assertTrue(got["completed"], got["stop_reason"])
            self.assertEqual(c["backend"], "gloo")
            self.assertGreater(expected["issued"], 0)
            for side in (c, c["expected"]):
                self.assertEqual(side["issued"], expected["issued"])
                self.assertEqual(side["bytes"], expected["bytes"])
                self.assertEqual(side["by_type"], expected["by_type"])
            self.assertEqual(got["coverage"]["skipped"], 0, got["coverage"]["skipped_ops"])
            for row in c["per_size"]:
                self.assertEqual(row["samples"], 2 * row["calls"])
                self.assertGreater(row["time_us"], 0)
                factor = 2 * (world - 1) / world if row["type"] == "all_reduce" else 1
                self.assertAlmostEqual(row["busbw_gbps"], row["algbw_gbps"] * factor, places=6)
                self.assertAlmostEqual(row["algbw_gbps"], row["size_bytes"] / row["time_us"] / 1e3, places=6)
            reports.append(got)
        return reports

    def test_two_ranks_full_mode_issues_the_traced_collectives(self):
        reports = self.check_ranks(2, "full")
        # Full mode also runs the compute: every op of the step.
        self.assertGreater(reports[0]["coverage"]["replayed"], reports[0]["collectives"]["issued"])

    def test_two_ranks_comm_mode_issues_only_the_collectives(self):
        reports = self.check_ranks(2, "comm")
        for got in reports:
            self.assertEqual(got["coverage"]["total"], got["collectives"]["issued"])
            self.assertIsNone(got["ratio"])  # a comm-only iteration is not the original's

    def test_four_ranks_comm_mode(self):
        self.check_ranks(4, "comm")

    def test_a_two_rank_job_scaled_to_four_ranks_replays_on_four(self):
        d = os.path.join(SAMPLES, "ddp_mlp_2r")
        scaled = os.path.join(self.tmp.name, "ws4.mimic")
        r = subprocess.run([MIMIC, "synth", f"{d}/rank-0.et.json.gz", f"{d}/rank-1.et.json.gz", "--rank", "1",
                            "--world-size", "4", "-o", scaled], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = os.path.join(self.tmp.name, "ws4-{rank}.json")
        r = torchrun(4, "replay", scaled, "--mode", "comm", "--iters", "2", "--warmup", "0", "--timeout", "120",
                     "--report", report)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        expected = expected_collectives(f"{d}/rank-1.et.json.gz")  # data parallel: per-rank sizes kept
        for rank in range(4):
            with open(report.format(rank=rank)) as f:
                got = json.load(f)
            self.assertEqual(got["world_size"], 4)
            self.assertEqual([t["name"] for t in got["transformations"]], ["select", "world_size"])
            c = got["collectives"]
            self.assertEqual((c["issued"], c["bytes"]), (expected["issued"], expected["bytes"]))
            for row in c["per_size"]:
                self.assertEqual(row["group_size"], 4)

    def test_sub_groups_are_created_as_recorded(self):
        for rank in range(3):
            write_subgroup_trace(os.path.join(self.tmp.name, f"rank{rank}.json"), rank)
        report = os.path.join(self.tmp.name, "sub-{rank}.json")
        for mode in ("comm", "full"):
            r = torchrun(3, "replay", "--trace-dir", self.tmp.name, "--rank-pattern", "rank{rank}.json", "--mode",
                         mode, "--iters", "2", "--warmup", "0", "--timeout", "120", "--report", report)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            for rank in range(3):
                with open(report.format(rank=rank)) as f:
                    c = json.load(f)["collectives"]
                groups = {row["group"]: (row["group_size"], row["size_bytes"]) for row in c["per_size"]}
                want = {"0": (3, 4000), "1": (2, 1200)} if rank < 2 else {"0": (3, 4000)}
                self.assertEqual(groups, want)
                self.assertEqual(c["issued"], c["expected"]["issued"])
                self.assertEqual(c["issued"], len(want))

    def test_mpirun_launches_the_ranks(self):
        mpirun = shutil.which("mpirun")
        self.assertIsNotNone(mpirun, "mpirun not found: scripts/setup.sh installs openmpi-bin")
        report = os.path.join(self.tmp.name, "mpi-{rank}.json")
        env = dict(os.environ, MASTER_PORT=str(free_port()))
        # Open MPI sets OMPI_COMM_WORLD_RANK/SIZE; the rendezvous defaults to 127.0.0.1.
        r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-n", "2", "-x", "MASTER_PORT", MIMIC,
                            "replay", "--trace-dir", os.path.join(SAMPLES, "ddp_mlp_2r"), "--mode", "comm", "--iters",
                            "2", "--warmup", "0", "--timeout", "120", "--report", report],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for rank in range(2):
            with open(report.format(rank=rank)) as f:
                got = json.load(f)
            self.assertEqual((got["rank"], got["world_size"]), (rank, 2))
            self.assertEqual(got["collectives"]["issued"], got["collectives"]["expected"]["issued"])

    def test_calibrate_on_two_ranks_fits_the_collectives(self):
        platform = os.path.join(self.tmp.name, "two_ranks.json")
        r = torchrun(2, "calibrate", "--quick", "-o", platform)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(platform) as f:
            p = json.load(f)
        fitted = {c["collective"]: c for c in p.get("collectives", [])}
        # Each fitted collective was measured on the 2 ranks; one too noisy to fit is named.
        for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
            if name in fitted:
                self.assertEqual(int(fitted[name]["ranks"]), 2)
                self.assertGreater(fitted[name]["bus_bytes_per_s"], 0)
                self.assertGreaterEqual(fitted[name].get("alpha_us", 0), 0)  # protobuf JSON omits a 0
            else:
                self.assertIn(f"{name}: not fitted", r.stderr)
        # A sweep on this shared machine can be too noisy to fit one collective, not all of them.
        used = {"c10d::allreduce_": "all_reduce", "c10d::broadcast_": "broadcast"}
        self.assertTrue(set(used.values()) & set(fitted), r.stderr)
        self.assertIn("2 torchrun ranks over Gloo", p["sources"]["collectives"])
        # The prediction prices the sample's collectives with the fitted figures (on 2 ranks the
        # bus factor is 1 for both all-reduce, 2(n-1)/n, and broadcast).
        r = subprocess.run([MIMIC, "predict", os.path.join(SAMPLES, "ddp_mlp_2r/rank-0.et.json.gz"), "--platform",
                            platform, "--json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        checked = 0
        for op in json.loads(r.stdout)["ops"]:
            c = fitted.get(used.get(op["name"], ""))
            if c:
                want = c.get("alpha_us", 0) + op["bytes"] / c["bus_bytes_per_s"] * 1e6
                self.assertAlmostEqual(op["compute_us"], want, delta=1e-6 * want)
                checked += 1
        self.assertGreater(checked, 0)

    def test_compute_mode_leaves_the_collectives_out(self):
        r = subprocess.run([MIMIC, "replay", os.path.join(SAMPLES, "ddp_mlp_2r/rank-0.et.json.gz"), "--mode",
                            "compute", "--iters", "1", "--warmup", "0", "--report", "-"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout[r.stdout.index("{"):])
        self.assertEqual(got["coverage"]["skipped"], 0)
        self.assertEqual(got["collectives"]["issued"], 0)
        self.assertEqual(got["collectives"]["expected"]["issued"], 0)

    def test_one_process_skips_the_collectives_and_says_why(self):
        r = subprocess.run([MIMIC, "replay", os.path.join(SAMPLES, "ddp_mlp_2r/rank-0.et.json.gz"), "--iters", "1",
                            "--warmup", "0", "--report", os.path.join(self.tmp.name, "one.json")],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.tmp.name, "one.json")) as f:
            got = json.load(f)
        expected = expected_collectives(os.path.join(SAMPLES, "ddp_mlp_2r/rank-0.et.json.gz"))
        self.assertEqual(got["coverage"]["skipped_by_reason"], {"collective": expected["issued"]})
        self.assertIn("torchrun", got["coverage"]["skipped_ops"][0]["detail"])

    def test_world_size_of_the_launch_must_match_the_trace(self):
        r = torchrun(2, "replay", "--trace-dir", os.path.join(SAMPLES, "ddp_mlp_4r"), "--iters", "1",
                     "--timeout", "30")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("recorded on 4 ranks", r.stderr)

    def test_one_trace_per_rank_is_required(self):
        d = os.path.join(SAMPLES, "ddp_mlp_2r")
        r = subprocess.run([MIMIC, "replay", f"{d}/rank-0.et.json.gz", f"{d}/rank-1.et.json.gz"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("2 traces for 1 rank(s)", r.stderr)

    def test_a_rank_given_another_ranks_trace_is_refused_before_any_setup(self):
        # The capture manifest records each trace's rank: swapped traces are bad input.
        d = os.path.join(SAMPLES, "ddp_mlp_2r")
        r = torchrun(2, "replay", f"{d}/rank-1.et.json.gz", f"{d}/rank-0.et.json.gz", "--iters", "1",
                     "--timeout", "30")
        self.assertNotEqual(r.returncode, 0)
        # Each rank finds its own trace swapped; whichever reports first ends the job.
        self.assertRegex(r.stderr, r"rank 0 was given the trace of rank 1|rank 1 was given the trace of rank 0")

    def test_kineto_takes_a_rank_pattern_like_the_traces(self):
        # The traces alone (no manifest beside them) and each rank's Kineto trace by pattern.
        d = os.path.join(SAMPLES, "ddp_mlp_2r")
        for rank in range(2):
            shutil.copy(f"{d}/rank-{rank}.et.json.gz", self.tmp.name)
        report = os.path.join(self.tmp.name, "k-{rank}.json")
        r = torchrun(2, "replay", "--trace-dir", self.tmp.name, "--kineto", f"{d}/rank-{{rank}}.kineto.json.gz",
                     "--mode", "compute", "--iters", "1", "--warmup", "0", "--timeout", "120", "--report", report)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for rank in range(2):
            with open(report.format(rank=rank)) as f:
                got = json.load(f)
            # Linked (without a Kineto trace there are no recorded gaps and no profiled spans).
            self.assertEqual(got["host_gaps"]["mode"], "recorded")
            self.assertTrue(any(op["original_profiled_ms"] is not None for op in got["ops"]))

    def run_fault(self, fault) -> tuple:
        """Starts 2 ranks by hand, applies `fault` to rank 1 mid-replay, returns rank 0's
        (exit code, stderr, seconds from the fault to its exit, report)."""
        port = free_port()
        report = os.path.join(self.tmp.name, "fault.json")
        args = ["replay", "--trace-dir", os.path.join(SAMPLES, "ddp_mlp_2r"), "--iters", "1000",
                "--warmup", "0", "--timeout", str(TIMEOUT_S), "--report", report]
        rank0 = launch(0, 2, port, *args)
        rank1 = launch(1, 2, port, *args)
        try:
            wait_for_iteration(rank1, 3)
            fault(rank1)
            start = time.monotonic()
            _, err = rank0.communicate(timeout=TIMEOUT_S + 60)
            elapsed = time.monotonic() - start
        finally:
            for p in (rank0, rank1):
                if p.poll() is None:
                    p.kill()
                p.wait()
                p.stdout.close()
                p.stderr.close()
        with open(report.replace(".json", ".rank0.json")) as f:
            return rank0.returncode, err, elapsed, json.load(f)

    def test_a_killed_rank_stops_the_others_with_an_error_naming_it(self):
        code, err, elapsed, got = self.run_fault(lambda p: p.send_signal(signal.SIGKILL))
        self.assertEqual(code, 1, err)
        self.assertLess(elapsed, TIMEOUT_S + 10)
        last = err.strip().splitlines()[-1]
        self.assertIn("rank 0: ", last)
        self.assertRegex(last, r"(all_reduce|broadcast) \(op \d+")
        self.assertIn("rank 1", last)
        # The completed iterations are reported.
        self.assertFalse(got["completed"])
        self.assertGreaterEqual(len(got["iteration_ms"]["samples"]), 2)
        self.assertEqual(got["stop_reason"], last.split("replay stopped early: ", 1)[1])

    def test_a_hung_rank_stops_the_others_within_the_timeout(self):
        code, err, elapsed, got = self.run_fault(lambda p: p.send_signal(signal.SIGSTOP))
        self.assertEqual(code, 1, err)
        self.assertGreaterEqual(elapsed, TIMEOUT_S - 1)  # it waited for the timeout ...
        self.assertLess(elapsed, TIMEOUT_S + 10)         # ... and not much more
        last = err.strip().splitlines()[-1]
        self.assertIn("stopped responding: rank 1", last)
        self.assertFalse(got["completed"])


if __name__ == "__main__":
    unittest.main()
