// Predicting a workload's time on a platform: per-op time models chosen by op class from a
// table (model/src/op_models.cc), CPU overheads T1-T5, and an end-to-end simulation of the
// CPU thread(s), the device streams and the collectives (docs/model.md). Pure functions over
// immutable inputs; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "proto/platform.pb.h"
#include "proto/workload.pb.h"

namespace mimic::model {

struct PredictOptions {
  int64_t iteration =
      -1;             // ProfilerStep number; -1: the first step, else the whole trace (as replay)
  std::string label;  // a "## label ##" range instead of an iteration
  // Take T1-T5 (the CPU gaps around and between ops) from the workload's Kineto trace when it
  // has one; otherwise, or when false, from the platform's cpu_overheads.
  bool overheads_from_trace = true;
  int world_size = 0;  // ranks for collectives; 0: the workload's (or its process group's)
};

// One top-level op (the ops replay executes, eg::ReplayableOps), predicted.
struct OpPrediction {
  int64_t op_id = 0;
  std::string name;
  std::string op_class;     // eg::OpClassName of the op
  std::string model;        // the model that priced it: "gemm", "bandwidth", "collective", ...
  // What set its compute time (its longest leaf's, for an op with ops under it): "flops",
  // "bytes", "measured", or a kernel's own limit ("block_starts", "dependent_loads", ...: the
  // list in op_models.h, docs/cli.md); "" where nothing priced it (a view, a wait).
  std::string bound;
  double flops = 0;         // of the op and every op under it
  double bytes = 0;         // bytes moved, by the models' accounting
  double compute_us = 0;    // device (or CPU kernel) time
  double overhead_us = 0;   // CPU-side fixed cost: dispatch, launches
  double predicted_us = 0;  // what the op adds on its own timeline: compute + overhead
  double start_us = 0;      // in the simulated iteration, from its start
  double original_us = -1;  // the op's own recorded span (Kineto CPU span, or its kernels' time on
                            // a GPU); -1 unknown
  // Why no model sees (some of) its device work: "compiled code", "op without a model", "no
  // shapes recorded", ... ("" when the models see all of it). compute_us is then a floor.
  std::string unmodelled;
  // Its tensor arguments as recorded, in order (tensor lists left out): what a price depends on.
  struct Input {
    std::optional<std::vector<int64_t>> shape;  // none: an undefined tensor (an absent weight)
    std::string dtype;  // as torch spells it: "float32", "bfloat16", "int64", ...; "undefined"
  };
  std::vector<Input> inputs;
};

// Device busy time of part of the iteration: the union of the prediction's device intervals
// and of the recorded kernels' (where the trace recorded kernels); -1 where unknown.
struct GpuActive {
  double predicted_ms = -1;
  double original_ms = -1;
};

// The ops no model sees into (OpPrediction::unmodelled), reported apart from the rest.
struct UnmodelledShare {
  int64_t ops = 0;
  double predicted_ms = 0;                 // their device time as predicted: floors
  double original_gpu_active_ms = -1;      // their recorded kernels (union); -1 unknown
  std::map<std::string, int64_t> reasons;  // reason -> ops
};

struct ClassTime {
  int64_t ops = 0;
  double predicted_ms = 0;  // sum of predicted_us over the class's ops
  double original_ms = -1;  // sum of the recorded spans; -1 when none is known
  // GPU platforms: the union of the class's kernel intervals, predicted and (where the trace
  // recorded kernels) original; -1 when unknown.
  double predicted_gpu_active_ms = -1;
  double original_gpu_active_ms = -1;
};

struct Prediction {
  std::string platform;
  std::string selection;       // e.g. "ProfilerStep#1"
  double iteration_ms = 0;     // end to end: the simulated critical path of one iteration
  double gpu_active_ms = 0;    // union of device busy time (CPU platforms: the ops' compute time)
  int64_t ranks = 1;        // the ranks collectives are priced at (--world-size, else the trace's)
  int64_t collectives = 0;  // communication ops priced
  double comm_ms = 0;       // collective time: the union of the collectives' intervals
  double exposed_comm_ms = 0;  // collective time not hidden behind compute
  // The union of the recorded kernel intervals of the selected ops (Kineto trace linked); -1
  // when the workload recorded no kernels.
  double original_gpu_active_ms = -1;
  double cpu_overhead_ms = 0;  // host time that is not op compute (dispatch, launches, gaps)
  // CPU platforms: the minor page faults the original took per step (its capture's count,
  // OriginalRun.page_faults_per_iteration), each at the platform's cpu_overheads.page_fault_us,
  // in iteration_ms; 0 where either is unknown. The ops' models price memory already mapped.
  double page_fault_ms = 0;
  double page_faults = -1;  // the count it was priced at; -1 unknown
  // GPU platforms: device busy time without communication (collective ops' and NCCL kernels),
  // so that compute is judged on compute; and of the ops the models see into alone (neither
  // communication nor unmodelled).
  GpuActive compute, modelled;
  UnmodelledShare unmodelled;
  std::vector<OpPrediction> ops;
  std::map<std::string, ClassTime> by_class;  // by eg::OpClassName
  std::vector<std::string> notes;             // assumptions the models had to make
};

// Predicts one iteration of `w` on `p` (the iteration replay selects by default). Errors:
// InvalidInput for a selection that does not exist; Unsupported for a workload with no ops to
// predict.
Result<Prediction> Predict(const proto::Workload& w, const proto::Platform& p,
                           const PredictOptions& opts = {});

}  // namespace mimic::model

namespace mimic::model {

// The prediction as JSON (`mimic predict --json`; keys in docs/cli.md).
std::string PredictionToJson(const Prediction& p);

}  // namespace mimic::model
