#include "plan.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "mimic/replay/executor.h"

namespace mimic::replay {
namespace {

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// The table entry of the tensor `v` holds, alone or as a one-element list; -1 otherwise.
int SingleTensor(const proto::Value& v) {
  if (v.kind_case() == proto::Value::kTensor) return v.tensor();
  if (v.kind_case() == proto::Value::kList && v.list().items_size() == 1)
    return SingleTensor(v.list().items(0));
  return -1;
}

bool IsCollective(const proto::Op& op) { return op.has_collective() || eg::IsCollectiveOp(op); }

// An operator of an extension library (fbgemm::, torchrec::, a model's own): not ATen's.
bool IsCustomOperator(const std::string& name) {
  const size_t ns = name.find("::");
  if (ns == std::string::npos) return false;
  const std::string_view space = std::string_view(name).substr(0, ns);
  for (std::string_view builtin : {"aten", "prim", "c10d", "_c10d_functional", "profiler", "cuda"})
    if (space == builtin) return false;
  return true;
}

// Whether every device the trace saw is the host: a job run on a CPU, whose host devices the
// replay on an accelerator takes for that accelerator (in a GPU job's trace they stay host).
bool CapturedOnHost(const proto::Workload& w) {
  for (const std::string& d : w.provenance().devices())
    if (d.rfind("cpu", 0) != 0) return false;
  return true;
}

// False for an operator with a kernel for the other device only (CPU or CUDA) and none that
// serves `device`: a vendor op without a portable equivalent (eg::PortableOf), _cudnn_rnn say.
bool RunsOn(const c10::OperatorHandle& h, c10::Device device) {
  using K = c10::DispatchKey;
  if (!device.is_cpu() && !device.is_cuda()) return true;
  if (!h.hasKernelForDispatchKey(device.is_cuda() ? K::CPU : K::CUDA)) return true;
  for (K k : {device.is_cuda() ? K::CUDA : K::CPU, K::CompositeImplicitAutograd,
              K::CompositeExplicitAutograd, K::CompositeExplicitAutogradNonFunctional})
    if (h.hasKernelForDispatchKey(k)) return true;
  return false;
}

// A table entry or buffer used on more than one lane (ScheduleReleases, ScheduleLeaves).
constexpr int kSeveralLanes = -100;
constexpr int kNoLane = -200;

class Planner {
 public:
  Planner(const PlanInputs& in, TensorStore& store)
      : in_(in),
        w_(in.workload),
        remap_host_(!in.device.is_cpu() && CapturedOnHost(in.workload)),
        training_(eg::HasBackward(in.workload)),
        store_(store) {}

  Result<Plan> Build() {
    for (int index : in_.selected) AddTop(index);
    MIMIC_RETURN_IF_ERROR(ResolveSources());
    MarkParameters();
    AssignLanes();
    OrderLanes();
    CompleteCollectivesBeforeUse();
    ScheduleReleases();
    return std::move(plan_);
  }

 private:
  void Skip(int top, const std::string& reason, const std::string& detail) {
    plan_.skipped.push_back({top, reason, detail});
  }

  Step& NewStep(Step::Kind kind, int op_index, int top) {
    Step& s = plan_.steps.emplace_back();
    s.kind = kind;
    s.op_index = op_index;
    s.top = top;
    ++plan_.tops[top].num_steps;
    return s;
  }

  void AddTop(int index) {
    const int top = static_cast<int>(plan_.tops.size());
    TopOp& t = plan_.tops.emplace_back();
    t.op_index = index;
    t.first_step = static_cast<int>(plan_.steps.size());
    const proto::Op& op = w_.ops(index);
    // The store walks every selected op, skipped ones too: their outputs are then known to be
    // produced by the replay (consumers take a stand-in when they are not).
    store_order_.push_back(index);
    const bool gap = AddHostGap(top, index);
    if (eg::IsDelayOp(op)) {
      auto it = op.attrs().find("delay_us");
      NewStep(Step::Kind::kDelay, index, top).delay_us =
          it == op.attrs().end() ? 0 : it->second.double_value();
    } else if (eg::IsCompiledKernel(op)) {
      // Traces are untrusted input: Mimic never runs code that came with one.
      Skip(top, "compiled_kernel",
           op.kernel_backend() + " kernel " + op.kernel_file() +
               ": Mimic does not execute code carried by a trace");
    } else if (IsCollective(op)) {
      AddCollective(top, op);
    } else {
      AddOperator(top, index);
    }
    plan_.tops[top].runs = plan_.tops[top].num_steps > (gap ? 1 : 0);
  }

  // --host-gaps recorded: the host time the original spent before this op with no op of any
  // thread running (the replay runs them in start order), less what the capture's
  // instrumentation added to the gap (eg::CaptureCost): its cost per event boundary (an op or
  // record_function starting or ending) in the gap, and at each op starting there its input
  // tensors, ranged and saved integer inputs. Returns whether a delay step was added.
  // --host-gaps modelled: the platform's host time for what issued the op (forward, backward,
  // optimizer: eg::IssuerOf), as the model's T1 without a trace.
  bool AddHostGap(int top, int index) {
    const proto::Op& op = w_.ops(index);
    double gap = 0;
    if (in_.options.host_gaps == HostGaps::kModelled) {
      gap = in_.options.modelled_t1_us[static_cast<int>(eg::IssuerOf(w_, in_.tree, index))];
    } else {
      if (in_.options.host_gaps != HostGaps::kRecorded || !op.has_cpu_span()) return false;
      if (!host_gaps_) host_gaps_.emplace(w_, in_.step_start_us, in_.options.capture_cost);
      gap = host_gaps_->Before(op);
    }
    if (gap <= 0) return false;
    Step& d = NewStep(Step::Kind::kDelay, index, top);
    d.delay_us = gap;
    d.host_gap = true;
    ++plan_.host_gaps;
    plan_.host_gap_us += gap;
    return true;
  }

  // A communication op: issued through the communicator when there is one (a multi-rank
  // replay), skipped otherwise.
  void AddCollective(int top, const proto::Op& op) {
    if (!op.has_collective() || op.collective().type() == proto::Collective::TYPE_UNKNOWN)
      return Skip(top, "collective", "not a communication Mimic recognizes");
    if (!in_.communicator)
      return Skip(top, "collective",
                  "needs the job's process groups: launch one mimic per rank (torchrun "
                  "--no-python, srun, mpirun)");
    const int index = plan_.tops[top].op_index;
    if (op.collective().type() == proto::Collective::WAIT) {
      NewStep(Step::Kind::kWait, index, top);
      return;
    }
    Step& s = NewStep(Step::Kind::kCollective, index, top);
    s.run = collectives_++;
    // Its own tensors, by argument name (full mode runs it on them).
    if (op.name() == "record_param_comms") {
      if (op.inputs_size() > 0) s.in_entry = SingleTensor(op.inputs(0));
      if (op.outputs_size() > 0) s.out_entry = SingleTensor(op.outputs(0));
    } else if (op.schema() >= 0) {
      const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(w_.schemas(op.schema()));
      for (int k = 0; k < op.inputs_size() && k < static_cast<int>(args.size()); ++k) {
        const std::string& n = args[k].name;
        if (n.find("split") != std::string::npos) continue;
        if (n == "tensors" || n == "tensor" || n == "input" || n == "self" ||
            n.rfind("input", 0) == 0)
          s.in_entry = SingleTensor(op.inputs(k));
        else if (n.rfind("output", 0) == 0)
          s.out_entry = SingleTensor(op.inputs(k));
      }
    }
  }

  void AddOperator(int top, int index) {
    const proto::Op& op = w_.ops(index);
    Result<c10::OperatorHandle> handle = ops::ResolveOperator(w_.schemas(op.schema()));
    if (!handle.ok())
      return Skip(top, IsCustomOperator(op.name()) ? "custom_operator" : "unknown_operator",
                  handle.status().message());
    if (!RunsOn(*handle, in_.device))
      return Skip(
          top, "device_specific",
          op.name() + " has no kernel for " + in_.device.str() + " and no portable equivalent");
    std::vector<std::pair<int, c10::OperatorHandle>> parts;
    if (!in_.options.decompose || !Decompose(index, *handle, parts)) parts = {{index, *handle}};
    std::vector<ops::CompiledArgs> compiled;
    for (const auto& [part, h] : parts) {
      Result<ops::CompiledArgs> args =
          ops::CompileArgs(w_.ops(part), w_, h.schema(), in_.device, remap_host_);
      if (!args.ok()) {
        const std::string prefix =
            part == index ? "" : "its recorded part " + w_.ops(part).name() + ": ";
        return Skip(top, "unsupported_argument", prefix + FirstLine(args.status().message()));
      }
      compiled.push_back(std::move(*args));
    }
    store_order_.pop_back();  // the parts run, not the op itself
    for (size_t k = 0; k < parts.size(); ++k) {
      Step& s = NewStep(Step::Kind::kOp, parts[k].first, top);
      s.handle = parts[k].second;
      s.args = std::move(compiled[k]);
      s.check = k + 1 == parts.size();
      s.recorded_shapes = eg::HasDataDependentShape(w_.ops(parts[k].first).name());
      s.outputs = OutputSlots(w_.ops(parts[k].first));
      s.grad_mode = training_ && eg::IssuerOf(w_, in_.tree, index) == eg::Issuer::kForward;
      store_order_.push_back(parts[k].first);
    }
  }

  static std::vector<OutputSlot> OutputSlots(const proto::Op& op) {
    auto entry = [](const proto::Value& v) {
      return v.kind_case() == proto::Value::kTensor && v.tensor() >= 0 ? v.tensor() : -1;
    };
    std::vector<OutputSlot> slots(op.outputs_size());
    for (int k = 0; k < op.outputs_size(); ++k) {
      const proto::Value& v = op.outputs(k);
      slots[k].entry = entry(v);
      if (v.kind_case() == proto::Value::kList)
        for (const proto::Value& item : v.list().items()) slots[k].items.push_back(entry(item));
    }
    return slots;
  }

  // The ops to run for op `index` with operator `h`: the op itself, or, for a composite
  // (CompositeImplicitAutograd: it has no kernel of its own and decomposes into other ops), the
  // ops the trace recorded under it, themselves decomposed. Its decomposition can depend on
  // state the replay does not have (no autograd): run as itself, cnn_bn's max_pool2d takes
  // half the time of the max_pool2d_with_indices its trace recorded under it (and ran). False
  // when a recorded child cannot run on its own (no schema, an unknown operator, a
  // collective, an op of another device's library); the op then runs as itself.
  bool Decompose(int index, const c10::OperatorHandle& h,
                 std::vector<std::pair<int, c10::OperatorHandle>>& out) {
    const std::vector<int>& children = in_.tree.Children(index);
    if (children.empty() ||
        !h.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd)) {
      out.emplace_back(index, h);
      return true;
    }
    for (int c : children) {
      const proto::Op& child = w_.ops(c);
      if (child.schema() < 0 || IsCollective(child) || eg::IsDelayOp(child)) return false;
      Result<c10::OperatorHandle> ch = ops::ResolveOperator(w_.schemas(child.schema()));
      if (!ch.ok() || !RunsOn(*ch, in_.device) || !Decompose(c, *ch, out)) return false;
    }
    return true;
  }

  // Where every op step's input tensors come from, as the store resolves them.
  Status ResolveSources() {
    MIMIC_RETURN_IF_ERROR(store_.Plan(store_order_));
    // store_order_ lists, in order, each top op's steps (or the top op itself when skipped).
    size_t pos = 0;
    for (const TopOp& t : plan_.tops) {
      const int first = FirstOpStep(plan_, t);
      if (first == t.first_step + t.num_steps) {  // skipped: the top op itself
        ++pos;
        continue;
      }
      for (int i = first; i < t.first_step + t.num_steps; ++i, ++pos) {
        Step& s = plan_.steps[i];
        for (const ops::TensorSlot& slot : s.args.tensors)
          s.sources.push_back(store_.SourceOf(static_cast<int>(pos), slot.entry));
      }
    }
    return Status::Ok();
  }

  // The parameters of a training step (eg::ForwardAutogradGraph: the tensors its forward reads
  // that its optimizer updates in place) require grad, so that the replay's forward records the
  // autograd graph over them as the original's did (each op on them, or on what they compute,
  // allocating its node and saving its inputs). A forward op that updates one in place ran
  // under no_grad in the original (autograd refuses it otherwise), and runs so here.
  void MarkParameters() {
    if (!training_) return;
    const std::unordered_set<int> graph = eg::ForwardAutogradGraph(w_, in_.tree).parameters;
    std::unordered_set<int> params;
    for (Step& s : plan_.steps) {
      if (s.kind != Step::Kind::kOp || !s.grad_mode) continue;
      ForEachInput(s, /*written=*/false, [&](const InputSource& src) {
        if (src.kind == InputSource::Kind::kLeaf && graph.count(src.entry))
          params.insert(src.entry);
      });
      ForEachInput(s, /*written=*/true, [&](const InputSource& src) {
        if (params.count(src.entry)) s.grad_mode = false;
      });
    }
    store_.RequireGrad(std::vector<int>(params.begin(), params.end()));
    plan_.parameters = static_cast<int64_t>(params.size());
  }

  // Calls fn(source) for each input tensor of op step `s`; with `written`, only for those its
  // schema says it writes.
  template <typename Fn>
  static void ForEachInput(const Step& s, bool written, const Fn& fn) {
    const std::vector<c10::Argument>& args = s.handle->schema().arguments();
    for (size_t k = 0; k < s.sources.size(); ++k) {
      const size_t arg = static_cast<size_t>(s.args.tensors[k].arg);
      const c10::AliasInfo* alias = arg < args.size() ? args[arg].alias_info() : nullptr;
      if (!written || (alias && alias->isWrite())) fn(s.sources[k]);
    }
  }

  // The original's stream of a top op: the stream of the first kernel it (or an op under it)
  // launched; -1 when it launched none (host-only ops, or a trace without Kineto).
  int64_t StreamOf(int index) const {
    const proto::Op& op = w_.ops(index);
    if (op.kernels_size() > 0) return op.kernels(0).stream();
    for (int c : in_.tree.Children(index))
      if (int64_t s = StreamOf(c); s >= 0) return s;
    return -1;
  }

  // Each stream of the original is a lane; the stream with the most kernels is lane 0, where
  // host-only ops and communication run too.
  void AssignLanes() {
    std::map<int64_t, int64_t> kernels;  // stream -> kernels launched by the selection
    std::vector<int64_t> stream_of_top(plan_.tops.size(), -1);
    for (size_t t = 0; t < plan_.tops.size(); ++t) {
      const int index = plan_.tops[t].op_index;
      if (IsCollective(w_.ops(index))) continue;  // NCCL's kernels run on NCCL's own stream
      stream_of_top[t] = StreamOf(index);
      if (stream_of_top[t] >= 0) ++kernels[stream_of_top[t]];
    }
    plan_.lane_streams = {-1};
    std::map<int64_t, int> lane_of;
    if (!kernels.empty()) {
      const auto main =
          std::max_element(kernels.begin(), kernels.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      plan_.lane_streams[0] = main->first;
      lane_of[main->first] = 0;
    }
    for (size_t t = 0; t < plan_.tops.size(); ++t) {
      const int64_t stream = stream_of_top[t];
      if (stream < 0) continue;
      auto [it, added] = lane_of.emplace(stream, static_cast<int>(plan_.lane_streams.size()));
      if (added) plan_.lane_streams.push_back(stream);
      const TopOp& top = plan_.tops[t];
      for (int i = top.first_step; i < top.first_step + top.num_steps; ++i)
        plan_.steps[i].lane = it->second;
    }
    plan_.lanes = static_cast<int>(plan_.lane_streams.size());
    // Communication is driven from the host thread; with several lanes that is a lane of its own.
    if (plan_.lanes > 1)
      for (Step& s : plan_.steps)
        if (s.kind == Step::Kind::kCollective || s.kind == Step::Kind::kWait || s.host_gap)
          s.lane = kHostLane;
  }

  // The storages a step reads and writes (trace storage ids).
  void Accesses(const Step& s, std::vector<int64_t>& reads, std::vector<int64_t>& writes) const {
    reads.clear();
    writes.clear();
    auto storage = [&](int entry) { return w_.tensors(entry).storage_id(); };
    const proto::Op& op = w_.ops(s.op_index);
    if (s.kind == Step::Kind::kCollective) {
      if (s.in_entry >= 0) reads.push_back(storage(s.in_entry));
      const int out = s.out_entry >= 0 ? s.out_entry : s.in_entry;
      if (out >= 0) writes.push_back(storage(out));
      return;
    }
    if (s.kind != Step::Kind::kOp) return;
    for (const ops::TensorSlot& slot : s.args.tensors) {
      reads.push_back(storage(slot.entry));
      const auto& alias = s.handle->schema().arguments()[slot.arg].alias_info();
      if (alias && alias->isWrite()) writes.push_back(storage(slot.entry));
    }
    for (const proto::Value& v : op.outputs())
      eg::ForEachTensor(v, [&](int t) { writes.push_back(storage(t)); });
  }

  // A step waits for the last step of another lane that wrote what it reads or writes, and for
  // the steps of other lanes that read what it writes since (the original's streams were
  // ordered the same way, or it computed garbage). Each wait is on the latest such step of
  // each lane only; every step waited for records an event.
  void OrderLanes() {
    if (plan_.lanes == 1) return;
    struct Access {
      int writer = -1;
      std::vector<int> readers;  // since the last write
    };
    std::unordered_map<int64_t, Access> access;
    std::vector<int64_t> reads, writes;
    RecordedWaits recorded(*this);
    for (int i = 0; i < static_cast<int>(plan_.steps.size()); ++i) {
      Step& s = plan_.steps[i];
      std::vector<int> latest(plan_.lanes + 1,
                              -1);  // per lane (the host's last), the latest step to wait for
      auto need = [&](int j) {
        if (j < 0 || plan_.steps[j].lane == s.lane) return;
        const int lane = plan_.steps[j].lane == kHostLane ? plan_.lanes : plan_.steps[j].lane;
        latest[lane] = std::max(latest[lane], j);
      };
      recorded.Visit(i, need);
      Accesses(s, reads, writes);
      for (int64_t st : reads) need(access[st].writer);
      for (int64_t st : writes) {
        need(access[st].writer);
        for (int r : access[st].readers) need(r);
      }
      for (int64_t st : reads) access[st].readers.push_back(i);
      for (int64_t st : writes) access[st] = {i, {}};
      for (int j : latest) {
        if (j < 0) continue;
        if (plan_.steps[j].event < 0) plan_.steps[j].event = plan_.events++;
        s.waits.push_back(plan_.steps[j].event);
      }
    }
  }

  // The original's recorded stream waits ("Stream Wait Event": stream S waits for what stream W
  // had launched when the awaited event was recorded): the next step on S's lane waits for the
  // last step on W's lane launched before the record. Host-side syncs (Event, Stream, Context
  // Sync) are recorded in the workload; the replay's host waits only where data requires.
  class RecordedWaits {
   public:
    explicit RecordedWaits(const Planner& p)
        : p_(p), launched_(p.plan_.lanes), pending_(p.plan_.lanes) {
      for (int l = 0; l < p.plan_.lanes; ++l) lane_of_[p.plan_.lane_streams[l]] = l;
    }
    // Before step i: the waits the recorded syncs put on it, through `need`.
    template <typename Need>
    void Visit(int i, Need&& need) {
      const Step& s = p_.plan_.steps[i];
      const TopOp& top = p_.plan_.tops[s.top];
      if (i == top.first_step) AddSyncsOf(top.op_index);
      if (s.lane < 0) return;
      for (int j : pending_[s.lane]) need(j);
      pending_[s.lane].clear();
      const proto::Op& op = p_.w_.ops(top.op_index);
      if (op.has_cpu_span()) launched_[s.lane].emplace_back(op.cpu_start_us(), i);
    }

   private:
    void AddSyncsOf(int index) {
      for (const proto::CudaSync& sync : p_.w_.ops(index).syncs()) {
        if (sync.kind() != "Stream Wait Event" || sync.record_us() < 0) continue;
        auto waiting = lane_of_.find(sync.stream()), awaited = lane_of_.find(sync.wait_on_stream());
        if (waiting == lane_of_.end() || awaited == lane_of_.end() ||
            waiting->second == awaited->second)
          continue;
        const auto& before = launched_[awaited->second];
        auto it = std::upper_bound(before.begin(), before.end(),
                                   std::make_pair(sync.record_us(), INT32_MAX));
        if (it != before.begin()) pending_[waiting->second].push_back(std::prev(it)->second);
      }
      for (int c : p_.in_.tree.Children(index)) AddSyncsOf(c);
    }

    const Planner& p_;
    std::unordered_map<int64_t, int> lane_of_;                   // stream -> lane
    std::vector<std::vector<std::pair<double, int>>> launched_;  // per lane: (launch, step)
    std::vector<std::vector<int>> pending_;                      // per lane: steps to wait for
  };

  // An asynchronous collective ends at its recorded wait, or, in full mode, before the first
  // op that touches a storage it writes.
  void CompleteCollectivesBeforeUse() {
    if (in_.options.mode != ReplayMode::kFull) return;
    std::unordered_map<int64_t, std::vector<int>> pending;  // storage -> async collective steps
    std::vector<int64_t> reads, writes;
    for (int i = 0; i < static_cast<int>(plan_.steps.size()); ++i) {
      Step& s = plan_.steps[i];
      Accesses(s, reads, writes);
      if (s.kind == Step::Kind::kOp) {
        for (const std::vector<int64_t>* set : {&reads, &writes})
          for (int64_t st : *set)
            if (auto it = pending.find(st); it != pending.end()) {
              s.complete_first.insert(s.complete_first.end(), it->second.begin(), it->second.end());
              pending.erase(it);
            }
      }
      if (s.kind == Step::Kind::kCollective && w_.ops(s.op_index).collective().async())
        for (int64_t st : writes) pending[st].push_back(i);
    }
  }

  // An intermediate tensor dies after the last step that uses it, when every step that uses
  // it runs on one lane (else at the end of the iteration, when the lanes have joined).
  void ScheduleReleases() {
    std::unordered_map<int, std::pair<int, int>>
        last_use;  // entry -> (step, lane or kSeveralLanes)
    auto use = [&](int entry, int i) {
      auto [it, first] = last_use.emplace(entry, std::make_pair(i, plan_.steps[i].lane));
      if (!first) {
        if (it->second.second != plan_.steps[i].lane) it->second.second = kSeveralLanes;
        it->second.first = i;
      }
    };
    for (int i = 0; i < static_cast<int>(plan_.steps.size()); ++i) {
      const Step& s = plan_.steps[i];
      if (s.kind == Step::Kind::kDelay) continue;
      for (const InputSource& src : s.sources) {
        use(src.entry, i);
        if (src.kind == InputSource::Kind::kDerived) use(src.from, i);
      }
      for (int e : {s.in_entry, s.out_entry})
        if (e >= 0) use(e, i);
      const proto::Op& op = w_.ops(s.op_index);
      for (const proto::Value& v : op.outputs()) eg::ForEachTensor(v, [&](int t) { use(t, i); });
      if (s.check)  // the top op's recorded outputs are checked after its last part
        for (const proto::Value& v : w_.ops(plan_.tops[s.top].op_index).outputs())
          eg::ForEachTensor(v, [&](int t) { use(t, i); });
    }
    for (const auto& [entry, at] : last_use)
      if (at.second != kSeveralLanes) plan_.steps[at.first].releases.push_back(entry);
    for (Step& s : plan_.steps) std::sort(s.releases.begin(), s.releases.end());
    ScheduleLeaves(last_use);
  }

  // Each prepared buffer's first and last step; with --lazy-alloc it is allocated before the
  // first and freed after the last (when one lane uses it; else it lives the whole iteration).
  // Then the peak each way, from the recorded sizes.
  void ScheduleLeaves(const std::unordered_map<int, std::pair<int, int>>& last_use) {
    struct Life {
      int first = INT_MAX, last = -1, lane = kNoLane;
      int64_t bytes = 0;
    };
    std::unordered_map<int64_t, Life> leaves, intermediates;
    for (int i = 0; i < static_cast<int>(plan_.steps.size()); ++i) {
      const Step& s = plan_.steps[i];
      for (const InputSource& src : s.sources) {
        if (src.kind != InputSource::Kind::kLeaf && src.kind != InputSource::Kind::kLeafFresh)
          continue;
        Life& l = leaves[store_.BufferKey(src.entry)];
        l.first = std::min(l.first, i);
        l.last = std::max(l.last, i);
        l.lane = l.lane == kNoLane || l.lane == s.lane ? s.lane : kSeveralLanes;
      }
    }
    for (auto& [key, l] : leaves) {
      l.bytes = store_.buffer_bytes().at(key);
      if (l.lane == kSeveralLanes) l.first = 0, l.last = INT_MAX - 1;
      if (!in_.options.lazy_alloc) continue;
      plan_.steps[l.first].acquire.push_back(key);
      if (l.last < INT_MAX - 1) plan_.steps[l.last].drop.push_back(key);
    }
    std::unordered_set<int64_t> leaf_storages;
    for (const auto& [key, l] : leaves) leaf_storages.insert(key);
    for (int i = 0; i < static_cast<int>(plan_.steps.size()); ++i) {
      for (const proto::Value& v : w_.ops(plan_.steps[i].op_index).outputs())
        eg::ForEachTensor(v, [&](int t) {
          const proto::Tensor& rec = w_.tensors(t);
          if (leaf_storages.count(rec.storage_id())) return;  // written in place
          Life& l = intermediates[rec.storage_id()];
          l.first = std::min(l.first, i);
          auto it = last_use.find(t);
          const int last = it == last_use.end()                 ? i
                           : it->second.second == kSeveralLanes ? INT_MAX - 1
                                                                : it->second.first;
          l.last = std::max(l.last, last);
          l.bytes = std::max(l.bytes,
                             (rec.offset() + rec.numel()) * std::max<int64_t>(rec.itemsize(), 1));
        });
    }
    auto peak = [](std::initializer_list<const std::unordered_map<int64_t, Life>*> sets) {
      std::map<int, int64_t> delta;  // step -> bytes allocated (+) or freed (-) there
      for (const auto* set : sets)
        for (const auto& [key, l] : *set) {
          delta[l.first] += l.bytes;
          delta[l.last + 1] -= l.bytes;
        }
      int64_t live = 0, most = 0;
      for (const auto& [step, d] : delta) most = std::max(most, live += d);
      return most;
    };
    // The fresh memory goes to the op that writes it (a host gap's step names the op it
    // precedes).
    for (const auto& [key, l] : intermediates) {
      size_t i = static_cast<size_t>(l.first);
      while (i < plan_.steps.size() && plan_.steps[i].kind != Step::Kind::kOp) ++i;
      if (i < plan_.steps.size()) plan_.steps[i].fresh_bytes += l.bytes;
    }
    plan_.peak_bytes = store_.planned_bytes() + peak({&intermediates});
    plan_.peak_bytes_lazy = peak({&intermediates, &leaves});
  }

  const PlanInputs& in_;
  const proto::Workload& w_;
  const bool remap_host_;  // the host devices the trace names are the replay's device
  const bool training_;    // the trace ran the autograd engine (HasBackward)
  TensorStore& store_;
  Plan plan_;
  std::vector<int> store_order_;  // the ops the store plans, in replay order
  int collectives_ = 0;
  std::optional<eg::RecordedHostGaps> host_gaps_;  // --host-gaps recorded
};

}  // namespace

Result<Plan> BuildPlan(const PlanInputs& in, TensorStore& store) {
  return Planner(in, store).Build();
}

}  // namespace mimic::replay
