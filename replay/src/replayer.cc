// The replay loop: select the ops, resolve each against the dispatcher once, prepare the leaf
// tensors, then run warm-up and measured iterations. An op that cannot be replayed is skipped,
// counted by reason and listed (or, with --strict, fails the replay).

#include "mimic/replay/replayer.h"

#include <ATen/Parallel.h>
#include <ATen/ops/ones.h>
#include <ATen/core/grad_mode.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <map>
#include <memory>
#include <thread>
#include <chrono>
#include <optional>
#include <unordered_map>

#include "comm.h"
#include "device.h"
#include "mimic/base/file.h"
#include "mimic/base/host.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "mimic/ops/dispatch.h"
#include "tensor_store.h"

namespace mimic::replay {
namespace {

using ops::BuildStack;
using ops::ResolveOperator;
using ops::ToScalarType;

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// One op the dispatcher runs: its index into workload.ops() and its operator.
struct Call {
  int index;
  c10::OperatorHandle handle;
};

struct PlannedOp {
  int index = 0;                             // into workload.ops()
  std::optional<c10::OperatorHandle> handle;  // unset: skipped (or a delay, or a collective)
  // A composite op runs as the ops the trace recorded under it (Decompose); empty: as itself.
  std::vector<Call> parts;
  double delay_us = -1;                      // >= 0: a mimic::delay standing in for an op
  int run = -1;                              // >= 0: a collective, its CommResult entry
  bool wait = false;                         // waits for an asynchronous collective
  int in_entry = -1, out_entry = -1;         // a collective's own input and output tensors
  CollectiveBuffers buffers;                 // comm mode, and full mode when the op's own don't fit
};

// A collective issued and not yet waited for.
struct Pending {
  std::shared_ptr<PendingWork> work;
  size_t plan_index;
  Clock::time_point issued;
  std::vector<const void*> storages;  // what it writes
};

// The table entry of the tensor `v` holds, alone or as a one-element list; -1 otherwise.
int SingleTensor(const proto::Value& v) {
  if (v.kind_case() == proto::Value::kTensor) return v.tensor();
  if (v.kind_case() == proto::Value::kList && v.list().items_size() == 1) return SingleTensor(v.list().items(0));
  return -1;
}


// Busy-waits `us` microseconds: a substituted op's time kept on the replaying thread.
void Spin(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}

bool SameShape(const at::Tensor& t, const proto::Tensor& rec) {
  if (static_cast<int>(t.dim()) != rec.shape_size()) return false;
  for (int i = 0; i < rec.shape_size(); ++i)
    if (t.size(i) != rec.shape(i)) return false;
  return true;
}

class Runner {
 public:
  Runner(const proto::Workload& w, const eg::OpTree& tree, const ReplayOptions& options, Device& device,
         ReplayResult& result, Communicator* comm)
      : w_(w), tree_(tree), options_(options), device_(device), result_(result), comm_(comm),
        store_(w, device.torch_device(), options.seed) {}

  Status Plan(const std::vector<int>& selected) {
    for (int index : selected) {
      PlannedOp p;
      p.index = index;
      const proto::Op& op = w_.ops(index);
      if (eg::IsDelayOp(op)) {
        auto it = op.attrs().find("delay_us");
        p.delay_us = it == op.attrs().end() ? 0 : it->second.double_value();
        plan_.push_back(std::move(p));
        continue;
      }
      if (eg::IsCompiledKernel(op)) {
        // Traces are untrusted input: Mimic never runs code that came with one.
        MIMIC_RETURN_IF_ERROR(Skip(op, "compiled_kernel",
                                   op.kernel_backend() + " kernel " + op.kernel_file() +
                                       ": Mimic does not execute code carried by a trace"));
        plan_.push_back(std::move(p));
        continue;
      }
      if (op.has_collective() || eg::IsCollectiveOp(op)) {
        MIMIC_RETURN_IF_ERROR(PlanCollective(op, p));
        plan_.push_back(std::move(p));
        continue;
      }
      Result<c10::OperatorHandle> handle = ResolveOperator(w_.schemas(op.schema()));
      if (handle.ok()) {
        p.handle = *handle;
        std::vector<Call> parts;
        if (options_.decompose && Decompose(index, *handle, parts) && (parts.size() != 1 || parts[0].index != index)) p.parts = std::move(parts);
      } else {
        MIMIC_RETURN_IF_ERROR(Skip(op, "unknown_operator", handle.status().message()));
      }
      plan_.push_back(std::move(p));
    }
    // The tensors to prepare are those of the ops that will run.
    std::vector<int> executed;
    for (const PlannedOp& p : plan_) {
      if (p.parts.empty()) executed.push_back(p.index);
      for (const Call& c : p.parts) executed.push_back(c.index);
    }
    return store_.Prepare(executed);
  }

  // Runs one iteration; returns its wall time. Per-op times go to op_ms_ when `measure`. An
  // error means the replay must stop (cancelled, out of memory, --strict).
  Result<double> Iterate(bool first, bool measure) {
    store_.NewIteration();
    at::NoGradGuard no_grad;
    torch::jit::Stack stack;
    const auto t0 = Clock::now();
    for (size_t i = 0; i < plan_.size(); ++i) {
      PlannedOp& p = plan_[i];
      if (p.delay_us >= 0) {
        const auto delay_t0 = Clock::now();
        Spin(p.delay_us);
        if (measure) op_ms_[i] += MsSince(delay_t0);
        continue;
      }
      if (p.run >= 0 || p.wait) {
        if (options_.cancel && options_.cancel->load(std::memory_order_relaxed))
          return Status::Internal(options_.cancel_reason);
        MIMIC_RETURN_IF_ERROR(RunCollective(i, measure));
        continue;
      }
      if (!p.handle) continue;
      const proto::Op& op = w_.ops(p.index);
      const auto op_t0 = Clock::now();
      std::string skip_reason;
      Status st = Status::Ok();
      if (p.parts.empty()) {
        st = Run(Call{p.index, *p.handle}, first, measure, stack, &skip_reason);
      } else {
        // The parts' own outputs are intermediate; the op's recorded outputs are checked.
        for (const Call& part : p.parts)
          if (st = Run(part, /*check=*/false, measure, stack, &skip_reason); !st.ok()) break;
        if (st.ok() && first) CheckOutputs(op);
      }
      if (!st.ok()) {
        if (skip_reason.empty()) return st;  // the replay must stop
        MIMIC_RETURN_IF_ERROR(Skip(op, skip_reason, st.message()));
        p.handle.reset();
        continue;
      }
      if (measure) op_ms_[i] += MsSince(op_t0);
    }
    while (!pending_.empty()) MIMIC_RETURN_IF_ERROR(Complete(0, measure));
    device_.Synchronize();
    const double ms = MsSince(t0);
    if (comm_) result_.comm.issued = std::exchange(iteration_issued_, {});
    ++iteration_;
    return ms;
  }

  void Finish(int measured_iters) {
    int64_t replayed = 0;
    for (const PlannedOp& p : plan_) replayed += p.handle.has_value() || p.delay_us >= 0 || p.run >= 0 || p.wait;
    result_.total_ops = static_cast<int64_t>(plan_.size());
    result_.replayed_ops = replayed;
    result_.preallocated_bytes = store_.prepared_bytes();
    result_.storages_preallocated = store_.prepared_storages();
    result_.inputs_sha256 = store_.inputs_sha256();
    std::unordered_map<std::string, OpNameStats> by_name;
    for (size_t i = 0; i < plan_.size(); ++i) {
      const proto::Op& op = w_.ops(plan_[i].index);
      OpNameStats& s = by_name[op.name()];
      s.name = op.name();
      ++s.calls;
      const PlannedOp& p = plan_[i];
      if ((p.handle || p.delay_us >= 0 || p.run >= 0 || p.wait) && measured_iters > 0)
        s.replay_ms += op_ms_[i] / measured_iters;
      if (op.has_cpu_span()) s.original_ms = std::max(s.original_ms, 0.0) + op.cpu_duration_us() / 1000.0;
    }
    for (auto& [name, s] : by_name) result_.per_op.push_back(s);
    std::sort(result_.per_op.begin(), result_.per_op.end(),
              [](const OpNameStats& a, const OpNameStats& b) { return a.replay_ms > b.replay_ms; });
  }

  void ResetOpTimes() { op_ms_.assign(plan_.size(), 0.0); }

 private:
  // The ops to run for op `index` with operator `h`: the op itself, or, for a composite
  // (CompositeImplicitAutograd: it has no kernel of its own and decomposes into other ops), the
  // ops the trace recorded under it, themselves decomposed. Its decomposition can depend on
  // state the replay does not have (no autograd): run as itself, cnn_bn's max_pool2d takes
  // half the time of the max_pool2d_with_indices its trace recorded under it (and ran). False
  // when a recorded child cannot run on its own (no schema, an unknown operator, a
  // collective); the op then runs as itself.
  bool Decompose(int index, const c10::OperatorHandle& h, std::vector<Call>& out) {
    const std::vector<int>& children = tree_.Children(index);
    if (children.empty() || !h.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
      out.push_back({index, h});
      return true;
    }
    for (int c : children) {
      const proto::Op& child = w_.ops(c);
      if (child.schema() < 0 || child.has_collective() || eg::IsCollectiveOp(child) || eg::IsDelayOp(child)) return false;
      Result<c10::OperatorHandle> ch = ResolveOperator(w_.schemas(child.schema()));
      if (!ch.ok() || !Decompose(c, *ch, out)) return false;
    }
    return true;
  }

  // Runs one op through the dispatcher on this iteration's tensors and registers its outputs.
  // An error with *skip_reason set means the op cannot be replayed; with it empty, that the
  // replay must stop (cancelled, out of memory).
  Status Run(const Call& call, bool check, bool measure, torch::jit::Stack& stack, std::string* skip_reason) {
    const proto::Op& op = w_.ops(call.index);
    Status st;
    try {
      st = BuildStack(op, call.handle.schema(), store_, device_.torch_device(), &stack);
    } catch (const c10::Error& e) {
      st = Status::Unsupported(FirstLine(e.what_without_backtrace()));
    }
    if (!st.ok()) {
      *skip_reason = "unsupported_argument";
      return st;
    }
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) return Status::Internal(options_.cancel_reason);
    if (!pending_.empty()) MIMIC_RETURN_IF_ERROR(WaitForInputs(stack, measure));
    try {
      call.handle.callBoxed(&stack);
    } catch (const c10::OutOfMemoryError& e) {
      return Status::Internal("out of memory in op " + std::to_string(op.id()) + " (" + op.name() +
                              "): " + FirstLine(e.what_without_backtrace()));
    } catch (const c10::Error& e) {
      *skip_reason = "exception";
      return Status::Unsupported(FirstLine(e.what_without_backtrace()));
    } catch (const std::exception& e) {
      *skip_reason = "exception";
      return Status::Unsupported(FirstLine(e.what()));
    }
    RegisterOutputs(op, stack, check);
    return Status::Ok();
  }

  // Compares the tensors now registered for `op`'s recorded outputs with their records.
  void CheckOutputs(const proto::Op& op) {
    for (const proto::Value& v : op.outputs())
      if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0)
        if (const at::Tensor t = store_.Get(v.tensor()); t.defined()) Check(t, v.tensor());
  }

  // A communication op: issued through the communicator when there is one (a multi-rank
  // replay), skipped otherwise.
  Status PlanCollective(const proto::Op& op, PlannedOp& p) {
    if (!op.has_collective() || op.collective().type() == proto::Collective::TYPE_UNKNOWN)
      return Skip(op, "collective", "not a communication Mimic recognizes");
    if (!comm_)
      return Skip(op, "collective",
                  "needs the job's process groups: launch one mimic per rank (torchrun --no-python, srun, "
                  "mpirun)");
    if (op.collective().type() == proto::Collective::WAIT) {
      p.wait = true;
      return Status::Ok();
    }
    p.run = static_cast<int>(result_.comm.collectives.size());
    result_.comm.collectives.push_back({op.id(), op.collective(), {}});
    // Its own tensors, by argument name (full mode runs it on them).
    if (op.name() == "record_param_comms") {
      if (op.inputs_size() > 0) p.in_entry = SingleTensor(op.inputs(0));
      if (op.outputs_size() > 0) p.out_entry = SingleTensor(op.outputs(0));
    } else if (op.schema() >= 0) {
      const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(w_.schemas(op.schema()));
      for (int k = 0; k < op.inputs_size() && k < static_cast<int>(args.size()); ++k) {
        const std::string& n = args[k].name;
        if (n.find("split") != std::string::npos) continue;
        if (n == "tensors" || n == "tensor" || n == "input" || n == "self" || n.rfind("input", 0) == 0)
          p.in_entry = SingleTensor(op.inputs(k));
        else if (n.rfind("output", 0) == 0)
          p.out_entry = SingleTensor(op.inputs(k));
      }
    }
    return Status::Ok();
  }

  // The tensors a collective works on: in full mode the op's own (so that the ops after it
  // read what it wrote), else flat buffers of the recorded sizes, made once.
  CollectiveBuffers BuffersFor(PlannedOp& p) {
    const proto::Collective& c = w_.ops(p.index).collective();
    if (options_.mode == ReplayMode::kFull) {
      auto flat = [&](int entry, int64_t numel) -> at::Tensor {
        if (entry < 0) return {};
        at::Tensor t = store_.Get(entry);
        return t.defined() && t.numel() == numel && t.is_contiguous() ? t.view(-1) : at::Tensor();
      };
      CollectiveBuffers b{flat(p.in_entry, c.in_elems()),
                          WritesInPlace(c.type()) ? at::Tensor() : flat(p.out_entry, c.out_elems())};
      if (WritesInPlace(c.type())) b.output = b.input;
      if (b.input.defined() && b.output.defined()) return b;
    }
    if (!p.buffers.input.defined()) {
      c10::ScalarType dtype = c10::kFloat;
      if (!ToScalarType(c.dtype(), &dtype)) dtype = c10::kFloat;
      const auto opts = at::TensorOptions().dtype(dtype).device(device_.torch_device());
      p.buffers.input = at::ones({std::max<int64_t>(c.in_elems(), 0)}, opts);
      p.buffers.output = WritesInPlace(c.type()) ? p.buffers.input : at::ones({std::max<int64_t>(c.out_elems(), 0)}, opts);
    }
    return p.buffers;
  }

  std::string Describe(const PlannedOp& p) const {
    const proto::Op& op = w_.ops(p.index);
    return std::string(eg::CollectiveTypeName(op.collective().type())) + " (op " + std::to_string(op.id()) + " " +
           op.name() + ", " + std::to_string(eg::CollectiveBytes(op.collective())) + " bytes on group \"" +
           op.collective().process_group() + "\") in iteration " + std::to_string(iteration_);
  }

  Status RunCollective(size_t i, bool measure) {
    PlannedOp& p = plan_[i];
    const proto::Op& op = w_.ops(p.index);
    if (p.wait) {
      for (size_t k = 0; k < pending_.size(); ++k)
        if (w_.ops(plan_[pending_[k].plan_index].index).id() == op.collective().waits_for())
          return Complete(k, measure);
      return Status::Ok();  // its collective was skipped or already waited for
    }
    const CollectiveBuffers b = BuffersFor(p);
    comm_->SetProgress(Describe(p));
    Pending pending{nullptr, i, Clock::now(), {b.output.storage().data()}};
    Result<std::shared_ptr<PendingWork>> work = comm_->Issue(op.collective(), b);
    if (!work.ok()) {
      MIMIC_RETURN_IF_ERROR(Skip(op, "unsupported_collective", work.status().message()));
      p.run = -1;
      return Status::Ok();
    }
    pending.work = std::move(*work);
    pending_.push_back(std::move(pending));
    // comm mode runs each collective alone, as nccl-tests does; full mode keeps the job's
    // overlap: an asynchronous collective ends at its wait, or before an op reads what it writes.
    if (options_.mode == ReplayMode::kComm || !op.collective().async()) return Complete(pending_.size() - 1, measure);
    return Status::Ok();
  }

  // Waits for pending_[k] and records its time.
  Status Complete(size_t k, bool measure) {
    Pending done = std::move(pending_[k]);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(k));
    PlannedOp& p = plan_[done.plan_index];
    MIMIC_RETURN_IF_ERROR(comm_->Wait(done.work, Describe(p)));
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - done.issued).count();
    if (measure) {
      op_ms_[done.plan_index] += us / 1000.0;
      result_.comm.collectives[p.run].replay_us.push_back(us);
    }
    eg::AddCollective(iteration_issued_, w_.ops(p.index).collective());
    return Status::Ok();
  }

  // Before an op runs: waits for the pending collectives that write a storage it touches.
  Status WaitForInputs(const torch::jit::Stack& stack, bool measure) {
    std::vector<const void*> touched;
    for (const c10::IValue& v : stack) {
      if (v.isTensor() && v.toTensor().defined()) touched.push_back(v.toTensor().storage().data());
      if (v.isTensorList())
        for (const at::Tensor& t : v.toTensorVector())
          if (t.defined()) touched.push_back(t.storage().data());
    }
    for (size_t k = 0; k < pending_.size();) {
      bool hit = false;
      for (const void* s : pending_[k].storages) hit |= std::find(touched.begin(), touched.end(), s) != touched.end();
      if (hit) {
        MIMIC_RETURN_IF_ERROR(Complete(k, measure));
      } else {
        ++k;
      }
    }
    return Status::Ok();
  }

  // Records that `op` is not replayed; under --strict that stops the replay (an error Status).
  Status Skip(const proto::Op& op, const std::string& reason, const std::string& detail) {
    if (options_.strict)
      return Status::InvalidInput("op " + std::to_string(op.id()) + " (" + op.name() +
                                  ") cannot be replayed (--strict): " + reason + ": " + detail);
    ++result_.skipped_by_reason[reason];
    result_.skipped.push_back({op.id(), op.name(), reason, detail});
    return Status::Ok();
  }

  void Check(const at::Tensor& t, int entry) {
    const proto::Tensor& rec = w_.tensors(entry);
    ++result_.outputs_checked;
    c10::ScalarType expected;
    const bool dtype_ok = !ToScalarType(rec.dtype(), &expected) || t.scalar_type() == expected;
    if (SameShape(t, rec) && dtype_ok) return;
    ++result_.outputs_mismatched;
    if (result_.mismatches.size() < 20)
      result_.mismatches.push_back("tensor " + std::to_string(rec.tensor_id()) + ": replayed " +
                                   c10::toString(t.scalar_type()) + std::string(" ") +
                                   c10::str(t.sizes()) + ", recorded " + eg::TypeName(w_, rec.type()) + " " +
                                   c10::str(c10::IntArrayRef(rec.shape().data(), rec.shape_size())));
  }

  void Register(const c10::IValue& iv, const proto::Value& rec, bool check) {
    if (iv.isTensor() && rec.kind_case() == proto::Value::kTensor && rec.tensor() >= 0) {
      const at::Tensor& t = iv.toTensor();
      if (!t.defined()) return;
      store_.Put(rec.tensor(), t);
      if (check) Check(t, rec.tensor());
    } else if (iv.isTensorList() && rec.kind_case() == proto::Value::kList) {
      const auto list = iv.toTensorList();
      for (size_t k = 0; k < list.size() && k < static_cast<size_t>(rec.list().items_size()); ++k)
        Register(c10::IValue(list.get(k)), rec.list().items(static_cast<int>(k)), check);
    }
  }

  void RegisterOutputs(const proto::Op& op, const torch::jit::Stack& stack, bool check) {
    for (size_t i = 0; i < stack.size() && i < static_cast<size_t>(op.outputs_size()); ++i)
      Register(stack[i], op.outputs(static_cast<int>(i)), check);
  }

  const proto::Workload& w_;
  const eg::OpTree& tree_;
  const ReplayOptions& options_;
  Device& device_;
  ReplayResult& result_;
  Communicator* comm_;  // null: a single-process replay
  TensorStore store_;
  std::vector<PlannedOp> plan_;
  std::vector<double> op_ms_;
  std::vector<Pending> pending_;
  eg::CollectiveTotals iteration_issued_;
  int64_t iteration_ = 0;
};

}  // namespace

const char* ReplayModeName(ReplayMode mode) {
  switch (mode) {
    case ReplayMode::kCompute: return "compute";
    case ReplayMode::kComm: return "comm";
    default: return "full";
  }
}

std::string BestDevice() { return "cpu"; }

std::string TorchVersion() { return MIMIC_TORCH_VERSION; }

Result<ReplayResult> Replay(const proto::Workload& w, const ReplayOptions& options,
                            const ProgressFn& progress) {
  if (options.iters < 1) return Status::InvalidInput("--iters must be at least 1");
  if (options.warmup < 0) return Status::InvalidInput("--warmup must not be negative");
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                         CreateDevice(options.device.empty() ? BestDevice() : options.device));
  if (options.num_threads > 0) at::set_num_threads(options.num_threads);

  ReplayResult result;
  result.heap = options.retain_heap ? RetainFreedHeap() : "";
  if (result.heap.empty()) result.heap = "default";
  result.num_threads = at::get_num_threads();
  result.device = device->Describe();
  const auto setup_t0 = Clock::now();
  const eg::OpTree tree(w);
  MIMIC_ASSIGN_OR_RETURN(const proto::Segment* seg, eg::FindSegment(w, options.iteration, options.label));
  result.selection = seg ? seg->name() : "whole trace";
  const int segment = seg ? tree.IndexOf(seg->op_id()) : -1;
  std::vector<int> selected = eg::ReplayableOps(w, tree, segment, /*include_compiled=*/true);
  result.mode = options.mode;
  result.comm.expected = eg::CountCollectives(w, selected);
  if (options.mode != ReplayMode::kFull) {
    // compute: everything but communication; comm: communication only.
    const bool keep_comm = options.mode == ReplayMode::kComm;
    std::erase_if(selected, [&](int i) { return (w.ops(i).has_collective() || eg::IsCollectiveOp(w.ops(i))) != keep_comm; });
    if (!keep_comm) result.comm.expected = {};
  }
  if (selected.empty())
    return Status::InvalidInput(std::string("nothing to replay in ") + result.selection +
                                (options.mode == ReplayMode::kComm ? ": it holds no collective"
                                                                   : ": no top-level op with a schema"));

  // A multi-rank replay: this rank's process groups, as the trace recorded them.
  std::unique_ptr<Communicator> comm;
  if (options.dist && options.mode != ReplayMode::kCompute) {
    MIMIC_ASSIGN_OR_RETURN(comm, Communicator::Create(*options.dist, w, std::chrono::milliseconds(options.comm_timeout_ms)));
    result.comm.backend = "gloo";
  }
  if (options.dist) {
    result.comm.rank = options.dist->rank;
    result.comm.world_size = options.dist->world_size;
  }

  // A concurrent mix (synth's --compose concurrent) holds one tenant range per part: each
  // tenant replays on its own thread, with its own tensors, and an iteration lasts until the
  // last tenant is done.
  std::vector<int> tenants;
  if (segment >= 0)
    for (int c : tree.Children(segment))
      if (w.ops(c).name().rfind("## mimic:tenant:", 0) == 0) tenants.push_back(c);
  std::vector<ReplayResult> partials(std::max<size_t>(tenants.size(), 1));
  std::vector<std::unique_ptr<Runner>> runners;
  for (size_t k = 0; k < partials.size(); ++k) {
    // Collectives of concurrent tenants would be issued in a different order on each rank.
    runners.push_back(
        std::make_unique<Runner>(w, tree, options, *device, partials[k], tenants.size() > 1 ? nullptr : comm.get()));
    const std::vector<int> ops =
        tenants.empty() ? selected : eg::ReplayableOps(w, tree, tenants[k], /*include_compiled=*/true);
    MIMIC_RETURN_IF_ERROR(runners.back()->Plan(ops));
    runners.back()->ResetOpTimes();
  }
  result.setup_ms = MsSince(setup_t0);

  const int total = options.warmup + options.iters;
  std::vector<Result<double>> outcome(runners.size(), 0.0);
  int64_t faults_at_first_measured = 0;
  for (int it = 0; it < total; ++it) {
    const bool measure = it >= options.warmup;
    if (it == options.warmup) faults_at_first_measured = MinorPageFaults();
    const auto t0 = Clock::now();
    if (runners.size() == 1) {
      outcome[0] = runners[0]->Iterate(/*first=*/it == 0, measure);
    } else {
      std::vector<std::thread> threads;
      for (size_t k = 0; k < runners.size(); ++k)
        threads.emplace_back([&, k] { outcome[k] = runners[k]->Iterate(/*first=*/it == 0, measure); });
      for (std::thread& t : threads) t.join();
    }
    const double ms = runners.size() == 1 && outcome[0].ok() ? *outcome[0] : MsSince(t0);
    bool stopped = false;
    for (const Result<double>& o : outcome) {
      if (!o.ok() && !stopped) {  // the iteration in flight is dropped; completed ones are reported
        result.stop_reason = o.status().message();
        stopped = true;
      }
    }
    if (stopped) break;
    if (measure) result.iteration_ms.push_back(ms);
    if (progress) progress(it + 1, total, ms);
  }
  if (comm) {
    // Every rank leaves together; after a failure the groups are left as they are, since their
    // threads may be blocked on the rank that failed.
    if (result.stop_reason.empty()) {
      const Status st = comm->Barrier("the final barrier");
      if (!st.ok()) result.stop_reason = st.message();
    }
    if (!result.stop_reason.empty()) comm->Abandon();
  }
  const int measured = static_cast<int>(result.iteration_ms.size());
  if (measured > 0)
    result.page_faults_per_iteration = static_cast<double>(MinorPageFaults() - faults_at_first_measured) / measured;
  std::map<std::string, OpNameStats> by_name;
  for (size_t k = 0; k < runners.size(); ++k) {
    runners[k]->Finish(measured);
    const ReplayResult& p = partials[k];
    result.total_ops += p.total_ops;
    result.replayed_ops += p.replayed_ops;
    for (const auto& [reason, n] : p.skipped_by_reason) result.skipped_by_reason[reason] += n;
    result.skipped.insert(result.skipped.end(), p.skipped.begin(), p.skipped.end());
    result.outputs_checked += p.outputs_checked;
    result.outputs_mismatched += p.outputs_mismatched;
    result.mismatches.insert(result.mismatches.end(), p.mismatches.begin(), p.mismatches.end());
    result.preallocated_bytes += p.preallocated_bytes;
    result.storages_preallocated += p.storages_preallocated;
    result.inputs_sha256 = runners.size() == 1 ? p.inputs_sha256 : Sha256Hex(result.inputs_sha256 + p.inputs_sha256);
    result.comm.collectives.insert(result.comm.collectives.end(), p.comm.collectives.begin(), p.comm.collectives.end());
    if (comm) result.comm.issued = p.comm.issued;
    for (const OpNameStats& s : p.per_op) {
      OpNameStats& m = by_name[s.name];
      m.name = s.name;
      m.calls += s.calls;
      m.replay_ms += s.replay_ms;
      if (s.original_ms >= 0) m.original_ms = std::max(m.original_ms, 0.0) + s.original_ms;
    }
  }
  for (auto& [name, s] : by_name) result.per_op.push_back(s);
  std::sort(result.per_op.begin(), result.per_op.end(),
            [](const OpNameStats& a, const OpNameStats& b) { return a.replay_ms > b.replay_ms; });
  if (tenants.size() > 1) result.selection += " (" + std::to_string(tenants.size()) + " concurrent tenants)";
  return result;
}

}  // namespace mimic::replay
