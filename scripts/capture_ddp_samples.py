#!/usr/bin/env python3
"""Captures multi-rank CPU training runs: DistributedDataParallel over Gloo.

Each rank trains the fleet-sample MLP wrapped in DDP (its bucketed gradient
all-reduces and the parameter broadcast at construction are real c10d
collectives) and records its own execution trace and Kineto trace. For a world
of N ranks this writes into <out>/ddp_mlp_<N>r/:

  rank-<r>.et.json.gz      PyTorch execution trace of rank r
  rank-<r>.kineto.json.gz  Kineto trace of the same ProfilerStep#N steps
  manifest.json            one sample per rank (rank, world size, unprofiled
                           step times), the format of fleet_samples/manifest.json

The ranks are started here with torch.multiprocessing and rendezvous through a
TCPStore on MASTER_ADDR:MASTER_PORT (default 127.0.0.1 and a free port).

Examples:
  python3 scripts/capture_ddp_samples.py                 # 2 and 4 ranks
  python3 scripts/capture_ddp_samples.py --world-sizes 2 --out /tmp/ddp
"""

import argparse
import json
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

import capture_fleet_samples as fleet

MANIFEST_FORMAT = 1
# Small buckets so that the MLP's 2.6M gradients travel in several all-reduces,
# as a large model's do with the default 25 MB.
BUCKET_CAP_MB = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_ddp_mlp(rank: int) -> fleet.Workload:
    """The fleet MLP with a BatchNorm in DDP; each rank trains on its own shard.

    DDP broadcasts the parameters from rank 0 when it wraps the model (before
    the profiled steps), then the BatchNorm's running statistics from rank 0 at
    every forward (broadcast_buffers=True), and all-reduces the gradients bucket
    by bucket during backward.
    """
    torch.manual_seed(fleet.SEED)  # Same initial weights; DDP broadcasts anyway.
    batch, dims, classes = 256, [1024, 1024, 1024, 512], 10
    layers = []
    for d_in, d_out in zip(dims, dims[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
    layers.insert(1, nn.BatchNorm1d(dims[1]))
    net = nn.Sequential(*layers, nn.Linear(dims[-1], classes))
    ddp = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=BUCKET_CAP_MB)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    torch.manual_seed(fleet.SEED + 1 + rank)  # Per-rank data shard.
    x = torch.randn(batch, dims[0])
    y = torch.randint(0, classes, (batch,))
    return fleet.Workload(
        name="ddp_mlp",
        description=("MLP classifier in DistributedDataParallel over Gloo "
                     f"(bucket_cap_mb={BUCKET_CAP_MB}), CrossEntropyLoss, "
                     "SGD(momentum=0.9)"),
        model=("Linear 1024-1024(+BatchNorm1d)-1024-512-10 with ReLU, "
               "per-rank batch 256"),
        batch_size=batch,
        step=fleet.make_step(ddp, nn.CrossEntropyLoss(), optimizer, (x,), y))


def run_rank(rank: int, world: int, port: int, out_dir: str, args) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      RANK=str(rank), WORLD_SIZE=str(world))
    torch.set_num_threads(args.threads)
    # The observer writes the process groups that exist when it starts as
    # `## process_group:init ##`.
    with tempfile.TemporaryDirectory() as tmp:
        et_path = os.path.join(tmp, f"rank-{rank}.et.json")
        kineto_path = os.path.join(tmp, f"rank-{rank}.kineto.json")
        dist.init_process_group("gloo", rank=rank, world_size=world)
        workload = build_ddp_mlp(rank)
        for _ in range(args.warmup_steps):
            workload.step()
        dist.barrier()
        iteration_ms = [fleet.timed(workload.step)
                        for _ in range(args.timed_steps)]
        dist.barrier()
        profiled = fleet.profile_steps(workload.step, args.steps, et_path,
                                       kineto_path)
        dist.barrier()
        with open(et_path) as f:
            et = json.load(f)
        with open(kineto_path) as f:
            kineto = json.load(f)
        steps = fleet.verify(et, kineto)
        et_name, kineto_name = f"rank-{rank}.et.json.gz", f"rank-{rank}.kineto.json.gz"
        fleet.write_gzip(et_path, os.path.join(out_dir, et_name))
        fleet.write_gzip(kineto_path, os.path.join(out_dir, kineto_name))
        dist.destroy_process_group()
    entry = fleet.manifest_entry(workload, f"rank-{rank}", et_name, kineto_name,
                                 iteration_ms, profiled, steps)
    entry.update(backend="gloo", rank=rank, world_size=world)
    with open(os.path.join(out_dir, f".rank-{rank}.json"), "w") as f:
        json.dump(entry, f)


def capture_world(world: int, out_root: str, args) -> None:
    out_dir = os.path.join(out_root, f"ddp_mlp_{world}r")
    os.makedirs(out_dir, exist_ok=True)
    print(f"ddp_mlp: {world} ranks over gloo -> {out_dir}")
    mp.spawn(run_rank, args=(world, free_port(), out_dir, args), nprocs=world)
    samples = []
    for rank in range(world):
        part = os.path.join(out_dir, f".rank-{rank}.json")
        with open(part) as f:
            samples.append(json.load(f))
        os.remove(part)
        print(f"  rank {rank}: unprofiled median "
              f"{samples[-1]['iteration_ms_median']:.2f} ms")
    manifest = {"format": MANIFEST_FORMAT, "world_size": world,
                "rank_pattern": "rank-{rank}.et.json.gz",
                "samples": samples, "default": "rank-0"}
    path = os.path.join(out_dir, "manifest.json")
    with open(path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--out", default="fleet_samples", help="output folder")
    parser.add_argument("--world-sizes", default="2,4",
                        help="comma-separated numbers of ranks")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads per rank")
    fleet.add_step_arguments(parser, timed_steps=20, warmup_steps=3)
    args = parser.parse_args()
    worlds = [int(w) for w in args.world_sizes.split(",") if w.strip()]
    if any(w < 2 for w in worlds):
        raise SystemExit("--world-sizes: each must be >= 2")
    print(f"torch {torch.__version__}")
    for world in worlds:
        capture_world(world, args.out, args)


if __name__ == "__main__":
    main()
