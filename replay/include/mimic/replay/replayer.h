// Operator-by-operator replay of a normalized workload through LibTorch's dispatcher.
// Replay() is not reentrant with itself (it sets LibTorch's global thread count and seed).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/eg/collective.h"
#include "mimic/replay/distributed.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

// What a replay runs: the compute ops and the collectives (full), the compute ops only, or the
// collectives only, on buffers of the recorded sizes, each run to completion before the next
// as nccl-tests does (comm).
enum class ReplayMode { kFull, kCompute, kComm };
const char* ReplayModeName(ReplayMode mode);

struct ReplayOptions {
  std::string device;  // "cpu"; empty: BestDevice() (CUDA devices arrive with the GPU replay)
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
  // Keep freed host memory in the heap (RetainFreedHeap, base/host.h) so host tensors do not
  // page-fault afresh each iteration; false leaves the C library's default (trimming).
  bool retain_heap = true;
  // Run a composite op (no kernel of its own) as the ops the trace recorded under it; false
  // runs it as itself, as LibTorch decomposes it without autograd.
  bool decompose = true;
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
  double replay_ms = 0;          // per iteration, mean over measured iterations
  double original_ms = -1;       // per iteration, from the Kineto CPU spans; -1 if unknown
};

struct ReplayResult {
  std::string device;
  std::string selection;         // what was replayed, e.g. "ProfilerStep#3"
  int num_threads = 0;
  std::vector<double> iteration_ms;  // measured iterations only
  int64_t total_ops = 0;         // selected top-level ops
  int64_t replayed_ops = 0;
  std::map<std::string, int64_t> skipped_by_reason;
  std::vector<SkippedOp> skipped;
  std::vector<OpNameStats> per_op;   // sorted by replay time, descending
  int64_t outputs_checked = 0;   // produced tensors compared with the recorded shape and dtype
  int64_t outputs_mismatched = 0;
  std::vector<std::string> mismatches;  // the first few, described
  int64_t preallocated_bytes = 0;
  int64_t storages_preallocated = 0;
  std::string inputs_sha256;     // of the prepared inputs' contents (CPU): checks the seed's effect
  double setup_ms = 0;
  std::string heap;                       // RetainFreedHeap's answer, or "default"
  double page_faults_per_iteration = -1;  // minor faults of the process, per measured iteration
  // Empty when every iteration ran; else why the replay stopped early (an interruption, an
  // out-of-memory, an op that failed under --strict). iteration_ms holds the completed ones.
  std::string stop_reason;
  ReplayMode mode = ReplayMode::kFull;
  CommResult comm;
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

// Version of the LibTorch linked in.
std::string TorchVersion();

}  // namespace mimic::replay
