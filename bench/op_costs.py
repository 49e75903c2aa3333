#!/usr/bin/env python3
"""Per-op costs on this host that explain replay and model choices (docs/benchmarks.md §2, §5;
docs/model.md), each the median of 200 timed calls at 2 intra-op threads:

- unary math per byte against relu: why calibrate measures sqrt, exp, tanh, ... as kinds of
  their own;
- sqrt of negative inputs against positive ones: why the replay fills sqrt/log inputs
  non-negative (NaNs are slow on some CPUs);
- max_pool2d on an input that requires grad (what a training step runs: the kernel with
  indices) against one that does not (what a replay under NoGradGuard would run): why the
  replay runs composite ops as the ops the trace recorded under them;
- binary cross-entropy against log: why calibrate measures it as a kind of its own (its CPU
  kernels are scalar loops);
- bf16 elementwise against fp32 per element: why calibrate measures bandwidth kinds on bf16
  tensors too;
- a 3x3 convolution from one channel to 1, 3 and 16: why the conv grid goes down to one
  channel; a first layer's backward with and without the input's gradient: why
  `backward_weight` is a pass of its own; bf16 convolutions on NCHW and on channels-last
  tensors: why calibrate measures a workload's convolutions in the layout it ran them in; a
  stride-2 convolution against a stride-1 one of the same implicit GEMM: why calibrate
  measures strided convolutions under passes of their own;
- ReLU's backward and other elementwise ops on a contiguous and a channels-last map against
  one layout, and batch norm and max pooling on resnet_cl's channels-last maps: why calibrate
  measures mixed_layout, threshold_backward_mixed_layout, and batch norm and max pooling on
  channels-last maps (docs/benchmarks.md §5);
- SparseAdam's sparse ops at sparse_emb's shapes (4,852 of 50,000 rows of 64 floats) against
  the index ops they run as and the bytes they move: why the model prices coalesce as a sort
  and an in-place index_add, sparse_mask's multiply as an index, a sparse add_ as an in-place
  index_add, and why calibrate measures aten::sort and the in-place index_add_/scatter_add_.

Usage: python3 bench/op_costs.py
"""
import statistics
import time
import warnings

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
    loss_and_dtypes()
    convolutions()
    layouts()
    sparse()


def loss_and_dtypes():
    # conv_ae's loss: [32, 1, 28, 28] probabilities.
    prob, target = torch.rand(32, 1, 28, 28).clamp(0.01, 0.99), torch.rand(32, 1, 28, 28)
    bce = median_us(lambda: torch.ops.aten.binary_cross_entropy(prob, target, None, 1))
    grad = median_us(lambda: torch.ops.aten.binary_cross_entropy_backward(torch.tensor(1.0), prob, target, None, 1))
    log = median_us(lambda: torch.log(prob))
    print(f"binary_cross_entropy of {prob.numel()} floats: {bce:.0f} us ({bce / log:.0f}x log's "
          f"{log:.1f}), backward {grad:.0f} us")
    n = 1 << 18
    a, b = torch.randn(n), torch.randn(n)
    a16, b16 = a.bfloat16(), b.bfloat16()
    print(f"bf16 against fp32 on {n} elements (median us; bf16 per element x fp32's):")
    for name, fn in [("relu", lambda x, y: torch.relu(x)), ("add", torch.add),
                     ("sigmoid", lambda x, y: torch.sigmoid(x))]:
        f32, bf = median_us(lambda: fn(a, b)), median_us(lambda: fn(a16, b16))
        print(f"  {name:7s} fp32 {f32:7.1f}  bf16 {bf:7.1f}  {bf / f32:4.2f}x")


def convolutions():
    print("3x3 convolution, 8 maps of 32x32 from one channel (median us):")
    x = torch.randn(8, 1, 32, 32)
    for co in (1, 3, 16):
        w = torch.randn(co, 1, 3, 3)
        us = median_us(lambda: torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1))
        print(f"  1 -> {co:2d} channels {us:7.1f}")
    # A first layer: 3 -> 64 channels over 32 maps of 32x32, backward.
    x, w = torch.randn(32, 3, 32, 32), torch.randn(64, 3, 3, 3)
    y = torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)

    def backward(input_grad):
        return torch.ops.aten.convolution_backward(y, x, w, None, [1, 1], [1, 1], [1, 1], False,
                                                   [0, 0], 1, [input_grad, True, False])
    both, weight = median_us(lambda: backward(True), 50), median_us(lambda: backward(False), 50)
    print(f"convolution_backward 3 -> 64 channels, 32 maps of 32x32: both gradients {both:.0f} us, "
          f"the weight's alone {weight:.0f} us")
    # The zoo's cnn_bf16 layers in bf16, NCHW against channels-last (NHWC) tensors.
    print("bf16 3x3 convolutions, NCHW against channels-last (median us, forward / backward):")
    for xs, ws in (((16, 3, 32, 32), (32, 3, 3, 3)), ((16, 32, 32, 32), (64, 32, 3, 3)),
                   ((16, 32, 16, 16), (64, 32, 3, 3))):
        row = []
        for fmt in (torch.contiguous_format, torch.channels_last):
            x = torch.randn(xs, dtype=torch.bfloat16).contiguous(memory_format=fmt)
            w = torch.randn(ws, dtype=torch.bfloat16).contiguous(memory_format=fmt)
            y = torch.conv2d(x, w, padding=1)
            fwd = median_us(lambda: torch.conv2d(x, w, padding=1), 50)
            bwd = median_us(lambda: torch.ops.aten.convolution_backward(
                y, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]), 50)
            row.append(f"{fwd:6.0f} / {bwd:6.0f}")
        print(f"  {str(xs):17s} -> {ws[0]:3d}: NCHW {row[0]}, channels-last {row[1]}")
    # conv_ae's downsampling layer (16 -> 32 channels, 3x3, stride 2) against a stride-1
    # convolution of the same output size (the same implicit GEMM).
    w = torch.randn(32, 16, 3, 3)
    row = []
    for stride, hw in ((2, 14), (1, 7)):
        x = torch.randn(32, 16, hw, hw)
        y = torch.conv2d(x, w, padding=1, stride=stride)
        fwd = median_us(lambda: torch.conv2d(x, w, padding=1, stride=stride), 100)
        bwd = median_us(lambda: torch.ops.aten.convolution_backward(
            y, x, w, None, [stride] * 2, [1, 1], [1, 1], False, [0, 0], 1, [True, True, False]), 100)
        row.append(f"forward {fwd:.0f} us, backward {bwd:.0f} us")
    print(f"3x3 convolution 16 -> 32 channels, 32 maps, out 7x7: stride 2 {row[0]}; stride 1 {row[1]}")


def layouts():
    print("[16, 64, 16, 16] on one layout and on two (contiguous + channels-last), ns per element:")
    grad = torch.randn(16, 64, 16, 16)
    act = torch.randn(16, 64, 16, 16)
    last = act.contiguous(memory_format=torch.channels_last)
    e = grad.numel()
    for name, fn in [("threshold_backward", lambda g, x: torch.ops.aten.threshold_backward(g, x, 0)),
                     ("add", torch.add)]:
        one, two = median_us(lambda: fn(grad, act)), median_us(lambda: fn(grad, last))
        print(f"  {name:18s} one {one * 1e3 / e:5.2f}  two {two * 1e3 / e:5.2f}")
    aten = torch.ops.aten
    grad, act = torch.randn(16, 32, 32, 32), torch.randn(16, 32, 32, 32)
    last, grad_last = act.contiguous(memory_format=torch.channels_last), grad.contiguous(memory_format=torch.channels_last)
    print("[16, 32, 32, 32] fp32, two layouts (gradient contiguous) over one (median us):")
    for name, fn in [("threshold_backward", lambda g, x: aten.threshold_backward(g, x, 0)),
                     ("leaky_relu_backward", lambda g, x: aten.leaky_relu_backward(g, x, 0.01, False)),
                     ("hardtanh_backward", lambda g, x: aten.hardtanh_backward(g, x, -1, 1)),
                     ("sigmoid_backward", lambda g, x: aten.sigmoid_backward(g, x)),
                     ("add", torch.add), ("mul", torch.mul)]:
        one = median_us(lambda: fn(grad_last, last), 50)
        two = median_us(lambda: fn(grad, last), 50)
        print(f"  {name:19s} one {one:7.0f}  two {two:7.0f}  {two / one:5.1f}x")
    grad = torch.randn(16, 64, 16, 16, dtype=torch.bfloat16)  # cnn_bf16's last ReLU
    last = torch.randn(16, 64, 16, 16, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    print(f"bf16 threshold_backward on [16, 64, 16, 16], two layouts: "
          f"{median_us(lambda: aten.threshold_backward(grad, last, 0), 50):.0f} us")
    # resnet_cl's six training batch-norm forwards, on channels-last and on NCHW maps.
    shapes = [(32, 32, 32, 32), (32, 32, 16, 16), (32, 32, 16, 16), (32, 64, 8, 8), (32, 64, 8, 8),
              (32, 64, 8, 8)]
    for fmt in (torch.channels_last, torch.contiguous_format):
        total = 0
        for s in shapes:
            x = torch.randn(s).contiguous(memory_format=fmt)
            c = torch.ones(s[1]), torch.zeros(s[1]), torch.zeros(s[1]), torch.ones(s[1])
            total += median_us(lambda: aten.native_batch_norm(x, c[0], c[1], c[2], c[3], True, 0.1, 1e-5), 50)
        print(f"resnet_cl's six batch-norm forwards, {'channels-last' if fmt is torch.channels_last else 'NCHW'}: "
              f"{total:.0f} us")
    # resnet_cl's 2x2 max pooling with indices, forward and backward, on each layout.
    for fmt in (torch.contiguous_format, torch.channels_last):
        x = torch.randn(32, 32, 32, 32).contiguous(memory_format=fmt)
        fwd = median_us(lambda: aten.max_pool2d_with_indices(x, [2, 2], [2, 2]), 50)
        y, idx = aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
        gy = torch.randn_like(y)
        bwd = median_us(lambda: aten.max_pool2d_with_indices_backward(gy, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx), 50)
        print(f"max_pool2d [32, 32, 32, 32], {'channels-last' if fmt is torch.channels_last else 'NCHW'}: "
              f"forward {fwd:.0f} us, backward {bwd:.0f} us")


def sparse():
    warnings.filterwarnings("ignore", message="Sparse invariant checks")
    rows, width, nnz = 50000, 64, 4852
    print(f"SparseAdam's sparse ops, {nnz} of {rows} rows of {width} floats (median us):")
    table = torch.randn(rows, width)
    idx = torch.randperm(rows)[:nnz]
    values = torch.randn(nnz, width)
    grad = torch.sparse_coo_tensor(idx[None], values, (rows, width), check_invariants=False)
    coalesced = grad.coalesce()
    keys = idx.clone()
    copy = torch.empty_like(values)
    for name, fn in [
            ("coalesce", lambda: torch.sparse_coo_tensor(idx[None], values, (rows, width),
                                                        check_invariants=False).coalesce()),
            ("  sort of the keys", lambda: torch.sort(keys)),
            ("  index_add_ into nnz rows", lambda: torch.zeros(nnz, width).index_add_(0, torch.arange(nnz), values)),
            ("sparse_mask", lambda: table.sparse_mask(coalesced)),
            ("  index (gather the rows)", lambda: table[idx]),
            ("add_ of the sparse tensor", lambda: table.add_(coalesced)),
            ("  index_add_ (in place)", lambda: table.index_add_(0, idx, values)),
            ("  index_add (out of place)", lambda: torch.index_add(table, 0, idx, values)),
            ("copy of the values (their bytes)", lambda: copy.copy_(values))]:
        print(f"  {name:34s} {median_us(fn, 100):8.1f}")


if __name__ == "__main__":
    main()
