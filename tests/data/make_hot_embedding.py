#!/usr/bin/env python3
"""Writes tests/data/hot_embedding.et.json.gz (+ .kineto.json.gz and the integer inputs the
observer saved, hot_embedding.et_resources/): one training step of a small model whose
embedding indices are far from uniform (nine in ten hit three hot rows), an EmbeddingBag with
ragged bags, a linear head, CrossEntropyLoss and SGD, on the CPU. The capture saves the exact
integer inputs of aten::embedding, aten::embedding_bag and aten::cross_entropy_loss
(ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA), which the replay must use instead of
values drawn at random from the recorded ranges. Run from the repository root:
python3 tests/data/make_hot_embedding.py
"""
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402

ROWS, DIM, CLASSES = 500, 8, 4
HOT = torch.tensor([5, 17, 42])


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(ROWS, DIM)
        self.bag = nn.EmbeddingBag(ROWS, DIM, mode="sum")
        self.head = nn.Linear(2 * DIM, CLASSES)

    def forward(self, tokens: torch.Tensor, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.head(torch.cat([self.embed(tokens).mean(1), self.bag(ids, offsets)], 1))


def hot_indices(n: int) -> torch.Tensor:
    """Nine in ten indices are one of three hot rows, the rest uniform over the table."""
    idx = torch.randint(0, ROWS, (n,))
    hot = torch.rand(n) < 0.9
    idx[hot] = HOT[torch.randint(0, len(HOT), (int(hot.sum()),))]
    return idx


def main() -> None:
    torch.manual_seed(1234)
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = 8
    tokens = hot_indices(batch * 6).view(batch, 6)
    lengths = torch.randint(1, 5, (batch,))
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    ids = hot_indices(int(lengths.sum()))
    labels = torch.randint(0, CLASSES, (batch,))

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(tokens, ids, offsets), labels).backward()
        opt.step()

    step()
    out = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        et, kineto = os.path.join(tmp, "hot_embedding.et.json"), os.path.join(tmp, "kineto.json")
        cfs.profile_steps(step, 1, et, kineto,
                          integer_data_ops=("aten::embedding", "aten::embedding_bag", "aten::cross_entropy_loss"))
        cfs.write_gzip(et, os.path.join(out, "hot_embedding.et.json.gz"))
        cfs.write_gzip(kineto, os.path.join(out, "hot_embedding.kineto.json.gz"))
        cfs.copy_integer_data(et, os.path.join(out, "hot_embedding.et.json.gz"))
    print("saved:", sorted(os.listdir(os.path.join(out, "hot_embedding.et_resources"))))


if __name__ == "__main__":
    main()
