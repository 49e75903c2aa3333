#!/usr/bin/env python3
"""Writes tests/data/data_dependent.et.json.gz (+ .kineto.json.gz): one CPU training step of a
small model with what a replay on its own tensor contents cannot reproduce by itself:
- routing by value: the rows whose features sum above 6 (all of them here: the eight features are
  in [1, 2)) go through a linear layer by nonzero + index_select + index_add, so the count of
  rows nonzero returns depends on the values (the replay's own fill selects none);
- a sparse gradient: an nn.Embedding(sparse=True) trained with SparseAdam, whose gradient the
  trace records as a tensor without storage ([id, 0, 0, 0, 0, ""]), whose nnz depends on the
  indices (saved beside the trace, data_dependent.et_resources/), and whose sqrt reads the
  optimizer's state through sparse_mask and add_;
- binary cross-entropy, which refuses targets outside [0, 1].
Run from the repository root: python3 tests/data/make_data_dependent.py
"""
import os
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402


def main() -> None:
    torch.manual_seed(1234)
    rows, feat = 16, 8
    lin, head = nn.Linear(feat, feat), nn.Linear(2 * feat, 1)
    emb = nn.Embedding(100, feat, sparse=True)
    x = torch.rand(rows, feat) + 1
    ids = torch.randint(0, 100, (rows,))
    target = torch.rand(rows)
    opts = [torch.optim.SparseAdam(emb.parameters(), lr=1e-3),
            torch.optim.SGD(list(lin.parameters()) + list(head.parameters()), lr=0.1)]

    def step() -> None:
        for o in opts:
            o.zero_grad()
        picked = (x.sum(1) > 6).nonzero().squeeze(1)
        routed = torch.zeros(rows, feat).index_add(0, picked, lin(x.index_select(0, picked)))
        logits = head(torch.cat([routed, emb(ids)], 1)).squeeze(1)
        F.binary_cross_entropy(torch.sigmoid(logits), target).backward()
        for o in opts:
            o.step()

    step()
    out = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        et, kineto = os.path.join(tmp, "data_dependent.et.json"), os.path.join(tmp, "kineto.json")
        cfs.profile_steps(step, 1, et, kineto, integer_data_ops=("aten::embedding",))
        cfs.write_gzip(et, os.path.join(out, "data_dependent.et.json.gz"))
        cfs.write_gzip(kineto, os.path.join(out, "data_dependent.kineto.json.gz"))
        cfs.copy_integer_data(et, os.path.join(out, "data_dependent.et.json.gz"))


if __name__ == "__main__":
    main()
