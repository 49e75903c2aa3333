// The replay loop: plan the selected ops once (plan.h: operators resolved, arguments built,
// tensors resolved to slots, lanes and events), prepare the leaf tensors, then run warm-up and
// measured iterations through the executor of the device. An op that cannot be replayed is
// skipped, counted by reason and listed (or, with --strict, stops the replay).

#include "mimic/replay/replayer.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/ones.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <unordered_map>

#include "comm.h"
#include "mimic/base/file.h"
#include "mimic/base/host.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/host_timeline.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"
#include "mimic/replay/executor.h"
#include "mimic/replay/page_faults.h"
#include "plan.h"
#include "profile.h"
#include "tensor_store.h"

namespace mimic::replay {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// LibTorch reports a failed CPU allocation as a plain c10::Error ("DefaultCPUAllocator: can't
// allocate memory: ... Error code 12 (Cannot allocate memory)"), a GPU one as
// c10::OutOfMemoryError; either stops the replay.
bool IsOutOfMemory(const std::string& what) {
  for (const char* sign :
       {"out of memory", "can't allocate memory", "not enough memory", "Cannot allocate memory"})
    if (what.find(sign) != std::string::npos) return true;
  return false;
}

std::string MiB(int64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// The original's fp32 matmuls, for the length of a replay. PyTorch multiplies them in IEEE fp32
// unless the job allowed TF32 (torch.backends.cuda.matmul.allow_tf32); its recorded GEMM
// kernels show which (eg::IsTf32Kernel), and the replay sets the same. cuDNN's convolutions
// use TF32 by default in both, and no trace says otherwise.
class MatmulPrecision {
 public:
  explicit MatmulPrecision(const proto::Workload& w)
      : before_(at::globalContext().allowTF32CuBLAS()),
        tf32_(std::any_of(w.ops().begin(), w.ops().end(), eg::LaunchedTf32Kernel)) {
    if (tf32_) at::globalContext().setAllowTF32CuBLAS(true);
  }
  ~MatmulPrecision() { at::globalContext().setAllowTF32CuBLAS(before_); }
  MatmulPrecision(const MatmulPrecision&) = delete;
  MatmulPrecision& operator=(const MatmulPrecision&) = delete;

  const char* name() const { return tf32_ || before_ ? "tf32" : "ieee"; }

 private:
  const bool before_;
  const bool tf32_;
};

// Busy-waits until `until`.
void SpinUntil(Clock::time_point until) {
  while (Clock::now() < until) {
  }
}

Clock::time_point After(Clock::time_point t, double us) {
  return t +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(us));
}

bool SameShape(const at::Tensor& t, const proto::Tensor& rec) {
  if (static_cast<int>(t.dim()) != rec.shape_size()) return false;
  for (int i = 0; i < rec.shape_size(); ++i)
    if (t.size(i) != rec.shape(i)) return false;
  return true;
}

// A collective issued and not yet waited for.
struct Pending {
  std::shared_ptr<PendingWork> work;
  int step;
  Clock::time_point issued;
};

// What went wrong in a step, found on whichever lane ran it; the driving thread reads it once
// the lanes have joined.
struct Failure {
  int step = 0;
  bool stop = false;  // the replay must stop (out of memory, --strict); else the op is skipped
  std::string reason;
  std::string detail;
};

class Runner {
 public:
  Runner(const proto::Workload& w, const eg::OpTree& tree, const ReplayOptions& options,
         std::unique_ptr<Executor> executor, ReplayResult& result, Communicator* comm)
      : w_(w),
        tree_(tree),
        options_(options),
        executor_(std::move(executor)),
        result_(result),
        comm_(comm),
        store_(w, executor_->device(), executor_->MakeGenerator(options.seed)) {}

  Executor& executor() { return *executor_; }

  // Plans `selected`, refuses a replay that cannot fit the device, prepares the tensors and
  // the executor. Ops that cannot run are skipped (under --strict the first of them sets
  // stop_reason, and no iteration runs).
  Status Plan(const std::vector<int>& selected, double step_start_us) {
    MIMIC_ASSIGN_OR_RETURN(plan_, BuildPlan({w_, tree_, selected, options_, executor_->device(),
                                             comm_ != nullptr, step_start_us},
                                            store_));
    // The capture's cost is taken off recorded gaps only; otherwise none was (not the options'
    // "measure it" sentinel, -1).
    const bool recorded = options_.host_gaps == HostGaps::kRecorded;
    result_.host_gaps = {options_.host_gaps,
                         recorded ? options_.capture_cost : eg::CaptureCost{},
                         recorded ? options_.capture_cost_source : std::string(),
                         options_.modelled_t1_us,
                         options_.modelled_t1_source,
                         plan_.host_gaps,
                         plan_.host_gap_us / 1000};
    disabled_.assign(plan_.tops.size(), 0);
    checks_.assign(plan_.steps.size(), {});
    after_call_ms_.assign(plan_.steps.size(), 0.0);
    before_call_ms_.assign(plan_.steps.size(), 0.0);
    stacks_.resize(plan_.lanes);
    composites_.resize(plan_.lanes);
    idle_since_.resize(plan_.lanes + 1);
    ResetOpTimes();
    for (const PlannedSkip& s : plan_.skipped) {
      const proto::Op& op = w_.ops(plan_.tops[s.top].op_index);
      if (options_.strict) return StopBeforeStart(op, s.reason, s.detail);
      result_.skipped_by_reason[s.reason]++;
      result_.skipped.push_back({op.id(), op.name(), s.reason, s.detail});
    }
    for (const Step& s : plan_.steps)
      if (s.kind == Step::Kind::kCollective)
        result_.comm.collectives.push_back(
            {w_.ops(s.op_index).id(), w_.ops(s.op_index).collective(), {}});
    MIMIC_RETURN_IF_ERROR(CheckMemory());
    MIMIC_RETURN_IF_ERROR(store_.Allocate(options_.lazy_alloc));
    return executor_->Configure(plan_.lanes, plan_.events, static_cast<int>(plan_.steps.size()),
                                options_.per_op_device_time);
  }

  bool stopped_before_start() const { return !result_.stop_reason.empty(); }

  // Takes `faults` page faults an iteration on `pages`, before the ops that write fresh
  // intermediates, in proportion to their bytes (where the original's heap took fresh memory),
  // and hands the pages back as the iteration ends.
  void TakePageFaults(FreshPages* pages, int64_t faults) {
    fresh_pages_ = pages;
    fault_pages_.assign(plan_.steps.size(), 0);
    double total = 0, sum = 0;
    for (const Step& s : plan_.steps) total += static_cast<double>(s.fresh_bytes);
    if (!(total > 0)) return;
    int64_t given = 0;
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      sum += static_cast<double>(plan_.steps[i].fresh_bytes);
      const auto upto =
          static_cast<int64_t>(std::llround(static_cast<double>(faults) * sum / total));
      fault_pages_[i] = upto - given, given = upto;
    }
  }

  // Runs one iteration; returns its time on the executor's clock. Per-op times go to op_ms_
  // when `measure`. An error means the replay must stop (cancelled, out of memory, --strict).
  Result<double> Iterate(bool first, bool measure) {
    store_.NewIteration();
    first_ = first;
    measuring_ = measure;
    executor_->BeginIteration();
    idle_since_.assign(idle_since_.size(), Clock::now());
    for (int i = 0;
         i < static_cast<int>(plan_.steps.size()) && !stopping_.load(std::memory_order_relaxed);
         ++i) {
      if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) {
        Stop(i, options_.cancel_reason);
        break;
      }
      const Step& s = plan_.steps[i];
      for (int c : s.complete_first) MIMIC_RETURN_IF_ERROR(CompleteIfPending(c, measure));
      executor_->Submit(s.lane, s.waits, Work{&Runner::RunStepThunk, this, i}, s.event, i);
    }
    while (!pending_.empty() && !stopping_.load()) MIMIC_RETURN_IF_ERROR(Complete(0, measure));
    if (fresh_pages_) {  // once the lanes are done writing them
      executor_->Synchronize();
      fresh_pages_->Release();
    }
    const double ms = executor_->EndIteration();
    MIMIC_RETURN_IF_ERROR(TakeFailures());
    if (first) TakeChecks();
    if (measure) AddOpTimes();
    if (comm_) result_.comm.issued = std::exchange(iteration_issued_, {});
    ++iteration_;
    return ms;
  }

  void Finish(int measured_iters) {
    int64_t replayed = 0;
    for (size_t t = 0; t < plan_.tops.size(); ++t) replayed += plan_.tops[t].runs && !disabled_[t];
    result_.total_ops = static_cast<int64_t>(plan_.tops.size());
    result_.replayed_ops = replayed;
    if (measured_iters > 0)
      result_.host_gaps.own_ms =
          std::accumulate(gap_own_us_.begin(), gap_own_us_.end(), 0.0) / 1000 / measured_iters;
    result_.preallocated_bytes = store_.prepared_bytes();
    result_.storages_preallocated = store_.prepared_storages();
    result_.inputs_sha256 = store_.inputs_sha256();
    result_.integer_inputs = store_.integer_inputs();
    result_.value_fills = store_.value_fills();
    result_.outputs_stand_ins = stand_in_count_;
    result_.stand_ins = stand_ins_;
    result_.estimated_peak_bytes = options_.lazy_alloc ? plan_.peak_bytes_lazy : plan_.peak_bytes;
    result_.parameters = plan_.parameters;
    std::unordered_map<std::string, OpNameStats> by_name;
    for (size_t t = 0; t < plan_.tops.size(); ++t) {
      const proto::Op& op = w_.ops(plan_.tops[t].op_index);
      OpNameStats& s = by_name[op.name()];
      s.name = op.name();
      ++s.calls;
      if (plan_.tops[t].runs && measured_iters > 0) s.replay_ms += op_ms_[t] / measured_iters;
      if (op.has_cpu_span())
        s.original_ms = std::max(s.original_ms, 0.0) + op.cpu_duration_us() / 1000.0;
      if (op.has_timeline_start_us())
        s.timeline_ms =
            std::max(s.timeline_ms, 0.0) + TimelineOwnUs(plan_.tops[t].op_index) / 1000.0;
    }
    for (auto& [name, s] : by_name) {
      if (!per_op_timed_) s.replay_ms = -1;
      result_.per_op.push_back(s);
    }
    std::sort(result_.per_op.begin(), result_.per_op.end(),
              [](const OpNameStats& a, const OpNameStats& b) { return a.replay_ms > b.replay_ms; });
    for (int l = 0; l < plan_.lanes; ++l) {
      LaneStats lane{l, plan_.lane_streams[l], 0, -1};
      for (const Step& s : plan_.steps) lane.ops += s.lane == l;
      if (per_op_timed_ && measured_iters > 0) lane.busy_ms = lane_ms_[l] / measured_iters;
      result_.lanes.push_back(lane);
    }
    for (const Step& s : plan_.steps)
      result_.cross_lane_waits += static_cast<int64_t>(s.waits.size());
    result_.per_op_timed = per_op_timed_;
  }

  // Op `index`'s span on the capture's host timeline less Kineto's cost at the events inside it:
  // the start and end of each op under it that the timeline matched (ops of other threads in
  // the same time take no part). Its own two ends' cost lies in the gaps beside it, which are
  // read less theirs. Where the timeline's cost per event is unknown (0), the span as recorded.
  double TimelineOwnUs(int index) const {
    int64_t inside = 0;
    tree_.ForEachDescendant(index, [&](int c) { inside += w_.ops(c).has_timeline_start_us(); });
    const bool backward = eg::IssuerOf(w_, tree_, index) == eg::Issuer::kBackward;
    const double cost = 2 * static_cast<double>(inside) *
                        std::max(options_.capture_cost.TimelineBoundaryUs(backward), 0.0);
    return std::max(w_.ops(index).timeline_duration_us() - cost, 0.0);
  }

  void ResetOpTimes() {
    op_ms_.assign(plan_.tops.size(), 0.0);
    lane_ms_.assign(plan_.lanes, 0.0);
    gap_own_us_.assign(plan_.lanes + 1, 0.0);
  }

 private:
  // Under --strict, an op that cannot run stops the replay before it starts: the report says
  // which (exit 1), as it would had the op failed in an iteration.
  Status StopBeforeStart(const proto::Op& op, const std::string& reason,
                         const std::string& detail) {
    result_.stop_reason = StrictMessage(op, reason, detail);
    result_.skipped_by_reason[reason]++;
    result_.skipped.push_back({op.id(), op.name(), reason, detail});
    return Status::Ok();
  }

  static std::string StrictMessage(const proto::Op& op, const std::string& reason,
                                   const std::string& detail) {
    return "op " + std::to_string(op.id()) + " (" + op.name() +
           ") cannot be replayed (--strict): " + reason + ": " + detail;
  }

  // Refuses, before anything is allocated, a replay whose recorded sizes cannot fit the
  // device's available memory.
  Status CheckMemory() const {
    const int64_t available = executor_->AvailableMemory();
    const int64_t needed = options_.lazy_alloc ? plan_.peak_bytes_lazy : plan_.peak_bytes;
    if (available <= 0 || needed <= available) return Status::Ok();
    std::string msg = "the replay needs " + MiB(needed) + " at its peak (" +
                      MiB(store_.planned_bytes()) + " of prepared inputs" +
                      (options_.lazy_alloc ? ", allocated when first used" : "") +
                      ", by the trace's recorded sizes), more than this machine's " +
                      MiB(available) + " available on " + executor_->Describe();
    if (!options_.lazy_alloc && plan_.peak_bytes_lazy <= available)
      msg += "; --lazy-alloc would need " + MiB(plan_.peak_bytes_lazy);
    return Status::InvalidInput(msg);
  }

  static void RunStepThunk(void* self, int32_t step) { static_cast<Runner*>(self)->RunStep(step); }

  // Runs on the step's lane: never throws.
  void RunStep(int32_t i) {
    const Step& s = plan_.steps[i];
    if (stopping_.load(std::memory_order_relaxed) || disabled_[s.top]) return;
    const Clock::time_point entered = Clock::now();
    for (int64_t key : s.acquire) store_.Acquire(key);
    switch (s.kind) {
      case Step::Kind::kDelay:
        if (GapEndsAtCall(i)) break;  // the op's step waits it out, its stack prepared
        if (s.host_gap) {
          WaitHostGap(s.lane, s.delay_us);
        } else {
          SpinUntil(After(Clock::now(), s.delay_us));
          Idle(s.lane);
        }
        break;
      case Step::Kind::kCollective:
      case Step::Kind::kWait:
        RunCollective(i);
        Idle(s.lane);
        break;
      case Step::Kind::kOp:
        PrepareCall(i);
        before_call_ms_[i] = MsSince(entered);
        if (fresh_pages_) FaultInOnIntraOpThreads(*fresh_pages_, fault_pages_[i]);
        if (options_.profile_path.empty()) {
          RunOp(i);
        } else {
          ProfileComposite(i, /*begin=*/true);
          RunOp(i);
          ProfileComposite(i, /*begin=*/false);
        }
        break;
    }
    for (int64_t key : s.drop) store_.Drop(key);
  }

  // The op's arguments on its lane's stack, then the rest of the host gap before it where that
  // gap waits on the same lane: the original parsed its arguments inside its gap (Python, the
  // autograd engine), so the replay's preparing them fills the gap too.
  void PrepareCall(int32_t i) {
    const Step& s = plan_.steps[i];
    ops::FillStack(
        s.args, [&](size_t k) { return store_.Get(s.sources[k]); }, &stacks_[s.lane]);
    if (i > 0 && GapEndsAtCall(i - 1)) WaitHostGap(s.lane, plan_.steps[i - 1].delay_us);
  }

  // Whether step `i` is a host gap that the next step, an op on the same lane, waits out once
  // its stack is prepared (PrepareCall); on several lanes the gaps wait on the driving thread.
  bool GapEndsAtCall(size_t i) const {
    const std::vector<Step>& steps = plan_.steps;
    return steps[i].host_gap && i + 1 < steps.size() && steps[i + 1].kind == Step::Kind::kOp &&
           steps[i + 1].lane == steps[i].lane;
  }

  // The host thread of `lane` has just finished issuing work: a host gap after it counts from
  // now (returned).
  Clock::time_point Idle(int lane) {
    return idle_since_[executor_->HostThreadOf(lane)] = Clock::now();
  }

  // A host gap is the original's host time between its thread's ops, no op running: the
  // replay's own work since its thread's last op (storing outputs, freeing dead tensors, the
  // loop, and where the gap ends at the next op's call, preparing its arguments) fills the gap
  // first, as the original's Python and autograd engine filled it, and it spins for the rest.
  // Its own work beyond the gap still adds to the step.
  void WaitHostGap(int lane, double delay_us) {
    const int thread = executor_->HostThreadOf(lane);
    const Clock::time_point now = Clock::now(), until = After(idle_since_[thread], delay_us);
    if (measuring_)
      gap_own_us_[thread] += std::min(
          delay_us, std::chrono::duration<double, std::micro>(now - idle_since_[thread]).count());
    SpinUntil(until);
    // With several lanes the gaps wait on the driving thread and the ops run on their lanes'
    // threads: the next gap there counts from this one's end.
    Idle(lane);
  }

  // Under --profile, a composite run as its recorded parts is one cpu_op of its own name
  // around them, as in the original's profile.
  void ProfileComposite(int32_t i, bool begin) {
    const Step& s = plan_.steps[i];
    const TopOp& top = plan_.tops[s.top];
    if (s.op_index == top.op_index) return;  // the op runs as itself
    std::unique_ptr<at::RecordFunction>& open = composites_[s.lane];
    if (begin && i == FirstOpStep(plan_, top)) {
      open = std::make_unique<at::RecordFunction>(at::RecordScope::FUNCTION);
      if (open->isActive()) open->before(w_.ops(top.op_index).name().c_str());
    } else if (!begin && s.check) {
      open.reset();
    }
  }

  void RunOp(int32_t i) {
    const Step& s = plan_.steps[i];
    const c10::AutoGradMode grad_mode(s.grad_mode);
    torch::jit::Stack& stack = stacks_[s.lane];
    Clock::time_point called{};
    try {
      s.handle->callBoxed(&stack);
      called = Idle(s.lane);
    } catch (const c10::OutOfMemoryError& e) {
      return OutOfMemory(i, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      if (IsOutOfMemory(e.what_without_backtrace()))
        return OutOfMemory(i, e.what_without_backtrace());
      return Fail(i, "exception", FirstLine(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      if (IsOutOfMemory(e.what())) return OutOfMemory(i, e.what());
      return Fail(i, "exception", FirstLine(e.what()));
    }
    if (s.recorded_shapes) KeepRecordedShapes(stack, w_.ops(s.op_index));
    for (size_t k = 0; k < stack.size() && k < s.outputs.size(); ++k)
      Register(stack[k], s.outputs[k]);
    stack.clear();
    if (first_ && s.check) CheckOutputs(i);
    for (int32_t e : s.releases) store_.Release(e);
    after_call_ms_[i] = MsSince(called);
  }

  // An op whose output shapes depend on its inputs' values (nonzero, unique, ...) computed on
  // the replay's values: outputs of another shape than recorded, which the ops after it cannot
  // take, are replaced by stand-ins of the recorded shape (counted in the first iteration).
  void KeepRecordedShapes(torch::jit::Stack& stack, const proto::Op& op) {
    for (size_t k = 0; k < stack.size() && k < static_cast<size_t>(op.outputs_size()); ++k) {
      const proto::Value& rec = op.outputs(static_cast<int>(k));
      if (!stack[k].isTensor() || rec.kind_case() != proto::Value::kTensor || rec.tensor() < 0)
        continue;
      const at::Tensor& t = stack[k].toTensor();
      if (!t.defined() || SameShape(t, w_.tensors(rec.tensor()))) continue;
      if (first_) {
        std::lock_guard<std::mutex> lock(failures_mu_);
        if (stand_ins_.size() < 20)
          stand_ins_.push_back("op " + std::to_string(op.id()) + " (" + op.name() + ") made " +
                               c10::str(t.sizes()) + ", recorded " +
                               c10::str(c10::IntArrayRef(w_.tensors(rec.tensor()).shape().data(),
                                                         w_.tensors(rec.tensor()).shape_size())));
        ++stand_in_count_;
      }
      stack[k] = store_.StandIn(rec.tensor());
    }
  }

  void Register(const c10::IValue& iv, const OutputSlot& slot) {
    if (iv.isTensor() && slot.entry >= 0) {
      if (iv.toTensor().defined()) store_.Put(slot.entry, iv.toTensor());
    } else if (iv.isTensorList()) {
      const auto list = iv.toTensorList();
      for (size_t k = 0; k < list.size() && k < slot.items.size(); ++k) {
        const at::Tensor t = list.get(k);
        if (slot.items[k] >= 0 && t.defined()) store_.Put(slot.items[k], t);
      }
    }
  }

  // Compares the tensors now registered for the top op's recorded outputs with their records.
  void CheckOutputs(int32_t i) {
    Check& c = checks_[i];
    const proto::Op& top = w_.ops(plan_.tops[plan_.steps[i].top].op_index);
    const std::string device = executor_->device().str();
    for (int k = 0; k < top.outputs_size(); ++k)
      eg::ForEachTensor(top.outputs(k), [&](int entry) {
        const at::Tensor t = store_.Get(entry);
        const proto::Tensor& rec = w_.tensors(entry);
        if (!t.defined() || (eg::OutputShapeIsTheDevices(top.name(), k) &&
                             eg::TargetOf(rec.device()) != eg::TargetOf(device)))
          return;
        ++c.checked;
        c10::ScalarType expected;
        const bool dtype_ok =
            !ops::ToScalarType(rec.dtype(), &expected) || t.scalar_type() == expected;
        if (SameShape(t, rec) && dtype_ok) return;
        c.mismatches.push_back("tensor " + std::to_string(rec.tensor_id()) + ": replayed " +
                               c10::toString(t.scalar_type()) + std::string(" ") +
                               c10::str(t.sizes()) + ", recorded " + eg::TypeName(w_, rec.type()) +
                               " " +
                               c10::str(c10::IntArrayRef(rec.shape().data(), rec.shape_size())));
      });
  }

  void OutOfMemory(int32_t i, const std::string& what) {
    const proto::Op& op = w_.ops(plan_.tops[plan_.steps[i].top].op_index);
    Stop(i, "out of memory in op " + std::to_string(op.id()) + " (" + op.name() + ") on " +
                executor_->Describe() + ": " + FirstLine(what) +
                (options_.lazy_alloc
                     ? ""
                     : "; --lazy-alloc allocates the prepared inputs only while they are used"));
  }

  // The op of step `i` cannot be replayed: it is skipped from now on (its remaining parts in
  // this iteration too); under --strict the replay stops.
  void Fail(int32_t i, const std::string& reason, const std::string& detail) {
    const int top = plan_.steps[i].top;
    if (options_.strict)
      return Stop(i, StrictMessage(w_.ops(plan_.tops[top].op_index), reason, detail));
    disabled_[top] = 1;  // its later parts run on this lane, after this
    std::lock_guard<std::mutex> lock(failures_mu_);
    failures_.push_back({i, false, reason, detail});
  }

  void Stop(int32_t i, const std::string& why) {
    stopping_.store(true);
    std::lock_guard<std::mutex> lock(failures_mu_);
    failures_.push_back({i, true, "", why});
  }

  // After the lanes joined: skips become reported skips, a stop becomes the replay's error.
  Status TakeFailures() {
    std::vector<Failure> failures;
    {
      std::lock_guard<std::mutex> lock(failures_mu_);
      failures.swap(failures_);
    }
    std::sort(failures.begin(), failures.end(),
              [](const Failure& a, const Failure& b) { return a.step < b.step; });
    for (const Failure& f : failures) {
      if (f.stop) return Status::Internal(f.detail);
      const proto::Op& op = w_.ops(plan_.tops[plan_.steps[f.step].top].op_index);
      result_.skipped_by_reason[f.reason]++;
      result_.skipped.push_back({op.id(), op.name(), f.reason, f.detail});
    }
    return Status::Ok();
  }

  void TakeChecks() {
    for (Check& c : checks_) {
      result_.outputs_checked += c.checked;
      result_.outputs_mismatched += static_cast<int64_t>(c.mismatches.size());
      for (std::string& m : c.mismatches)
        if (result_.mismatches.size() < 20) result_.mismatches.push_back(std::move(m));
      c = {};
    }
  }

  // An op's time: on a host clock its call's, its step's less what the replay did before and
  // after it (preparing the arguments, waiting out the host gap; storing outputs, freeing the
  // tensors that died with it): the original did that between ops, in Python or the autograd
  // engine, where the host gaps hold it.
  double OpMs(size_t i, const WorkTime& t) const {
    if (!executor_->TimesWorkOnHost()) return t.duration_ms;
    return std::max(0.0, t.duration_ms - before_call_ms_[i] - after_call_ms_[i]);
  }

  void AddOpTimes() {
    const std::vector<WorkTime>& times = executor_->work_times();
    bool any = false;
    result_.timeline.clear();
    for (size_t i = 0; i < plan_.steps.size() && i < times.size(); ++i) {
      if (times[i].start_ms < 0 || plan_.steps[i].host_gap) continue;
      any = true;
      const double ms = OpMs(i, times[i]);
      op_ms_[plan_.steps[i].top] += ms;
      if (plan_.steps[i].lane >= 0) lane_ms_[plan_.steps[i].lane] += ms;
      result_.timeline.push_back(
          {w_.ops(plan_.steps[i].op_index).id(), plan_.steps[i].lane, times[i].start_ms, ms});
    }
    per_op_timed_ = any || plan_.steps.empty();
  }

  // --- Collectives: always on lane 0, the driving thread.

  // The tensors a collective works on: in full mode the op's own (so that the ops after it
  // read what it wrote), else flat buffers of the recorded sizes, made once.
  CollectiveBuffers BuffersFor(Step& s) {
    const proto::Collective& c = w_.ops(s.op_index).collective();
    if (options_.mode == ReplayMode::kFull) {
      auto flat = [&](int entry, int64_t numel) -> at::Tensor {
        if (entry < 0) return {};
        at::Tensor t = store_.Get(entry);
        return t.defined() && t.numel() == numel && t.is_contiguous() ? t.view(-1) : at::Tensor();
      };
      CollectiveBuffers b{flat(s.in_entry, c.in_elems()), WritesInPlace(c.type())
                                                              ? at::Tensor()
                                                              : flat(s.out_entry, c.out_elems())};
      if (WritesInPlace(c.type())) b.output = b.input;
      if (b.input.defined() && b.output.defined()) return b;
    }
    if (!s.buffers.input.defined()) {
      c10::ScalarType dtype = c10::kFloat;
      if (!ops::ToScalarType(c.dtype(), &dtype)) dtype = c10::kFloat;
      const auto opts = at::TensorOptions().dtype(dtype).device(executor_->device());
      s.buffers.input = at::ones({std::max<int64_t>(c.in_elems(), 0)}, opts);
      s.buffers.output = WritesInPlace(c.type())
                             ? s.buffers.input
                             : at::ones({std::max<int64_t>(c.out_elems(), 0)}, opts);
    }
    return s.buffers;
  }

  std::string Describe(const Step& s) const {
    const proto::Op& op = w_.ops(s.op_index);
    return std::string(eg::CollectiveTypeName(op.collective().type())) + " (op " +
           std::to_string(op.id()) + " " + op.name() + ", " +
           std::to_string(eg::CollectiveBytes(op.collective())) + " bytes on group \"" +
           op.collective().process_group() + "\") in iteration " + std::to_string(iteration_);
  }

  void RunCollective(int32_t i) {
    Step& s = plan_.steps[i];
    const proto::Op& op = w_.ops(s.op_index);
    Status st = Status::Ok();
    if (s.kind == Step::Kind::kWait) {
      for (size_t k = 0; k < pending_.size(); ++k)
        if (w_.ops(plan_.steps[pending_[k].step].op_index).id() == op.collective().waits_for()) {
          st = Complete(k, measuring_);
          break;
        }
    } else {
      const CollectiveBuffers b = BuffersFor(s);
      comm_->SetProgress(Describe(s));
      const auto issued = Clock::now();
      Result<std::shared_ptr<PendingWork>> work = comm_->Issue(op.collective(), b);
      if (!work.ok()) return Fail(i, "unsupported_collective", work.status().message());
      pending_.push_back({std::move(*work), i, issued});
      // comm mode runs each collective alone, as nccl-tests does; full mode keeps the job's
      // overlap: an asynchronous collective ends at its wait, or before an op touches what it
      // writes.
      if (options_.mode == ReplayMode::kComm || !op.collective().async())
        st = Complete(pending_.size() - 1, measuring_);
    }
    if (!st.ok()) Stop(i, st.message());
  }

  Status CompleteIfPending(int step, bool measure) {
    for (size_t k = 0; k < pending_.size(); ++k)
      if (pending_[k].step == step) return Complete(k, measure);
    return Status::Ok();
  }

  // Waits for pending_[k] and records its time.
  Status Complete(size_t k, bool measure) {
    Pending done = std::move(pending_[k]);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(k));
    const Step& s = plan_.steps[done.step];
    MIMIC_RETURN_IF_ERROR(comm_->Wait(done.work, Describe(s)));
    if (options_.mode == ReplayMode::kComm)
      executor_->Synchronize();  // a GPU backend's wait orders streams only
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - done.issued).count();
    if (measure) result_.comm.collectives[s.run].replay_us.push_back(us);
    eg::AddCollective(iteration_issued_, w_.ops(s.op_index).collective());
    return Status::Ok();
  }

  struct Check {
    int64_t checked = 0;
    std::vector<std::string> mismatches;
  };

  const proto::Workload& w_;
  const eg::OpTree& tree_;
  const ReplayOptions& options_;
  std::unique_ptr<Executor> executor_;
  ReplayResult& result_;
  Communicator* comm_;  // null: a single-process replay
  TensorStore store_;
  mimic::replay::Plan plan_;
  std::vector<torch::jit::Stack> stacks_;                        // per lane
  std::vector<std::unique_ptr<at::RecordFunction>> composites_;  // per lane, under --profile
  std::vector<char> disabled_;                                   // per top op
  std::vector<Check> checks_;                                    // per step, first iteration
  std::vector<double> op_ms_, lane_ms_;
  // Per host thread (Executor::HostThreadOf): when it last finished issuing work, and the
  // replay's own time inside host gaps over the measured iterations.
  std::vector<Clock::time_point> idle_since_;
  std::vector<double> gap_own_us_;
  std::vector<double> before_call_ms_;  // per step: its stack's preparation and the gap's rest
  std::vector<double> after_call_ms_;   // per step: the replay's own work after its op's call
  FreshPages* fresh_pages_ = nullptr;  // TakePageFaults
  std::vector<int64_t> fault_pages_;   // per step: pages to fault before it
  bool per_op_timed_ = true;
  std::mutex failures_mu_;
  std::vector<Failure> failures_;
  std::atomic<bool> stopping_{false};
  std::vector<std::string> stand_ins_;  // first iteration (under failures_mu_)
  int64_t stand_in_count_ = 0;
  bool first_ = false;
  bool measuring_ = false;
  std::vector<Pending> pending_;
  eg::CollectiveTotals iteration_issued_;
  int64_t iteration_ = 0;
};

// The result of several concurrent tenants (synth's --compose concurrent), merged.
void Merge(const ReplayResult& p, bool several, bool comm, ReplayResult& result,
           std::map<std::string, OpNameStats>& by_name) {
  result.total_ops += p.total_ops;
  result.replayed_ops += p.replayed_ops;
  for (const auto& [reason, n] : p.skipped_by_reason) result.skipped_by_reason[reason] += n;
  result.skipped.insert(result.skipped.end(), p.skipped.begin(), p.skipped.end());
  result.outputs_checked += p.outputs_checked;
  result.outputs_mismatched += p.outputs_mismatched;
  result.outputs_stand_ins += p.outputs_stand_ins;
  result.stand_ins.insert(result.stand_ins.end(), p.stand_ins.begin(), p.stand_ins.end());
  result.mismatches.insert(result.mismatches.end(), p.mismatches.begin(), p.mismatches.end());
  result.preallocated_bytes += p.preallocated_bytes;
  result.storages_preallocated += p.storages_preallocated;
  result.estimated_peak_bytes += p.estimated_peak_bytes;
  result.parameters += p.parameters;
  result.inputs_sha256 =
      several ? Sha256Hex(result.inputs_sha256 + p.inputs_sha256) : p.inputs_sha256;
  result.integer_inputs.leaves += p.integer_inputs.leaves;
  result.integer_inputs.recorded += p.integer_inputs.recorded;
  result.integer_inputs.rejected.insert(result.integer_inputs.rejected.end(),
                                        p.integer_inputs.rejected.begin(),
                                        p.integer_inputs.rejected.end());
  result.value_fills.inputs += p.value_fills.inputs;
  result.value_fills.leaves += p.value_fills.leaves;
  result.comm.collectives.insert(result.comm.collectives.end(), p.comm.collectives.begin(),
                                 p.comm.collectives.end());
  if (comm) result.comm.issued = p.comm.issued;
  result.lanes.insert(result.lanes.end(), p.lanes.begin(), p.lanes.end());
  result.timeline.insert(result.timeline.end(), p.timeline.begin(), p.timeline.end());
  result.cross_lane_waits += p.cross_lane_waits;
  result.host_gaps.mode = p.host_gaps.mode;
  result.host_gaps.capture_cost = p.host_gaps.capture_cost;
  result.host_gaps.capture_cost_from = p.host_gaps.capture_cost_from;
  result.host_gaps.modelled_t1_us = p.host_gaps.modelled_t1_us;
  result.host_gaps.modelled_from = p.host_gaps.modelled_from;
  result.host_gaps.gaps += p.host_gaps.gaps;
  result.host_gaps.ms += p.host_gaps.ms;
  result.host_gaps.own_ms += p.host_gaps.own_ms;
  result.per_op_timed = p.per_op_timed;
  if (result.stop_reason.empty()) result.stop_reason = p.stop_reason;
  for (const OpNameStats& s : p.per_op) {
    OpNameStats& m = by_name[s.name];
    m.name = s.name;
    m.calls += s.calls;
    m.replay_ms = s.replay_ms < 0 ? -1 : m.replay_ms + s.replay_ms;
    if (s.original_ms >= 0) m.original_ms = std::max(m.original_ms, 0.0) + s.original_ms;
    if (s.timeline_ms >= 0) m.timeline_ms = std::max(m.timeline_ms, 0.0) + s.timeline_ms;
  }
}

}  // namespace

const char* HostGapsName(HostGaps mode) {
  switch (mode) {
    case HostGaps::kRecorded:
      return "recorded";
    case HostGaps::kModelled:
      return "modelled";
    case HostGaps::kNone:
      return "none";
    case HostGaps::kAuto:
      break;
  }
  return "auto";
}

const char* ReplayModeName(ReplayMode mode) {
  switch (mode) {
    case ReplayMode::kCompute:
      return "compute";
    case ReplayMode::kComm:
      return "comm";
    default:
      return "full";
  }
}

std::string TorchVersion() { return MIMIC_TORCH_VERSION; }

namespace {

// One replay, from selection to result: the ops selected, a runner (an executor and its plan)
// per tenant, the warm-up and measured iterations, and the merged result.
class Session {
 public:
  Session(const proto::Workload& w, ReplayOptions options)
      : device_(options.device.empty() ? BestDevice() : options.device),
        portable_(Portable(w, device_)),
        w_(portable_ ? *portable_ : w),
        options_(std::move(options)),
        tree_(w_) {
    if (portable_)
      result_.transformations.push_back(
          eg::PortableTransformation(eg::MakePortable(&*portable_, device_), device_));
  }

  Result<ReplayResult> Run(const ProgressFn& progress) {
    const std::string& device = device_;
    if (options_.dist) MIMIC_RETURN_IF_ERROR(CheckLaunchMatchesTrace(*options_.dist, w_));
    MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<Executor> first, CreateExecutor(device));
    const MatmulPrecision matmul(w_);
    result_.fp32_matmul = matmul.name();
    if (options_.num_threads > 0) at::set_num_threads(options_.num_threads);
    ChooseHeapAtStart();
    result_.num_threads = at::get_num_threads();
    result_.device = first->Describe();
    result_.executor = first->type();
    const auto setup_t0 = Clock::now();
    MIMIC_RETURN_IF_ERROR(Select());
    MIMIC_RETURN_IF_ERROR(Connect(*first));
    MIMIC_RETURN_IF_ERROR(ResolveHostGaps(first->device()));
    MIMIC_RETURN_IF_ERROR(CreateRunners(std::move(first), device));
    TakeOriginalsPageFaults();
    result_.setup_ms = MsSince(setup_t0);
    for (const ReplayResult& p : partials_) stopped_ |= !p.stop_reason.empty();
    MIMIC_RETURN_IF_ERROR(Iterate(progress));
    Leave();
    Finish();
    return std::move(result_);
  }

 private:
  // The selected iteration's (or label's) top-level ops, those of the mode, and the tenants of
  // a concurrent mix (synth's --compose concurrent: one range per part, each replayed on its
  // own thread with its own executor and tensors; an iteration lasts until the last is done).
  Status Select() {
    MIMIC_ASSIGN_OR_RETURN(const proto::Segment* seg,
                           eg::FindSegment(w_, options_.iteration, options_.label));
    result_.selection = seg ? seg->name() : "whole trace";
    step_start_us_ = seg && seg->has_span() ? seg->start_us() : -1;
    const int segment = seg ? tree_.IndexOf(seg->op_id()) : -1;
    selected_ = eg::ReplayableOps(w_, tree_, segment, /*include_compiled=*/true);
    result_.mode = options_.mode;
    result_.comm.expected = eg::CountCollectives(w_, selected_);
    if (options_.mode != ReplayMode::kFull) {
      // compute: everything but communication; comm: communication only.
      const bool keep_comm = options_.mode == ReplayMode::kComm;
      std::erase_if(selected_, [&](int i) {
        return (w_.ops(i).has_collective() || eg::IsCollectiveOp(w_.ops(i))) != keep_comm;
      });
      if (!keep_comm) result_.comm.expected = {};
    }
    if (selected_.empty())
      return Status::InvalidInput(std::string("nothing to replay in ") + result_.selection +
                                  (options_.mode == ReplayMode::kComm
                                       ? ": it holds no collective"
                                       : ": no top-level op with a schema"));
    if (segment >= 0)
      for (int c : tree_.Children(segment))
        if (w_.ops(c).name().rfind("## mimic:tenant:", 0) == 0) tenants_.push_back(c);
    return Status::Ok();
  }

  // --host-gaps: recorded by default when the original's host spans are linked, else modelled
  // when the per-issuer T1s are given; the capture's own cost per event boundary measured here
  // unless given.
  Status ResolveHostGaps(c10::Device device) {
    const bool modelled =
        std::any_of(options_.modelled_t1_us.begin(), options_.modelled_t1_us.end(),
                    [](double us) { return us > 0; });
    if (options_.host_gaps == HostGaps::kAuto)
      options_.host_gaps = w_.kineto().present() ? HostGaps::kRecorded
                           : modelled            ? HostGaps::kModelled
                                                 : HostGaps::kNone;
    if (options_.host_gaps == HostGaps::kModelled && !modelled)
      return Status::InvalidInput(
          "--host-gaps modelled: no per-issuer host time (T1) to wait: the platform has no "
          "cpu_overheads.t1_forward_us, t1_backward_us or t1_optimizer_us (`mimic calibrate "
          "--workload` on Kineto-linked captures measures them)");
    if (options_.host_gaps != HostGaps::kRecorded) return Status::Ok();
    if (options_.capture_cost.boundary_us >= 0) {
      if (options_.capture_cost_source.empty()) options_.capture_cost_source = "given";
      return Status::Ok();
    }
    MIMIC_ASSIGN_OR_RETURN(
        options_.capture_cost,
        MeasureCaptureCost(device, eg::CaptureRecordedIntegerInputs(w_), eg::HostTimelineUsed(w_)));
    options_.capture_cost_source = "measured at setup";
    return Status::Ok();
  }

  // A multi-rank replay: this rank's process groups, as the trace recorded them.
  Status Connect(Executor& executor) {
    if (options_.dist) {
      result_.comm.rank = options_.dist->rank;
      result_.comm.world_size = options_.dist->world_size;
    }
    if (!options_.dist || options_.mode == ReplayMode::kCompute) return Status::Ok();
    MIMIC_ASSIGN_OR_RETURN(
        comm_, Communicator::Create(*options_.dist, w_, executor,
                                    std::chrono::milliseconds(options_.comm_timeout_ms)));
    result_.comm.backend = executor.collective_backend();
    return Status::Ok();
  }

  Status CreateRunners(std::unique_ptr<Executor> first, const std::string& device) {
    partials_.resize(std::max<size_t>(tenants_.size(), 1));
    for (size_t k = 0; k < partials_.size(); ++k) {
      std::unique_ptr<Executor> executor = std::move(first);
      if (!executor) {
        MIMIC_ASSIGN_OR_RETURN(executor, CreateExecutor(device));
      }
      // Collectives of concurrent tenants would be issued in a different order on each rank.
      runners_.push_back(std::make_unique<Runner>(w_, tree_, options_, std::move(executor),
                                                  partials_[k],
                                                  tenants_.size() > 1 ? nullptr : comm_.get()));
      const std::vector<int> ops =
          tenants_.empty() ? selected_
                           : eg::ReplayableOps(w_, tree_, tenants_[k], /*include_compiled=*/true);
      MIMIC_RETURN_IF_ERROR(runners_.back()->Plan(ops, step_start_us_));
    }
    return Status::Ok();
  }

  // Before the first measured iteration: the counters, the device's sampler, the profiler.
  Status StartMeasuring(Executor& lead) {
    faults_at_first_measured_ = MinorPageFaults();
    usage_at_first_measured_ = CurrentProcessUsage();
    result_.allocated_at_start_bytes = lead.Memory().allocated_bytes;
    lead.ResetPeakMemory();
    lead.StartSampling();
    sampling_ = true;
    if (options_.profile_path.empty()) return Status::Ok();
    MIMIC_ASSIGN_OR_RETURN(profile_,
                           ProfileSession::Start(lead.device(), {.shapes = true, .memory = true}));
    return Status::Ok();
  }

  // One iteration of every runner (tenants on threads of their own); its time, or an error
  // when the replay must stop.
  Result<double> IterateOnce(bool first, bool measure) {
    std::vector<Result<double>> outcome(runners_.size(), 0.0);
    const auto t0 = Clock::now();
    if (runners_.size() == 1) {
      outcome[0] = runners_[0]->Iterate(first, measure);
      return outcome[0];
    }
    std::vector<std::thread> threads;
    const int num_threads = at::get_num_threads();  // a new thread would start with the host's
    for (size_t k = 0; k < runners_.size(); ++k)
      threads.emplace_back([&, k] {
        at::set_num_threads(num_threads);
        outcome[k] = runners_[k]->Iterate(first, measure);
      });
    for (std::thread& t : threads) t.join();
    for (const Result<double>& o : outcome)
      if (!o.ok()) return o.status();
    return MsSince(t0);
  }

  // --heap: retained or trimmed as asked; auto retains (TakeOriginalsPageFaults then adds the
  // original's faults where its capture recorded them).
  void ChooseHeapAtStart() {
    result_.heap = options_.heap == ReplayOptions::Heap::kTrimmed ? "" : RetainFreedHeap();
    if (result_.heap.empty()) result_.heap = "default";
  }

  // --heap auto, where the capture recorded the original's page faults per step: a kept heap
  // faults about never, and a trimmed one as often as its layout happens to make it (the
  // original's too: docs/benchmarks.md §2), so the replay keeps the heap and takes the
  // original's count a step on purpose (Runner::TakePageFaults). On the CPU, where the
  // intermediates are host memory; not in a multi-rank replay (the capture counts one
  // process's faults, not each rank's) nor a concurrent mix (one count for several jobs).
  void TakeOriginalsPageFaults() {
    if (options_.heap != ReplayOptions::Heap::kAuto || options_.dist || runners_.size() != 1 ||
        !runners_[0]->executor().device().is_cpu() ||
        !w_.original().has_page_faults_per_iteration() || result_.heap == "default")
      return;
    const int64_t faults = std::llround(w_.original().page_faults_per_iteration());
    fresh_pages_ = std::make_unique<FreshPages>(faults);
    if (fresh_pages_->pages() == 0) return;
    for (auto& r : runners_) r->TakePageFaults(fresh_pages_.get(), faults);
    result_.heap += ", and the original's " + std::to_string(faults) +
                    " page faults a step taken on purpose before the ops that write fresh "
                    "memory, in proportion to its bytes";
  }

  Status Iterate(const ProgressFn& progress) {
    Executor& lead = runners_[0]->executor();
    const int total = options_.warmup + options_.iters;
    for (int it = 0; it < total && !stopped_; ++it) {
      const bool measure = it >= options_.warmup;
      if (it == options_.warmup) MIMIC_RETURN_IF_ERROR(StartMeasuring(lead));
      if (profile_) profile_->BeginIteration(it - options_.warmup + 1);
      Result<double> ms = IterateOnce(/*first=*/it == 0, measure);
      if (profile_) profile_->EndIteration();
      if (!ms.ok()) {  // the iteration in flight is dropped; the completed ones are reported
        result_.stop_reason = ms.status().message();
        stopped_ = true;
        break;
      }
      if (measure) result_.iteration_ms.push_back(*ms);
      if (progress) progress(it + 1, total, *ms);
    }
    if (sampling_) {
      result_.memory = lead.Memory();
      result_.device_metrics = lead.StopSampling();
    }
    if (profile_) {
      if (Status st = profile_->Stop(options_.profile_path);
          !st.ok() && result_.stop_reason.empty())
        result_.stop_reason = st.message();
      else
        result_.profile_path = options_.profile_path;
    }
    return Status::Ok();
  }

  // Every rank leaves together; after a failure the groups are left as they are, since their
  // threads may be blocked on the rank that failed.
  void Leave() {
    if (!comm_) return;
    if (result_.stop_reason.empty() && !stopped_) {
      const Status st = comm_->Barrier("the final barrier");
      if (!st.ok()) result_.stop_reason = st.message();
    }
    if (!result_.stop_reason.empty() || stopped_) comm_->Abandon();
  }

  // The process's use of the host per measured iteration (getrusage across them).
  void MeasureSystem(int measured) {
    if (measured <= 0) return;
    const ProcessUsage a = usage_at_first_measured_, b = CurrentProcessUsage();
    double wall_ms = 0;
    for (double ms : result_.iteration_ms) wall_ms += ms;
    proto::SystemMetrics& s = result_.system;
    s.set_present(true);
    s.set_cpu_user_ms((b.user_ms - a.user_ms) / measured);
    s.set_cpu_sys_ms((b.sys_ms - a.sys_ms) / measured);
    if (wall_ms > 0) s.set_cpu_utilization((b.user_ms - a.user_ms + b.sys_ms - a.sys_ms) / wall_ms);
    s.set_peak_rss_bytes(b.peak_rss_bytes);
    s.set_minor_faults(static_cast<double>(b.minor_faults - a.minor_faults) / measured);
    s.set_major_faults(static_cast<double>(b.major_faults - a.major_faults) / measured);
    s.set_voluntary_switches(static_cast<double>(b.voluntary_switches - a.voluntary_switches) /
                             measured);
    s.set_involuntary_switches(
        static_cast<double>(b.involuntary_switches - a.involuntary_switches) / measured);
  }

  void Finish() {
    const int measured = static_cast<int>(result_.iteration_ms.size());
    MeasureSystem(measured);
    if (measured > 0)
      result_.page_faults_per_iteration =
          static_cast<double>(MinorPageFaults() - faults_at_first_measured_) / measured;
    std::map<std::string, OpNameStats> by_name;
    for (size_t k = 0; k < runners_.size(); ++k) {
      runners_[k]->Finish(measured);
      Merge(partials_[k], runners_.size() > 1, comm_ != nullptr, result_, by_name);
    }
    for (auto& [name, s] : by_name) result_.per_op.push_back(s);
    std::sort(result_.per_op.begin(), result_.per_op.end(),
              [](const OpNameStats& a, const OpNameStats& b) { return a.replay_ms > b.replay_ms; });
    if (tenants_.size() > 1)
      result_.selection += " (" + std::to_string(tenants_.size()) + " concurrent tenants)";
  }

  // A copy of the workload to rewrite when it holds vendor ops the device has no kernel for
  // (eg::MakePortable); none otherwise.
  static std::optional<proto::Workload> Portable(const proto::Workload& w,
                                                 const std::string& device) {
    if (!eg::NeedsPortable(w, device)) return std::nullopt;
    return w;
  }

  const std::string device_;
  std::optional<proto::Workload> portable_;
  const proto::Workload& w_;
  ReplayOptions options_;  // host_gaps and capture_cost resolved at setup
  const eg::OpTree tree_;
  double step_start_us_ = -1;  // the selected step's, on the Kineto clock
  ReplayResult result_;
  std::vector<int> selected_, tenants_;
  std::unique_ptr<Communicator> comm_;
  std::vector<ReplayResult> partials_;  // per runner; stable once created
  std::vector<std::unique_ptr<Runner>> runners_;
  std::unique_ptr<ProfileSession> profile_;
  bool sampling_ = false, stopped_ = false;
  int64_t faults_at_first_measured_ = 0;
  ProcessUsage usage_at_first_measured_;
  std::unique_ptr<FreshPages> fresh_pages_;  // TakeOriginalsPageFaults
};

}  // namespace

Result<ReplayResult> Replay(const proto::Workload& w, const ReplayOptions& options,
                            const ProgressFn& progress) {
  if (options.iters < 1) return Status::InvalidInput("--iters must be at least 1");
  if (options.warmup < 0) return Status::InvalidInput("--warmup must not be negative");
  return Session(w, options).Run(progress);
}

}  // namespace mimic::replay
