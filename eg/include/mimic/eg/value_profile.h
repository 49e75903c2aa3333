// The capture's value profile: for one step after the host timeline's, the share of zeros,
// all-zero rows and subnormals in every float input that held any, by op name and call number
// in the step (scripts/capture_fleet_samples.py, under a TorchDispatchMode). Some CPU kernels
// cost by the values they read (sqrt of a zero 7x, of a subnormal 35x a normal number's on this
// project's host: bench/fidelity/sqrt_values.py); an optimizer's state that no batch reached yet
// is still the zeros it started at. The replay fills the state it prepares for such an op with
// the same shares (docs/replay.md, Input values). Stateless; thread-safe.
//
// The file (JSON, gzip allowed):
//   {"format": 1,
//    "calls": {"aten::sqrt": 7, ...},       every op name the step dispatched, with its calls
//    "inputs": [{"op": "aten::sqrt", "call": 2, "input": 0, "shape": [10000, 32],
//                "zeros": 0.857, "zero_rows": 0.857, "subnormals": 0.0}, ...]}
// "input" counts the tensors the dispatcher saw (lists flattened, absent ones not counted);
// "shape" (optional) is the tensor's.
#pragma once

#include <string>
#include <string_view>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::eg {

// Reads the value profile at `path` and places it on each iteration segment of `workload`: the
// K-th call of an op name in the profile is the K-th op of that name in the segment, in id
// order, where the segment has as many of that name as the profile counted (the profile sees
// the ops the dispatcher ran, the trace also those a kernel ran inside itself: a name whose
// counts differ is not placed). The input is the op's input tensor at that position or, where
// the trace counts undefined tensors before it, the first after it of the recorded shape. Each
// placed input becomes one Op.input_values;
// OriginalRun.values says how many were placed. Errors: InvalidInput naming `path` and the
// entry for a malformed file; NotFound, Io from the reader.
Status ApplyValueProfile(const std::string& path, proto::Workload& workload);
// The same for the file's contents already in memory.
Status ApplyValueProfile(const std::string& path, std::string_view json, proto::Workload& workload);

// "SOURCE, N of M inputs placed", for reports; the source alone where it was not read.
std::string DescribeValueProfile(const proto::Workload& workload);

}  // namespace mimic::eg
