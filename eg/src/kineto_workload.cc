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
std::vector<const KinetoEvent*> HostSpansInStartOrder(const KinetoTrace& trace) {
  std::vector<const KinetoEvent*> host;
  for (const KinetoEvent& e : trace.events)
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
bool Holds(const KinetoEvent& outer, const KinetoEvent& inner) {
  return inner.ts < outer.ts + outer.dur || inner.ts == outer.ts;
}

// Each op's parent: the innermost op of its thread still open at its start.
void SetParents(const std::vector<const KinetoEvent*>& host, proto::Workload& w) {
  std::unordered_map<int64_t, std::vector<int>> open;  // per thread: the stack of open ops
  for (int i = 0; i < static_cast<int>(host.size()); ++i) {
    std::vector<int>& stack = open[host[i]->tid];
    while (!stack.empty() && !Holds(*host[stack.back()], *host[i])) stack.pop_back();
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

class Builder {
 public:
  explicit Builder(proto::Workload& w) : w_(w) {
    types_.emplace("", 0);
    w_.add_types("");  // index 0: no type recorded
  }

  void AddOp(const KinetoEvent& e, int64_t id);

 private:
  int32_t InternType(const std::string& type);
  void AddInput(const KinetoInput& in, proto::Value& v);
  int32_t AddTensor(proto::DType dtype, const std::string& type, const std::vector<int64_t>& shape,
                    const std::vector<int64_t>& strides);

  proto::Workload& w_;
  std::unordered_map<std::string, int32_t> types_;
};

void Builder::AddOp(const KinetoEvent& e, int64_t id) {
  proto::Op& op = *w_.add_ops();
  op.set_id(id);
  op.set_name(e.name);
  op.set_schema(-1);
  op.set_thread(e.tid);
  op.set_rf_id(e.rf_id);
  op.set_has_cpu_span(true);
  op.set_cpu_start_us(e.ts);
  op.set_cpu_duration_us(e.dur);
  for (const KinetoInput& in : e.inputs) AddInput(in, *op.add_inputs());
}

int32_t Builder::InternType(const std::string& type) {
  auto [it, inserted] = types_.emplace(type, w_.types_size());
  if (inserted) w_.add_types(type);
  return it->second;
}

// One recorded argument: a tensor (its type is a C++ scalar type name), a tensor list, a
// scalar or scalar list (their values where Concrete Inputs recorded them), else opaque.
void Builder::AddInput(const KinetoInput& in, proto::Value& v) {
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
// (or an op under it) launched; "cpu" everywhere when the trace recorded no device at all.
void SetTensorDevices(const KinetoTrace& trace, proto::Workload& w) {
  const bool any_device =
      !trace.devices.empty() ||
      std::any_of(trace.events.begin(), trace.events.end(),
                  [](const KinetoEvent& e) { return e.kind == KinetoEvent::Kind::kDevice; });
  const OpTree tree(w);
  std::vector<int64_t> device(w.ops_size(), -1);  // the device of the first kernel below
  for (int i = w.ops_size() - 1; i >= 0; --i) {   // children have larger ids than parents
    const proto::Op& op = w.ops(i);
    if (op.kernels_size() > 0) device[i] = op.kernels(0).device();
    for (int c : tree.Children(i))
      if (device[i] < 0) device[i] = device[c];
  }
  for (int i = 0; i < w.ops_size(); ++i) {
    if (any_device && device[i] < 0) continue;
    const std::string name = any_device ? "cuda:" + std::to_string(device[i]) : "cpu";
    std::vector<int32_t> tensors;
    for (const proto::Value& v : w.ops(i).inputs()) {
      if (v.kind_case() == proto::Value::kTensor) tensors.push_back(v.tensor());
      if (v.kind_case() == proto::Value::kList)
        for (const proto::Value& item : v.list().items())
          if (item.kind_case() == proto::Value::kTensor) tensors.push_back(item.tensor());
    }
    for (int32_t t : tensors)
      if (t >= 0) w.mutable_tensors(t)->set_device(name);
  }
}

// Segments, spans, kernels, syncs and the summary: the parts LinkKineto shares.
void AttachDeviceWork(const KinetoTrace& trace, const std::vector<const KinetoEvent*>& host,
                      proto::Workload& w) {
  kineto::Links links;
  std::unordered_map<const KinetoEvent*, int> op_of_event;
  for (int i = 0; i < static_cast<int>(host.size()); ++i) {
    links.emplace(i, host[i]);
    op_of_event.emplace(host[i], i);
  }
  const auto launch_of = kineto::LaunchesByCorrelation(trace);
  const auto launcher = kineto::AttributeLaunches(trace, host, op_of_event);
  const kineto::KernelCounts kernels =
      kineto::AttachKernels(trace, launch_of, launcher, -1e300, 1e300, w);
  kineto::AttachSyncs(trace, links, launch_of, launcher, w);
  proto::KinetoSummary& s = *w.mutable_kineto();
  s.set_present(true);
  s.set_link_method("kineto_only");
  s.set_host_ops(static_cast<int64_t>(host.size()));
  s.set_host_ops_linked(static_cast<int64_t>(host.size()));
  s.set_kernels(kernels.in_window);
  s.set_kernels_linked(kernels.linked);
  s.set_kernels_total(kernels.total);
  s.set_kineto_pid(host.front()->pid);
}

}  // namespace

Result<proto::Workload> BuildKinetoWorkload(const std::string& path, KinetoTrace trace) {
  const std::vector<const KinetoEvent*> host = HostSpansInStartOrder(trace);
  if (host.empty())
    return Status::InvalidInput(path +
                                ":byte 0: Kineto trace without host ops (no cpu_op or "
                                "user_annotation events): nothing to read");
  proto::Workload w;
  auto& prov = *w.mutable_provenance();
  prov.set_schema(kKinetoOnlySchema);
  prov.set_pid(host.front()->pid);
  Builder builder(w);
  for (size_t i = 0; i < host.size(); ++i) {
    builder.AddOp(*host[i], static_cast<int64_t>(i) + 1);
    // The arguments are in the op now: their memory goes to the ops that follow, so that the
    // trace and the workload are never both whole (the peak stays near the larger of the two).
    std::vector<KinetoInput>().swap(trace.events[host[i] - trace.events.data()].inputs);
  }
  SetParents(host, w);
  AttachDeviceWork(trace, host, w);
  SetTensorDevices(trace, w);
  AddTraceSegments(w);
  kineto::SetSegmentSpans(w);
  kineto::RecordStepMemory(trace, w);
  kineto::AddTraceProvenance(trace, w);
  return w;
}

}  // namespace mimic::eg
