#!/usr/bin/env python3
"""Writes tests/data/gpt2_like.et.json.gz (+ .kineto.json.gz): one forward and backward pass
of a tiny GPT-2-shaped decoder (token and position embeddings, 2 blocks of pre-LayerNorm
attention and GELU MLP through GPT-2's Conv1D: addmm(bias, x, weight) with weight
[hidden, out]; a tied LM head, cross-entropy on shifted labels), no optimizer step: the
parameters are then leaves no op writes, most of them leading with the hidden size (48), as
in a GPT-2 capture of the model alone. Batch 3, sequence 8. Run from the repository root:
python3 tests/data/make_gpt2_like.py
"""
import math
import os
import sys
import tempfile

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402

HIDDEN, HEADS, VOCAB, SEQ, BATCH = 48, 4, 64, 8, 3


class Conv1D(nn.Module):  # GPT-2's: y = x W + b with W [nx, nf]
    def __init__(self, nx: int, nf: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return out.view(*x.shape[:-1], -1)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(HIDDEN), nn.LayerNorm(HIDDEN)
        self.c_attn, self.c_proj = Conv1D(HIDDEN, 3 * HIDDEN), Conv1D(HIDDEN, HIDDEN)
        self.c_fc, self.mlp_proj = Conv1D(HIDDEN, 4 * HIDDEN), Conv1D(4 * HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(HIDDEN, dim=2)
        q, k, v = (t.view(b, s, HEADS, -1).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS)
        mask = torch.ones(s, s, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.c_proj((att @ v).transpose(1, 2).reshape(b, s, HIDDEN))
        return x + self.mlp_proj(nn.functional.gelu(self.c_fc(self.ln_2(x))))


class Gpt2Like(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, HIDDEN), nn.Embedding(SEQ, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(ids) + self.wpe(torch.arange(ids.size(1)))
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def main() -> None:
    torch.manual_seed(1234)
    model = Gpt2Like()
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))

    def step() -> None:
        model.zero_grad()
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        loss.backward()

    step()
    out = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        et, kineto = os.path.join(tmp, "et.json"), os.path.join(tmp, "kineto.json")
        cfs.profile_steps(step, 1, et, kineto)
        cfs.write_gzip(et, os.path.join(out, "gpt2_like.et.json.gz"))
        cfs.write_gzip(kineto, os.path.join(out, "gpt2_like.kineto.json.gz"))


if __name__ == "__main__":
    main()
