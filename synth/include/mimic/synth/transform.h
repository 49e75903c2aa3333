// Workload transformations: each takes a workload and returns a new one, recording itself in
// workload.transformations so that a benchmark says how it was made. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::synth {

struct SelectSpec {
  int64_t iteration = -1;  // ProfilerStep number; -1: the first one
  std::string label;       // a "## label ##" range instead
};

// Keeps one iteration (or label range): its opening op and subtree, which becomes the only
// segment. Errors: InvalidInput when the trace has no such iteration or label, or no iteration
// at all.
Result<proto::Workload> Select(const proto::Workload& w, const SelectSpec& spec);

// Keeps the top-level replayable ops whose name matches `pattern` ('*' matches any run of
// characters; "aten::mm" matches its overloads too) or whose op class is named `pattern`
// ("gemm", "conv", ... see eg/op_class.h); drops the other top-level ops with their subtrees.
// Errors: InvalidInput when nothing matches.
Result<proto::Workload> Filter(const proto::Workload& w, const std::string& pattern);

// Changes every floating-point tensor to `dtype` (integer and bool tensors keep theirs), and
// dtype arguments that name a floating type. REQUIRES: dtype is FLOAT32, FLOAT16 or BFLOAT16.
Result<proto::Workload> ChangeDtype(const proto::Workload& w, proto::DType dtype);

// Repeats the workload's one iteration `k` times inside a single iteration segment, as the job
// would run k steps. Errors: InvalidInput for k < 1 or a workload with several iterations
// (select one first).
Result<proto::Workload> Repeat(const proto::Workload& w, int k);

// Scales the job to `world_size` ranks as weak scaling of data parallelism: each rank keeps its
// compute and its tensors; the world group, and every collective on it, gets the new size, and
// per-rank message sizes follow each collective's semantics: all-reduce, broadcast, reduce,
// send/recv and barrier keep theirs; all-gather and gather receive world_size x their input;
// reduce-scatter and scatter take world_size x their output; all-to-all keeps what it sends and
// receives, split evenly over the new world. Sub-groups keep their ranks. Apply it last: the
// other transformations re-read collectives from the tensors. Errors: InvalidInput when the
// trace does not tell its world size or a sub-group holds a rank beyond the new world.
Result<proto::Workload> ScaleWorldSize(const proto::Workload& w, int world_size);

// "bf16", "fp16", "fp32" (and the LibTorch names) -> the dtype; false for others.
bool ParseFloatDType(const std::string& name, proto::DType* out);

// Rewrites the vendor ops (cuDNN, MIOpen, oneDNN, pinned copies) that `target` ("cpu",
// "cuda") has no kernel for as their portable ATen equivalents (eg::PortableOf), the same
// tensors in and out: the workload then replays there op for op. Recorded as "portable".
proto::Workload MakePortable(const proto::Workload& w, std::string_view target);

}  // namespace mimic::synth

namespace mimic::synth {

enum class ComposeMode {
  kSequential,  // one after another on one thread
  kConcurrent,  // each part on its own thread at once: co-located tenants
};

// Combines several one-iteration workloads (select each first) into one iteration, each part
// running `weights[i]` times (a fleet mix). Sequential parts run one after another; concurrent
// parts become tenants (`## mimic:tenant:K ##` ranges under the iteration) that the replay
// runs on their own threads at the same time. Tensor and storage ids are renumbered so the
// parts never share memory. For sequential mixes the original time, when every part has one,
// is the weighted sum of their medians; concurrent mixes have none.
// Errors: InvalidInput for no inputs, weights that do not match, or a part with several
// iterations.
Result<proto::Workload> Compose(const std::vector<proto::Workload>& parts,
                                const std::vector<int>& weights, ComposeMode mode);

// Operator substitution from a table (docs/substitution.md): top-level ops matching a rule
// are dropped, or replaced by a calibrated delay (a `mimic::delay` op that the replay spins
// for the op's recorded time: its kernels' total, else its CPU span, else the rule's
// delay_us). Errors: InvalidInput naming the table file and rule for a malformed table, or an
// op to delay whose time is unknown.
Result<proto::Workload> Substitute(const proto::Workload& w, const std::string& table_path);

// Rewrites the vendor ops (cuDNN, MIOpen, oneDNN, pinned copies) that `target` ("cpu",
// "cuda") has no kernel for as their portable ATen equivalents (eg::PortableOf), the same
// tensors in and out: the workload then replays there op for op. Recorded as "portable".
proto::Workload MakePortable(const proto::Workload& w, std::string_view target);

}  // namespace mimic::synth
