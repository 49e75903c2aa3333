#!/usr/bin/env python3
"""Captures PyTorch execution traces of small CPU training runs.

Each model is a real `torch.nn` model trained on synthetic data. For each one
this writes into the output folder:

  <name>.et.json.gz      PyTorch execution trace (ET) of the profiled steps.
  <name>.kineto.json.gz  Kineto (Chrome) trace of the same ProfilerStep#N steps.
  <name>.host_timeline.json.gz  Kineto trace of a few steps with host activity only.
  <name>.values.json.gz  The value profile of one step: zeros and subnormals in float inputs.
  manifest.json          Per-sample metadata, incl. unprofiled step times.

Examples:
  python3 scripts/capture_fleet_samples.py
  python3 scripts/capture_fleet_samples.py --only mlp,cnn_bn
"""

import argparse
import collections
import dataclasses
import datetime
import gzip
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any, Callable

# Makes the ET observer add a `tensor_range` attr {"<tensor ordinal>": [min, max]}
# for integer tensor inputs. It is read when the observer is registered; torch
# 2.11 spells it with SAVE_ (torch/csrc/profiler/standalone/
# execution_trace_observer.cpp).
os.environ["ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_RANGE"] = "1"

import torch  # pylint: disable=wrong-import-position
from torch import nn  # pylint: disable=wrong-import-position
from torch import profiler  # pylint: disable=wrong-import-position
from torch.utils._python_dispatch import TorchDispatchMode  # pylint: disable=wrong-import-position
from torch.utils._pytree import tree_leaves  # pylint: disable=wrong-import-position

SEED = 1234
# The observer saves the exact integer inputs of the ops it names (comma-separated) when extra
# resource collection is on (profile_steps' integer_data_ops).
INTEGER_DATA_ENV = "ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA"
# Ops whose integer inputs (token ids, embedding indices and offsets, edge lists, labels) the
# zoo's and the GPU samples' captures save beside the trace, for the replay to fill the same
# tensors with (docs/replay.md): a bag's size and its ids' repeats set what the kernels cost.
INTEGER_DATA_OPS = ("aten::embedding", "aten::embedding_bag", "aten::index", "aten::index_select",
                    "aten::scatter_add", "aten::gather", "aten::cross_entropy_loss", "aten::nll_loss_nd")
MANIFEST_FORMAT = 1
DEFAULT_SAMPLE = "mlp"
# Profiler schedule: ProfilerStep#0 is a warm-up, the active steps follow.
PROFILER_WARMUP = 1
# ET nodes that have no Kineto counterpart: the roots, and the process-group
# table that the observer writes when it starts in a distributed job.
ET_ROOT_NODES = ("[pytorch|profiler|execution_trace|process]",
                 "[pytorch|profiler|execution_trace|thread]",
                 "## process_group:init ##")


@dataclasses.dataclass
class Workload:
    """A model ready to train; `step` runs one full training iteration."""

    name: str
    description: str
    model: str
    batch_size: int
    step: Callable[[], None]
    # Ops whose exact integer inputs the capture saves beside the ET (profile_steps).
    integer_data_ops: tuple[str, ...] = ()


def make_step(model: nn.Module, loss_fn: nn.Module,
              optimizer: torch.optim.Optimizer, inputs: tuple[Any, ...],
              target: torch.Tensor) -> Callable[[], None]:
    """Returns a step: zero_grad, forward, loss, backward, optimizer.step."""

    def step() -> None:
        optimizer.zero_grad()
        loss = loss_fn(model(*inputs), target)
        loss.backward()
        optimizer.step()

    return step


def build_mlp(batch_scale: int = 1) -> Workload:
    """MLP classifier, cross-entropy, SGD with momentum."""
    batch, dims, classes = 256 * batch_scale, [1024, 1024, 1024, 512], 10
    layers = []
    for d_in, d_out in zip(dims, dims[1:]):
        layers += [nn.Linear(d_in, d_out), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(dims[-1], classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, dims[0])
    y = torch.randint(0, classes, (batch,))
    return Workload(
        name="mlp",
        description="MLP classifier, CrossEntropyLoss, SGD(momentum=0.9)",
        model="Linear 1024-1024-1024-512-10 with ReLU",
        batch_size=batch,
        step=make_step(model, nn.CrossEntropyLoss(), optimizer, (x,), y))


def build_cnn_bn(batch_scale: int = 1) -> Workload:
    """Small CNN with BatchNorm, cross-entropy, SGD with momentum."""
    batch, channels, classes = 32 * batch_scale, [3, 32, 64, 128], 10
    layers = []
    for c_in, c_out in zip(channels, channels[1:]):
        layers += [nn.Conv2d(c_in, c_out, kernel_size=3, padding=1),
                   nn.BatchNorm2d(c_out), nn.ReLU(), nn.MaxPool2d(2)]
    layers[-1] = nn.AdaptiveAvgPool2d(1)  # Global pooling after the last conv.
    model = nn.Sequential(*layers, nn.Flatten(),
                          nn.Linear(channels[-1], classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 32, 32)
    y = torch.randint(0, classes, (batch,))
    return Workload(
        name="cnn_bn",
        description=("CNN, 3x (Conv2d+BatchNorm2d+ReLU+pool), linear head, "
                     "CrossEntropyLoss, SGD(momentum=0.9)"),
        model=("input 3x32x32; conv3x3 3-32-64-128, each with BN+ReLU; "
               "maxpool2 x2, global avgpool; Linear 128-10"),
        batch_size=batch,
        step=make_step(model, nn.CrossEntropyLoss(), optimizer, (x,), y))


class TokenClassifier(nn.Module):
    """Embedding, TransformerEncoder, mean pool, linear classifier."""

    def __init__(self, vocab: int, d_model: int, heads: int, layers: int,
                 classes: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=4 * d_model, dropout=0.1,
            batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def build_transformer(batch_scale: int = 1) -> Workload:
    """TransformerEncoder sequence classifier, cross-entropy, AdamW."""
    batch, seq, vocab, classes = 8 * batch_scale, 64, 4000, 10
    d_model, heads, layers = 128, 4, 2
    model = TokenClassifier(vocab, d_model, heads, layers, classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, classes, (batch,))
    return Workload(
        name="transformer",
        description=("TransformerEncoder (batch_first, dropout 0.1) sequence "
                     "classifier, CrossEntropyLoss, AdamW"),
        model=(f"Embedding {vocab}x{d_model}; {layers} encoder layers "
               f"d_model={d_model} heads={heads} ff={4 * d_model}; "
               f"seq {seq}; mean pool; Linear {d_model}-{classes}"),
        batch_size=batch,
        step=make_step(model, nn.CrossEntropyLoss(), optimizer, (tokens,), y))


class EmbBagRec(nn.Module):
    """DLRM-style model: EmbeddingBag tables + bottom MLP, concat, top MLP."""

    def __init__(self, table_rows: list[int], dim: int, dense_features: int):
        super().__init__()
        self.tables = nn.ModuleList(
            nn.EmbeddingBag(rows, dim, mode="sum") for rows in table_rows)
        self.bottom = nn.Sequential(
            nn.Linear(dense_features, 256), nn.ReLU(),
            nn.Linear(256, dim), nn.ReLU())
        self.top = nn.Sequential(
            nn.Linear(dim * (len(table_rows) + 1), 512), nn.ReLU(),
            nn.Linear(512, 256), nn.ReLU(),
            nn.Linear(256, 1))

    def forward(self, dense: torch.Tensor, indices: list[torch.Tensor],
                offsets: list[torch.Tensor]) -> torch.Tensor:
        features = [self.bottom(dense)]
        features += [t(i, o) for t, i, o in zip(self.tables, indices, offsets)]
        return self.top(torch.cat(features, dim=1)).squeeze(1)


def build_embbag_rec(batch_scale: int = 1) -> Workload:
    """DLRM-style recommendation model, BCEWithLogits, SGD."""
    batch, dim, dense_features, max_bag = 512 * batch_scale, 64, 13, 39
    table_rows = [50000, 20000, 10000, 5000]
    model = EmbBagRec(table_rows, dim, dense_features)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    dense = torch.randn(batch, dense_features)
    indices, offsets = [], []
    for rows in table_rows:
        lengths = torch.randint(1, max_bag + 1, (batch,))
        offsets.append(torch.cat([torch.zeros(1, dtype=torch.long),
                                  lengths.cumsum(0)[:-1]]))
        indices.append(torch.randint(0, rows, (int(lengths.sum()),)))
    y = torch.randint(0, 2, (batch,)).float()
    return Workload(
        name="embbag_rec",
        description=("DLRM-style recommender: EmbeddingBag(sum) tables, "
                     "bottom MLP, concat interaction, top MLP, "
                     "BCEWithLogitsLoss, SGD"),
        model=(f"EmbeddingBag rows {table_rows} dim {dim}, 1-{max_bag} ids "
               f"per bag; bottom Linear {dense_features}-256-{dim}; "
               f"top Linear {dim * (len(table_rows) + 1)}-512-256-1"),
        batch_size=batch,
        step=make_step(model, nn.BCEWithLogitsLoss(), optimizer,
                       (dense, indices, offsets), y))


BUILDERS: dict[str, Callable[[int], Workload]] = {
    "cnn_bn": build_cnn_bn,
    "embbag_rec": build_embbag_rec,
    "mlp": build_mlp,
    "transformer": build_transformer,
}


def timed(step: Callable[[], None],
          sync: Callable[[], None] | None = None) -> float:
    """Runs `step` once and returns its wall time in ms (after `sync`, on a GPU)."""
    start = time.perf_counter()
    step()
    if sync:
        sync()
    return (time.perf_counter() - start) * 1e3


def write_gzip(src: str, dst: str) -> None:
    """Gzips `src` into `dst` (level 9) via a temp file and a rename."""
    tmp = dst + ".tmp"
    with open(src, "rb") as fin, gzip.open(tmp, "wb", compresslevel=9) as fout:
        fout.write(fin.read())
    os.replace(tmp, dst)


def profile_steps(step: Callable[[], None], active: int, et_path: str,
                  kineto_path: str,
                  activities: tuple = (profiler.ProfilerActivity.CPU,),
                  sync: Callable[[], None] | None = None,
                  integer_data_ops: tuple[str, ...] = ()) -> dict[int, float]:
    """Records a warm-up step plus `active` steps into an ET and a Kineto trace.

    With `integer_data_ops` (e.g. "aten::embedding"), the observer also saves
    the exact integer inputs of those ops beside the ET, in
    `<et_path minus .json>_resources/nid_<node>_tid_<tensor index>.dat`, which
    `mimic replay` fills the same tensors with.

    Returns:
      The wall time (ms) of the step function alone, without `prof.step()`,
      for each active ProfilerStep number.
    """
    # The observer reads the op list when it is registered.
    if integer_data_ops:
        os.environ[INTEGER_DATA_ENV] = ",".join(integer_data_ops)
    observer = profiler.ExecutionTraceObserver().register_callback(et_path)
    os.environ.pop(INTEGER_DATA_ENV, None)
    if integer_data_ops:
        observer.set_extra_resource_collection(True)
    times = {}
    with profiler.profile(
            activities=list(activities),
            schedule=profiler.schedule(wait=0, warmup=PROFILER_WARMUP,
                                       active=active, repeat=1),
            record_shapes=True,
            profile_memory=True,  # "[memory]" events: the step's own peak (docs/replay.md)
            execution_trace_observer=observer,
            on_trace_ready=lambda p: p.export_chrome_trace(kineto_path),
    ) as prof:
        for _ in range(PROFILER_WARMUP + active):
            step_num = prof.step_num
            elapsed = timed(step, sync)
            if step_num >= PROFILER_WARMUP:
                times[step_num] = elapsed
            prof.step()
    return times


HOST_TIMELINE_STEPS = 3
# The host timeline's profiler: Kineto alone with host activity only (no shapes, memory events,
# device activity or execution-trace observer), as replay::RunUnderHostTimeline measures its cost.
HOST_TIMELINE_PROFILER = {"activities": [profiler.ProfilerActivity.CPU], "record_shapes": False,
                          "profile_memory": False}


def profile_host_timeline(step: Callable[[], None], path: str,
                          sync: Callable[[], None] | None = None,
                          steps: int = HOST_TIMELINE_STEPS) -> None:
    """Records the capture's host timeline into `path`: PROFILER_WARMUP steps, then `steps`
    steps under HOST_TIMELINE_PROFILER. Its host gaps between ops hold a fraction of the whole
    capture's instrumentation; `mimic replay` and the model read the gaps from its median step,
    less Kineto's own cost per event (docs/replay.md, Host gaps)."""
    with profiler.profile(
            **HOST_TIMELINE_PROFILER,
            schedule=profiler.schedule(wait=0, warmup=PROFILER_WARMUP, active=steps, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        for _ in range(PROFILER_WARMUP + steps):
            timed(step, sync)
            prof.step()


def value_shares(x: torch.Tensor) -> dict[str, Any] | None:
    """The shape and the shares of zeros, all-zero rows (along dim 0) and subnormals of a float
    tensor; None for another tensor, or one that holds none of them."""
    if not x.is_floating_point() or x.layout != torch.strided or x.numel() == 0:
        return None
    tiny = torch.finfo(x.dtype).tiny
    if x.element_size() == 1:  # float8: no comparison kernels; its values fit a float exactly
        x = x.float()
    zero = x == 0
    zeros = zero.sum().item()
    subnormals = ((x != 0) & (x.abs() < tiny)).sum().item()
    if zeros == 0 and subnormals == 0:
        return None
    zero_rows = zero.reshape(x.shape[0], -1).all(1).sum().item() / x.shape[0] if x.dim() >= 2 else 0.0
    return {"shape": list(x.shape), "zeros": zeros / x.numel(), "zero_rows": zero_rows,
            "subnormals": subnormals / x.numel()}


class ValueProfile(TorchDispatchMode):
    """Counts the ops the dispatcher runs by name and records, for each float input that holds
    zeros or subnormals, its shape and shares by op name, call number and input position (the
    input tensors in schema order, lists flattened; an absent optional tensor is not counted,
    where the execution trace counts it: eg/value_profile.h places by shape past it)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter[str] = collections.Counter()
        self.inputs: list[dict[str, Any]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        kwargs = kwargs or {}
        name = func._schema.name  # pylint: disable=protected-access
        call = self.calls[name]
        self.calls[name] += 1
        tensors = [x for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        for i, x in enumerate(tensors):
            try:
                shares = value_shares(x)
            except (RuntimeError, NotImplementedError):  # out of memory, say: not profiled
                shares = None
            if shares:
                self.inputs.append({"op": name, "call": call, "input": i, **shares})
        return func(*args, **kwargs)


def profile_values(step: Callable[[], None], path: str,
                   sync: Callable[[], None] | None = None) -> None:
    """Records the capture's value profile into `path`: one step under ValueProfile (several
    times slower; not timed). Some CPU kernels cost by the values they read (sqrt of zeros and
    subnormals), and an optimizer's state that no batch reached yet is still zeros; the replay
    fills the state it prepares with the same shares (docs/replay.md, Input values)."""
    mode = ValueProfile()
    with mode:
        step()
    if sync:
        sync()
    with open(path, "w") as f:
        json.dump({"format": 1, "calls": dict(mode.calls), "inputs": mode.inputs}, f)


def host_events_under_capture(body: Callable[[], Any], tmp: str,
                              settings: str = "capture") -> list[dict[str, Any]]:
    """Runs `body` once under one of the capture's profiler settings, writing into the folder
    `tmp`; returns Kineto's host spans (cpu_op and user_annotation events). `settings`:
    "capture" (what profile_steps records with: Kineto with shapes and memory events, and the
    execution-trace observer), "kineto" (the same without the observer) or "host_timeline"
    (HOST_TIMELINE_PROFILER)."""
    kineto = {"activities": [profiler.ProfilerActivity.CPU], "record_shapes": True,
              "profile_memory": True}
    options = {"capture": kineto, "kineto": kineto, "host_timeline": HOST_TIMELINE_PROFILER}[settings]
    if settings == "capture":
        options = dict(options, execution_trace_observer=profiler.ExecutionTraceObserver()
                       .register_callback(os.path.join(tmp, "et.json")))
    with profiler.profile(**options) as prof:
        body()
    path = os.path.join(tmp, "kineto.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        return [e for e in json.load(f)["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]


def top_level_ops(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The aten ops among host spans that no other aten op holds, in start order."""
    tops, stack = [], []
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
            stack.pop()
        if e["name"].startswith("aten::") and not any(s["name"].startswith("aten::") for s in stack):
            tops.append(e)
        stack.append(e)
    return tops


def integer_data_dir(et_path: str) -> str:
    """The folder the observer saves integer inputs in for the ET at `et_path`
    (X.json or X.json.gz: X_resources)."""
    return et_path.removesuffix(".gz").removesuffix(".json") + "_resources"


def copy_integer_data(et_path: str, dst_et_path: str) -> None:
    """Copies the integer inputs saved beside `et_path` to beside `dst_et_path`;
    removes what an earlier capture left there when there are none."""
    src, dst = integer_data_dir(et_path), integer_data_dir(dst_et_path)
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    if os.path.isdir(src) and os.listdir(src):
        shutil.copytree(src, dst)


def step_numbers(names: list[str]) -> list[int]:
    """Returns the sorted N of the `ProfilerStep#N` entries in `names`."""
    return sorted(int(n.split("#", 1)[1]) for n in names
                  if n.startswith("ProfilerStep#"))


def verify(et: dict[str, Any], kineto: dict[str, Any], max_et_only: int = 0) -> list[int]:
    """Checks that the ET and Kineto trace describe the same steps and ops (up to
    `max_et_only` ET ops that Kineto did not record).

    Returns:
      The ProfilerStep numbers in the ET.

    Raises:
      RuntimeError: if a trace lacks steps or the two do not line up.
    """
    nodes = et.get("nodes", [])
    steps = step_numbers([n["name"] for n in nodes])
    if not steps:
        raise RuntimeError("ET has no ProfilerStep#N node")
    events = [e for e in kineto.get("traceEvents", []) if e.get("ph") == "X"]
    # A GPU trace marks each step twice: on the host (user_annotation) and on the device's
    # timeline (gpu_user_annotation).
    kineto_steps = step_numbers([e["name"] for e in events if e.get("cat") != "gpu_user_annotation"])
    if kineto_steps != steps:
        raise RuntimeError(f"ET steps {steps} != Kineto steps {kineto_steps}")

    cpu_ops = [e for e in events if e.get("cat") == "cpu_op"]
    pids = {e["pid"] for e in cpu_ops}
    if pids != {et["pid"]}:
        raise RuntimeError(f"Kineto cpu_op pids {pids} != ET pid {et['pid']}")
    rf_ids = {a["value"] for n in nodes for a in n["attrs"]
              if a["name"] == "rf_id" and n["name"] not in ET_ROOT_NODES}
    # Kineto has ProfilerStep#N and Optimizer.* as user_annotation, not cpu_op.
    kineto_rf_ids = {e["args"].get("Record function id") for e in events
                     if e.get("cat") in ("cpu_op", "user_annotation")}
    matched = sum(e["args"].get("Record function id") in rf_ids
                  for e in cpu_ops)
    et_only_ids = rf_ids - kineto_rf_ids
    et_only = len(et_only_ids)
    print(f"  ET: {len(nodes)} nodes, steps {steps}, schema {et['schema']}; "
          f"Kineto: {len(cpu_ops)} cpu_ops, {matched} match ET rf_ids; "
          f"{et_only} ET op nodes not in Kineto")
    if not cpu_ops or matched != len(cpu_ops) or et_only > max_et_only:
        names = sorted({n["name"] for n in nodes for a in n["attrs"]
                        if a["name"] == "rf_id" and a["value"] in et_only_ids})
        raise RuntimeError(f"ET and Kineto ops do not match one to one "
                           f"(ET only: {names})")
    return steps


def host_cpu() -> str:
    """Returns the CPU model name from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAPTURE_COST_KEYS = {"capture_cost_us": "boundary_us", "capture_input_tensor_us": "input_tensor_us",
                     "capture_input_value_us": "input_value_us",
                     "capture_range_tensor_us": "range_tensor_us",
                     "capture_range_us_per_melem": "range_us_per_melem",
                     "capture_range_strided_us_per_melem": "range_strided_us_per_melem",
                     "capture_saved_us_per_mb": "saved_us_per_mb",
                     "capture_timeline_boundary_us": "timeline_boundary_us",
                     "capture_timeline_backward_boundary_us": "timeline_backward_boundary_us"}


def measure_capture_cost(num_threads: int) -> dict[str, Any] | None:
    """What the capture's instrumentation costs on this host now, measured by `mimic calibrate
    --only capture` (known C++ loops under the same profiler and observer settings) right after
    the profiled steps: the figures `mimic replay` takes off the recorded host gaps (docs/replay.md,
    Host gaps). A machine whose speed moves between minutes pays the capture a different price
    then than when it replays, so the capture records its own. None (and a note) when no mimic
    build is at hand ($MIMIC or build/default/cli/mimic) or the measurement fails."""
    mimic = os.environ.get("MIMIC") or os.path.join(REPO, "build", "default", "cli", "mimic")
    if not os.access(mimic, os.X_OK):
        print(f"  capture cost not measured: no mimic build at {mimic}")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "capture.json")
        r = subprocess.run([mimic, "calibrate", "--only", "capture", "--base",
                            os.path.join(REPO, "platforms", "cpu_host.json"), "--threads",
                            str(num_threads), "--trials", "3", "-o", out],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            print(f"  capture cost not measured: mimic calibrate exited {r.returncode}: "
                  f"{r.stderr.strip().splitlines()[-1:]}")
            return None
        with open(out) as f:
            c = json.load(f)["cpu_overheads"]
    cost = {key: round(float(c.get(src, 0)), 6) for src, key in CAPTURE_COST_KEYS.items()}
    cost["source"] = ("mimic calibrate --only capture --trials 3 right after the profiled steps, "
                      + datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    return cost


def capture(workload: Workload, out_dir: str, warmup_steps: int,
            timed_steps: int, profiled_steps: int,
            max_et_only: int = 0) -> dict[str, Any]:
    """Times and profiles one workload; returns its manifest entry (up to `max_et_only` ET
    ops may lack a Kineto event: an aten::empty under SDPA's backward, say)."""
    print(f"{workload.name}: {workload.model}")
    for _ in range(warmup_steps):
        workload.step()
    before = resource.getrusage(resource.RUSAGE_SELF)
    iteration_ms = [timed(workload.step) for _ in range(timed_steps)]
    system = system_per_step(before, resource.getrusage(resource.RUSAGE_SELF),
                             iteration_ms)
    faults = system["minor_faults"]
    median = statistics.median(iteration_ms)
    print(f"  unprofiled median {median:.2f} ms over {timed_steps} steps, "
          f"{faults:.0f} page faults per step")

    et_name = f"{workload.name}.et.json.gz"
    kineto_name = f"{workload.name}.kineto.json.gz"
    timeline_name = f"{workload.name}.host_timeline.json.gz"
    values_name = f"{workload.name}.values.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        # Kineto stores its file path as `traceName`, so keep it meaningful.
        et_path = os.path.join(tmp, et_name.removesuffix(".gz"))
        kineto_path = os.path.join(tmp, kineto_name.removesuffix(".gz"))
        profiled_ms = profile_steps(workload.step, profiled_steps, et_path,
                                    kineto_path,
                                    integer_data_ops=workload.integer_data_ops)
        # The same steps again right after: where the medians differ, the machine's speed moved
        # during the capture (a replay reports it as the original's drift).
        iteration_ms_after = [timed(workload.step) for _ in range(timed_steps)]
        timeline_path = os.path.join(tmp, timeline_name.removesuffix(".gz"))
        profile_host_timeline(workload.step, timeline_path)
        values_path = os.path.join(tmp, values_name.removesuffix(".gz"))
        profile_values(workload.step, values_path)
        capture_cost = measure_capture_cost(torch.get_num_threads())
        with open(et_path) as f:
            et = json.load(f)
        with open(kineto_path) as f:
            kineto = json.load(f)
        steps = verify(et, kineto, max_et_only)
        if steps != sorted(profiled_ms):
            raise RuntimeError(
                f"ET steps {steps} != timed steps {sorted(profiled_ms)}")
        write_gzip(et_path, os.path.join(out_dir, et_name))
        write_gzip(kineto_path, os.path.join(out_dir, kineto_name))
        write_gzip(timeline_path, os.path.join(out_dir, timeline_name))
        write_gzip(values_path, os.path.join(out_dir, values_name))
        copy_integer_data(et_path, os.path.join(out_dir, et_name))
    for name in (et_name, kineto_name, timeline_name, values_name):
        size_kb = os.path.getsize(os.path.join(out_dir, name)) / 1024
        print(f"  {name}: {size_kb:.0f} KB")

    entry = manifest_entry(workload, workload.name, et_name, kineto_name,
                           iteration_ms, profiled_ms, steps, faults)
    entry["system"] = system
    entry["iteration_ms_after"] = [round(ms, 3) for ms in iteration_ms_after]
    entry["host_timeline"] = timeline_name
    entry["values"] = values_name
    if capture_cost:
        entry["capture_cost"] = capture_cost
    return entry


def system_per_step(before: resource.struct_rusage, after: resource.struct_rusage,
                    iteration_ms: list[float]) -> dict[str, float]:
    """This process's use of the host per step between two getrusage readings (the manifest's
    "system"; a replay reports its own beside it)."""
    n = len(iteration_ms)
    user = (after.ru_utime - before.ru_utime) * 1e3
    sys_ = (after.ru_stime - before.ru_stime) * 1e3
    return {
        "cpu_user_ms": round(user / n, 3),
        "cpu_sys_ms": round(sys_ / n, 3),
        "cpu_utilization": round((user + sys_) / sum(iteration_ms), 3),
        "peak_rss_bytes": after.ru_maxrss * 1024,
        "minor_faults": round((after.ru_minflt - before.ru_minflt) / n, 1),
        "major_faults": round((after.ru_majflt - before.ru_majflt) / n, 1),
        "voluntary_switches": round((after.ru_nvcsw - before.ru_nvcsw) / n, 1),
        "involuntary_switches": round((after.ru_nivcsw - before.ru_nivcsw) / n, 1),
    }


def manifest_entry(workload: Workload, name: str, et_name: str,
                   kineto_name: str, iteration_ms: list[float],
                   profiled_ms: dict[int, float],
                   steps: list[int],
                   page_faults_per_step: float | None = None,
                   device: str = "cpu") -> dict[str, Any]:
    """The manifest entry of one captured trace pair (fleet_samples/README.md)."""
    entry = {
        "name": name,
        "description": workload.description,
        "model": workload.model,
        "batch_size": workload.batch_size,
        "et": et_name,
        "kineto": kineto_name,
        "device": device,
        "torch_version": torch.__version__,
        "num_threads": torch.get_num_threads(),
        "host": {"cpu": host_cpu(), "cores": os.cpu_count()},
        "captured_at": datetime.datetime.now(
            datetime.timezone.utc).isoformat(timespec="seconds"),
        "iteration_ms": [round(t, 3) for t in iteration_ms],
        "iteration_ms_median": round(statistics.median(iteration_ms), 3),
        "profiled_iteration_ms": [round(profiled_ms[s], 3) for s in steps],
        "profiled_steps": steps,
    }
    if page_faults_per_step is not None:
        # Minor faults of this process per unprofiled step: fresh host pages the allocator
        # handed out (a replay reports its own beside them).
        entry["page_faults_per_step"] = round(page_faults_per_step, 1)
    return entry


def add_step_arguments(parser: argparse.ArgumentParser, timed_steps: int,
                       warmup_steps: int) -> None:
    """The options of how many steps are profiled, timed and warmed up."""
    parser.add_argument("--steps", type=int, default=2,
                        help="profiled (active) steps in each trace")
    parser.add_argument("--timed-steps", type=int, default=timed_steps,
                        help="unprofiled steps timed for iteration_ms")
    parser.add_argument("--warmup-steps", type=int, default=warmup_steps,
                        help="untimed training steps before timing")


def update_manifest(out_dir: str, entries: list[dict[str, Any]]) -> None:
    """Replaces `entries` (by name) in out_dir/manifest.json, sorted by name."""
    path = os.path.join(out_dir, "manifest.json")
    samples = {}
    if os.path.exists(path):
        with open(path) as f:
            samples = {s["name"]: s for s in json.load(f)["samples"]}
    samples.update((e["name"], e) for e in entries)
    manifest = {
        "format": MANIFEST_FORMAT,
        "samples": [samples[name] for name in sorted(samples)],
        "default": DEFAULT_SAMPLE,
    }
    with open(path + ".tmp", "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)


def parse_args() -> argparse.Namespace:
    """Parses the command line."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--out", default="fleet_samples",
                        help="output folder")
    parser.add_argument("--only", default=",".join(BUILDERS),
                        help="comma-separated models to capture")
    add_step_arguments(parser, timed_steps=30, warmup_steps=5)
    parser.add_argument("--batch-scale", type=int, default=1,
                        help="multiply every model's batch size (a second "
                             "batch size, to check `mimic synth --batch-scale`)")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = sorted(set(names) - set(BUILDERS))
    if unknown:
        raise SystemExit(f"unknown model(s) {unknown}; "
                         f"choose from {sorted(BUILDERS)}")
    if args.batch_scale < 1:
        raise SystemExit("--batch-scale must be >= 1")
    if args.steps < 1 or args.timed_steps < 1 or args.warmup_steps < 0:
        raise SystemExit("--steps and --timed-steps must be >= 1, "
                         "--warmup-steps >= 0")
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    entries = []
    for name in names:
        torch.manual_seed(SEED)
        entries.append(capture(BUILDERS[name](args.batch_scale), args.out, args.warmup_steps,
                               args.timed_steps, args.steps))
    update_manifest(args.out, entries)
    print(f"wrote {os.path.join(args.out, 'manifest.json')}")


if __name__ == "__main__":
    main()
