// Operator-by-operator replay of a normalized workload through LibTorch's dispatcher.
// Replay() is not reentrant with itself (it sets LibTorch's global thread count and seed).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/workload.h"
#include "mimic/replay/device_info.h"
#include "mimic/replay/distributed.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

// What a replay runs: the compute ops and the collectives (full), the compute ops only, or the
// collectives only, on buffers of the recorded sizes, each run to completion before the next
// as nccl-tests does (comm).
enum class ReplayMode { kFull, kCompute, kComm };
// Host time between ops (docs/replay.md): kAuto is kRecorded when a Kineto trace is linked,
// else kModelled when modelled_t1_us are given, else kNone.
enum class HostGaps { kAuto, kRecorded, kModelled, kNone };
const char* ReplayModeName(ReplayMode mode);
const char* HostGapsName(HostGaps mode);  // "auto", "recorded", "modelled", "none"

struct ReplayOptions {
  std::string device;          // "cpu", "cuda", "cuda:N"; empty: BestDevice()
  int64_t iteration = -1;      // ProfilerStep number; -1: the first step, else the whole trace
  std::string label;           // a "## label ##" range instead of an iteration
  int warmup = 1;
  int iters = 5;
  bool strict = false;         // fail on the first op that cannot be replayed
  uint64_t seed = 1;           // drives every random tensor content
  int num_threads = 0;         // intra-op threads; 0 keeps LibTorch's default
  // When set and it turns true (a signal handler, say), the replay stops after the current op.
  const std::atomic<bool>* cancel = nullptr;
  std::string cancel_reason = "interrupted";  // what the result says when `cancel` stopped it
  ReplayMode mode = ReplayMode::kFull;
  // This rank of a multi-rank replay (DistEnvFromEnvironment); unset: one process, and the
  // trace's collectives are skipped.
  std::optional<DistEnv> dist;
  // Bounds the rendezvous and every collective: a rank that died or hung makes the others
  // stop within it, naming the rank and the collective.
  int64_t comm_timeout_ms = 300000;
  // The host heap. kRetained keeps freed memory (RetainFreedHeap, base/host.h), so host tensors
  // do not page-fault afresh each iteration; kTrimmed leaves the C library's default, which
  // hands freed memory back to the kernel, as often as the heap's layout happens to make it.
  // kAuto keeps the heap and, where the capture recorded the original's page faults per step
  // (OriginalRun.page_faults_per_iteration), takes as many a step on purpose (FreshPages):
  // before the ops that write fresh memory, in proportion to its bytes, on the intra-op threads
  // (FaultInOnIntraOpThreads), handed back as the step ends. On the CPU, one job, one rank (the
  // capture counts one process's faults).
  enum class Heap { kAuto, kRetained, kTrimmed };
  Heap heap = Heap::kAuto;
  // Run a composite op (no kernel of its own) as the ops the trace recorded under it; false
  // runs it as itself, as LibTorch decomposes it without autograd.
  bool decompose = true;
  // Time every op on the device's own clock (CUDA events around each op; on the CPU ops are
  // always timed). Without it a GPU replay times iterations only.
  bool per_op_device_time = false;
  // Allocate the prepared inputs just before their first use in each iteration and free them
  // after their last use, instead of once for the whole replay: for selections whose inputs do
  // not fit the device at once. Outputs are freed after their last use either way.
  bool lazy_alloc = false;
  // kRecorded: before each top-level op, the time the original's host spent with no op running
  // (Python, the autograd engine, optimizer loops), from its Kineto trace, less what the
  // capture's instrumentation cost in the gap (eg::CaptureCost: per event boundary, and per
  // input tensor, ranged and saved integer input of the ops starting there). Measured at
  // setup when capture_cost.boundary_us is negative; the CLI passes this host's calibrated
  // platform's cpu_overheads.capture_* where one exists, and says so in capture_cost_source.
  HostGaps host_gaps = HostGaps::kAuto;
  eg::CaptureCost capture_cost{-1};
  std::string capture_cost_source;  // where a given capture_cost comes from (the report says)
  // kModelled: before each top-level op, the host time of what issued it (eg::IssuerOf: forward,
  // backward, optimizer), by eg::Issuer; all 0: none given. The CLI takes them from the
  // platform's cpu_overheads.t1_<issuer>_us (model::IssuerT1, the model's T1 without a trace).
  std::array<double, eg::kIssuers> modelled_t1_us{};
  std::string modelled_t1_source;  // where they come from (the report says)
  // Write a Kineto (Chrome trace) profile of the measured iterations here, through LibTorch's
  // profiler: one cpu_op per replayed op, a ProfilerStep#N span per iteration.
  std::string profile_path;
};

// One collective of the replayed selection, as issued on this rank.
struct CollectiveRun {
  int64_t op_id = 0;
  proto::Collective collective;
  std::vector<double> replay_us;  // per measured iteration: issue to completion
};

// The communication side of a replay (multi-rank replays; counts only otherwise).
struct CommResult {
  int rank = 0;
  int world_size = 1;
  std::string backend;            // "gloo"; "" when no process group was created
  std::vector<CollectiveRun> collectives;  // in issue order
  eg::CollectiveTotals issued;    // completed in the last completed iteration
  eg::CollectiveTotals expected;  // what the trace's selection holds, per iteration
};

// One op that the replay did not run.
struct SkippedOp {
  int64_t op_id = 0;
  std::string name;
  std::string reason;  // "unknown_operator", "unsupported_argument", "exception", ...
  std::string detail;  // first line of the error
};

struct OpNameStats {
  std::string name;
  int64_t calls = 0;             // per iteration
  double replay_ms = 0;          // per iteration, mean over measured iterations; -1 if not timed
  double original_ms = -1;       // per iteration, from the Kineto CPU spans; -1 if unknown
  // The same from the capture's host timeline (lightly profiled); -1 where it has none.
  double timeline_ms = -1;
};

// One lane of the replay: a stream of the original (from its Kineto trace), run as a stream on
// a GPU and as a thread of its own on the CPU.
struct LaneStats {
  int lane = 0;
  int64_t original_stream = -1;  // -1: none recorded (host-only ops, a trace without Kineto)
  int64_t ops = 0;               // steps planned on it
  double busy_ms = -1;           // per measured iteration: the time its ops took
};

// How the replay filled the integer tensors it prepares itself (indices, offsets, labels): with
// the values the capture saved beside the trace (workload.integer_data) where they fit, else at
// random within their recorded range or what their consumers index.
struct IntegerInputs {
  int64_t leaves = 0;                 // integer tensors the replay prepares itself
  int64_t recorded = 0;               // filled with the capture's saved values
  std::vector<std::string> rejected;  // saved values not used: "file: why"
};

// How the replay filled the float state read by ops whose time depends on its values
// (eg::TimeDependsOnValues: sqrt, pow, log, exp, division): with the shares of zeros, zero rows
// and subnormals of the capture's value profile (Op.input_values) where it has them, else
// uniformly as every other float input.
struct InputValueFills {
  int64_t inputs = 0;  // profiled inputs of such ops among the replayed ones
  int64_t leaves = 0;  // prepared tensors filled with their shares
};

// When one op ran in the last measured iteration, on the executor's clock.
struct OpTiming {
  int64_t op_id = 0;    // the op run (a recorded part, for a composite run as its parts)
  int lane = 0;         // kHostLane (-1) for communication on a multi-lane plan
  double start_ms = 0;  // from the iteration's start
  double duration_ms = 0;
};

struct ReplayResult {
  std::string device;
  std::string selection;         // what was replayed, e.g. "ProfilerStep#3"
  int num_threads = 0;
  // What fp32 matmuls multiplied in on a GPU: "tf32" where the original's GEMM kernels did,
  // else "ieee" (PyTorch's default).
  std::string fp32_matmul = "ieee";
  std::vector<double> iteration_ms;  // measured iterations only
  int64_t total_ops = 0;         // selected top-level ops
  int64_t replayed_ops = 0;
  std::map<std::string, int64_t> skipped_by_reason;
  std::vector<SkippedOp> skipped;
  std::vector<OpNameStats> per_op;   // sorted by replay time, descending
  int64_t outputs_checked = 0;   // produced tensors compared with the recorded shape and dtype
  int64_t outputs_mismatched = 0;
  std::vector<std::string> mismatches;  // the first few, described
  // Outputs of ops with data-dependent shapes (nonzero, unique, ...) that came out in another
  // shape than recorded and were replaced by stand-ins of the recorded shape (first iteration),
  // and the first few, described.
  int64_t outputs_stand_ins = 0;
  std::vector<std::string> stand_ins;
  int64_t preallocated_bytes = 0;
  int64_t storages_preallocated = 0;
  std::string inputs_sha256;     // of the prepared inputs' contents (CPU): checks the seed's effect
  IntegerInputs integer_inputs;
  InputValueFills value_fills;
  double setup_ms = 0;
  std::string heap;                       // RetainFreedHeap's answer, or "default"
  double page_faults_per_iteration = -1;  // minor faults of the process, per measured iteration
  std::string executor;                   // "cpu", "cuda"
  std::vector<LaneStats> lanes;
  int64_t cross_lane_waits = 0;      // event waits the plan holds, per iteration
  MemoryStats memory;                // the executor's allocator, over measured iterations
  int64_t allocated_at_start_bytes = 0;  // held when the first measured iteration began
  proto::SystemMetrics system;           // this process over the measured iterations, per one
  struct {
    HostGaps mode = HostGaps::kNone;  // as resolved: recorded, modelled or none
    eg::CaptureCost capture_cost;     // recorded: taken off the recorded gaps
    std::string capture_cost_from;  // "measured at setup", or the given figure's source
    std::array<double, eg::kIssuers> modelled_t1_us{};  // modelled: by eg::Issuer
    std::string modelled_from;                          // modelled: where they come from
    int64_t gaps = 0;            // delays inserted per iteration
    double ms = 0;               // their sum per iteration
    double own_ms = 0;           // of which the replay's own work filled, per measured iteration
  } host_gaps;
  int64_t estimated_peak_bytes = 0;  // prepared + the recorded sizes alive at once
  // Prepared leaves that required grad: the training step's parameters, over which its forward
  // recorded the autograd graph as the original's did (0: no training step, or no optimizer).
  int64_t parameters = 0;
  DeviceMetrics device_metrics;      // sampled during measured iterations (NVML on GPUs)
  bool per_op_timed = true;          // per-op replay_ms are measured (else -1)
  std::vector<OpTiming> timeline;    // the last measured iteration, when ops are timed
  std::string profile_path;          // the Kineto profile written, if asked
  // Empty when every iteration ran; else why the replay stopped early (an interruption, an
  // out-of-memory, an op that failed under --strict). iteration_ms holds the completed ones.
  std::string stop_reason;
  ReplayMode mode = ReplayMode::kFull;
  CommResult comm;
  // What the replay changed in the workload before planning: "portable" when it rewrote vendor
  // ops the device has no kernel for (eg::MakePortable).
  std::vector<proto::Transformation> transformations;
};

// Called after each iteration: (done, total, that iteration's milliseconds).
using ProgressFn = std::function<void(int, int, double)>;

// Replays `workload` as `options` say. Errors (before any iteration runs): InvalidInput for a
// selection that does not exist or tensors larger than this machine's memory, Unsupported for
// a device that is not available. Once iterations run, the result always comes back: an op that
// cannot be replayed is skipped and reported, and what stops the run early (options.cancel, an
// out-of-memory, the first failing op under options.strict) is set in result.stop_reason.
Result<ReplayResult> Replay(const proto::Workload& workload, const ReplayOptions& options,
                            const ProgressFn& progress = nullptr);

// The device Mimic picks when the user names none: "cuda" when this build has CUDA and a GPU
// is visible, "cpu" otherwise.
std::string BestDevice();

// The executor types compiled into this Mimic, each with the devices of its type present.
std::vector<ExecutorDevices> ListDevices();

// Version of the LibTorch linked in.
std::string TorchVersion();

}  // namespace mimic::replay
