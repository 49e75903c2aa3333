// Original vs replay vs prediction, side by side (mimic compare): the comparison record and
// its JSON and self-contained HTML renderings. Pure functions; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mimic::model {

// One row: the three sides in milliseconds (nullopt where a side is missing).
struct SideBySide {
  int64_t ops = 0;
  std::optional<double> original_ms, replay_ms, predicted_ms;
  // Device busy time: the union of the original's recorded kernel intervals (Kineto) and of
  // the prediction's device intervals; nullopt where a side is missing (CPU platforms, no kernels).
  std::optional<double> original_gpu_active_ms, predicted_gpu_active_ms;
};

// A span of one iteration's timeline strip, from the iteration's start.
struct Span {
  double start_ms = 0, duration_ms = 0;
  std::string op_class;
  std::string name;
};

// The ops no model sees into (model::UnmodelledShare), and the largest of them by name.
struct UnmodelledOps {
  int64_t ops = 0;
  double predicted_ms = 0;  // their predicted device time: floors
  std::optional<double> original_gpu_active_ms;
  std::map<std::string, int64_t> reasons;
  struct ByName {
    std::string name, reason;
    int64_t ops = 0;
    std::optional<double> original_ms;  // their recorded kernel time (sum)
    double predicted_ms = 0;
  };
  std::vector<ByName> by_name;  // largest recorded first
};

// CPU platforms: the minor page faults a step each side took, and the prediction priced at the
// replay's count instead of the original's. The count moves from run to run of one capture (on
// both sides: glibc's dynamic mmap and trim thresholds follow the process's history), so their
// difference is the heap's, not the model's.
struct PageFaults {
  std::optional<double> original, replay;  // per iteration
  double us_each = 0;                      // the platform's cpu_overheads.page_fault_us
  std::optional<double> predicted_ms_at_replays;
};

// Ops of one name and inputs on a GPU trace: their recorded kernel time against the predicted,
// per iteration, and what set the prediction (OpPrediction::bound).
struct OpGroup {
  std::string name, op_class;
  std::string inputs;  // the recorded tensor inputs: "float32[2048, 1024], float32[512]"
  std::string bound;   // its first op's limiter; "" where none
  int64_t ops = 0;
  double original_ms = 0, predicted_ms = 0;
};

struct Comparison {
  std::vector<std::pair<std::string, std::string>> context;  // host, device, input, platform, ...
  SideBySide end_to_end;
  PageFaults page_faults;  // us_each 0: not priced (GPU platforms, no count, no replay)
  // GPU active time (the *_gpu_active_ms fields) without communication kernels, and of the
  // ops the models see into alone: compute judged on compute.
  SideBySide compute, modelled;
  UnmodelledOps unmodelled;
  std::map<std::string, SideBySide> op_classes;
  // GPU traces: the groups of modelled compute ops (neither unmodelled nor communication) whose
  // predicted kernel time is farthest from the recorded, the largest |difference| first; at
  // most twelve, none on a CPU platform.
  std::vector<OpGroup> largest_differences;
  double exposed_comm_ms = 0;      // predicted
  std::string platform_name;       // the platform predicted for
  std::string platform_chosen_by;  // "--platform", or the device properties it was chosen from
  std::vector<Span> original_timeline, replay_timeline, predicted_timeline;
  // compare --profile: per op name, per iteration, both measured under the profiler: the
  // original's Kineto spans and the replay's own profile (ops = calls per iteration).
  std::map<std::string, SideBySide> profiled_ops;
  std::vector<std::string> notes;
};

// Signed relative error (a - b) / b; nullopt when a side is missing or b is not positive.
std::optional<double> RelativeError(std::optional<double> a, std::optional<double> b);

// Geometric mean of |error| over the op classes where both sides are known and differ;
// nullopt when there is none.
std::optional<double> GeomeanAbsError(const Comparison& c, std::optional<double> SideBySide::*a,
                                      std::optional<double> SideBySide::*b);

// The JSON report: context, end_to_end, op_classes, geomean_abs_error, timeline, notes
// (docs/cli.md lists the keys).
std::string RenderComparisonJson(const Comparison& c);

// One HTML file with inline CSS and JS, no network: a summary table, bar charts per op class,
// a timeline strip of one iteration (original, replay, prediction) and the context block.
std::string RenderComparisonHtml(const Comparison& c);

}  // namespace mimic::model
