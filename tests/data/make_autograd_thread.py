#!/usr/bin/env python3
"""Writes tests/data/autograd_thread.et.json.gz (+ .kineto.json.gz): one training step of a small
CNN whose backward runs on a thread of its own, as the autograd engine's device threads run it on
a GPU: the step's backward ops hang off that thread's root, not off ProfilerStep#N. Run from the
repository root: python3 tests/data/make_autograd_thread.py
"""
import os
import sys
import tempfile
import threading

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402


def main() -> None:
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4,))

    def step() -> None:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        backward = threading.Thread(target=loss.backward)  # the engine's thread on a GPU
        backward.start()
        backward.join()
        opt.step()

    for _ in range(2):  # the optimizer's state exists before the profiled step
        step()
    out = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        et, kineto = os.path.join(tmp, "et.json"), os.path.join(tmp, "kineto.json")
        cfs.profile_steps(step, 1, et, kineto)
        cfs.write_gzip(et, os.path.join(out, "autograd_thread.et.json.gz"))
        cfs.write_gzip(kineto, os.path.join(out, "autograd_thread.kineto.json.gz"))


if __name__ == "__main__":
    main()
