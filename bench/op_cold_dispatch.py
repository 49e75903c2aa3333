#!/usr/bin/env python3
"""What a small ATen op costs once its code went cold, from Python (docs/benchmarks.md section 5).

Two measurements, each the median of 5 trials:
1. K distinct ATen ops (every one that takes one or two tensors and runs on one-element float
   tensors, shuffled with a fixed seed) called in turn, against each one called again and again:
   the time per call beyond.
2. torch.add of two 256-float tensors right after other work (nothing, 20 tiny ops, a 256 x 128
   GEMM, relu or a copy of 16 MiB), timed alone.

`mimic calibrate` measures the same two in C++ through the dispatcher (cpu_overheads.in_turn,
after_traffic); this is the check from Python, with the interpreter's own code in the caches.

Usage: OMP_NUM_THREADS=2 python3 bench/op_cold_dispatch.py"""
import random
import statistics
import time
import warnings

import torch


def distinct_ops():
    x, y = torch.full((1,), 0.75), torch.full((1,), 1.25)
    ops, seen = [], set()
    for s in sorted(torch._C._jit_get_all_schemas(), key=lambda s: (s.name, s.overload_name)):
        if not s.name.startswith("aten::") or s.name.endswith("_") or "backward" in s.name or s.name in seen:
            continue
        if s.is_mutable or len(s.returns) != 1 or str(s.returns[0].type) != "Tensor":
            continue
        req = [a for a in s.arguments if not a.has_default_value() and not a.kwarg_only]
        if len(req) not in (1, 2) or not all(str(a.type) == "Tensor" for a in req):
            continue
        try:
            f = getattr(getattr(torch.ops.aten, s.name[6:]), s.overload_name or "default")
            args = (x,) if len(req) == 1 else (x, y)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                f(*args)
        except Exception:
            continue
        seen.add(s.name)
        ops.append(lambda f=f, args=args: f(*args))
    random.Random(1).shuffle(ops)
    return ops


def per_call_us(seq, reps):
    for f in seq:
        f()
    t = time.perf_counter()
    for _ in range(reps):
        for f in seq:
            f()
    return (time.perf_counter() - t) / (reps * len(seq)) * 1e6


def in_turn(ops):
    print("K distinct ops in turn: us per call beyond each op called again and again")
    for k in (1, 8, 16, 32, 64, 128, 256):
        if k > len(ops):
            break
        extra = []
        for _ in range(5):
            seq = (ops[:k] * (240 // k + 1))[:240]
            alone = sum(per_call_us([f] * 20, 20) for f in ops[:k]) / k
            extra.append(per_call_us(seq, 20) - alone)
        print(f"  K={k:3d}: {statistics.median(extra):+.2f} us")


def after_work():
    x, y = torch.randn(256), torch.randn(256)
    big, big2 = torch.randn(4 << 20), torch.empty(4 << 20)
    a, w = torch.randn(256, 128), torch.randn(128, 128)
    u = torch.rand(8) + 0.5
    tiny = [torch.sigmoid, torch.tanh, torch.exp, torch.neg, torch.abs, torch.sin, torch.cos, torch.log1p,
            torch.sqrt, torch.relu, torch.floor, torch.ceil, torch.round, torch.sign, torch.erf, torch.expm1,
            torch.log, torch.reciprocal, torch.square, torch.trunc]
    before = {"nothing": lambda: None, "20 tiny ops": lambda: [f(u) for f in tiny],
              "mm 256x128x128": lambda: torch.mm(a, w), "relu of 16 MiB": lambda: torch.relu(big),
              "copy of 16 MiB": lambda: big2.copy_(big)}
    print("torch.add of 256 floats after other work (median of 350 calls, each timed alone)")
    for name, pre in before.items():
        ts = []
        for i in range(400):
            pre()
            t0 = time.perf_counter_ns()
            torch.add(x, y)
            ts.append((time.perf_counter_ns() - t0) / 1000)
        print(f"  after {name:16s}: {statistics.median(ts[50:]):6.2f} us")


if __name__ == "__main__":
    in_turn(distinct_ops())
    after_work()
