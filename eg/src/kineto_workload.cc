// The workload of a Kineto trace alone: what the profiler recorded of each host op (name,
// thread, span, argument shapes and types) and of the device (kernels, syncs), in the same
// normalized form an execution trace gives, without tensor identity, contents or outputs.
//
// Ops are the host spans (cpu_op, user_annotation), ids in start order across threads (a
// parent before the ops it holds), each op's parent the innermost span of its thread that holds
// its start. Kernels, syncs and segment spans are attached as LinkKineto attaches them.

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "kineto_internal.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/execution_trace.h"
#include "mimic/eg/kineto.h"
#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

using kineto::IsHostSpan;

int64_t ItemSize(proto::DType d) {
  switch (d) {
    case proto::FLOAT64:
    case proto::INT64:
    case proto::UINT64:
    case proto::COMPLEX64:
      return 8;
    case proto::COMPLEX128:
      return 16;
    case proto::FLOAT32:
    case proto::INT32:
    case proto::UINT32:
      return 4;
    case proto::FLOAT16:
    case proto::BFLOAT16:
    case proto::INT16:
    case proto::UINT16:
      return 2;
    case proto::DTYPE_UNKNOWN:
      return 0;
    default:
      return 1;
  }
}

// Host spans in start order across threads: a longer span before a shorter one that starts
// with it (its parent), then by thread.
std::vector<KinetoEvent*> HostSpansInStartOrder(KinetoTrace& trace) {
  std::vector<KinetoEvent*> host;
  for (KinetoEvent& e : trace.events)
    if (IsHostSpan(e)) host.push_back(&e);
  std::stable_sort(host.begin(), host.end(), [](const KinetoEvent* a, const KinetoEvent* b) {
    if (a->ts != b->ts) return a->ts < b->ts;
    if (a->dur != b->dur) return a->dur > b->dur;
    return a->tid < b->tid;
  });
  return host;
}

// Whether `outer` (which starts no later) holds the start of `inner`. A span that starts inside
// another and ends after it (clock rounding) still counts as inside.
bool Holds(const proto::Op& outer, const proto::Op& inner) {
  return inner.cpu_start_us() < outer.cpu_start_us() + outer.cpu_duration_us() ||
         inner.cpu_start_us() == outer.cpu_start_us();
}

// Each op's parent: the innermost op of its thread still open at its start (ops in start order).
void SetParents(proto::Workload& w) {
  std::unordered_map<int64_t, std::vector<int>> open;  // per thread: the stack of open ops
  for (int i = 0; i < w.ops_size(); ++i) {
    std::vector<int>& stack = open[w.ops(i).thread()];
    while (!stack.empty() && !Holds(w.ops(stack.back()), w.ops(i))) stack.pop_back();
    w.mutable_ops(i)->set_parent(stack.empty() ? 0 : w.ops(stack.back()).id());
    stack.push_back(i);
  }
}

// A Concrete Inputs scalar as the profiler printed it: "True", "6", "0.5", "1.", anything else
// kept as a string.
void SetScalar(std::string_view text, proto::Value& v) {
  if (text == "True" || text == "False") {
    v.set_bool_value(text == "True");
    return;
  }
  const std::string s(text);
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && end == s.c_str() + s.size() && errno == 0) {
    v.set_int_value(i);
    return;
  }
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && errno == 0) {
    v.set_double_value(d);
    return;
  }
  v.set_string_value(s);
}

// "[64, 8, 128]" -> items; false when the text is not a bracketed list.
bool SetScalarList(std::string_view text, proto::Value& v) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  proto::ValueList& list = *v.mutable_list();
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) SetScalar(item, *list.add_items());
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return true;
}

// What an op takes from its host event: the events are freed before the ops are built.
struct OpSeed {
  std::string name;
  std::string inputs_json;  // KinetoEvent::inputs_json
  int64_t tid = -1, rf_id = -1;
  double ts = 0, dur = 0;
};

class Builder {
 public:
  explicit Builder(proto::Workload& w) : w_(w) {
    types_.emplace("", 0);
    w_.add_types("");  // index 0: no type recorded
  }

  // Adds op `id` for the host event that `seed` was taken from, with its arguments.
  void AddOp(OpSeed& seed, int64_t id);

 private:
  int32_t InternType(const std::string& type);
  void AddInput(const kineto::Input& in, proto::Value& v);
  int32_t AddTensor(proto::DType dtype, const std::string& type, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& strides);

  proto::Workload& w_;
  std::unordered_map<std::string, int32_t> types_;
  simdjson::dom::parser parser_;       // of the events' inputs_json
  std::vector<kineto::Input> inputs_;  // scratch: the arguments of the op being added
};

void Builder::AddOp(OpSeed& seed, int64_t id) {
  proto::Op& op = *w_.add_ops();
  op.set_id(id);
  op.set_name(std::move(seed.name));
  op.set_schema(-1);
  op.set_thread(seed.tid);
  op.set_rf_id(seed.rf_id);
  op.set_has_cpu_span(true);
  op.set_cpu_start_us(seed.ts);
  op.set_cpu_duration_us(seed.dur);
  kineto::ReadInputs(seed.inputs_json, parser_, &inputs_);
  std::string().swap(seed.inputs_json);
  op.mutable_inputs()->Reserve(static_cast<int>(inputs_.size()));
  for (const kineto::Input& in : inputs_) AddInput(in, *op.add_inputs());
}

int32_t Builder::InternType(const std::string& type) {
  auto [it, inserted] = types_.emplace(type, w_.types_size());
  if (inserted) w_.add_types(type);
  return it->second;
}

// One recorded argument: a tensor (its type is a C++ scalar type name), a tensor list, a
// scalar or scalar list (their values where Concrete Inputs recorded them), else opaque.
void Builder::AddInput(const kineto::Input& in, proto::Value& v) {
  v.set_type(InternType(in.type));
  if (in.type == "TensorList") {
    if (in.dims.empty()) {
      v.set_opaque("<TensorList>");  // shapes not recorded
      return;
    }
    proto::ValueList& list = *v.mutable_list();
    for (const std::vector<int64_t>& shape : in.dims) {
      proto::Value& item = *list.add_items();
      item.set_type(v.type());
      item.set_tensor(AddTensor(proto::DTYPE_UNKNOWN, in.type, shape, {}));
    }
    return;
  }
  if (in.type == "Scalar") {
    if (in.concrete.empty())
      v.set_opaque("<Scalar>");
    else
      SetScalar(in.concrete, v);
    return;
  }
  if (in.type == "ScalarList") {
    if (!SetScalarList(in.concrete, v)) v.set_opaque("<ScalarList>");
    return;
  }
  const proto::DType dtype = DTypeOfScalarTypeName(in.type);
  if (dtype == proto::DTYPE_UNKNOWN || !in.has_dims || in.dims.empty()) {
    v.set_opaque(in.concrete);  // None, a device, a string, ...: not recorded
    return;
  }
  v.set_tensor(AddTensor(dtype, in.type, in.dims.front(), in.strides));
}

// A fresh tensor entry: Kineto records no tensor identity, so every argument is its own.
int32_t Builder::AddTensor(proto::DType dtype, const std::string& type,
                           const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  proto::Tensor& t = *w_.add_tensors();
  const int32_t index = w_.tensors_size() - 1;
  t.set_tensor_id(index + 1);
  int64_t numel = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    if (d < 0 || __builtin_mul_overflow(numel, d, &numel)) numel = 0;
  }
  for (int64_t s : strides) t.add_strides(s);
  t.set_numel(numel);
  t.set_dtype(dtype);
  t.set_itemsize(ItemSize(dtype));
  t.set_type(InternType(type));
  return index;
}

// The device an op's arguments lived on, where the trace tells: the device of the kernels it
// (or an op under it) launched; "cpu" everywhere when the trace recorded no device at all
// (!any_device).
void SetTensorDevices(bool any_device, proto::Workload& w) {
  // The device of an op's first kernel, else of its first child that has one. Ops come in id
  // order, op i has id i + 1 (BuildKinetoWorkload), and children follow their parent: walking
  // back, each op has heard from all its children, the first one last, before its own turn.
  std::vector<int64_t> device(w.ops_size(), -1);
  for (int i = w.ops_size() - 1; i >= 0; --i) {
    const proto::Op& op = w.ops(i);
    if (op.kernels_size() > 0 && op.kernels(0).device() >= 0) device[i] = op.kernels(0).device();
    if (device[i] >= 0 && op.parent() > 0) device[op.parent() - 1] = device[i];
  }
  for (int i = 0; i < w.ops_size(); ++i) {
    if (any_device && device[i] < 0) continue;
    const std::string name = any_device ? "cuda:" + std::to_string(device[i]) : "cpu";
    auto place = [&](const proto::Value& v) {
      if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0)
        w.mutable_tensors(v.tensor())->set_device(name);
    };
    for (const proto::Value& v : w.ops(i).inputs()) {
      place(v);
      if (v.kind_case() == proto::Value::kList)
        for (const proto::Value& item : v.list().items()) place(item);
    }
  }
}

// The device work of the ops, found while the trace is whole and attached once the ops exist:
// kernels (their names moved out of the trace) and syncs, each beside the index of its op.
struct DeviceWork {
  std::vector<std::pair<int, std::unique_ptr<proto::Kernel>>> kernels;
  std::vector<std::pair<int, std::unique_ptr<proto::CudaSync>>> syncs;
  kineto::KernelCounts counts;
  bool any_device = false;  // whether the trace recorded a device at all
};

// `host`: the host spans in start order, op i's at i.
DeviceWork FindDeviceWork(KinetoTrace& trace, const std::vector<const KinetoEvent*>& host) {
  DeviceWork d;
  const auto launch_of = kineto::LaunchesByCorrelation(trace);
  std::unordered_map<const KinetoEvent*, int> op_of_event;
  for (int i = 0; i < static_cast<int>(host.size()); ++i) op_of_event.emplace(host[i], i);
  const auto launcher = kineto::AttributeLaunches(trace, host, op_of_event);
  kineto::AttachSyncs(trace, host, launch_of, launcher, [&d](int op) {
    return d.syncs.emplace_back(op, std::make_unique<proto::CudaSync>()).second.get();
  });
  d.counts = kineto::AttachKernels(trace, launch_of, launcher, -1e300, 1e300, [&d](int op) {
    return d.kernels.emplace_back(op, std::make_unique<proto::Kernel>()).second.get();
  });
  d.any_device = !trace.devices.empty() || d.counts.total > 0;
  return d;
}

// Hands each kernel and sync to its op, and fills the summary.
void AttachDeviceWork(DeviceWork& d, int64_t pid, proto::Workload& w) {
  for (auto& [op, k] : d.kernels) w.mutable_ops(op)->mutable_kernels()->AddAllocated(k.release());
  for (auto& [op, s] : d.syncs) w.mutable_ops(op)->mutable_syncs()->AddAllocated(s.release());
  proto::KinetoSummary& s = *w.mutable_kineto();
  s.set_present(true);
  s.set_link_method("kineto_only");
  s.set_host_ops(w.ops_size());
  s.set_host_ops_linked(w.ops_size());
  s.set_kernels(d.counts.in_window);
  s.set_kernels_linked(d.counts.linked);
  s.set_kernels_total(d.counts.total);
  s.set_observer_probe_events(d.counts.observer_probes);
  s.set_observer_probe_us(d.counts.observer_probe_us);
  s.set_kineto_pid(pid);
}

}  // namespace

Result<proto::Workload> BuildKinetoWorkload(const std::string& path, KinetoTrace trace) {
  std::vector<OpSeed> seeds;
  DeviceWork device;
  int64_t pid = -1;
  {
    const std::vector<KinetoEvent*> spans = HostSpansInStartOrder(trace);
    if (spans.empty())
      return Status::InvalidInput(path +
                                  ":byte 0: Kineto trace without host ops (no cpu_op or "
                                  "user_annotation events): nothing to read");
    pid = spans.front()->pid;
    device = FindDeviceWork(trace, {spans.begin(), spans.end()});
    seeds.reserve(spans.size());
    for (KinetoEvent* e : spans)
      seeds.push_back(
          {std::move(e->name), std::move(e->inputs_json), e->tid, e->rf_id, e->ts, e->dur});
  }
  // The events are freed before the ops are built, so that the trace and the workload are never
  // both whole: the peak stays near the larger of the two.
  trace.events.clear();
  proto::Workload w;
  auto& prov = *w.mutable_provenance();
  prov.set_schema(kKinetoOnlySchema);
  prov.set_pid(pid);
  Builder builder(w);
  for (size_t i = 0; i < seeds.size(); ++i) builder.AddOp(seeds[i], static_cast<int64_t>(i) + 1);
  std::vector<OpSeed>().swap(seeds);
  SetParents(w);
  AttachDeviceWork(device, pid, w);
  SetTensorDevices(device.any_device, w);
  AddTraceSegments(w);
  kineto::SetSegmentSpans(w);
  kineto::RecordStepMemory(trace, w);
  kineto::AddTraceProvenance(trace, w);
  return w;
}

}  // namespace mimic::eg
