// Predict(): prices every op under each top-level op with the op-class table, then walks one
// iteration: the CPU thread issues ops (with T1-T5 overheads) and, on a GPU, launches kernels
// onto streams (a kernel starts at max(its launch, its stream free)); collectives wait for the
// compute stream and run on their own stream. docs/model.md has the details.
#include "mimic/model/predict.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "mimic/base/stats.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/host_timeline.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"
#include "mimic/model/host_gaps.h"
#include "mimic/model/platform.h"
#include "op_models.h"

namespace mimic::model {
namespace {

// Which inputs an op finds in cache, by reuse distance: `clock_` counts the bytes that priced
// ops have read and written so far, and an input is cold when more than the cache's capacity
// (the platform's l2_bytes: GPU L2, CPU last-level cache) went by since any op last touched its
// storage, or when none has. Predict runs one iteration through it before the priced one, so
// the weights and inputs an iteration reuses carry their last touch from the one before. The
// count includes repeated touches (an upper bound on the distinct bytes), so it errs towards
// cold, as a cache shared with other work does.
class CacheModel {
 public:
  explicit CacheModel(double capacity_bytes) : capacity_(capacity_bytes) {}

  // The share of `op`'s input bytes that are cold; then records `op`'s reads and writes.
  double Touch(const proto::Workload& w, const proto::Op& op) {
    if (capacity_ <= 0) return 0;
    const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs()),
                                            out = Tensors(w, op.outputs());
    double in_bytes = 0, cold = 0, out_bytes = 0;
    for (const proto::Tensor* t : in) {
      const double* last = LastTouch(*t);
      in_bytes += Bytes(t);
      if (!last || clock_ - *last > capacity_) cold += Bytes(t);
    }
    for (const proto::Tensor* t : out) out_bytes += Bytes(t);
    clock_ += in_bytes + out_bytes;
    for (const proto::Tensor* t : in) Record(*t);
    for (const proto::Tensor* t : out) Record(*t);
    return in_bytes > 0 ? cold / in_bytes : 0;
  }

 private:
  // Tensors are tracked by storage; one with no recorded storage by its table entry.
  const double* LastTouch(const proto::Tensor& t) const {
    if (t.storage_id() != 0) {
      auto it = by_storage_.find(t.storage_id());
      return it == by_storage_.end() ? nullptr : &it->second;
    }
    auto it = by_entry_.find(&t);
    return it == by_entry_.end() ? nullptr : &it->second;
  }
  void Record(const proto::Tensor& t) {
    (t.storage_id() != 0 ? by_storage_[t.storage_id()] : by_entry_[&t]) = clock_;
  }

  double capacity_;
  double clock_ = 0;
  std::unordered_map<int64_t, double> by_storage_;  // storage -> clock_ at its last touch
  std::unordered_map<const proto::Tensor*, double> by_entry_;  // tensors without a storage id
};

struct SubtreeCost {
  double compute_us = 0;  // sum of leaf compute
  double flops = 0, bytes = 0;
  int nodes = 0;     // ops dispatched (the op and everything under it)
  int launches = 0;  // leaves that launch a kernel
  const char* model = "none";
  const char* unmodelled = nullptr;  // why no model sees some of its work (OpCost::unmodelled)
  const char* bound = "";            // the limiter of its longest leaf (OpCost::bound)
  double bound_us = 0;               // that leaf's compute time
};

// Whether a top-level op is priced by the op-class table (Accumulate): not a communication
// (CollectiveCost prices those), a wait, or a collective op eg could not read.
bool PricedByClassModels(const proto::Op& op) {
  const bool wait = op.has_collective() && op.collective().type() == proto::Collective::WAIT;
  return !eg::IsCommunication(op) && !wait && !eg::IsCollectiveOp(op);
}

// Adds one leaf's cost to the subtree's.
void AddCost(const OpCost& cost, SubtreeCost& acc) {
  acc.compute_us += cost.compute_us;
  acc.flops += cost.flops;
  acc.bytes += cost.bytes;
  acc.launches += cost.launches ? 1 : 0;
  if (std::string_view(acc.model) == "none" || std::string_view(acc.model) == "view")
    acc.model = cost.model;
  if (!acc.unmodelled) acc.unmodelled = cost.unmodelled;
  if (cost.compute_us > acc.bound_us) acc.bound = cost.bound, acc.bound_us = cost.compute_us;
}

// Whether op `index` is priced whole by its class model: a leaf, or a composite of a known
// class (its children are how this backend happens to implement it). Ops of class other are
// the sum of the children the trace recorded, and so are the composites every backend runs as
// the same ops (eg::DecomposesEverywhere), and attention where its children do the
// work: it dispatches to a fused kernel (itself of class attention) or, with dropout or on some
// backends, to the math path of bmm, softmax and dropout (a GEMM or attention op somewhere
// under it). A fused kernel whose children are only its buffers (the CPU flash kernel records
// empty, zeros and transpose) is priced whole.
bool HasMatmulUnder(const proto::Workload& w, const eg::OpTree& tree, int index) {
  for (int c : tree.Children(index)) {
    const eg::OpClass cls = eg::ClassOf(w.ops(c).name());
    if (cls == eg::OpClass::kGemm || cls == eg::OpClass::kAttention || HasMatmulUnder(w, tree, c))
      return true;
  }
  return false;
}

bool PricedWhole(const proto::Workload& w, const eg::OpTree& tree, int index) {
  if (tree.Children(index).empty()) return true;
  const eg::OpClass cls = eg::ClassOf(w.ops(index).name());
  if (cls == eg::OpClass::kOther || eg::DecomposesEverywhere(w.ops(index).name())) return false;
  return cls != eg::OpClass::kAttention || !HasMatmulUnder(w, tree, index);
}

// The ops under (and including) `index` that Accumulate prices, in its order, through `cache`
// alone: the first pass over an iteration.
void Touch(const proto::Workload& w, const eg::OpTree& tree, int index, CacheModel& cache) {
  if (eg::IsDelayOp(w.ops(index))) return;
  if (PricedWhole(w, tree, index)) {
    cache.Touch(w, w.ops(index));
    return;
  }
  for (int c : tree.Children(index)) Touch(w, tree, c, cache);
}

void RecordedKernels(const proto::Workload& w, const eg::OpTree& tree, int index,
                     std::vector<const proto::Kernel*>& out);

// The copy the device work recorded at or under op `index` made: a host<->device copy before
// one between GPUs before one within the device; pageable when any copy of its route was.
eg::DeviceCopy RecordedCopy(const proto::Workload& w, const eg::OpTree& tree, int index) {
  std::vector<const proto::Kernel*> ks;
  RecordedKernels(w, tree, index, ks);
  auto rank = [](eg::CopyRoute r) {
    return r == eg::CopyRoute::kHostToDevice || r == eg::CopyRoute::kDeviceToHost ? 3
           : r == eg::CopyRoute::kPeer                                            ? 2
           : r == eg::CopyRoute::kDeviceToDevice                                  ? 1
                                                                                  : 0;
  };
  eg::DeviceCopy best;
  for (const proto::Kernel* k : ks) {
    const eg::DeviceCopy c = eg::DeviceCopyOf(k->name());
    if (rank(c.route) > rank(best.route)) best = c;
    if (c.route == best.route && c.host == eg::HostMemory::kPageable) best.host = c.host;
  }
  return best;
}

// An `aten::_values` op: an op on a sparse tensor asks for its values, and records doing so.
bool IsValuesOp(const std::string& name) {
  return name == "aten::_values" || name.rfind("aten::_values.", 0) == 0;
}

// A dtype conversion under an op priced whole: autocast's casts of its operands (linear's fp32
// weight and input to bf16, nll_loss's bf16 input to fp32). They run on every backend, the
// replay runs them among the op's children, and no class model prices them: under
// cross_entropy_loss on the H200 (fleet_samples/h200/gpt2) the cast of the log-probabilities
// took 1.17 of the op's 1.73 ms.
bool IsCast(const proto::Op& op) { return op.name() == "aten::_to_copy"; }

// OpEvidence::unrolled_kernels of `op`'s own kernels, on top of `so_far`.
int UnrolledKernels(const proto::Op& op, int so_far) {
  for (const proto::Kernel& k : op.kernels()) {
    if (k.name().find("unrolled_elementwise_kernel") != std::string::npos) return 1;
    if (k.name().find("vectorized_elementwise_kernel") != std::string::npos)
      so_far = std::max(so_far, 0);
  }
  return so_far;
}

// The evidence a cast under another op is priced with: its own subtree's elementwise kernels.
OpEvidence CastEvidence(const proto::Workload& w, const eg::OpTree& tree, int index) {
  OpEvidence e;
  std::vector<int> stack{index};
  while (!stack.empty()) {
    const int c = stack.back();
    stack.pop_back();
    e.unrolled_kernels = UnrolledKernels(w.ops(c), e.unrolled_kernels);
    for (int g : tree.Children(c)) stack.push_back(g);
  }
  return e;
}

// ATen's own batch norm, forward or backward, where PyTorch did not hand it to cuDNN
// (aten::cudnn_batch_norm): bf16 input, cuDNN disabled, a 2-D input.
bool IsNativeBatchNorm(const proto::Op& op) {
  const std::string_view name = std::string_view(op.name()).substr(0, op.name().find('.'));
  return name == "aten::native_batch_norm" || name == "aten::native_batch_norm_backward" ||
         name.starts_with("aten::_native_batch_norm_legit");
}

void Accumulate(const proto::Workload& w, const eg::OpTree& tree, const proto::Platform& p,
                const std::map<int, int>& tbe, int index, CacheModel& cache, SubtreeCost& acc) {
  const proto::Op& op = w.ops(index);
  acc.nodes += 1;
  if (eg::IsDelayOp(op)) {
    // synth's substitution: the op is replaced by a spin of attrs["delay_us"].
    auto it = op.attrs().find("delay_us");
    if (it != op.attrs().end())
      acc.compute_us += it->second.kind_case() == proto::Value::kIntValue
                            ? static_cast<double>(it->second.int_value())
                            : it->second.double_value();
    acc.model = "delay";
    acc.bound = bound::kDelay, acc.bound_us = acc.compute_us;
    return;
  }
  if (PricedWhole(w, tree, index)) {
    // A CPU _foreach_ op dispatches its op once per position of its lists: recorded as its
    // children where the trace has them, counted here where it does not.
    if (p.device_type() != "cuda" && tree.Children(index).empty())
      acc.nodes += std::max(0, ForeachCalls(op) - 1);
    OpEvidence e;
    // Count the children's dispatches, not their compute; the sparse values the op read are the
    // outputs of the `aten::_values` among them. The casts under an op that is not itself a
    // copy are the exception: priced as the copies they are (IsCast).
    const bool copy = eg::ClassOf(op.name()) == eg::OpClass::kMemcpy;
    std::vector<int> casts;
    e.tf32_kernels = eg::LaunchedTf32Kernel(op);
    e.native_batch_norm = IsNativeBatchNorm(op);
    e.recorded_launches = op.kernels_size();
    e.unrolled_kernels = UnrolledKernels(op, -1);
    std::vector<int> stack(tree.Children(index).begin(), tree.Children(index).end());
    while (!stack.empty()) {
      const int c = stack.back();
      stack.pop_back();
      acc.nodes += 1;
      e.tf32_kernels = e.tf32_kernels || eg::LaunchedTf32Kernel(w.ops(c));
      e.native_batch_norm = e.native_batch_norm || IsNativeBatchNorm(w.ops(c));
      e.recorded_launches += w.ops(c).kernels_size();
      e.unrolled_kernels = UnrolledKernels(w.ops(c), e.unrolled_kernels);
      if (IsValuesOp(w.ops(c).name()))
        for (const proto::Tensor* t : Tensors(w, w.ops(c).outputs())) {
          e.sparse_values_bytes += Bytes(t);
          if (t->shape_size() >= 1 && t->shape(0) > e.sparse_rows) {
            e.sparse_rows = t->shape(0);
            e.sparse_row_width = t->numel() / std::max<int64_t>(t->shape(0), 1);
          }
        }
      if (!copy && IsCast(w.ops(c))) casts.push_back(c);
      for (int g : tree.Children(c)) stack.push_back(g);
    }
    e.cold_fraction = cache.Touch(w, op);
    e.recorded_copy = RecordedCopy(w, tree, index);
    if (auto it = tbe.find(index); it != tbe.end()) e.tbe_partner = &w.ops(it->second);
    AddCost(LeafCost(w, op, p, e), acc);
    for (int c : casts) AddCost(LeafCost(w, w.ops(c), p, CastEvidence(w, tree, c)), acc);
    return;
  }
  // Kernels the op launched itself, beside its children's (compiled code, a custom op that
  // also runs ATen ops): no child's model prices them; its own bytes give a floor.
  if ((op.kernels_size() > 0 || eg::IsCompiledCode(op)) &&
      eg::ClassOf(op.name()) == eg::OpClass::kOther)
    AddCost(LeafCost(w, op, p), acc);
  for (int c : tree.Children(index)) Accumulate(w, tree, p, tbe, c, cache, acc);
}

void RecordedKernels(const proto::Workload& w, const eg::OpTree& tree, int index,
                     std::vector<const proto::Kernel*>& out) {
  for (const proto::Kernel& k : w.ops(index).kernels()) out.push_back(&k);
  for (int c : tree.Children(index)) RecordedKernels(w, tree, c, out);
}

// A dtype as torch spells it: float32, bfloat16, int64, float8_e4m3fn ("unknown" unrecorded).
std::string TorchDtypeName(proto::DType d) {
  if (d == proto::DTYPE_UNKNOWN) return "unknown";
  std::string name = proto::DType_Name(d);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return name;
}

// An op's tensor arguments as the trace recorded them, in order (tensor lists left out); an
// undefined one (an absent optional weight) as such.
std::vector<OpPrediction::Input> RecordedInputs(const proto::Workload& w, const proto::Op& op) {
  std::vector<OpPrediction::Input> inputs;
  for (const proto::Value& v : op.inputs()) {
    if (v.kind_case() != proto::Value::kTensor || v.tensor() >= w.tensors_size()) continue;
    if (v.tensor() < 0) {
      inputs.push_back({std::nullopt, "undefined"});
      continue;
    }
    const proto::Tensor& t = w.tensors(v.tensor());
    inputs.push_back(
        {std::vector<int64_t>(t.shape().begin(), t.shape().end()), TorchDtypeName(t.dtype())});
  }
  return inputs;
}

// Device intervals of the iteration apart from the collectives': those of ops the models see
// into and those of the ops no model does (OpPrediction::unmodelled).
struct ComputeSplit {
  std::vector<std::pair<double, double>> comm, modelled, unmodelled;
};

// A top-level op's recorded kernels (RecordedKernels) as (start, end) intervals: into `all` and
// `cls`, and into `split`'s communication when the op is a collective or the kernel is a
// collective library's, else its compute by whether the op is modelled. Returns their summed time.
double AddRecorded(const std::vector<const proto::Kernel*>& ks, bool collective, bool unmodelled,
                   std::vector<std::pair<double, double>>& all,
                   std::vector<std::pair<double, double>>& cls, ComputeSplit& split) {
  double sum = 0;
  for (const proto::Kernel* k : ks) {
    const std::pair<double, double> iv{k->start_us(), k->start_us() + k->duration_us()};
    sum += k->duration_us();
    all.push_back(iv);
    cls.push_back(iv);
    (collective || eg::IsCommunicationKernel(k->name()) ? split.comm
     : unmodelled                                         ? split.unmodelled
                                                          : split.modelled)
        .push_back(iv);
  }
  return sum;
}

// Device work the host launched during the selection (`seg`, else the whole trace) that no
// top-level op holds (`held`): kernels and copies of wrapper ops, autograd's evaluate_function
// say, or of the engine itself. Added to `all` and, unmodelled, to `split`. Returns its time.
double AddUnheld(const proto::Workload& w, const proto::Segment* seg,
                 const std::set<const proto::Kernel*>& held,
                 std::vector<std::pair<double, double>>& all, ComputeSplit& split) {
  const bool windowed = seg && seg->has_span();
  const double begin = windowed ? seg->start_us() : 0;
  const double end = windowed ? begin + seg->duration_us() : 0;
  double sum = 0;
  for (const proto::Op& op : w.ops())
    for (const proto::Kernel& k : op.kernels()) {
      if (held.count(&k) || (windowed && (k.launch_us() < begin || k.launch_us() > end))) continue;
      const std::pair<double, double> iv{k.start_us(), k.start_us() + k.duration_us()};
      sum += k.duration_us();
      all.push_back(iv);
      (eg::IsCommunicationKernel(k.name()) ? split.comm : split.unmodelled).push_back(iv);
    }
  return sum;
}

// Length of the union of intervals.
double UnionLength(std::vector<std::pair<double, double>> iv) {
  std::sort(iv.begin(), iv.end());
  double total = 0, cur_s = 0, cur_e = -1;
  for (const auto& [s, e] : iv) {
    if (s > cur_e) {
      if (cur_e > cur_s) total += cur_e - cur_s;
      cur_s = s, cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e > cur_s) total += cur_e - cur_s;
  return total;
}

// Length of `a` not covered by the union of `b`.
double UncoveredLength(const std::vector<std::pair<double, double>>& a,
                       const std::vector<std::pair<double, double>>& b) {
  std::vector<std::pair<double, double>> both = a;
  both.insert(both.end(), b.begin(), b.end());
  return UnionLength(both) - UnionLength(b);
}

// Whether top-level op `index` ran on the host in a GPU trace: it has tensors and every one is
// on the CPU; in a Kineto trace alone (no tensor devices), it launched no kernel.
bool RunsOnHost(const proto::Workload& w, const eg::OpTree& tree, int index) {
  if (eg::IsKinetoOnly(w)) {
    std::vector<const proto::Kernel*> ks;
    RecordedKernels(w, tree, index, ks);
    return ks.empty();
  }
  const proto::Op& op = w.ops(index);
  std::vector<const proto::Tensor*> ts = Tensors(w, op.inputs());
  for (const proto::Tensor* t : Tensors(w, op.outputs())) ts.push_back(t);
  if (ts.empty()) return false;
  for (const proto::Tensor* t : ts)
    if (t->device() != "cpu") return false;
  return true;
}

bool IsSyncOp(const proto::Workload& w, const proto::Op& op) {
  const std::string& n = op.name();
  if (n == "aten::item" || n == "aten::_local_scalar_dense" ||
      n.find("synchronize") != std::string::npos)
    return true;
  if (n == "aten::copy_" || n == "aten::to" || n == "aten::_to_copy") {
    // A copy that lands on the host waits for the device.
    for (const proto::Value& v : op.outputs())
      if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0 &&
          v.tensor() < w.tensors_size() && w.tensors(v.tensor()).device() == "cpu")
        for (const proto::Value& i : op.inputs())
          if (i.kind_case() == proto::Value::kTensor && i.tensor() >= 0 &&
              i.tensor() < w.tensors_size() && w.tensors(i.tensor()).device().rfind("cuda", 0) == 0)
            return true;
  }
  return false;
}

// T1-T5 from the workload's Kineto spans, where it has them (medians over the selection).
struct Overheads {
  double t1 = 0, t2 = 0, t3 = 0, t4 = 0, t5 = 0, dispatch = 0;
  double framework = 0;  // CPU: the replay's own cost per op it issues, beyond dispatch
  eg::CaptureCost capture;  // the capture's cost, taken off T1 read from a trace
  bool t1_from_trace = false;
};

Overheads TraceOverheads(const proto::Workload& w, const std::vector<int>& top,
                         const proto::Platform& p, const eg::OpTree& tree, bool from_trace,
                         std::vector<std::string>& notes) {
  const proto::CpuOverheads& c = p.cpu_overheads();
  Overheads o{c.t1_us(), c.t2_us(),       c.t3_us(),        c.t4_us(),
              c.t5_us(), c.dispatch_us(), c.framework_us(), eg::CaptureCostFor(w, CaptureCostOf(c)),
              false};
  if (!from_trace || !w.kineto().present()) return o;
  std::vector<double> t2, t3, t5;
  for (int i : top) {
    const proto::Op& op = w.ops(i);
    if (!op.has_cpu_span()) continue;
    std::vector<const proto::Kernel*> ks;
    RecordedKernels(w, tree, i, ks);
    if (ks.empty()) continue;
    std::sort(ks.begin(), ks.end(), [](const proto::Kernel* a, const proto::Kernel* b) {
      return a->launch_us() < b->launch_us();
    });
    if (ks.front()->launch_us() <= 0) continue;
    t2.push_back(std::max(0.0, ks.front()->launch_us() - op.cpu_start_us()));
    t3.push_back(
        std::max(0.0, op.cpu_start_us() + op.cpu_duration_us() - ks.back()->launch_us() - o.t4));
    for (size_t k = 1; k < ks.size(); ++k)
      t5.push_back(std::max(0.0, ks[k]->launch_us() - ks[k - 1]->launch_us() - o.t4));
  }
  if (!t2.empty()) o.t2 = Median(t2), o.t3 = Median(t3);
  if (!t5.empty()) o.t5 = Median(t5);
  o.t1_from_trace = true;
  notes.push_back(t2.empty()
                      ? "T1 (the original's host time between ops, as replay --host-gaps recorded "
                        "waits it) from the Kineto trace; dispatch cost from the platform"
                      : "T1, T2, T3, T5 from the Kineto trace (medians); T4 from the platform");
  if (o.capture.boundary_us <= 0)
    notes.push_back(
        "no capture cost measured for this trace or platform (cpu_overheads.capture_*): the "
        "profiler's own host time (and the execution-trace observer's, where one ran) stays in "
        "T1-T5, so the end to end is high by it (a GPU capture's profiled steps can take several "
        "times its unprofiled ones); --no-trace-overheads takes T1-T5 from the platform instead");
  else
    notes.push_back(
        w.original().capture_cost().boundary_us() > 0
            ? "T1 less the capture's cost in the gap as the capture measured it (" +
                  o.capture.Describe() + ")"
            : "T1 less the platform's capture cost in the gap (cpu_overheads.capture_*: " +
                  o.capture.Describe() + ")");
  if (eg::HostTimelineUsed(w))
    notes.push_back("T1 read from the capture's host timeline where it matched the op: " +
                    eg::DescribeHostTimeline(w, o.capture.timeline_boundary_us));
  return o;
}

// The autograd nodes each top-level op's subtree recorded in a training step's forward
// (eg::ForwardAutogradGraph), by op index: each costs the host autograd_node_us on a CPU
// platform. Empty on a GPU platform and where calibrate did not measure it.
std::unordered_map<int, int64_t> AutogradNodes(const proto::Workload& w, const eg::OpTree& tree,
                                               const std::vector<int>& top,
                                               const proto::Platform& p,
                                               std::vector<std::string>& notes) {
  std::unordered_map<int, int64_t> nodes;
  if (p.device_type() == "cuda" || p.cpu_overheads().autograd_node_us() <= 0) return nodes;
  const eg::ForwardGraph graph = eg::ForwardAutogradGraph(w, tree);
  int64_t all = 0;
  for (int i : top) {
    int64_t n = graph.records_node[i];
    tree.ForEachDescendant(i, [&](int k) { n += graph.records_node[k]; });
    if (n > 0) nodes[i] = n, all += n;
  }
  if (all > 0) {
    char line[200];
    std::snprintf(line, sizeof(line),
                  "%lld autograd nodes recorded by the forward over its %zu parameters, %.3f us "
                  "each (cpu_overheads.autograd_node_us)",
                  static_cast<long long>(all), graph.parameters.size(),
                  p.cpu_overheads().autograd_node_us());
    notes.push_back(line);
  }
  return nodes;
}

// One op a step dispatches, in order: its name and, for a leaf, the bytes its model says it
// reads and writes (an embedding's rows gathered, not its table; none for a view).
struct Dispatch {
  std::string_view name;
  double bytes = 0;
  bool view = false;  // priced as a view (IsViewOp)
};

// What `index` dispatches in order on `p`: itself, then each child's, depth first.
void DispatchOrder(const proto::Workload& w, const eg::OpTree& tree, const proto::Platform& p,
                   int index, std::vector<Dispatch>& out) {
  const proto::Op& op = w.ops(index);
  Dispatch d{op.name(), 0, IsViewOp(w, op)};
  if (tree.Children(index).empty() && !d.view) d.bytes = LeafCost(w, op, p).bytes;
  out.push_back(d);
  for (int c : tree.Children(index)) DispatchOrder(w, tree, p, c, out);
}

// What each top-level op's dispatches cost on a CPU platform beyond dispatch_us because their
// code went cold since their op's last call, by op index: ColdDispatchUs at the distinct ops
// dispatched since (itself included: ops called in turn, as calibrate measures them, are each at
// the distance of their number) and at the bytes the other ops moved since. The step
// repeats: a first call's distances run back into the step before. Empty on a GPU platform and
// where calibrate measured neither.
std::unordered_map<int, double> ColdDispatchCosts(const proto::Workload& w, const eg::OpTree& tree,
                                                  const std::vector<int>& top,
                                                  const proto::Platform& p,
                                                  std::vector<std::string>& notes) {
  std::unordered_map<int, double> cost;
  const proto::CpuOverheads& c = p.cpu_overheads();
  if (p.device_type() == "cuda" || (c.in_turn().empty() && c.after_traffic().empty())) return cost;
  std::vector<std::vector<Dispatch>> order(top.size());
  for (size_t t = 0; t < top.size(); ++t) DispatchOrder(w, tree, p, top[t], order[t]);
  std::vector<std::string_view> recency;                      // most recent first
  std::unordered_map<std::string_view, double> last_traffic;  // traffic when each op last ended
  double traffic = 0, total = 0;
  int dispatches = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t t = 0; t < top.size(); ++t)
      for (const Dispatch& d : order[t]) {
        auto it = std::find(recency.begin(), recency.end(), d.name);
        const int distance = static_cast<int>(it - recency.begin()) + 1;
        if (it != recency.end()) recency.erase(it);
        recency.insert(recency.begin(), d.name);
        if (pass == 1) {
          const double us = ColdDispatchUs(c, d.view, distance, traffic - last_traffic[d.name]);
          cost[top[t]] += us, total += us, ++dispatches;
        }
        traffic += d.bytes;
        last_traffic[d.name] = traffic;
      }
  char buf[260];
  std::snprintf(buf, sizeof(buf),
                "each dispatch pays for its code gone cold since its op's last call (cpu_overheads."
                "in_turn by the distinct ops, after_traffic by the bytes in between): %.3f ms in "
                "the step, %.2f us a dispatch",
                total / 1000, dispatches ? total / dispatches : 0.0);
  notes.push_back(buf);
  return cost;
}

// Where the model's T1 comes from without a Kineto trace: the platform's per-issuer figures.
std::string IssuerT1Note(const proto::Platform& p) {
  const proto::CpuOverheads& c = p.cpu_overheads();
  char buf[200];
  std::snprintf(
      buf, sizeof(buf),
      "T1 (host time before each op, no Kineto trace) by what issued the op: forward "
      "%.2f us, backward %.2f us, optimizer %.2f us (the platform's cpu_overheads.t1_*_us",
      IssuerT1(c, eg::Issuer::kForward), IssuerT1(c, eg::Issuer::kBackward),
      IssuerT1(c, eg::Issuer::kOptimizer));
  auto it = p.sources().find(kIssuerT1Source);
  return std::string(buf) + (it == p.sources().end() ? ")" : ", " + it->second + ")");
}

// The GPU-active figures without communication, and of the modelled ops alone (both sides where
// the trace recorded kernels), and the recorded time of the unmodelled ones.
void SplitGpuActive(bool gpu, bool trace_gpu, const std::vector<std::pair<double, double>>& compute,
                    const ComputeSplit& predicted, const ComputeSplit& recorded, Prediction& pred) {
  auto both = [](const ComputeSplit& s) {
    std::vector<std::pair<double, double>> all = s.modelled;
    all.insert(all.end(), s.unmodelled.begin(), s.unmodelled.end());
    return all;
  };
  if (gpu) {
    pred.compute.predicted_ms = UnionLength(compute) / 1000;
    pred.modelled.predicted_ms = UnionLength(predicted.modelled) / 1000;
  }
  if (!trace_gpu) return;
  pred.compute.original_ms = UnionLength(both(recorded)) / 1000;
  pred.modelled.original_ms = UnionLength(recorded.modelled) / 1000;
  pred.unmodelled.original_gpu_active_ms = UnionLength(recorded.unmodelled) / 1000;
}

// CPU platforms: the original's page faults per step at this host's cost per fault
// (Prediction::page_fault_ms). The kernels calibrate measured ran on mapped memory; a job whose
// heap gives pages back between steps (glibc trims it) maps them afresh every step, and the
// replay's heap follows it (docs/cli.md, host memory). One fault stalls the thread that
// touched the page, on the step's critical path: added to the iteration whole.
// The count is per step: a selection of a label (part of a step) or of the whole trace (maybe
// several) is charged none.
void AddPageFaults(const proto::Workload& w, const proto::Platform& p, const proto::Segment* seg,
                   Prediction& pred) {
  const double us = p.cpu_overheads().page_fault_us();
  if (p.device_type() == "cuda" || !(us > 0) || !w.original().has_page_faults_per_iteration() ||
      !seg || seg->kind() != proto::Segment::ITERATION)
    return;
  pred.page_faults = w.original().page_faults_per_iteration();
  pred.page_fault_ms = pred.page_faults * us / 1000;
  pred.iteration_ms += pred.page_fault_ms;
  if (pred.page_faults > 0) {
    char line[160];
    std::snprintf(line, sizeof(line),
                  "%.0f page faults a step (the original's, from its capture) at %.2f us each: "
                  "%.3f ms in the iteration",
                  pred.page_faults, us, pred.page_fault_ms);
    pred.notes.push_back(line);
  }
}

// One iteration's simulation (docs/model.md): one CPU cursor per thread, when each stream is
// free, and the device intervals, predicted and recorded, of the ops placed so far. Add prices
// each top-level op and places it; Finish sums up the iteration into the prediction.
class Simulation {
 public:
  Simulation(const proto::Workload& w, const eg::OpTree& tree, const proto::Platform& p,
             const PredictOptions& opts, const proto::Segment* seg, const std::vector<int>& top,
             Prediction& pred)
      : w_(w),
        tree_(tree),
        p_(p),
        opts_(opts),
        seg_(seg),
        pred_(pred),
        gpu_(p.device_type() == "cuda"),
        trace_gpu_(w.kineto().kernels_linked() > 0),
        oh_(TraceOverheads(w, top, p, tree, opts.overheads_from_trace, pred.notes)),
        cold_dispatch_(ColdDispatchCosts(w, tree, top, p, pred.notes)),
        autograd_nodes_(AutogradNodes(w, tree, top, p, pred.notes)),
        tbe_(PairTbeOps(w, top)),
        issuer_t1_(!oh_.t1_from_trace && HasIssuerT1(p.cpu_overheads())),
        cache_(ColdPoints(w, p) ? p.l2_bytes() : 0) {  // capacity 0: every input hot
    if (oh_.t1_from_trace)
      trace_gaps_.emplace(w, seg && seg->has_span() ? seg->start_us() : -1, oh_.capture);
    if (issuer_t1_) pred.notes.push_back(IssuerT1Note(p));
    if (!p.calibrated_at().empty())
      pred.notes.push_back("platform calibrated at " + p.calibrated_at() + " on " +
                           p.calibrated_on());
    else
      pred.notes.push_back(
          "platform figures are datasheet values (not calibrated): GEMM efficiency by wave "
          "quantization, bandwidth at a fixed fraction of peak");
    ranks_ = opts.world_size > 0 ? opts.world_size : w.provenance().world_size();
    if (opts.world_size <= 0)
      for (const proto::ProcessGroup& g : w.provenance().process_groups())
        ranks_ = std::max(ranks_, g.size());
    ranks_ = std::max<int64_t>(ranks_, 1);
    // Memory-bound ops pay for cold inputs where the platform measured the slow-down; a first
    // pass over the iteration leaves the cache model as the previous iteration would.
    if (ColdPoints(w, p) && p.l2_bytes() > 0) {
      for (int i : top)
        if (PricedByClassModels(w.ops(i))) Touch(w, tree, i, cache_);
      pred.notes.push_back(
          "memory-bound ops: inputs not touched within the last " +
          std::to_string(static_cast<int64_t>(p.l2_bytes() / (1 << 20))) +
          " MiB of traffic (l2_bytes) are priced with the platform's measured cold-input "
          "slow-down");
    }
  }

  // Prices top-level op `i` and places it on its thread's timeline and its stream.
  void Add(int i) {
    const proto::Op& op = w_.ops(i);
    SubtreeCost sc;
    std::vector<const proto::Kernel*> ks;  // the device work it recorded, at or under it
    OpPrediction o = Price(i, sc, ks);
    double& cursor = CursorOf(op);
    const double gap = HostGapBefore(op, i);
    cursor += gap;
    cpu_overhead_us_ += gap;
    o.start_us = cursor;
    const bool collective = eg::IsCommunication(op);
    if (op.has_collective() && op.collective().type() == proto::Collective::WAIT)
      PlaceWait(op, cursor, o);
    else if (!gpu_ && collective)
      PlaceCpuCollective(op, cursor, o);
    else if (!gpu_)
      PlaceOnCpu(i, sc, gap, cursor, o);
    else
      PlaceOnGpu(i, sc, ks, cursor, o);
    Tally(op, cursor, o);
  }

  // The iteration's end to end, device time and notes, into the prediction.
  void Finish() {
    double end = 0;
    for (const auto& [t, c] : cpu_free_) end = std::max(end, c);
    for (const auto& [s, f] : stream_free_) end = std::max(end, f);
    pred_.iteration_ms = end / 1000;
    AddPageFaults(w_, p_, seg_, pred_);
    std::vector<std::pair<double, double>> all = compute_iv_;
    if (gpu_) all.insert(all.end(), comm_iv_.begin(), comm_iv_.end());
    pred_.gpu_active_ms = UnionLength(std::move(all)) / 1000;
    pred_.ranks = ranks_;
    pred_.comm_ms = UnionLength(comm_iv_) / 1000;
    pred_.exposed_comm_ms = UncoveredLength(comm_iv_, compute_iv_) / 1000;
    if (trace_gpu_) SetOriginalDeviceTime();
    for (auto& [name, ct] : pred_.by_class) {
      if (gpu_) ct.predicted_gpu_active_ms = UnionLength(class_iv_[name]) / 1000;
      if (trace_gpu_) ct.original_gpu_active_ms = UnionLength(class_orig_iv_[name]) / 1000;
    }
    pred_.cpu_overhead_ms = cpu_overhead_us_ / 1000;
    SplitGpuActive(gpu_, trace_gpu_, compute_iv_, pred_split_, orig_split_, pred_);
    AddClosingNotes();
  }

 private:
  static constexpr int64_t kDefaultStream = 7;  // PyTorch's default compute stream id in Kineto
  static constexpr int64_t kCommStream = -1;    // a stream of its own when the trace recorded none

  // Whether the platform measured cold-input slow-downs the cache model can apply: not on a
  // Kineto trace alone, which records no tensor identity (no reuse to follow, every input hot).
  static bool ColdPoints(const proto::Workload& w, const proto::Platform& p) {
    return !eg::IsKinetoOnly(w) &&
           std::any_of(p.bandwidth().begin(), p.bandwidth().end(),
                       [](const proto::BandwidthPoint& b) { return b.cold(); });
  }

  // The op's cost by the models, and the device work the trace recorded for it (`ks`).
  OpPrediction Price(int i, SubtreeCost& sc, std::vector<const proto::Kernel*>& ks) {
    const proto::Op& op = w_.ops(i);
    OpPrediction o;
    o.op_id = op.id();
    o.name = op.name();
    o.op_class = std::string(eg::OpClassName(eg::ClassOf(op.name())));
    o.inputs = RecordedInputs(w_, op);
    const bool collective = eg::IsCommunication(op);
    const bool wait = op.has_collective() && op.collective().type() == proto::Collective::WAIT;
    if (collective) {
      // Its group's size, unless the prediction is for another world size.
      const int64_t group = opts_.world_size <= 0 && op.collective().group_size() > 0
                                ? op.collective().group_size()
                                : ranks_;
      const OpCost cc = CollectiveCost(op, p_, group);
      ++pred_.collectives;
      sc.compute_us = cc.compute_us, sc.bytes = cc.bytes, sc.nodes = 1, sc.launches = 1,
      sc.model = cc.model, sc.bound = cc.bound;
    } else if (!PricedByClassModels(op)) {
      sc.nodes = 1, sc.launches = 0, sc.model = wait ? "wait" : "collective (unread)";
    } else {
      Accumulate(w_, tree_, p_, tbe_, i, cache_, sc);
    }
    o.model = sc.model;
    o.bound = sc.bound;
    if (sc.unmodelled) o.unmodelled = sc.unmodelled;
    o.flops = sc.flops;
    o.bytes = sc.bytes;
    o.compute_us = sc.compute_us;
    RecordedKernels(w_, tree_, i, ks);
    if (trace_gpu_) {
      held_.insert(ks.begin(), ks.end());
      const double k = AddRecorded(ks, collective, !o.unmodelled.empty(), orig_iv_,
                                   class_orig_iv_[o.op_class], orig_split_);
      o.original_us = k > 0 || !op.has_cpu_span() ? k : -1;
    } else if (op.has_cpu_span()) {
      o.original_us = op.cpu_duration_us();
    }
    return o;
  }

  // The cursor of the op's thread. Threads overlap only where the trace shows them
  // overlapping: an op that started after another thread's op had ended (forward, then the
  // autograd thread) waits for it here too.
  double& CursorOf(const proto::Op& op) {
    double& cursor = cpu_free_[op.thread()];
    if (!op.has_cpu_span()) return cursor;
    for (const auto& [thread, ends] : issued_) {
      if (thread == op.thread()) continue;
      // Ends on one thread grow in both clocks: the last one recorded before this op's start.
      auto it = std::upper_bound(
          ends.begin(), ends.end(), op.cpu_start_us(),
          [](double t, const std::pair<double, double>& e) { return t < e.first; });
      if (it != ends.begin()) cursor = std::max(cursor, std::prev(it)->second);
    }
    return cursor;
  }

  // T1, the host time before the op: from a trace, the original's with no op running, as the
  // replay waits it (eg::RecordedHostGaps); without one, the platform's T1 for what issued the
  // op (forward, backward, optimizer) where it measured them, as replay --host-gaps modelled
  // waits it; else its single t1_us.
  double HostGapBefore(const proto::Op& op, int i) {
    if (trace_gaps_) return op.has_cpu_span() ? trace_gaps_->Before(op) : 0;
    if (issuer_t1_) return model::IssuerT1(p_.cpu_overheads(), eg::IssuerOf(w_, tree_, i));
    return oh_.t1;
  }

  // A wait for a collective: until the collective it waits for is done, on any platform.
  void PlaceWait(const proto::Op& op, double& cursor, OpPrediction& o) {
    auto it = comm_end_.find(op.collective().waits_for());
    if (it != comm_end_.end()) cursor = std::max(cursor, it->second);
    o.overhead_us = oh_.dispatch;
    cursor += o.overhead_us;
    cpu_overhead_us_ += o.overhead_us;
  }

  // A collective on a CPU platform: the backend (Gloo) runs it on its own thread, one at a
  // time, from when the op issues it; a synchronous one holds the issuing thread too.
  void PlaceCpuCollective(const proto::Op& op, double& cursor, OpPrediction& o) {
    o.overhead_us = oh_.dispatch;
    const double start = std::max(cursor + o.overhead_us, stream_free_[kCommStream]);
    const double end_us = start + o.compute_us;
    stream_free_[kCommStream] = end_us;
    comm_end_[op.id()] = end_us;
    comm_iv_.emplace_back(start, end_us);
    o.predicted_us = o.compute_us;
    cursor = op.collective().async() ? cursor + o.overhead_us : end_us;
    cpu_overhead_us_ += o.overhead_us;
  }

  // An op on a CPU platform runs on its thread: the replay's own cost of issuing it, each
  // dispatch the platform's dispatcher overhead (and each autograd node a training forward
  // records its cost), the leaves their compute. The replay's own work around an op (preparing
  // its arguments, storing its outputs) fills the host gap before it, as the original's Python
  // filled it: only what outlasts the gap adds.
  void PlaceOnCpu(int i, const SubtreeCost& sc, double gap, double& cursor, OpPrediction& o) {
    const auto cold = cold_dispatch_.find(i);
    const auto nodes = autograd_nodes_.find(i);
    o.overhead_us = std::max(0.0, oh_.framework - gap) + sc.nodes * oh_.dispatch +
                    (cold == cold_dispatch_.end() ? 0 : cold->second) +
                    (nodes == autograd_nodes_.end() ? 0
                                                    : static_cast<double>(nodes->second) *
                                                          p_.cpu_overheads().autograd_node_us());
    o.predicted_us = o.compute_us + o.overhead_us;
    cursor += o.predicted_us;
    cpu_overhead_us_ += o.overhead_us;
    compute_iv_.emplace_back(o.start_us, o.start_us + o.compute_us);
  }

  // An op on a GPU platform: the CPU spends T2, n launches (T4) with T5 between, T3; the
  // device work starts when both its launch is done and its stream is free. An op of a GPU
  // trace whose tensors are all on the host runs there: no kernel, its recorded host time
  // (else dispatch costs) on the CPU timeline.
  void PlaceOnGpu(int i, SubtreeCost sc, const std::vector<const proto::Kernel*>& ks,
                  double& cursor, OpPrediction& o) {
    const proto::Op& op = w_.ops(i);
    const bool collective = eg::IsCommunication(op);
    if (trace_gpu_ && RunsOnHost(w_, tree_, i)) {
      o.unmodelled.clear();
      ++host_ops_;
      o.compute_us = 0;
      o.bound.clear();
      sc.launches = 0;
      if (op.has_cpu_span()) sc.nodes = 0, o.overhead_us = op.cpu_duration_us();
    }
    const int n = std::max(sc.launches, 0);
    const int64_t stream =
        !ks.empty() ? ks.front()->stream() : (collective ? kCommStream : kDefaultStream);
    const double cpu_us = n > 0 ? oh_.t2 + n * oh_.t4 + (n - 1) * oh_.t5 + oh_.t3
                                : o.overhead_us + sc.nodes * oh_.dispatch;
    const double launch_end = cursor + (n > 0 ? oh_.t2 + n * oh_.t4 + (n - 1) * oh_.t5 : 0);
    o.overhead_us = cpu_us;
    o.predicted_us = o.compute_us;
    if (n > 0 && o.compute_us > 0) {
      double start = std::max(launch_end, stream_free_[stream]);
      if (collective)
        start = std::max(start, stream_free_[kDefaultStream]);  // waits for the compute stream
      const double end = start + o.compute_us;
      stream_free_[stream] = end;
      if (collective) comm_end_[op.id()] = end;
      (collective ? comm_iv_ : compute_iv_).emplace_back(start, end);
      if (!collective)
        (o.unmodelled.empty() ? pred_split_.modelled : pred_split_.unmodelled)
            .emplace_back(start, end);
      class_iv_[o.op_class].emplace_back(start, end);
    }
    cursor += cpu_us;
    cpu_overhead_us_ += cpu_us;
    if (IsSyncOp(w_, op)) {
      any_sync_ = true;
      for (const auto& [s, free] : stream_free_) cursor = std::max(cursor, free);
    }
  }

  // The op's share of its class and of the unmodelled ops, its place on its thread's
  // recorded-against-simulated ends, and the op itself, into the prediction.
  void Tally(const proto::Op& op, double cursor, OpPrediction& o) {
    ClassTime& ct = pred_.by_class[o.op_class];
    ct.ops += 1;
    ct.predicted_ms += o.predicted_us / 1000;
    if (!o.unmodelled.empty()) {
      pred_.unmodelled.ops += 1;
      pred_.unmodelled.predicted_ms += o.compute_us / 1000;
      pred_.unmodelled.reasons[o.unmodelled] += 1;
    }
    if (o.original_us >= 0) ct.original_ms = std::max(ct.original_ms, 0.0) + o.original_us / 1000;
    if (op.has_cpu_span()) {
      auto& ends = issued_[op.thread()];
      const double recorded_end = op.cpu_start_us() + op.cpu_duration_us();
      if (ends.empty() || recorded_end >= ends.back().first)
        ends.emplace_back(recorded_end, cursor);
    }
    pred_.ops.push_back(std::move(o));
  }

  // The original's device time: the recorded kernels the ops held, and those the host launched
  // under none of them; the capture's own probes are left out (noted).
  void SetOriginalDeviceTime() {
    if (const double us = AddUnheld(w_, seg_, held_, orig_iv_, orig_split_); us > 0) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.3f", us / 1000);
      pred_.notes.push_back(std::string(ms) + " ms of device work the host launched in " +
                            pred_.selection +
                            " under no replayable op (a wrapper's own kernels, the autograd "
                            "engine's copies) counts in the original's GPU active time, "
                            "unmodelled");
    }
    pred_.original_gpu_active_ms = UnionLength(orig_iv_) / 1000;
    if (const proto::KinetoSummary& k = w_.kineto(); k.observer_probe_events() > 0) {
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.3f", k.observer_probe_us() / 1000);
      pred_.notes.push_back(std::to_string(k.observer_probe_events()) + " device events (" + ms +
                            " ms in the trace) of the execution-trace observer's integer-range "
                            "probes are the capture's, not the workload's: left out of the "
                            "original's device time");
    }
  }

  void AddClosingNotes() {
    if (eg::IsKinetoOnly(w_))
      pred_.notes.push_back(
          "a Kineto trace alone: ops priced by name and recorded input shapes (no outputs and no "
          "tensor identity recorded: every input hot; on a GPU trace, an op that launched no "
          "kernel runs on the host)");
    if (gpu_ && !trace_gpu_)
      pred_.notes.push_back(
          "the workload has no recorded kernels: every non-view leaf op is assumed to launch "
          "one kernel on the default stream");
    if (host_ops_ > 0)
      pred_.notes.push_back(
          std::to_string(host_ops_) +
          " ops ran on the host (every tensor on the CPU): no kernel, their recorded host time");
    if (gpu_ && any_sync_)
      pred_.notes.push_back(
          "host-device synchronizing ops (item, copies to the host) wait for every stream");
    if (ranks_ > 1)
      pred_.notes.push_back("collectives over " + std::to_string(ranks_) +
                            " ranks, ranks assumed symmetric (each rank waits at each collective "
                            "for the same work)");
  }

  const proto::Workload& w_;
  const eg::OpTree& tree_;
  const proto::Platform& p_;
  const PredictOptions& opts_;
  const proto::Segment* seg_;
  Prediction& pred_;
  const bool gpu_, trace_gpu_;
  const Overheads oh_;
  const std::unordered_map<int, double> cold_dispatch_;
  const std::unordered_map<int, int64_t> autograd_nodes_;  // AutogradNodes
  const std::map<int, int> tbe_;
  const bool issuer_t1_;
  CacheModel cache_;
  std::optional<eg::RecordedHostGaps> trace_gaps_;
  int64_t ranks_ = 1;

  std::map<int64_t, double> cpu_free_;     // by thread
  std::map<int64_t, double> stream_free_;  // by stream
  std::map<int64_t, double> comm_end_;     // collective op id -> when it ends
  std::vector<std::pair<double, double>> compute_iv_, comm_iv_;
  // Per op class: predicted device intervals and the recorded kernels' intervals.
  std::map<std::string, std::vector<std::pair<double, double>>> class_iv_, class_orig_iv_;
  std::vector<std::pair<double, double>> orig_iv_;
  std::set<const proto::Kernel*> held_;   // the recorded device work the top-level ops hold
  ComputeSplit orig_split_, pred_split_;  // pred_split_.comm stays empty: comm_iv_ holds those
  // Per thread: (recorded CPU end, simulated CPU end) of its ops, in issue order.
  std::map<int64_t, std::vector<std::pair<double, double>>> issued_;
  double cpu_overhead_us_ = 0;
  bool any_sync_ = false;
  int host_ops_ = 0;
};

}  // namespace

Result<Prediction> Predict(const proto::Workload& w, const proto::Platform& p,
                           const PredictOptions& opts) {
  Prediction pred;
  pred.platform = p.name();
  const eg::OpTree tree(w);
  MIMIC_ASSIGN_OR_RETURN(const proto::Segment* seg, eg::FindSegment(w, opts.iteration, opts.label));
  pred.selection = seg ? seg->name() : "whole trace";
  const int segment = seg ? tree.IndexOf(seg->op_id()) : -1;
  const std::vector<int> top = eg::ReplayableOps(w, tree, segment, /*include_compiled=*/true);
  if (top.empty())
    return Status::Unsupported("nothing to predict: no top-level op with a schema in " +
                               pred.selection);
  Simulation sim(w, tree, p, opts, seg, top, pred);
  for (int i : top) sim.Add(i);
  sim.Finish();
  return pred;
}

}  // namespace mimic::model
