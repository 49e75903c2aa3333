#!/usr/bin/env python3
"""Writes tests/data/foreach_optimizers.et.json.gz (+ .kineto.json.gz): one training step of a
small model whose three parameter groups are stepped by Adam, AdamW and Adagrad with
foreach=True, the default on CUDA in PyTorch 2.x: aten::_foreach_* ops with Tensor[] and
Scalar[] arguments. Run from the repository root: python3 tests/data/make_foreach_optimizers.py
"""
import os
import sys
import tempfile

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402


def main() -> None:
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 4))
    optimizers = [
        torch.optim.Adam(model[0].parameters(), lr=1e-3, foreach=True),
        torch.optim.AdamW(model[1].parameters(), lr=1e-3, foreach=True),
        torch.optim.Adagrad(model[3].parameters(), lr=1e-2, foreach=True),
    ]
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        for o in optimizers:
            o.zero_grad()
        loss_fn(model(x), y).backward()
        for o in optimizers:
            o.step()

    for _ in range(2):  # the optimizers' state exists before the profiled steps
        step()
    out = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        et, kineto = os.path.join(tmp, "et.json"), os.path.join(tmp, "kineto.json")
        cfs.profile_steps(step, 1, et, kineto)
        cfs.write_gzip(et, os.path.join(out, "foreach_optimizers.et.json.gz"))
        cfs.write_gzip(kineto, os.path.join(out, "foreach_optimizers.kineto.json.gz"))


if __name__ == "__main__":
    main()
