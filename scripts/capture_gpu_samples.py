#!/usr/bin/env python3
"""Captures GPU fleet samples: real training steps on one GPU, with their traces.

Models (scripts/gpu_check.sh runs them on a GPU machine):
  resnet50_b64, resnet50_b128  ResNet-50, channels-last, bf16 autocast, SGD(momentum),
                               at two batch sizes (checks `mimic synth --batch-scale`)
  gpt2                         GPT-2-small class decoder (12 layers, d=768, 12 heads,
                               seq 1024) with scaled_dot_product_attention, GELU,
                               LayerNorm, bf16 autocast, AdamW (foreach, the CUDA default)
  dlrm                         DLRM-like: 8 large EmbeddingBag tables (sum, sparse
                               gradients), bottom/top MLPs, dot interaction, SGD

For each it writes <name>.et.json.gz, <name>.kineto.json.gz (CPU and CUDA activity) and a
manifest entry (unprofiled step times synchronized with the GPU, peak GPU memory from the
caching allocator, and the GPU's NVML figures during the timed steps when pynvml is there).
`--tiny` shrinks every model so that the script's plumbing can be checked on a CPU.

Examples:
  python3 scripts/capture_gpu_samples.py --out gpu_samples
  python3 scripts/capture_gpu_samples.py --out /tmp/s --only gpt2 --tiny --device cpu
"""

import argparse
import json
import os
import statistics
import tempfile
import threading
from typing import Any, Callable

import capture_fleet_samples as cfs  # sets the ET observer's environment before torch loads

import torch  # pylint: disable=wrong-import-position
import torch.nn.functional as F  # pylint: disable=wrong-import-position
from torch import nn  # pylint: disable=wrong-import-position
from torch import profiler  # pylint: disable=wrong-import-position


# --- Models -----------------------------------------------------------------------------------

class Bottleneck(nn.Module):
    """ResNet's bottleneck block: 1x1, 3x3 (stride), 1x1 with 4x expansion."""

    def __init__(self, c_in: int, width: int, stride: int):
        super().__init__()
        c_out = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(c_in, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, c_out, 1, bias=False), nn.BatchNorm2d(c_out))
        self.skip = (nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))
                     if stride != 1 or c_in != c_out else nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.skip(x))


def resnet50(classes: int, base: int = 64, blocks: tuple = (3, 4, 6, 3)) -> nn.Module:
    """ResNet-50 (He et al. 2016) as torchvision builds it, without torchvision."""
    layers = [nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, 2, 1)]
    c_in = base
    for stage, n in enumerate(blocks):
        width = base * 2 ** stage
        for k in range(n):
            layers.append(Bottleneck(c_in, width, 2 if k == 0 and stage > 0 else 1))
            c_in = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, classes)]
    return nn.Sequential(*layers)


class Block(nn.Module):
    """GPT-2 block: pre-LayerNorm causal self-attention (SDPA) and a GELU MLP."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, vocab: int, seq: int, d: int, heads: int, layers: int):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as GPT-2's

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


class Dlrm(nn.Module):
    """DLRM (Naumov et al. 2019): embedding bags + bottom MLP, pairwise dot interaction, top MLP."""

    def __init__(self, rows: list[int], dim: int, dense: int):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(r, dim, mode="sum", sparse=True) for r in rows)
        self.bottom = nn.Sequential(nn.Linear(dense, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                    nn.Linear(256, dim), nn.ReLU())
        n = len(rows) + 1
        self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 1024), nn.ReLU(), nn.Linear(1024, 512),
                                 nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 1))

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        feats = torch.stack([x] + [t(i, o) for t, i, o in zip(self.tables, indices, offsets)], dim=1)
        dots = torch.bmm(feats, feats.transpose(1, 2))
        r, c = torch.triu_indices(feats.shape[1], feats.shape[1], offset=1, device=x.device)
        return self.top(torch.cat([x, dots[:, r, c]], dim=1)).squeeze(1)


# --- Workloads --------------------------------------------------------------------------------

def autocast(device: torch.device):
    return torch.autocast(device.type, dtype=torch.bfloat16)


def build_resnet50(device: torch.device, batch: int, tiny: bool) -> cfs.Workload:
    size, base = (32, 8) if tiny else (224, 64)
    model = resnet50(1000, base).to(device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(batch, 3, size, size, device=device).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device=device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with autocast(device):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return cfs.Workload(f"resnet50_b{batch}", "ResNet-50, channels-last, bf16 autocast, CrossEntropy, SGD(momentum)",
                        f"ResNet-50 (bottleneck 3-4-6-3, base {base}), input 3x{size}x{size}", batch, step)


def build_gpt2(device: torch.device, batch: int, tiny: bool) -> cfs.Workload:
    vocab, seq, d, heads, layers = (1000, 64, 64, 4, 2) if tiny else (50257, 1024, 768, 12, 12)
    model = Gpt2(vocab, seq, d, heads, layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    ids = torch.randint(0, vocab, (batch, seq), device=device)
    targets = torch.randint(0, vocab, (batch, seq), device=device)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with autocast(device):
            loss = F.cross_entropy(model(ids).flatten(0, 1), targets.flatten())
        loss.backward()
        opt.step()

    return cfs.Workload("gpt2", "GPT-2-small class decoder, SDPA (causal), GELU, LayerNorm, bf16 autocast, AdamW",
                        f"vocab {vocab}, seq {seq}, d {d}, {heads} heads, {layers} layers, tied embeddings",
                        batch, step)


def build_dlrm(device: torch.device, batch: int, tiny: bool) -> cfs.Workload:
    rows, dim, dense, max_bag = ([1000] * 3, 16, 13, 8) if tiny else ([2_000_000] * 8, 128, 13, 40)
    model = Dlrm(rows, dim, dense).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, dense, device=device)
    indices, offsets = [], []
    for r in rows:
        lengths = torch.randint(1, max_bag + 1, (batch,))
        offsets.append(torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]]).to(device))
        indices.append(torch.randint(0, r, (int(lengths.sum()),), device=device))
    y = torch.randint(0, 2, (batch,), device=device).float()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.binary_cross_entropy_with_logits(model(x, indices, offsets), y).backward()
        opt.step()

    return cfs.Workload("dlrm", "DLRM-like: EmbeddingBag(sum, sparse grads), bottom/top MLPs, dot interaction, SGD",
                        f"{len(rows)} tables x {rows[0]} rows x {dim}, 1-{max_bag} ids per bag", batch, step)


BUILDERS: dict[str, Callable[[torch.device, bool], cfs.Workload]] = {
    "resnet50_b64": lambda dev, tiny: build_resnet50(dev, 4 if tiny else 64, tiny),
    "resnet50_b128": lambda dev, tiny: build_resnet50(dev, 8 if tiny else 128, tiny),
    "gpt2": lambda dev, tiny: build_gpt2(dev, 2 if tiny else 8, tiny),
    "dlrm": lambda dev, tiny: build_dlrm(dev, 64 if tiny else 2048, tiny),
}


# --- Capture ----------------------------------------------------------------------------------

class NvmlSampler:
    """The GPU's utilisation, memory, power and SM clock every 50 ms, through pynvml."""

    def __init__(self, device: torch.device):
        self.samples: list[tuple[float, float, float, float]] = []
        self.error = ""
        self._stop = threading.Event()
        try:
            import pynvml  # nvidia-ml-py
            pynvml.nvmlInit()
            bus = torch.cuda.get_device_properties(device).pci_bus_id if hasattr(
                torch.cuda.get_device_properties(device), "pci_bus_id") else None
            self._h = (pynvml.nvmlDeviceGetHandleByPciBusId(bus) if bus
                       else pynvml.nvmlDeviceGetHandleByIndex(device.index or 0))
            self._nvml = pynvml
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        except Exception as e:  # pylint: disable=broad-except
            self.error = f"NVML not sampled: {e}"
            self._thread = None

    def _loop(self) -> None:
        n, h = self._nvml, self._h
        while not self._stop.wait(0.05):
            self.samples.append((n.nvmlDeviceGetUtilizationRates(h).gpu, n.nvmlDeviceGetMemoryInfo(h).used / 2**20,
                                 n.nvmlDeviceGetPowerUsage(h) / 1000.0,
                                 n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)))

    def stop(self) -> dict[str, Any]:
        if self._thread is None:
            return {"source": self.error}
        self._stop.set()
        self._thread.join()
        if not self.samples:
            return {"source": "nvml", "samples": 0}
        cols = list(zip(*self.samples))
        return {"source": "nvml", "samples": len(self.samples),
                "sm_utilization_pct_mean": statistics.mean(cols[0]), "sm_utilization_pct_max": max(cols[0]),
                "memory_used_mib_max": max(cols[1]), "power_w_mean": statistics.mean(cols[2]),
                "power_w_max": max(cols[2]), "sm_clock_mhz_mean": statistics.mean(cols[3])}


def capture(workload: cfs.Workload, device: torch.device, out_dir: str, warmup: int, timed_steps: int,
            profiled: int) -> dict[str, Any]:
    """Times (synchronized with the device) and profiles one workload; returns its manifest entry."""
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else None
    print(f"{workload.name}: {workload.model}, batch {workload.batch_size}", flush=True)
    for _ in range(warmup):
        workload.step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
    sampler = NvmlSampler(device) if cuda else None
    before = cfs.resource.getrusage(cfs.resource.RUSAGE_SELF)
    iteration_ms = [cfs.timed(workload.step, sync) for _ in range(timed_steps)]
    system = cfs.system_per_step(before, cfs.resource.getrusage(cfs.resource.RUSAGE_SELF), iteration_ms)
    nvml = sampler.stop() if sampler else {"source": "none on this device"}
    peak = torch.cuda.max_memory_allocated(device) if cuda else None
    step_peak = None
    if cuda:  # the step's own memory: its peak above what was allocated when it began
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        cfs.timed(workload.step, sync)
        step_peak = torch.cuda.max_memory_allocated(device) - before
    print(f"  unprofiled median {statistics.median(iteration_ms):.2f} ms over {timed_steps} steps", flush=True)

    activities = (profiler.ProfilerActivity.CPU,) + ((profiler.ProfilerActivity.CUDA,) if cuda else ())
    et_name, kineto_name = f"{workload.name}.et.json.gz", f"{workload.name}.kineto.json.gz"
    timeline_name = f"{workload.name}.host_timeline.json.gz"
    values_name = f"{workload.name}.values.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        et_path = os.path.join(tmp, et_name.removesuffix(".gz"))
        kineto_path = os.path.join(tmp, kineto_name.removesuffix(".gz"))
        profiled_ms = cfs.profile_steps(workload.step, profiled, et_path, kineto_path, activities, sync,
                                        integer_data_ops=cfs.INTEGER_DATA_OPS)
        capture_cost = cfs.measure_capture_cost(torch.get_num_threads())
        timeline_path = os.path.join(tmp, timeline_name.removesuffix(".gz"))
        cfs.profile_host_timeline(workload.step, timeline_path, sync)
        values_path = os.path.join(tmp, values_name.removesuffix(".gz"))
        cfs.profile_values(workload.step, values_path, sync)
        with open(et_path) as f:
            et = json.load(f)
        with open(kineto_path) as f:
            kineto = json.load(f)
        # A few ET ops may have no Kineto event (an aten::empty under SDPA's backward, say).
        steps = cfs.verify(et, kineto, max_et_only=len(et["nodes"]) // 100)
        cfs.write_gzip(et_path, os.path.join(out_dir, et_name))
        cfs.write_gzip(kineto_path, os.path.join(out_dir, kineto_name))
        cfs.write_gzip(timeline_path, os.path.join(out_dir, timeline_name))
        cfs.write_gzip(values_path, os.path.join(out_dir, values_name))
        cfs.copy_integer_data(et_path, os.path.join(out_dir, et_name))
    entry = cfs.manifest_entry(workload, workload.name, et_name, kineto_name, iteration_ms, profiled_ms, steps,
                               device=torch.cuda.get_device_name(device) if cuda else "cpu")
    entry["peak_memory_bytes"] = peak
    if step_peak is not None:
        entry["step_memory_peak_bytes"] = step_peak
    entry["nvml"] = nvml
    entry["host_timeline"] = timeline_name
    entry["values"] = values_name
    entry["system"] = system
    if capture_cost:  # what replay and predict take off the recorded host gaps
        entry["capture_cost"] = capture_cost
    return entry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--only", default=",".join(BUILDERS), help="comma-separated models")
    parser.add_argument("--device", default="cuda", help="torch device")
    parser.add_argument("--tiny", action="store_true", help="shrink every model (plumbing checks on a CPU)")
    cfs.add_step_arguments(parser, timed_steps=20, warmup_steps=5)
    args = parser.parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    if set(names) - set(BUILDERS):
        raise SystemExit(f"unknown model(s) {sorted(set(names) - set(BUILDERS))}; choose from {sorted(BUILDERS)}")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible (use --device cpu --tiny to check the plumbing)")
    os.makedirs(args.out, exist_ok=True)
    entries = []
    for name in names:
        torch.manual_seed(cfs.SEED)
        entries.append(capture(BUILDERS[name](device, args.tiny), device, args.out, args.warmup_steps,
                               args.timed_steps, args.steps))
        if device.type == "cuda":
            torch.cuda.empty_cache()
    cfs.update_manifest(args.out, entries)
    print(f"wrote {os.path.join(args.out, 'manifest.json')}")


if __name__ == "__main__":
    main()
