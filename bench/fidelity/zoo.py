#!/usr/bin/env python3
"""The fidelity zoo: real training setups that differ in what a replay must reproduce (RNNs,
attention with GELU/LayerNorm, GroupNorm/SiLU conv nets with transposed convolutions,
embedding-heavy recommenders, sparse gradients, MoE-style routing with index ops, graph
scatter/gather, mixed precision, channels-last CNNs; SGD, Adam/AdamW with foreach, Adagrad,
RMSprop). Kept apart from fleet_samples/ and never used by tests or to tune anything; resnet_cl
came after the twelve that docs/benchmarks.md's fidelity tables run.

Captures each model as scripts/capture_fleet_samples.py captures the fleet samples (warm-up,
unprofiled timed steps with the process's system figures, then ET + Kineto): the output folder
holds NAME.et.json.gz, NAME.kineto.json.gz, manifest.json and the saved integer inputs
(NAME.et_resources/), which `mimic replay` picks up.

Usage: python3 bench/fidelity/zoo.py --out DIR [--only a,b] [--list] [--no-integer-data]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import capture_fleet_samples as cfs  # noqa: E402  (sets the ET observer's environment first)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

W = cfs.Workload


def lstm_tagger() -> W:
    """2-layer LSTM tagger over embeddings, per-token cross-entropy, SGD."""
    vocab, tags, seq, batch = 5000, 17, 48, 16

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, 128)
            self.rnn = nn.LSTM(128, 256, num_layers=2, batch_first=True)
            self.out = nn.Linear(256, tags)

        def forward(self, x):
            return self.out(self.rnn(self.emb(x))[0]).reshape(-1, tags)

    m = Tagger()
    x, y = torch.randint(0, vocab, (batch, seq)), torch.randint(0, tags, (batch * seq,))
    return W("lstm_tagger", "LSTM tagger, SGD", "Embedding 5000x128, LSTM 2x256, Linear", batch,
             cfs.make_step(m, nn.CrossEntropyLoss(), torch.optim.SGD(m.parameters(), lr=0.1), (x,), y))


def bigru_classifier() -> W:
    """Bidirectional GRU sequence classifier, RMSprop."""
    batch, seq, feat = 32, 64, 40
    rnn, head = nn.GRU(feat, 128, batch_first=True, bidirectional=True), nn.Linear(256, 8)
    m = nn.ModuleDict({"rnn": rnn, "head": head})

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m["head"](self.m["rnn"](x)[0].mean(1))

    net = Net()
    x, y = torch.randn(batch, seq, feat), torch.randint(0, 8, (batch,))
    return W("bigru", "bidirectional GRU classifier, RMSprop", "GRU 40->128 x2 directions", batch,
             cfs.make_step(net, nn.CrossEntropyLoss(), torch.optim.RMSprop(net.parameters(), lr=1e-3), (x,), y))


def gpt_mini() -> W:
    """Decoder-only transformer (causal SDPA, GELU, LayerNorm), AdamW foreach."""
    vocab, d, heads, layers, seq, batch = 4096, 192, 6, 3, 96, 4

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, x):
            h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
            return self.head(self.ln(self.blocks(h))).view(-1, vocab)

    m = Gpt()
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch * seq,))
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4, foreach=True)
    return W("gpt_mini", "GPT-style decoder, SDPA, AdamW foreach", f"{layers} blocks d={d}", batch,
             cfs.make_step(m, nn.CrossEntropyLoss(), opt, (x,), y))


def unet_gn() -> W:
    """Tiny U-Net: GroupNorm + SiLU convs, a transposed convolution up-path, Adam."""

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = block(3, 32), block(32, 64)
            self.up = nn.ConvTranspose2d(64, 32, 2, stride=2)
            self.u1, self.out = block(64, 32), nn.Conv2d(32, 3, 1)

        def forward(self, x):
            a = self.d1(x)
            b = self.d2(F.max_pool2d(a, 2))
            return self.out(self.u1(torch.cat([self.up(b), a], 1)))

    m = UNet()
    x = torch.randn(4, 3, 32, 32)
    return W("unet_gn", "U-Net with GroupNorm/SiLU and ConvTranspose2d, Adam", "32/64 channels", 4,
             cfs.make_step(m, nn.MSELoss(), torch.optim.Adam(m.parameters(), lr=1e-3), (x,), x.clone()))


def dlrm_adagrad() -> W:
    """DLRM-like recommender trained with Adagrad (dense gradients of the tables)."""
    m = cfs.EmbBagRec([20000, 10000, 5000], 32, 13)
    batch = 256
    dense = torch.randn(batch, 13)
    idx = [torch.randint(0, n, (batch * 8,)) for n in (20000, 10000, 5000)]
    off = [torch.arange(0, batch * 8, 8) for _ in range(3)]
    y = torch.rand(batch)
    return W("dlrm_adagrad", "EmbeddingBag recommender, Adagrad", "3 tables dim 32", batch,
             cfs.make_step(m, nn.BCEWithLogitsLoss(), torch.optim.Adagrad(m.parameters(), lr=0.01),
                           (dense, idx, off), y))


def sparse_embedding() -> W:
    """Embedding with sparse gradients, SparseAdam + Adam for the rest."""
    emb, head = nn.Embedding(50000, 64, sparse=True), nn.Linear(64, 2)
    ids, y = torch.randint(0, 50000, (512, 10)), torch.randint(0, 2, (512,))
    opts = [torch.optim.SparseAdam(emb.parameters(), lr=1e-3), torch.optim.Adam(head.parameters(), lr=1e-3)]

    def step():
        for o in opts:
            o.zero_grad()
        F.cross_entropy(head(emb(ids).mean(1)), y).backward()
        for o in opts:
            o.step()

    return W("sparse_emb", "sparse-gradient Embedding, SparseAdam + Adam", "50000x64", 512, step)


def moe_router() -> W:
    """MoE layer: top-1 router, index_select/index_add dispatch to 4 experts, AdamW."""
    d, experts, tokens = 128, 4, 512

    class Moe(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = nn.Linear(d, experts)
            self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, 256), nn.GELU(), nn.Linear(256, d))
                                         for _ in range(experts))

        def forward(self, x):
            choice = self.router(x).argmax(-1)
            out = torch.zeros_like(x)
            for e, expert in enumerate(self.experts):
                idx = (choice == e).nonzero(as_tuple=True)[0]
                out = out.index_add(0, idx, expert(x.index_select(0, idx)))
            return out

    m = Moe()
    x = torch.randn(tokens, d)
    return W("moe", "top-1 MoE with index_select/index_add routing, AdamW", "4 experts d=128", tokens,
             cfs.make_step(m, nn.MSELoss(), torch.optim.AdamW(m.parameters(), lr=1e-3), (x,), x.clone()))


def graph_sage() -> W:
    """GraphSAGE-style mean aggregation with scatter_add over an edge list, Adam."""
    nodes, edges, feat = 2000, 16000, 64
    src, dst = torch.randint(0, nodes, (edges,)), torch.randint(0, nodes, (edges,))

    class Sage(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(2 * feat, 128), nn.Linear(2 * 128, 7)

        def agg(self, h):
            s = torch.zeros_like(h).scatter_add(0, dst.unsqueeze(1).expand(-1, h.shape[1]), h[src])
            deg = torch.zeros(nodes).scatter_add(0, dst, torch.ones(edges)).clamp(min=1)
            return torch.cat([h, s / deg.unsqueeze(1)], 1)

        def forward(self, x):
            return self.l2(self.agg(F.relu(self.l1(self.agg(x)))))

    m = Sage()
    x, y = torch.randn(nodes, feat), torch.randint(0, 7, (nodes,))
    return W("graph_sage", "GraphSAGE mean aggregation (gather + scatter_add), Adam", "2 layers", nodes,
             cfs.make_step(m, nn.CrossEntropyLoss(), torch.optim.Adam(m.parameters(), lr=1e-2), (x,), y))


def resnet_bf16() -> W:
    """ResNet-ish CNN under CPU autocast (bfloat16) with channels_last, SGD."""
    m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(memory_format=torch.channels_last)
    x = torch.randn(16, 3, 32, 32).to(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (16,))
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()

    return W("cnn_bf16", "CNN under CPU autocast bf16, channels_last, SGD", "2 conv blocks", 16, step)


def vit_tiny() -> W:
    """ViT-style patch transformer (nn.TransformerEncoder, GELU), AdamW foreach."""
    patch, d = 4, 96

    class Vit(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, stride=patch)
            layer = nn.TransformerEncoderLayer(d, 4, 4 * d, activation="gelu", batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            return self.head(self.enc(self.embed(x).flatten(2).transpose(1, 2)).mean(1))

    m = Vit()
    x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=True)
    return W("vit_tiny", "ViT-style encoder (GELU, pre-norm), AdamW foreach", "2 layers d=96", 8,
             cfs.make_step(m, nn.CrossEntropyLoss(), opt, (x,), y))


def autoencoder_rmsprop() -> W:
    """Conv autoencoder with transposed convolutions and Sigmoid, RMSprop."""
    m = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
                      nn.ReLU(), nn.ConvTranspose2d(32, 16, 2, stride=2), nn.ReLU(), nn.ConvTranspose2d(16, 1, 2, stride=2),
                      nn.Sigmoid())
    x = torch.rand(32, 1, 28, 28)
    return W("conv_ae", "conv autoencoder, ConvTranspose2d, BCE, RMSprop", "16/32 channels", 32,
             cfs.make_step(m, nn.BCELoss(), torch.optim.RMSprop(m.parameters(), lr=1e-3), (x,), x.clone()))


def wide_deep() -> W:
    """Wide & deep: one-hot-ish wide linear + embedding MLP, Adagrad + Adam."""
    emb, deep, wide = nn.Embedding(10000, 32), nn.Sequential(nn.Linear(32 * 6, 128), nn.ReLU(), nn.Linear(128, 1)), nn.Linear(500, 1)
    cat, dense, y = torch.randint(0, 10000, (256, 6)), torch.rand(256, 500), torch.rand(256)
    opts = [torch.optim.Adagrad(wide.parameters(), lr=0.05),
            torch.optim.Adam(list(emb.parameters()) + list(deep.parameters()), lr=1e-3)]

    def step():
        for o in opts:
            o.zero_grad()
        logits = wide(dense).squeeze(1) + deep(emb(cat).flatten(1)).squeeze(1)
        F.binary_cross_entropy_with_logits(logits, y).backward()
        for o in opts:
            o.step()

    return W("wide_deep", "wide & deep recommender, Adagrad + Adam", "emb 10000x32", 256, step)


def resnet_channels_last() -> W:
    """Residual CNN in fp32 with channels_last (stem, max pooling, two basic blocks), Adam."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.skip(x))

    m = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
                      nn.MaxPool2d(2), Block(32, 32, 1), Block(32, 64, 2),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).to(memory_format=torch.channels_last)
    x = torch.randn(32, 3, 32, 32).to(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (32,))
    return W("resnet_cl", "residual CNN, fp32 channels_last, Adam", "stem + 2 basic blocks", 32,
             cfs.make_step(m, nn.CrossEntropyLoss(), torch.optim.Adam(m.parameters(), lr=1e-3), (x,), y))


ZOO = {name: f for name, f in {
    "lstm_tagger": lstm_tagger, "bigru": bigru_classifier, "gpt_mini": gpt_mini, "unet_gn": unet_gn,
    "dlrm_adagrad": dlrm_adagrad, "sparse_emb": sparse_embedding, "moe": moe_router,
    "graph_sage": graph_sage, "cnn_bf16": resnet_bf16, "vit_tiny": vit_tiny, "conv_ae": autoencoder_rmsprop,
    "wide_deep": wide_deep, "resnet_cl": resnet_channels_last}.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--out")
    p.add_argument("--only", default=",".join(ZOO))
    p.add_argument("--list", action="store_true")
    p.add_argument("--warmup-steps", type=int, default=5)
    p.add_argument("--timed-steps", type=int, default=20)
    p.add_argument("--steps", type=int, default=1, help="profiled steps")
    p.add_argument("--no-integer-data", action="store_true",
                   help="do not save the integer inputs beside the traces")
    a = p.parse_args()
    if a.list:
        print("\n".join(ZOO))
        return
    if not a.out:
        raise SystemExit("--out DIR is required")
    names = [n for n in a.only.split(",") if n]
    unknown = sorted(set(names) - set(ZOO))
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; choose from {sorted(ZOO)}")
    os.makedirs(a.out, exist_ok=True)
    entries = []
    for name in names:
        torch.manual_seed(cfs.SEED)
        w = ZOO[name]()
        w.name = name
        w.integer_data_ops = () if a.no_integer_data else cfs.INTEGER_DATA_OPS
        entries.append(cfs.capture(w, a.out, a.warmup_steps, a.timed_steps, a.steps, max_et_only=10))
    cfs.update_manifest(a.out, entries)


if __name__ == "__main__":
    main()
