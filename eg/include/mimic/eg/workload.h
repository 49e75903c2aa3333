// Loading, saving and querying the normalized workload (proto/workload.proto).
// Free functions over an immutable proto::Workload; thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::eg {

inline constexpr uint32_t kWorkloadFormatMajor = 1;
inline constexpr uint32_t kWorkloadFormatMinor = 1;  // 1: Op.collective

// Provenance.schema of a workload built from a Kineto trace alone (eg::BuildKinetoWorkload).
inline constexpr const char* kKinetoOnlySchema = "kineto";
// True for a workload built from a Kineto trace alone: no tensor identity or contents, no
// schemas, no outputs; it can be inspected and predicted but not replayed.
bool IsKinetoOnly(const proto::Workload& workload);

struct LoadOptions {
  std::string kineto_path;  // optional Kineto trace to link (ignored for .mimic inputs)
  // Accept a Kineto trace alone (and a .mimic converted from one): for the commands that need
  // no tensors (inspect, predict, compare --no-replay, convert). Otherwise one is refused with
  // a one-line hint to give it with --kineto beside its execution trace.
  bool allow_kineto_only = false;
};

// Reads a workload from any input Mimic accepts: a `.mimic` workload file (by its magic bytes),
// a PyTorch execution trace (plain or gzip JSON), linked with `options.kineto_path` when set,
// with the integer inputs saved beside it (AttachIntegerData), or, with
// `options.allow_kineto_only`, a Kineto trace alone (a top-level "traceEvents"; see
// BuildKinetoWorkload). Errors name the file and the position; input errors have IsInputError().
Result<proto::Workload> LoadWorkload(const std::string& path, const LoadOptions& options = {});

// As LoadWorkload, for an execution trace (and optional Kineto trace) already in memory, as
// raw file bytes (gzip or plain); the names are used in messages and provenance.
Result<proto::Workload> LoadWorkloadFromMemory(const std::string& et_name, std::string_view et_raw,
                                               const std::string& kineto_name,
                                               std::string_view kineto_raw);

// The folder of integer inputs the capture saved beside the execution trace at `et_path`
// (PyTorch's observer with ENABLE_PYTORCH_EXECUTION_TRACE_SAVE_INTEGRAL_TENSOR_DATA): X_resources
// for X.json or X.json.gz, X.json_resources for X.json.gz; "" when there is none.
std::string IntegerDataDir(const std::string& et_path);

// Reads every `nid_<op id>_tid_<ordinal>.dat` of IntegerDataDir(et_path) into
// workload.integer_data, as stored (LoadWorkload does it for a trace). Errors: Io; InvalidInput
// for one that is not a regular file or holds more bytes than any tensor of the workload.
Status AttachIntegerData(const std::string& et_path, proto::Workload& workload);

// The table entry of the `ordinal`-th tensor among `op`'s inputs, walked depth first through
// lists and tuples with undefined tensors counted (-1 when there is none, or it is undefined):
// how the observer numbers tensors in tensor_range and in its integer data files, by their
// index among the tensors, not their argument position (index_select's index is "1").
int InputTensorByOrdinal(const proto::Op& op, int64_t ordinal);

// Writes `workload` as a `.mimic` file (magic + protobuf), atomically.
Status SaveWorkload(const std::string& path, const proto::Workload& workload);

// Parses the bytes of a `.mimic` file; `path` is only used in messages.
Result<proto::Workload> ParseWorkloadFile(const std::string& path, std::string_view bytes);

// Brings a workload an older Mimic wrote up to this format: format 1.0 predates Op.collective,
// so its collectives are read now, as reading a trace does.
void UpgradeWorkload(proto::Workload& workload);

// Checks a workload that came from outside (a file, a bundle): a format this Mimic reads,
// parent links that form a forest, and every index inside its table. Errors: InvalidInput or
// Unsupported naming `path` and the offending node, segment or tensor.
Status CheckWorkload(const std::string& path, const proto::Workload& workload);

// Id-indexed view of a workload's op tree. Borrows `workload`, which must outlive it.
class OpTree {
 public:
  explicit OpTree(const proto::Workload& workload);

  // Index into workload.ops() of the op with `id`, or -1.
  int IndexOf(int64_t id) const;
  // Index of the parent op, or -1 for a root (including parents the trace does not contain).
  int Parent(int index) const { return parent_[index]; }
  const std::vector<int>& Children(int index) const { return children_[index]; }
  // True when `ancestor` is `index` or one of its ancestors.
  bool IsWithin(int index, int ancestor) const;
  // Calls fn(k) for each op below `index` (its children, theirs, ...; not `index` itself).
  template <typename Fn>
  void ForEachDescendant(int index, const Fn& fn) const {
    std::vector<int> stack(children_[index].begin(), children_[index].end());
    while (!stack.empty()) {
      const int k = stack.back();
      stack.pop_back();
      fn(k);
      stack.insert(stack.end(), children_[k].begin(), children_[k].end());
    }
  }

 private:
  const proto::Workload& w_;
  std::unordered_map<int64_t, int> index_of_;
  std::vector<int> parent_;
  std::vector<std::vector<int>> children_;
};

// The recorded type string of a value or tensor ("" when none was recorded).
const std::string& TypeName(const proto::Workload& workload, int32_t type_index);

// The range a command works on (replay, predict, synth's select): the "## label ##" range when
// `label` is given (with or without the ##), ProfilerStep#`iteration` when iteration >= 0, else
// the first iteration; nullptr when the workload has no iteration and neither was asked for.
// Errors: InvalidInput naming --label or --iteration.
Result<const proto::Segment*> FindSegment(const proto::Workload& workload, int64_t iteration,
                                          const std::string& label);

// The ops that ran during the segment whose op is `segment_op` (an index), on every thread:
// its own subtree, and on every other thread the ops that started while it ran (their ids, which
// are start order across threads, lie between the segment op's and that of the first op its own
// thread started after it; with Kineto spans on both, the op started before the segment ended),
// with their subtrees. A training step's backward on the autograd engine's thread is part of it.
// Returns one flag per op of the workload.
std::vector<char> SegmentMembers(const proto::Workload& workload, const OpTree& tree,
                                 int segment_op);

// True for ops Mimic never replays itself: profiler and record_function wrappers, thread roots.
bool IsWrapperOp(const proto::Op& op);

// An operator's name as the profiler records it: "namespace::name" with one namespace
// ("aten::mm", "fbgemm::jagged_to_padded_dense"), not an autograd node
// ("torch::autograd::AccumulateGrad") or a free-form record_function label.
bool IsOperatorName(std::string_view name);

// The ops a replay executes, in start order across threads: among the segment's members
// (SegmentMembers; everywhere when segment_op < 0), the top-most ops that have a schema and are not
// wrappers; never their children; `mimic::delay` ops count as replayable. In a workload of a
// Kineto trace alone (eg::IsKinetoOnly), which records no schemas, the top-most operators by name
// (IsOperatorName) and host spans that launched kernels themselves (compiled functions, custom
// autograd nodes) stand where ops with a schema would: what predict prices. With
// `include_compiled`, also the top-most compiled kernels (Triton: ops with a kernel_backend and no
// schema), which a replay must account for even though it never runs the code they carry. Returns
// indices into workload.ops().
std::vector<int> ReplayableOps(const proto::Workload& workload, const OpTree& tree,
                               int segment_op = -1, bool include_compiled = false);

// True for a compiled kernel recorded with its source file (Triton), not an operator.
bool IsCompiledKernel(const proto::Op& op);

// True for code the trace does not describe op by op: a compiled kernel (IsCompiledKernel), or
// a torch.compile region's span (`CompiledFunction`, `CompiledFunctionBackward`), whose kernels
// (Triton's, or the library calls of the compiled graph) have no op of their own.
bool IsCompiledCode(const proto::Op& op);

// The name of the pseudo-op that synth's substitution leaves in place of an op: the replay
// spins for attrs["delay_us"] instead of dispatching anything.
inline constexpr const char* kDelayOp = "mimic::delay";
bool IsDelayOp(const proto::Op& op);

// Figures that `mimic inspect` prints.
struct Summary {
  int64_t ops = 0;
  int64_t ops_with_schema = 0;
  int64_t replayable_ops = 0;  // over the whole trace
  int64_t tensors = 0;
  int64_t storages = 0;
  int64_t iterations = 0;
  int64_t labels = 0;
  int64_t collectives = 0;
  int64_t threads = 0;
  struct Thread {
    int64_t tid = 0;
    int64_t ops = 0;
    int64_t replayable_ops = 0;  // top-level ops a replay of the whole trace runs on it
  };
  std::vector<Thread> per_thread;  // by tid
};
Summary Summarize(const proto::Workload& workload);

// True for collective and point-to-point communication ops (record_param_comms, c10d::*, nccl:*).
bool IsCollectiveOp(const proto::Op& op);

// True for the floating-point dtypes Mimic computes in: fp32, fp64, fp16 and bf16 (not fp8).
bool IsFloatingDType(proto::DType d);

// Calls fn(entry) for each tensor of `v` (an index into workload.tensors()), list items
// included.
void ForEachTensor(const proto::Value& v, const std::function<void(int)>& fn);

// What a capture's instrumentation (Kineto with shapes and the execution-trace observer, as the
// capture scripts record) costs the host outside the ops' spans, as `mimic calibrate` and a
// replay's setup measure it on known loops (docs/replay.md, Host gaps): a constant per event
// boundary, and, before an op starts, the observer's recording of each of the op's input
// tensors and other input values, the range of its integer inputs (tensor_range: per tensor and
// per element) and the integer inputs it saved beside the trace.
// Constants of the host and torch, never of a workload.
struct CaptureCost {
  double boundary_us = 0;         // per span boundary (an op starting or ending)
  double input_tensor_us = 0;     // per tensor among the op's inputs (lists included)
  double range_us_per_melem = 0;  // per million elements of its inputs with a recorded range
  double saved_us_per_mb = 0;     // per MiB of its integer inputs saved (Workload.integer_data)
  // As range_us_per_melem, for inputs broadcast along a dimension by a zero stride.
  double range_strided_us_per_melem = 0;
  // Per other input value: a scalar, None, a string, each item of a list of them.
  double input_value_us = 0;
  // Per input tensor with a recorded range, beside range_us_per_melem: computing a range costs
  // a few microseconds even for one element (a Python int the op wraps in a tensor).
  double range_tensor_us = 0;
  // Per event boundary on the capture's host timeline (Kineto alone, host activity only:
  // proto::HostTimeline), taken off the gaps read from it.
  double timeline_boundary_us = 0;
  // The same at a boundary of the autograd engine's work (IssuerOf: kBackward), where Kineto
  // records each node's evaluate_function and the node's own span besides the ops; 0 = unknown
  // (timeline_boundary_us stands).
  double timeline_backward_boundary_us = 0;
  // The timeline's cost at a boundary of an op the autograd engine ran (`backward`) or not.
  double TimelineBoundaryUs(bool backward) const {
    return backward && timeline_backward_boundary_us > 0 ? timeline_backward_boundary_us
                                                         : timeline_boundary_us;
  }
  // The cost before `op` starts beyond the boundary itself (0 when the figures are 0).
  double BeforeStart(const proto::Op& op, const proto::Workload& workload,
                     int64_t saved_bytes) const;
  // "1.560 us per event boundary, 0.410 us per input tensor, ...": the figures that
  // are not 0, for reports and a platform's sources.
  std::string Describe() const;
};

// Each figure of CaptureCost, the one table its copies in protos, manifests and reports follow:
// its member, its field in proto::CaptureCostFigures (a manifest's "capture_cost", the
// capture's own figures), its field in a platform's proto::CpuOverheads (also its key in a replay
// report's host_gaps), and what it is paid per (CaptureCost::Describe).
struct CaptureFigure {
  double CaptureCost::*member;
  const char* figures_field;
  const char* platform_field;
  const char* per;
};
extern const std::vector<CaptureFigure> kCaptureFigures;

// The figures a capture recorded for its own cost (OriginalRun.capture_cost), as a CaptureCost.
CaptureCost CaptureCostFromFigures(const proto::CaptureCostFigures& figures);
// The same from and into a message holding the figures under the fields of `field` (one of
// CaptureFigure's field names): CaptureCostFigures, CpuOverheads.
CaptureCost CaptureCostFromMessage(const google::protobuf::Message& m,
                                   const char* CaptureFigure::*field);
void SetCaptureCostInMessage(const CaptureCost& cost, const char* CaptureFigure::*field,
                             google::protobuf::Message& m);
// The capture's cost to take off `workload`'s recorded gaps: what the capture measured for itself
// where it did (OriginalRun.capture_cost), else `fallback` (a host's calibrated figures).
CaptureCost CaptureCostFor(const proto::Workload& workload, const CaptureCost& fallback);

// The tensors among an op's inputs, those in lists and undefined ones too (what
// CaptureCost::input_tensor_us prices).
int64_t InputTensorCount(const proto::Op& op);
// The op's other input values, each item of a list counted (what CaptureCost::input_value_us
// prices).
int64_t InputValueCount(const proto::Op& op);

// True when the capture computed the ranges of at least 10^5 integer elements (distinct
// tensors) or saved at least 800 KB of integer inputs: where CaptureCost's integer figures
// (about 1 ns an element, 0.4 ms a MiB) come to a tenth of a millisecond or more.
bool CaptureRecordedIntegerInputs(const proto::Workload& workload);

// The event boundaries of a workload's recorded host spans (every op with a CPU span starts and
// ends once), sorted, each with what the capture's instrumentation cost there: `boundary_us`,
// plus at an op's start its input tensors, ranges and saved data (CaptureCost::BeforeStart).
class SpanBoundaries {
 public:
  SpanBoundaries(const proto::Workload& workload, const CaptureCost& cost);
  // The same on the host timeline (Op.timeline_*), cost.timeline_boundary_us at each boundary.
  static SpanBoundaries OnTimeline(const proto::Workload& workload, const CaptureCost& cost);
  // How many boundaries lie in [from_us, to_us] (the ends of a gap are boundaries themselves).
  int64_t Count(double from_us, double to_us) const;
  // What the capture cost at the boundaries in [from_us, to_us].
  double CostUs(double from_us, double to_us) const;

 private:
  explicit SpanBoundaries(std::vector<std::pair<double, double>> points);  // (time, cost there)
  std::pair<size_t, size_t> Range(double from_us, double to_us) const;
  std::vector<double> at_us_;
  std::vector<double> cost_before_;  // cost_before_[i]: the summed cost of boundaries 0..i-1
};

// The original's host time before each top-level op with no op of any thread running (Python,
// the autograd engine, an optimizer's loop): the op's recorded start less the latest recorded
// end of the ops before it (at first, the step's start; none when negative), less what the
// capture cost at the event boundaries in the gap (SpanBoundaries); never below zero. Where the
// capture's host timeline is used (HostTimelineUsed), the gap before an op it matched is read the
// same way from the timeline, less its own lighter cost per boundary: from the op before it in
// the same step when the timeline matched that one too, from the step's start for a step's first
// op (the timeline's step is placed there). One rule for replay --host-gaps recorded and the
// model's T1. Not thread-safe.
class RecordedHostGaps {
 public:
  // `step_start_us` < 0: no gap before the first op.
  RecordedHostGaps(const proto::Workload& workload, double step_start_us, const CaptureCost& cost);
  // The gap before `op`, which has a CPU span; ops come in start order. `op` then counts as run.
  double Before(const proto::Op& op);

 private:
  // The step (index into step_starts_) an op starting at `us` lies in; -1 before the first.
  int StepOf(double us) const;

  SpanBoundaries boundaries_;
  double latest_end_us_;
  std::optional<SpanBoundaries> timeline_;  // when the host timeline is used
  std::vector<double> step_starts_;         // the iteration segments' starts, sorted
  int step_ = -1;                           // the step of the last op
  // The latest end on the timeline; < 0 where the next gap cannot be read there (after an op
  // it did not match, or before the first op when `step_start_us` is no step's start).
  double timeline_end_us_ = -1;
};

// What issued a top-level op in the original, from the ops above it in the ET: the autograd
// engine (under `autograd::engine::evaluate_function: ...`), an optimizer (under
// `Optimizer.step#...` or `Optimizer.zero_grad#...`), else the Python thread's eager forward
// code. The host time before an op differs by issuer; the model and replay without a Kineto
// trace (--host-gaps modelled) wait cpu_overheads.t1_<issuer>_us before it.
enum class Issuer { kForward, kBackward, kOptimizer };
inline constexpr int kIssuers = 3;
const char* IssuerName(Issuer issuer);  // "forward", "backward", "optimizer"
Issuer IssuerOf(const proto::Workload& workload, const OpTree& tree, int index);

// The autograd graph a training step's forward recorded in the original. Its parameters: the
// floating-point tensors the forward (IssuerOf) reads before any op produced them, on a storage
// an optimizer's op writes in place (the tensor itself, or a view of it such as a weight's t()).
// A forward op records a node where a floating-point input requires grad (a parameter, or an
// output of an op that recorded one), it writes a floating-point output, it updates no parameter
// in place (autograd refuses that: the original ran it under no_grad) and it is the innermost
// op dispatched at the autograd level (the trace's sequence numbers: a composite's nodes are
// its children's, the calls of an op's own kernel record none; an op without children where
// the trace records none). Empty for a workload without the autograd engine's ops (inference),
// or without an optimizer's in-place update.
struct ForwardGraph {
  std::unordered_set<int> parameters;  // indices into workload.tensors()
  std::vector<bool> records_node;      // by index into workload.ops()
};
ForwardGraph ForwardAutogradGraph(const proto::Workload& workload, const OpTree& tree);

// Whether the autograd engine ran in the trace (`autograd::engine::evaluate_function: ...`): a
// training step, whose forward ran with autograd on.
bool HasBackward(const proto::Workload& workload);

// The recorded host gaps (RecordedHostGaps, the capture's cost taken off) before
// the top-level ops of the workload's first step (FindSegment's default selection, as a replay
// runs it), by issuer; none before the step's first op (what ran before the step is no gap
// between its ops). Errors: InvalidInput when no Kineto trace is linked or no op has a host span.
struct GapsByIssuer {
  std::vector<double> us[kIssuers];
};
Result<GapsByIssuer> RecordedGapsByIssuer(const proto::Workload& workload, const CaptureCost& cost);

}  // namespace mimic::eg
