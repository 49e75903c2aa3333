#!/usr/bin/env python3
"""Regenerates the bad-input corpus in this folder: one case per file, each with NAME.expect.

A NAME.expect file holds two lines:
  args: the mimic command line, with {case} for the case file and {out} for an output path
  error: a substring the one-line error must contain
Every case must end with exit code 2, one line on stderr naming the case file, no output file
left behind, and bounded memory (tests/bad_inputs/bad_inputs_test.py checks all four).

Usage: python3 tests/bad_inputs/make_corpus.py   (from the repository root)
"""

import gzip
import hashlib
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def et(nodes, schema="1.0.1", pid=7):
    return json.dumps({"schema": schema, "pid": pid, "time": "t", "nodes": nodes})


def node(id_, name="aten::relu", parent=1, inputs=(), types=(), shapes=(), schema=""):
    return {"name": name, "id": id_, "rf_id": id_, "parent": parent, "tid": 1, "op_schema": schema,
            "inputs": list(inputs), "input_types": list(types), "input_shapes": list(shapes),
            "outputs": [], "output_types": [], "output_shapes": []}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, wire, payload):
    key = varint((number << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def mimic_file(payload, corrupt=False, magic=b"MIMICWL\n"):
    """A framed file (base/framed.h): magic, SHA-256 of the payload in hex, newline, payload."""
    digest = hashlib.sha256(payload).hexdigest().encode()
    if corrupt:
        payload = payload[:-1] + bytes([payload[-1] ^ 0xFF])
    return magic + digest + b"\n" + payload


def write(name, data, args, error):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(HERE, name), mode) as f:
        f.write(data)
    with open(os.path.join(HERE, name + ".expect"), "w") as f:
        f.write(f"args: {args}\nerror: {error}\n")


def main():
    convert = "convert {case} -o {out}"
    with open(os.path.join(ROOT, "fleet_samples", "mlp.et.json.gz"), "rb") as f:
        sample = f.read()
    plain = gzip.decompress(sample)

    write("truncated_gzip.json.gz", sample[: len(sample) // 2], convert, "truncated gzip")
    flipped = bytearray(sample)
    for i in range(20, len(flipped) - 8, 7):
        flipped[i] ^= 0x5A
    write("corrupt_gzip.json.gz", bytes(flipped), convert, "corrupt gzip")
    write("truncated_json.json", plain[:20000], convert, "byte")
    write("random_bytes.bin", bytes(random.Random(11).randrange(256) for _ in range(4096)), convert,
          "expected a JSON object")
    write("empty.json", b"", convert, "empty file")
    write("not_a_trace.json", json.dumps({"hello": [1, 2, 3]}), convert, "not a PyTorch execution trace")
    write("invalid_utf8.json", et([node(2)]).replace("aten::relu", "aten::\udcff").encode("utf-8", "surrogateescape"),
          convert, "UTF-8")
    write("deeply_nested.json", '{"schema": "1.0.1", "nodes": [' + "[" * 5000 + "]" * 5000 + "]}",
          convert, "nesting deeper than 1024")
    write("number_out_of_range.json", et([node(2)]).replace('"id": 2', '"id": 1e999'), convert,
          "nodes[0]: Problem while parsing a number")
    write("bigint_id.json", et([node(2)]).replace('"id": 2', '"id": 123456789012345678901234567890'),
          convert, "nodes[0]: Problem while parsing a number")
    write("negative_shape.json", et([node(2, inputs=[[1, 2, 0, 6, 4]], types=["Tensor(float)"], shapes=[[2, -3]])]),
          convert, "negative dimension")
    write("huge_shape.json", et([node(2, inputs=[[1, 2, 0, 6, 4]], types=["Tensor(float)"],
                                      shapes=[[2**40, 2**40, 2**40]])]), convert, "overflows 64 bits")
    huge = et([node(2, name="aten::relu", schema="aten::relu(Tensor self) -> Tensor",
                    inputs=[[1, 2, 0, 2**50, 4, "cpu"]], types=["Tensor(float)"], shapes=[[2**50]])],
              schema="1.0.3-chakra.0.0.4")
    write("huge_numel.json", huge, "replay {case} --device cpu --warmup 0 --iters 1 --report {out}",
          "more than this machine's")
    write("negative_numel.json", et([node(2, inputs=[[1, 2, 0, -6, 4]], types=["Tensor(float)"], shapes=[[6]])]),
          convert, "negative numel")
    write("parent_cycle.json", et([node(2, parent=3), node(3, parent=2)]), convert, "cycle in parent links")
    write("duplicate_ids.json", et([node(2), node(3), node(2)]), convert, "duplicate node id 2")
    write("node_without_id.json", et([{"name": "aten::relu"}]), convert, "has no \"id\"")
    write("nodes_not_array.json", json.dumps({"schema": "1.0.1", "nodes": {"a": 1}}), convert, "is not an array")
    kineto = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4242,
                               "ts": 1.0, "dur": 2.0, "args": {"External id": 1, "Record function id": 3}}]}
    write("kineto_of_another_run.json", json.dumps(kineto),
          "convert fleet_samples/mlp.et.json.gz --kineto {case} -o {out}", "Kineto trace of another run")
    write("kineto_given_as_et.json", json.dumps(kineto),
          "replay {case} --device cpu --warmup 0 --iters 1 --report {out}",
          "but a Kineto trace (\"traceEvents\"): give it with --kineto")
    # A Kineto trace alone: read by inspect, predict and compare --no-replay, refused where tensors
    # are needed; without deviceProperties its GPU is unknown.
    kineto_gpu = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 1.0, "dur": 10.0,
         "args": {"External id": 1, "Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 2.0, "dur": 3.0,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 6.0, "dur": 4.0,
         "args": {"correlation": 5, "stream": 7, "device": 0}}]}
    write("kineto_alone_no_device.json", json.dumps(kineto_gpu), "predict {case} --json",
          "records no GPU (deviceProperties) to predict for: give one with --platform")
    # Its kernels' names still say which generation its GPU is of, at the least.
    ampere = json.loads(json.dumps(kineto_gpu))
    ampere["traceEvents"][2]["name"] = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>()"
    write("kineto_alone_sm80_no_device.json", json.dumps(ampere), "predict {case} --json",
          "records no GPU (deviceProperties) to predict for: give one with --platform NAME|FILE.json "
          "(its newest kernels were built for sm_80, Ampere")
    write("kineto_alone_compare_replay.json", json.dumps(kineto_gpu), "compare {case} --report {out}",
          "compare --no-replay read it alone")
    write("kineto_alone_with_kineto.json", json.dumps(kineto_gpu),
          "inspect {case} --kineto fleet_samples/mlp.kineto.json.gz", "--kineto links a Kineto trace to an execution trace")
    write("kineto_not_a_trace.json", json.dumps({"nodes": []}),
          "convert fleet_samples/mlp.et.json.gz --kineto {case} -o {out}", "not a Kineto trace")

    fmt_v1 = field(1, 2, field(1, 0, 1))
    no_schema = field(3, 0, (1 << 64) - 1)  # Op.schema = -1, as varint
    op_dangling = field(5, 2, field(1, 0, 1) + no_schema + field(4, 2, field(7, 0, 5)))
    write("dangling_tensor.mimic", mimic_file(fmt_v1 + op_dangling), convert, "dangling tensor")
    seg_dangling = field(6, 2, field(1, 0, 1) + field(2, 2, b"ProfilerStep#1") + field(3, 0, 99))
    write("dangling_segment.mimic", mimic_file(fmt_v1 + field(5, 2, field(1, 0, 1) + no_schema) + seg_dangling), convert,
          "dangling op id 99")
    write("bad_checksum.mimic", mimic_file(fmt_v1 + field(5, 2, field(1, 0, 1) + no_schema), corrupt=True), convert,
          "checksum mismatch")
    write("newer_format.mimic", mimic_file(field(1, 2, field(1, 0, 99)) + field(5, 2, field(1, 0, 1) + no_schema)), convert,
          "newer than this Mimic reads")
    workload = fmt_v1 + field(5, 2, field(1, 0, 1) + no_schema)
    replay = "replay {case} --report {out}"
    kineto_alone = fmt_v1 + field(2, 2, field(2, 2, b"kineto")) + field(5, 2, field(1, 0, 1) + no_schema)
    write("kineto_alone.mimic", mimic_file(kineto_alone), replay, "read from a Kineto trace alone")
    write("bundle_bad_checksum.bundle",
          mimic_file(field(1, 2, field(1, 0, 1)) + field(2, 2, workload), corrupt=True, magic=b"MIMICBN\n"),
          replay, "checksum mismatch")
    write("bundle_newer_format.bundle",
          mimic_file(field(1, 2, field(1, 0, 7)) + field(2, 2, workload), magic=b"MIMICBN\n"),
          replay, "bundle format 7.0 is newer")
    os.makedirs(os.path.join(HERE, "a_directory.json"), exist_ok=True)
    with open(os.path.join(HERE, "a_directory.json", ".keep"), "w") as f:
        f.write("This folder is a bad-input case: a directory given where a trace file is expected.\n")
    with open(os.path.join(HERE, "a_directory.json.expect"), "w") as f:
        f.write("args: convert {case} -o {out}\nerror: is a directory\n")


if __name__ == "__main__":
    main()
