// The replay's plan: the selected ops compiled once into steps that an executor runs each
// iteration with nothing parsed, hashed or allocated per op: the operator handle, the
// arguments built, where each input tensor comes from, the lane (stream) the op ran on in the
// original, the events that order lanes where the original's data or its recorded
// synchronization did, and the tensors that die after each step. Built by the planning thread;
// immutable while iterations run.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "comm.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"
#include "mimic/replay/replayer.h"
#include "proto/workload.pb.h"
#include "tensor_store.h"

namespace mimic::replay {

// One selected (top-level) op of the replay: what the report counts, times and skips.
struct TopOp {
  int op_index = 0;    // into workload.ops()
  int first_step = 0;  // its steps, consecutive
  int num_steps = 0;
  bool runs = false;      // planned to run (not skipped when planned)
  bool disabled = false;  // skipped from now on (it failed in an iteration)
};

// Where an op's output goes in the tensor table: a tensor's entry, or a tensor list's entries
// (-1: the recorded value is no tensor). Kept with the step, so that storing outputs reads no
// proto.
struct OutputSlot {
  int32_t entry = -1;
  std::vector<int32_t> items;
};

struct Step {
  enum class Kind : uint8_t { kOp, kDelay, kCollective, kWait };
  Kind kind = Kind::kOp;
  int op_index = 0;  // into workload.ops(): the op run (a recorded child, for a composite's part)
  int top = 0;       // into Plan::tops
  int lane = 0;
  int32_t event = -1;          // recorded after it: another lane waits for it
  std::vector<int32_t> waits;  // events to wait for before it runs
  std::vector<int32_t>
      complete_first;  // collective steps to complete before it (touches their buffers)
  // kOp
  std::optional<c10::OperatorHandle> handle;
  ops::CompiledArgs args;
  std::vector<InputSource> sources;  // where args.tensors[k] comes from
  std::vector<int32_t> releases;     // table entries whose value dies after it
  std::vector<OutputSlot> outputs;   // where its outputs go in the table, by position
  // Autograd on, as the original ran it: a training step's forward. The autograd engine and the
  // optimizer run their ops with it off. Ops read it: an LSTM's mkldnn_rnn_layer keeps the
  // workspace its backward reads only with it on.
  bool grad_mode = false;
  std::vector<int64_t> acquire;      // --lazy-alloc: prepared buffers to allocate before it
  std::vector<int64_t> drop;         // --lazy-alloc: prepared buffers to free after it
  bool check = false;  // after it, check the top op's recorded outputs (1st iteration)
  // Its outputs' shapes depend on its inputs' values (eg::HasDataDependentShape): an output of
  // another shape than the recorded one is replaced by a stand-in of the recorded shape.
  bool recorded_shapes = false;
  // Bytes of the intermediate storages it writes first: the fresh memory it takes.
  int64_t fresh_bytes = 0;
  // kDelay
  double delay_us = 0;
  bool host_gap = false;  // the original's host time before the op (not the op's own time)
  // kCollective / kWait
  int run = -1;  // the CommResult entry of a collective
  int in_entry = -1, out_entry = -1;
  CollectiveBuffers buffers;  // comm mode, and full mode when the op's own tensors don't fit
};

struct PlannedSkip {
  int top = 0;
  std::string reason;
  std::string detail;
};

struct Plan {
  std::vector<TopOp> tops;
  std::vector<Step> steps;
  std::vector<PlannedSkip> skipped;  // ops that cannot run at all, found while planning
  int lanes = 1;
  int events = 0;
  std::vector<int64_t> lane_streams;  // the original's stream of each lane (-1: none recorded)
  // What the replay needs at its peak, by the trace's own sizes: the prepared buffers (all of
  // them, or with --lazy-alloc those alive at once) and the intermediates alive at once.
  int64_t peak_bytes = 0;
  int64_t peak_bytes_lazy = 0;
  int64_t host_gaps = 0;  // delays inserted for the original's host time
  // Prepared leaves that require grad: a training step's parameters (its forward reads them,
  // its optimizer updates them), over which the forward records the autograd graph.
  int64_t parameters = 0;
  double host_gap_us = 0;
};

// The first of a top op's steps that runs the op (after the host gap before it, if any).
inline int FirstOpStep(const Plan& plan, const TopOp& top) {
  return top.first_step + (top.num_steps > 0 && plan.steps[top.first_step].host_gap);
}

struct PlanInputs {
  const proto::Workload& workload;
  const eg::OpTree& tree;
  const std::vector<int>& selected;  // top-level ops, in replay order
  const ReplayOptions& options;
  c10::Device device;
  bool communicator = false;  // a multi-rank replay: collectives are issued
  double step_start_us = -1;  // the selected step's start on the Kineto clock (-1: unknown)
};

// Compiles `in.selected` into steps. Ops that cannot run (no operator, an argument Mimic cannot
// build, a compiled kernel, a collective without process groups) are listed in skipped.
// `store` is planned here (TensorStore::Plan) but not allocated. Errors: those of the store's
// planning.
Result<Plan> BuildPlan(const PlanInputs& in, TensorStore& store);

}  // namespace mimic::replay
