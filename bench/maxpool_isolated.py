#!/usr/bin/env python3
"""cnn_bn's two max_pool2d calls ([32,32,32,32] and [32,64,16,16], 2x2/2), timed in isolation
on differently made inputs: does the replay's random fill explain its faster max_pool2d?
See docs/benchmarks.md. Usage: python3 bench/maxpool_isolated.py (2 intra-op threads)."""
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
torch.manual_seed(0)


def uniform(lo, hi, *shape):
    return torch.empty(*shape).uniform_(lo, hi)


def pooled(fill):
    """The tensors cnn_bn pools: relu(batch_norm(conv2d(x))) of its first two blocks, with the
    model's own initialization ('model') or every input and parameter drawn from U(lo, hi)."""
    lo, hi = {"model": (0, 0), "replay, U(-1,1)": (-1, 1), "old replay, U(0,1)": (0, 1)}[fill]
    x = torch.randn(32, 3, 32, 32) if fill == "model" else uniform(lo, hi, 32, 3, 32, 32)
    out = []
    for cin, cout in ((3, 32), (32, 64)):
        if fill == "model":
            conv = torch.nn.Conv2d(cin, cout, 3, padding=1)
            w, b = conv.weight.detach(), conv.bias.detach()
            gamma, beta = torch.ones(cout), torch.zeros(cout)
        else:
            w, b, gamma, beta = (uniform(lo, hi, cout, cin, 3, 3), uniform(lo, hi, cout),
                                 uniform(lo, hi, cout), uniform(lo, hi, cout))
        y = F.relu(F.batch_norm(F.conv2d(x, w, b, padding=1), None, None, gamma, beta, training=True))
        out.append(y)
        x = F.max_pool2d(y, 2, 2)
    return out


def median_ms(ys, reps=50):
    for _ in range(5):
        for y in ys:
            F.max_pool2d(y, 2, 2)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for y in ys:
            F.max_pool2d(y, 2, 2)
        ts.append((time.perf_counter() - t0) * 1e3)
    return sorted(ts)[reps // 2]


shapes = ((32, 32, 32, 32), (32, 64, 16, 16))
cases = {name: pooled(name) for name in ("model", "replay, U(-1,1)", "old replay, U(0,1)")}
cases["model, requires_grad (autograd on)"] = [y.clone().requires_grad_(True) for y in cases["model"]]
cases["U(-1,1) directly"] = [uniform(-1, 1, *s) for s in shapes]
cases["zeros"] = [torch.zeros(*s) for s in shapes]
print("| input of max_pool2d | zero fraction | both calls, median ms |")
print("|---|---:|---:|")
for name, ys in cases.items():
    zero = sum((y == 0).sum().item() for y in ys) / sum(y.numel() for y in ys)
    print("| %s | %.2f | %.2f |" % (name, zero, median_ms(ys)))
