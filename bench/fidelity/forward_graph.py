#!/usr/bin/env python3
"""What recording the autograd graph costs a forward: the zoo's bigru layers (a bidirectional
GRU 40 -> 128 and its linear head on a [32, 64, 40] batch, as bench/fidelity/zoo.py builds them)
run forward with autograd on, with their parameters requiring grad and without, alternated;
median of 30 calls after 10, per round (docs/benchmarks.md §2, "The forward records the
autograd graph").

Usage: OMP_NUM_THREADS=2 python3 bench/fidelity/forward_graph.py [--rounds 3]"""
import argparse
import statistics
import time

import torch
from torch import nn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(2)
    rnn, head = nn.GRU(40, 128, batch_first=True, bidirectional=True), nn.Linear(256, 8)
    x = torch.randn(32, 64, 40)

    def forward_ms(requires_grad: bool) -> float:
        for p in list(rnn.parameters()) + list(head.parameters()):
            p.requires_grad_(requires_grad)
        times = []
        for _ in range(40):
            start = time.perf_counter()
            y = head(rnn(x)[0].mean(1))
            times.append((time.perf_counter() - start) * 1e3)
            del y
        return statistics.median(times[10:])

    for r in range(a.rounds):
        print(f"round {r + 1}: parameters requiring grad {forward_ms(True):.2f} ms, "
              f"not {forward_ms(False):.2f} ms")


if __name__ == "__main__":
    main()
