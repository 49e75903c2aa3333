#!/usr/bin/env python3
"""Writes tests/data/lstm.et.json.gz (+ .kineto.json.gz): one training step of a small
two-layer LSTM sequence classifier (embedding, nn.LSTM batch_first, linear head,
CrossEntropyLoss, SGD) on the CPU, where aten::lstm runs as oneDNN's mkldnn_rnn_layer. Batch 4,
sequence 6: small enough to replay in a second. Run from the repository root:
python3 tests/data/make_lstm.py
"""
import os
import sys
import tempfile

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


def main() -> None:
    torch.manual_seed(1234)
    model = Classifier()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens, labels = torch.randint(0, 50, (4, 6)), torch.randint(0, 5, (4,))
    loss_fn = nn.CrossEntropyLoss()

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(tokens), labels).backward()
        opt.step()

    step()
    out = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        et, kineto = os.path.join(tmp, "et.json"), os.path.join(tmp, "kineto.json")
        cfs.profile_steps(step, 1, et, kineto)
        cfs.write_gzip(et, os.path.join(out, "lstm.et.json.gz"))
        cfs.write_gzip(kineto, os.path.join(out, "lstm.kineto.json.gz"))


if __name__ == "__main__":
    main()
