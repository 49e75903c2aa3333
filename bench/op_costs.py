#!/usr/bin/env python3
"""Per-op costs on this host that explain replay and model choices (docs/benchmarks.md §2, §5;
docs/model.md), each the median of 200 timed calls at 2 intra-op threads:

- unary math per byte against relu: why calibrate measures sqrt, exp, tanh, ... as kinds of
  their own;
- sqrt of negative inputs against positive ones: why the replay fills sqrt/log inputs
  non-negative (NaNs are slow on some CPUs);
- max_pool2d on an input that requires grad (what a training step runs: the kernel with
  indices) against one that does not (what a replay under NoGradGuard would run): why the
  replay runs composite ops as the ops the trace recorded under them.

Usage: python3 bench/op_costs.py
"""
import statistics
import time

import torch

torch.set_num_threads(2)
torch.manual_seed(0)


def median_us(fn, calls=200):
    for _ in range(10):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


def main():
    n = 1 << 19
    x = torch.rand(n) + 0.1
    relu = median_us(lambda: torch.relu(x))
    print(f"unary math on {n} floats (median us; x relu's time):")
    print(f"  relu {relu:8.1f}")
    for name, fn in [("sqrt", torch.sqrt), ("rsqrt", torch.rsqrt), ("exp", torch.exp),
                     ("log", torch.log), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid),
                     ("gelu", torch.nn.functional.gelu), ("silu", torch.nn.functional.silu)]:
        us = median_us(lambda: fn(x))
        print(f"  {name:7s} {us:8.1f}  {us / relu:5.1f}x")

    m = 33695  # transformer's Adam moments: sqrt of exp_avg_sq
    pos, sym = torch.rand(m), torch.rand(m) * 2 - 1
    p_us, s_us = median_us(lambda: torch.sqrt(pos)), median_us(lambda: torch.sqrt(sym))
    print(f"sqrt of {m} floats: in [0, 1) {p_us:.1f} us, in [-1, 1) {s_us:.1f} us ({s_us / p_us:.1f}x)")

    # cnn_bn's first pooling: [32, 32, 32, 32], 2x2 stride 2.
    act = torch.relu(torch.randn(32, 32, 32, 32))
    grad_in = act.clone().requires_grad_(True)
    with torch.no_grad():
        plain = median_us(lambda: torch.nn.functional.max_pool2d(act, 2, 2))
    with torch.enable_grad():
        training = median_us(lambda: torch.nn.functional.max_pool2d(grad_in, 2, 2))
    print(f"max_pool2d [32,32,32,32]: input needs no grad {plain:.0f} us, requires grad "
          f"(with indices) {training:.0f} us ({training / plain:.1f}x)")


if __name__ == "__main__":
    main()
