// Batch-size scaling of a workload. The batch dimension is identified from the model's leaf
// inputs (tensors no op produces and no op writes: the batch, its labels, its indices; not
// parameters, which an optimizer writes or, without an optimizer step, AccumulateGrad receives
// a gradient of the shape of): of their leading dimensions, the one most tensors computed in
// the step lead with too. Their leading dimension is scaled (and factories the model calls with
// a size list holding the batch, an RNN's initial hidden state say), and every downstream tensor
// shape is re-derived by running the
// workload's ops on LibTorch's meta device (the operators' own shape semantics; an op without a
// meta kernel runs once on zero-filled CPU tensors instead, a vendor op with neither as its
// portable equivalent, an op recorded under autocast as autocast ran it). Each output keeps the
// dtype and memory layout the trace recorded: a batch changes sizes only. Not thread-safe (uses
// LibTorch's dispatcher, which is, but also process-wide grad mode).
#pragma once

#include <cstdint>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::synth {

struct BatchSpec {
  double factor = 0;   // new batch = old batch x factor (when batch is 0)
  int64_t batch = 0;   // the new batch size
};

struct BatchReport {
  int64_t old_batch = 0, new_batch = 0;
  int64_t leaves_scaled = 0;      // model inputs whose leading dimension changed
  int64_t tensors_reshaped = 0;   // table entries whose shape changed
  int64_t size_args_rewritten = 0;  // explicit size lists (view, reshape, expand, zeros, ...)
  int64_t cpu_fallbacks = 0;      // ops without a meta kernel, propagated on the CPU
  int64_t portable_equivalents = 0;  // vendor ops without either, run as their equivalent
};

// Scales the batch of a one-iteration workload (select one first). Explicit size lists (view,
// reshape, expand, ... arguments) cannot be derived from the operators' semantics. They are
// rewritten in ops that consume a tensor whose shape changed: a view-like op's list is
// regrouped against its input's new shape; a list equal to the recorded shape of a tensor that
// changed one way only takes its new shape; otherwise the entry that holds the batch (equal to
// it, else a multiple of it) is scaled. An op that fails with the rewritten list is retried
// with the recorded one; a replayed op that still fails refuses the result.
// Errors: InvalidInput when no batch dimension can be identified, the workload holds several
// iterations, or a replayed op's shapes cannot be propagated (naming the op).
Result<proto::Workload> ScaleBatch(const proto::Workload& w, const BatchSpec& spec,
                                   BatchReport* report = nullptr);

}  // namespace mimic::synth
