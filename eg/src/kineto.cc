// Kineto trace reading and linking to execution-trace ops.
//
// Host ops are matched in the first way that works:
//  1. args["Record function id"] == rf_id (torch >= 2.3 writes it);
//  2. args["External id"] == rf_id with equal names on >= 90% of the ops (older torch, where the
//     two counters coincided);
//  3. name + thread + order: ET threads are paired with Kineto threads by their op names, then
//     each ET thread's op sequence is aligned with the Kineto thread's (the profiler usually
//     covers more steps than the execution trace).
// Device events are tied to their launch by correlation, the launch to its host op by External
// id, and that host op to the ET op linked to it.

#include "mimic/eg/kineto.h"

#include <algorithm>
#include <array>
#include <map>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "json_scan.h"
#include "kineto_internal.h"
#include "mimic/eg/op_class.h"

namespace mimic::eg {
namespace {

using kineto::IsHost;
using kineto::Links;

using simdjson::dom::element;
using simdjson::dom::element_type;

// A number as an integer (a double is truncated), else `fallback` (also for a double no
// int64_t holds).
int64_t IntOf(element v, int64_t fallback) {
  int64_t i;
  if (v.get(i) == simdjson::SUCCESS) return i;
  uint64_t u;
  if (v.get(u) == simdjson::SUCCESS) return static_cast<int64_t>(u);
  double d;
  if (v.get(d) == simdjson::SUCCESS && TruncateToInt64(d, &i)) return i;
  return fallback;
}

double DoubleOf(element v, double fallback) {
  double d;
  if (v.get(d) == simdjson::SUCCESS) return d;
  int64_t i;
  if (v.get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  return fallback;
}

int64_t IntOr(element obj, std::string_view key, int64_t fallback) {
  element v;
  return obj[key].get(v) == simdjson::SUCCESS ? IntOf(v, fallback) : fallback;
}

double DoubleOr(element obj, std::string_view key, double fallback) {
  element v;
  return obj[key].get(v) == simdjson::SUCCESS ? DoubleOf(v, fallback) : fallback;
}

// The members named `keys` of a JSON object, read in one pass over it (obj[key] walks the
// object's members once per key). The first of each wins when a key repeats, as with obj[key].
template <size_t N>
class Members {
 public:
  Members(element obj, const std::array<std::string_view, N>& keys) {
    simdjson::dom::object o;
    if (obj.get_object().get(o) != simdjson::SUCCESS) return;
    for (auto field : o)
      for (size_t i = 0; i < N; ++i)
        if (!(found_ >> i & 1) && field.key == keys[i]) {
          values_[i] = field.value;
          found_ |= uint32_t{1} << i;
          break;
        }
  }
  bool Has(size_t i) const { return found_ >> i & 1; }
  int64_t Int(size_t i, int64_t fallback) const {
    return Has(i) ? IntOf(values_[i], fallback) : fallback;
  }
  double Double(size_t i, double fallback) const {
    return Has(i) ? DoubleOf(values_[i], fallback) : fallback;
  }
  // The member as a string; false when it is absent or not a string.
  bool String(size_t i, std::string_view* out) const {
    return Has(i) && values_[i].get(*out) == simdjson::SUCCESS;
  }
  const element& operator[](size_t i) const { return values_[i]; }

 private:
  static_assert(N <= 32);
  std::array<element, N> values_;
  uint32_t found_ = 0;
};

// The categories the reader keeps, with the kind of event each names.
struct Category {
  std::string_view name;
  KinetoEvent::Kind kind;
};
constexpr Category kCategories[] = {
    {"cpu_op", KinetoEvent::Kind::kHostOp},
    {"operator", KinetoEvent::Kind::kHostOp},
    {"user_annotation", KinetoEvent::Kind::kAnnotation},
    {"gpu_user_annotation", KinetoEvent::Kind::kAnnotation},
    {"cuda_runtime", KinetoEvent::Kind::kRuntime},
    {"cuda_driver", KinetoEvent::Kind::kRuntime},
    {"runtime", KinetoEvent::Kind::kRuntime},
    {"cuda_sync", KinetoEvent::Kind::kSync},
    {"kernel", KinetoEvent::Kind::kDevice},
    {"gpu_memcpy", KinetoEvent::Kind::kDevice},
    {"gpu_memset", KinetoEvent::Kind::kDevice},
    {"Kernel", KinetoEvent::Kind::kDevice},
    {"Memcpy", KinetoEvent::Kind::kDevice},
    {"Memset", KinetoEvent::Kind::kDevice},
};

// The entry of kCategories named `cat`, or null.
const Category* CategoryOf(std::string_view cat) {
  for (const Category& c : kCategories)
    if (c.name == cat) return &c;
  return nullptr;
}

bool IsThreadRoot(const proto::Op& op) {
  return op.name().find("[pytorch|profiler|") == 0;
}

// ET ops that can have a Kineto counterpart.
bool IsLinkable(const proto::Op& op) { return !IsThreadRoot(op) && !op.name().empty(); }

Links LinkByKey(const proto::Workload& w, const std::vector<const KinetoEvent*>& host,
                int64_t KinetoEvent::*key) {
  std::unordered_map<int64_t, const KinetoEvent*> by_key;
  for (const KinetoEvent* e : host)
    if (e->*key >= 0) by_key.emplace(e->*key, e);
  Links links;
  for (int i = 0; i < w.ops_size(); ++i) {
    const proto::Op& op = w.ops(i);
    if (!IsLinkable(op)) continue;
    auto it = by_key.find(op.rf_id());
    if (it != by_key.end() && it->second->name == op.name()) links.emplace(i, it->second);
  }
  return links;
}

Links LinkByNameThreadOrder(const proto::Workload& w, const std::vector<const KinetoEvent*>& host) {
  std::map<int64_t, std::vector<int>> et_threads;
  for (int i = 0; i < w.ops_size(); ++i)
    if (IsLinkable(w.ops(i))) et_threads[w.ops(i).thread()].push_back(i);  // ops are in id order
  std::map<int64_t, std::vector<const KinetoEvent*>> k_threads;
  for (const KinetoEvent* e : host) k_threads[e->tid].push_back(e);
  for (auto& [tid, events] : k_threads)
    std::stable_sort(events.begin(), events.end(), kineto::OuterFirst);

  Links links;
  std::vector<int64_t> used_k_threads;
  for (const auto& [et_tid, et_ops] : et_threads) {
    // Pair with the Kineto thread sharing the most op names (by multiset overlap).
    std::unordered_map<std::string, int64_t> et_names;
    for (int i : et_ops) ++et_names[w.ops(i).name()];
    int64_t best_tid = -1, best_overlap = 0;
    for (const auto& [k_tid, events] : k_threads) {
      if (std::find(used_k_threads.begin(), used_k_threads.end(), k_tid) != used_k_threads.end()) continue;
      std::unordered_map<std::string, int64_t> k_names;
      for (const KinetoEvent* e : events) ++k_names[e->name];
      int64_t overlap = 0;
      for (const auto& [name, n] : et_names) {
        auto it = k_names.find(name);
        if (it != k_names.end()) overlap += std::min(n, it->second);
      }
      if (overlap > best_overlap) best_overlap = overlap, best_tid = k_tid;
    }
    if (best_tid < 0) continue;
    used_k_threads.push_back(best_tid);
    const auto& events = k_threads[best_tid];
    // Candidate starts: where the first ET op's name occurs; scored on a prefix, then the best
    // start is aligned in full.
    const std::string& first = w.ops(et_ops.front()).name();
    size_t best_from = 0, best_score = 0;
    for (size_t j = 0; j < events.size(); ++j) {
      if (events[j]->name != first) continue;
      const size_t score = kineto::AlignFrom(w, et_ops, events, j, 256, nullptr);
      if (score > best_score) best_score = score, best_from = j;
    }
    std::vector<std::pair<int, const KinetoEvent*>> pairs;
    kineto::AlignFrom(w, et_ops, events, best_from, et_ops.size(), &pairs);
    for (const auto& [op, e] : pairs) links.emplace(op, e);
  }
  return links;
}

// KinetoEvent::inputs_json of a host op's args: its "Input type", "Input Dims", "Input Strides"
// and "Concrete Inputs" as one minified array, null for each one absent; "" without types and
// dims (record_shapes was off).
std::string InputsJson(element args) {
  static constexpr std::array<std::string_view, 4> kKeys = {"Input type", "Input Dims",
                                                            "Input Strides", "Concrete Inputs"};
  const Members<kKeys.size()> m(args, kKeys);  // one pass over the args
  if (!m.Has(0) && !m.Has(1)) return "";
  std::string json = "[";
  for (size_t i = 0; i < kKeys.size(); ++i) {
    if (i > 0) json += ',';
    json += m.Has(i) ? simdjson::minify(m[i]) : "null";
  }
  return json + "]";
}

}  // namespace

// Position by position; a TensorList's dims hold one shape per tensor.
void kineto::ReadInputs(std::string_view inputs_json, simdjson::dom::parser& parser,
                        std::vector<Input>* out) {
  out->clear();
  simdjson::dom::array fields;
  if (inputs_json.empty() ||
      parser.parse(inputs_json.data(), inputs_json.size()).get_array().get(fields) !=
          simdjson::SUCCESS ||
      fields.size() != 4)
    return;
  simdjson::dom::array types, dims, strides, concrete;
  const bool has_types = fields.at(0).get_array().get(types) == simdjson::SUCCESS;
  const bool has_dims = fields.at(1).get_array().get(dims) == simdjson::SUCCESS;
  if (!has_types && !has_dims) return;
  if (has_types)
    for (element t : types) {
      std::string_view name;
      out->emplace_back();
      if (t.get(name) == simdjson::SUCCESS) out->back().type = std::string(name);
    }
  auto at = [out](size_t i) -> Input& {
    if (i >= out->size()) out->resize(i + 1);
    return (*out)[i];
  };
  auto ints = [](element v, std::vector<int64_t>& dst) {
    simdjson::dom::array a;
    if (v.get_array().get(a) != simdjson::SUCCESS) return false;
    for (element x : a) {
      int64_t n;
      if (x.get(n) != simdjson::SUCCESS) return false;
      dst.push_back(n);
    }
    return true;
  };
  size_t i = 0;
  if (has_dims)
    for (element d : dims) {
      Input& in = at(i++);
      in.has_dims = true;
      if (in.type == "TensorList") {
        simdjson::dom::array shapes;
        if (d.get_array().get(shapes) == simdjson::SUCCESS)
          for (element shape : shapes) {
            in.dims.emplace_back();
            if (!ints(shape, in.dims.back())) in.dims.pop_back();
          }
      } else {
        in.dims.emplace_back();
        if (!ints(d, in.dims.back())) in.dims.clear(), in.has_dims = false;
      }
    }
  i = 0;
  if (fields.at(2).get_array().get(strides) == simdjson::SUCCESS)
    for (element st : strides) {
      Input& in = at(i++);
      if (in.type != "TensorList" && !ints(st, in.strides)) in.strides.clear();
    }
  i = 0;
  if (fields.at(3).get_array().get(concrete) == simdjson::SUCCESS)
    for (element c : concrete) {
      std::string_view text;
      if (c.get(text) == simdjson::SUCCESS) at(i).concrete = std::string(text);
      ++i;
    }
}

namespace {

// The members of an event, and of its args, that the reader uses.
enum EventKey { kCat, kName, kPh, kPid, kTid, kTs, kDur, kArgs };
constexpr std::array<std::string_view, 8> kEventKeys = {"cat", "name", "ph",  "pid",
                                                        "tid", "ts",   "dur", "args"};
enum ArgKey {
  kRfId,
  kExternalId,
  kCorrelation,
  kStream,
  kDevice,
  kSyncKind,
  kWaitOnStream,
  kWaitEventCorrelation,
  kTotalAllocated,
  kDeviceType,
};
constexpr std::array<std::string_view, 10> kArgKeys = {"Record function id",
                                                       "External id",
                                                       "correlation",
                                                       "stream",
                                                       "device",
                                                       "cuda_sync_kind",
                                                       "wait_on_stream",
                                                       "wait_on_cuda_event_record_corr_id",
                                                       "Total Allocated",
                                                       "Device Type"};

// Adds one element of traceEvents to `trace` when it is an event Mimic uses: a "[memory]"
// sample, or a complete ("X") event of a known category.
void ReadEvent(element e, const KinetoParseOptions& options, KinetoTrace& trace) {
  if (e.type() != element_type::OBJECT) return;
  const Members<kEventKeys.size()> m(e, kEventKeys);
  std::string_view cat, name;
  if (!m.String(kCat, &cat)) return;
  const bool has_name = m.String(kName, &name);
  const bool has_args = m.Has(kArgs) && m[kArgs].type() == element_type::OBJECT;
  if (cat == "cpu_instant_event" && has_name && name == "[memory]") {
    if (!has_args) return;
    const Members<kArgKeys.size()> args(m[kArgs], kArgKeys);
    trace.memory.push_back(
        {m.Double(kTs, 0), args.Int(kTotalAllocated, 0), args.Int(kDeviceType, 0)});
    return;
  }
  const Category* category = CategoryOf(cat);
  if (!category) return;
  std::string_view ph;
  if (m.String(kPh, &ph) && ph != "X") return;
  KinetoEvent& ev = trace.events.emplace_back();
  ev.kind = category->kind;
  if (has_name) ev.name = std::string(name);
  ev.category = category->name;
  ev.pid = m.Int(kPid, -1);
  ev.tid = m.Int(kTid, -1);
  ev.ts = m.Double(kTs, 0);
  ev.dur = m.Double(kDur, 0);
  if (!has_args) return;
  const Members<kArgKeys.size()> args(m[kArgs], kArgKeys);
  ev.rf_id = args.Int(kRfId, -1);
  ev.external_id = args.Int(kExternalId, -1);
  ev.correlation = args.Int(kCorrelation, -1);
  ev.stream = args.Int(kStream, -1);
  ev.device = args.Int(kDevice, -1);
  if (ev.kind == KinetoEvent::Kind::kSync) {
    std::string_view sk;
    if (args.String(kSyncKind, &sk)) ev.sync_kind = std::string(sk);
    ev.wait_on_stream = args.Int(kWaitOnStream, -1);
    ev.wait_event_correlation = args.Int(kWaitEventCorrelation, -1);
  }
  if (options.inputs && kineto::IsHostSpan(ev)) ev.inputs_json = InputsJson(m[kArgs]);
}

}  // namespace

namespace kineto {

size_t AlignFrom(const proto::Workload& w, const std::vector<int>& et,
                 const std::vector<const KinetoEvent*>& k, size_t from, size_t limit,
                 std::vector<std::pair<int, const KinetoEvent*>>* pairs) {
  constexpr size_t kWindow = 32;
  size_t j = from, matched = 0;
  for (size_t i = 0; i < et.size() && i < limit && j < k.size(); ++i) {
    const std::string& name = w.ops(et[i]).name();
    for (size_t probe = j; probe < k.size() && probe < j + kWindow; ++probe) {
      if (k[probe]->name == name) {
        if (pairs) pairs->emplace_back(et[i], k[probe]);
        ++matched;
        j = probe + 1;
        break;
      }
    }
  }
  return matched;
}

bool IsHost(const KinetoEvent& e) {
  return e.kind == KinetoEvent::Kind::kHostOp || e.kind == KinetoEvent::Kind::kAnnotation;
}

bool IsHostSpan(const KinetoEvent& e) { return IsHost(e) && e.category != "gpu_user_annotation"; }

KernelSink KernelsOf(proto::Workload& w) {
  return [&w](int op) { return w.mutable_ops(op)->add_kernels(); };
}

SyncSink SyncsOf(proto::Workload& w) {
  return [&w](int op) { return w.mutable_ops(op)->add_syncs(); };
}

std::unordered_map<int64_t, const KinetoEvent*> LaunchesByCorrelation(const KinetoTrace& trace) {
  std::unordered_map<int64_t, const KinetoEvent*> launch_of;
  for (const KinetoEvent& e : trace.events)
    if (e.kind == KinetoEvent::Kind::kRuntime && e.correlation >= 0)
      launch_of.emplace(e.correlation, &e);
  return launch_of;
}

namespace {

// 'm' for the kernel of a min() over an integer tensor, 'M' for a max(), 0 for any other.
char IntegerMinMax(std::string_view kernel) {
  static constexpr std::string_view kIntegerTypes[] = {
      "long",          "int",           "short",     "signed char",
      "unsigned char", "char",          "long long", "unsigned short",
      "unsigned int",  "unsigned long", "int64_t",   "int32_t"};
  for (const auto& [functor, tag] : {std::pair{std::string_view("MinNanFunctor<"), 'm'},
                                     std::pair{std::string_view("MaxNanFunctor<"), 'M'}}) {
    const size_t at = kernel.find(functor);
    if (at == std::string_view::npos) continue;
    std::string_view type = kernel.substr(at + functor.size());
    type = type.substr(0, type.find('>'));
    for (std::string_view t : kIntegerTypes)
      if (type == t) return tag;
  }
  return 0;
}

bool IsDeviceToHostCopy(const KinetoEvent& e) {
  return DeviceCopyOf(e.name).route == CopyRoute::kDeviceToHost;  // CUDA's or ROCm's name
}

// What min() or max() may launch before its reduction: a copy of a strided tensor into a
// contiguous one, and a memset of the reduction's output. 0 for any other event.
char ReductionPrelude(const KinetoEvent& e) {
  if (e.category == "gpu_memset") return 's';
  return std::string_view(e.name).find("direct_copy_kernel") != std::string_view::npos ? 'c' : 0;
}

// The length of the probe of one integer tensor that starts at events[i]: `prelude` events (its
// copy and memset), the min reduction and its copy back, the same prelude again, the max and its
// copy back. 0 when no probe starts there.
size_t ProbeAt(const std::vector<const KinetoEvent*>& events, size_t i, size_t prelude) {
  const size_t min = i + prelude, max = min + 2 + prelude;
  if (max + 1 >= events.size()) return 0;
  for (size_t j = 0; j < prelude; ++j)
    if (!ReductionPrelude(*events[i + j]) ||
        ReductionPrelude(*events[i + j]) != ReductionPrelude(*events[min + 2 + j]))
      return 0;
  const bool probe =
      IntegerMinMax(events[min]->name) == 'm' && IsDeviceToHostCopy(*events[min + 1]) &&
      IntegerMinMax(events[max]->name) == 'M' && IsDeviceToHostCopy(*events[max + 1]);
  return probe ? max + 2 - i : 0;
}

}  // namespace

std::unordered_set<int64_t> ObserverProbes(
    const KinetoTrace& trace, const std::unordered_map<int64_t, const KinetoEvent*>& launch_of,
    const std::unordered_map<const KinetoEvent*, int>& launcher) {
  auto op_of = [&](const KinetoEvent& e) {
    auto l = launch_of.find(e.correlation);
    auto op = l == launch_of.end() ? launcher.end() : launcher.find(l->second);
    return op == launcher.end() ? -1 : op->second;
  };
  // Only an op that launched an integer min or max can hold a probe: most traces have none.
  std::unordered_map<int, std::vector<const KinetoEvent*>> by_op;  // their device events
  for (const KinetoEvent& e : trace.events)
    if (e.kind == KinetoEvent::Kind::kDevice && IntegerMinMax(e.name))
      if (const int op = op_of(e); op >= 0) by_op[op];
  if (by_op.empty()) return {};
  for (const KinetoEvent& e : trace.events)
    if (e.kind == KinetoEvent::Kind::kDevice)
      if (auto it = by_op.find(op_of(e)); it != by_op.end()) it->second.push_back(&e);
  std::unordered_set<int64_t> probes;
  for (auto& [op, events] : by_op) {
    std::sort(events.begin(), events.end(), [](const KinetoEvent* a, const KinetoEvent* b) {
      return a->correlation < b->correlation;  // launch order
    });
    for (size_t i = 0; i < events.size(); ++i)
      for (size_t prelude : {2, 1, 0})
        if (const size_t n = ProbeAt(events, i, prelude); n > 0) {
          for (size_t j = i; j < i + n; ++j) probes.insert(events[j]->correlation);
          i += n - 1;
          break;
        }
  }
  return probes;
}

template <typename Trace>
KernelCounts AttachKernels(Trace& trace,
                           const std::unordered_map<int64_t, const KinetoEvent*>& launch_of,
                           const std::unordered_map<const KinetoEvent*, int>& launcher,
                           double window_lo, double window_hi, const KernelSink& add) {
  KernelCounts n;
  const std::unordered_set<int64_t> probes = ObserverProbes(trace, launch_of, launcher);
  for (auto& e : trace.events) {
    if (e.kind != KinetoEvent::Kind::kDevice) continue;
    ++n.total;
    auto launch = launch_of.find(e.correlation);
    const KinetoEvent* l = launch == launch_of.end() ? nullptr : launch->second;
    const double launch_ts = l ? l->ts : e.ts;
    if (launch_ts < window_lo || launch_ts > window_hi) continue;
    ++n.in_window;
    if (l && probes.count(e.correlation)) {
      ++n.observer_probes;
      n.observer_probe_us += e.dur;
      continue;
    }
    auto op_it = l ? launcher.find(l) : launcher.end();
    if (op_it == launcher.end()) continue;
    ++n.linked;
    proto::Kernel& k = *add(op_it->second);
    if constexpr (std::is_const_v<Trace>)
      k.set_name(e.name);
    else
      k.set_name(std::move(e.name));
    k.set_category(std::string(e.category));
    k.set_device(e.device);
    k.set_stream(e.stream);
    k.set_start_us(e.ts);
    k.set_duration_us(e.dur);
    k.set_correlation(e.correlation);
    k.set_launch_us(launch_ts);
  }
  return n;
}
template KernelCounts AttachKernels(const KinetoTrace&,
                                    const std::unordered_map<int64_t, const KinetoEvent*>&,
                                    const std::unordered_map<const KinetoEvent*, int>&, double,
                                    double, const KernelSink&);
template KernelCounts AttachKernels(KinetoTrace&,
                                    const std::unordered_map<int64_t, const KinetoEvent*>&,
                                    const std::unordered_map<const KinetoEvent*, int>&, double,
                                    double, const KernelSink&);

// A sweep per thread over host spans and launches in time order keeps the stack of open host
// spans; the innermost one that is an op is the launcher.
std::unordered_map<const KinetoEvent*, int> AttributeLaunches(
    const KinetoTrace& trace, const std::vector<const KinetoEvent*>& host,
    const std::unordered_map<const KinetoEvent*, int>& op_of_event) {
  std::map<int64_t, std::vector<const KinetoEvent*>> by_tid;  // host spans and launches
  for (const KinetoEvent* e : host) by_tid[e->tid].push_back(e);
  for (const KinetoEvent& e : trace.events)
    if (e.kind == KinetoEvent::Kind::kRuntime) by_tid[e.tid].push_back(&e);
  std::unordered_map<const KinetoEvent*, int> out;
  for (auto& [tid, events] : by_tid) {
    std::stable_sort(events.begin(), events.end(), [](const KinetoEvent* a, const KinetoEvent* b) {
      if (a->ts != b->ts) return a->ts < b->ts;
      if (IsHost(*a) != IsHost(*b)) return IsHost(*a);  // a span opens before a launch in it
      return a->dur > b->dur;
    });
    std::vector<const KinetoEvent*> open;
    for (const KinetoEvent* e : events) {
      while (!open.empty() && open.back()->ts + open.back()->dur < e->ts) open.pop_back();
      if (IsHost(*e)) {
        open.push_back(e);
        continue;
      }
      for (auto it = open.rbegin(); it != open.rend(); ++it) {
        auto op = op_of_event.find(*it);
        if (op != op_of_event.end()) {
          out.emplace(e, op->second);
          break;
        }
      }
    }
  }
  return out;
}

// Each recorded CUDA synchronization goes on the op whose span holds its runtime call (the
// launcher of that call), else on the next linked op its thread started; with the start of the
// cudaEventRecord it waits for, where the trace names one.
void AttachSyncs(const KinetoTrace& trace, const std::vector<const KinetoEvent*>& event_of_op,
                 const std::unordered_map<int64_t, const KinetoEvent*>& runtime_of,
                 const std::unordered_map<const KinetoEvent*, int>& launcher, const SyncSink& add) {
  std::map<int64_t, std::vector<std::pair<double, int>>> starts;  // per thread: linked op starts
  for (int i = 0; i < static_cast<int>(event_of_op.size()); ++i)
    if (const KinetoEvent* e = event_of_op[i]) starts[e->tid].emplace_back(e->ts, i);
  for (auto& [tid, v] : starts) std::sort(v.begin(), v.end());
  for (const KinetoEvent& e : trace.events) {
    if (e.kind != KinetoEvent::Kind::kSync) continue;
    auto call = runtime_of.find(e.correlation);
    if (call == runtime_of.end()) continue;
    int op = -1;
    if (auto l = launcher.find(call->second); l != launcher.end()) {
      op = l->second;
    } else if (auto t = starts.find(call->second->tid); t != starts.end()) {
      auto next = std::lower_bound(t->second.begin(), t->second.end(),
                                   std::make_pair(call->second->ts, -1));
      if (next != t->second.end()) op = next->second;
    }
    if (op < 0) continue;
    proto::CudaSync& s = *add(op);
    s.set_kind(e.sync_kind);
    s.set_stream(e.stream);
    s.set_wait_on_stream(e.wait_on_stream);
    s.set_ts_us(call->second->ts);
    auto record = runtime_of.find(e.wait_event_correlation);
    s.set_record_us(e.wait_event_correlation >= 0 && record != runtime_of.end() ? record->second->ts
                                                                                : -1);
  }
}

// The step memory peak: the most bytes the original's allocator held during a profiled step
// above what it held when the step began, from its "[memory]" events (profile_memory=True): on the
// GPU when the trace has GPU samples, else on the CPU (where the profiler counts from zero when
// profiling begins).
void RecordStepMemory(const KinetoTrace& trace, proto::Workload& w) {
  const bool gpu = std::any_of(trace.memory.begin(), trace.memory.end(),
                               [](const KinetoMemorySample& m) { return m.device_type == 1; });
  std::vector<const KinetoMemorySample*> samples;  // the device's, in time order
  for (const KinetoMemorySample& m : trace.memory)
    if (m.device_type == (gpu ? 1 : 0)) samples.push_back(&m);
  std::stable_sort(samples.begin(), samples.end(), [](auto* a, auto* b) { return a->ts < b->ts; });
  int64_t most = -1;
  for (const proto::Segment& s : w.segments()) {
    if (s.kind() != proto::Segment::ITERATION || !s.has_span()) continue;
    int64_t base = 0, peak = -1;
    for (const KinetoMemorySample* m : samples) {
      if (m->ts < s.start_us())
        base = m->total_allocated;
      else if (m->ts <= s.start_us() + s.duration_us())
        peak = std::max(peak, m->total_allocated);
    }
    if (peak >= 0) most = std::max(most, peak - base);
  }
  if (most < 0 || w.original().has_step_memory_peak_bytes()) return;
  w.mutable_original()->set_step_memory_peak_bytes(most);
  w.mutable_original()->set_step_memory_source(std::string("Kineto [memory] events, ") +
                                               (gpu ? "GPU" : "CPU") +
                                               " allocator, profiled steps");
}

void SetSegmentSpans(proto::Workload& w) {
  std::unordered_map<int64_t, int> index_of_id;
  for (int i = 0; i < w.ops_size(); ++i) index_of_id[w.ops(i).id()] = i;
  std::vector<double> step_ms;
  for (proto::Segment& s : *w.mutable_segments()) {
    auto it = index_of_id.find(s.op_id());
    if (it == index_of_id.end()) continue;
    const proto::Op& op = w.ops(it->second);
    if (!op.has_cpu_span()) continue;
    s.set_has_span(true);
    s.set_start_us(op.cpu_start_us());
    s.set_duration_us(op.cpu_duration_us());
    if (s.kind() == proto::Segment::ITERATION) step_ms.push_back(op.cpu_duration_us() / 1000.0);
  }
  if (!step_ms.empty() && w.original().iteration_ms_size() == 0) {
    for (double ms : step_ms) w.mutable_original()->add_iteration_ms(ms);
    w.mutable_original()->set_source("Kineto ProfilerStep spans (measured under the profiler)");
  }
}

void AddTraceProvenance(const KinetoTrace& trace, proto::Workload& w) {
  auto& prov = *w.mutable_provenance();
  if (trace.rank >= 0) prov.set_rank(trace.rank);
  if (trace.world_size > 0) prov.set_world_size(trace.world_size);
  for (const std::string& d : trace.device_names)
    if (std::find(prov.devices().begin(), prov.devices().end(), d) == prov.devices().end())
      prov.add_devices(d);
  if (prov.gpus_size() > 0) return;
  for (const KinetoTrace::Device& d : trace.devices) {
    proto::GpuProperties* g = prov.add_gpus();
    g->set_name(d.name), g->set_memory_bytes(d.memory_bytes), g->set_sm_count(d.sm_count);
  }
}

}  // namespace kineto

using kineto::AttributeLaunches;

Result<KinetoTrace> ParseKinetoTrace(const std::string& path, std::string_view json) {
  std::unique_ptr<InputStream> in = InputStream::FromMemory(path, json);
  return ParseKinetoTrace(path, *in);
}
Result<KinetoTrace> ParseKinetoTrace(const std::string& path, InputStream& in,
                                     const KinetoParseOptions& options) {
  KinetoTrace trace;
  auto on_event = [&](element e, size_t, size_t) -> Status {
    ReadEvent(e, options, trace);
    return Status::Ok();
  };
  auto on_member = [&](std::string_view key, element v, size_t) -> Status {
    if (key == "deviceProperties" && v.type() == element_type::ARRAY) {
      for (element d : v.get_array()) {
        std::string_view name;
        if (d["name"].get(name) != simdjson::SUCCESS) continue;
        trace.device_names.emplace_back(name);
        trace.devices.push_back({std::string(name), DoubleOr(d, "totalGlobalMem", 0), IntOr(d, "numSms", 0)});
      }
    } else if (key == "distributedInfo" && v.type() == element_type::OBJECT) {
      trace.rank = IntOr(v, "rank", -1);
      trace.world_size = IntOr(v, "world_size", -1);
    }
    return Status::Ok();
  };
  bool found = false;
  MIMIC_RETURN_IF_ERROR(WalkTopLevelObject(path, in, "traceEvents", on_event, on_member, &found));
  if (!found)
    return Status::InvalidInput(path + ":byte 0: valid JSON but not a Kineto trace (no \"traceEvents\")");
  return trace;
}

Status LinkKineto(const std::string& path, const KinetoTrace& trace, proto::Workload& w) {
  const int64_t et_pid = w.provenance().pid();
  std::vector<const KinetoEvent*> host;
  int64_t kineto_pid = -1;
  for (const KinetoEvent& e : trace.events) {
    if (!IsHost(e)) continue;
    host.push_back(&e);
    if (kineto_pid < 0) kineto_pid = e.pid;
  }
  if (et_pid > 0 && kineto_pid > 0 && et_pid != kineto_pid)
    return Status::InvalidInput(path + ":byte 0: Kineto trace of another run (its pid is " +
                                std::to_string(kineto_pid) + ", the execution trace's is " +
                                std::to_string(et_pid) + ")");
  int64_t linkable = 0;
  for (const proto::Op& op : w.ops()) linkable += IsLinkable(op);

  Links links;
  std::string method;
  const bool has_rf = std::any_of(host.begin(), host.end(), [](const KinetoEvent* e) { return e->rf_id >= 0; });
  if (has_rf) {
    links = LinkByKey(w, host, &KinetoEvent::rf_id);
    method = "record_function_id";
  } else {
    links = LinkByKey(w, host, &KinetoEvent::external_id);
    method = "external_id";
    if (static_cast<double>(links.size()) < 0.9 * static_cast<double>(linkable)) {
      links = LinkByNameThreadOrder(w, host);
      method = "name_thread_order";
    }
  }
  if (links.empty())
    return Status::InvalidInput(path + ":byte 0: no operator of the execution trace matches this "
                                "Kineto trace (is it from another run?)");

  // Host spans, and the window of the ET's linked ops on the Kineto clock.
  double window_lo = 1e300, window_hi = -1e300;
  for (const auto& [index, e] : links) {
    proto::Op& op = *w.mutable_ops(index);
    op.set_has_cpu_span(true);
    op.set_cpu_start_us(e->ts);
    op.set_cpu_duration_us(e->dur);
    window_lo = std::min(window_lo, e->ts);
    window_hi = std::max(window_hi, e->ts + e->dur);
  }

  // Device events -> launches (correlation) -> the innermost linked host op whose span holds
  // the launch on the launching thread. (Containment rather than External id: older traces
  // give runtime events their correlation as External id.)
  std::unordered_map<const KinetoEvent*, int> op_of_event;
  for (const auto& [index, e] : links) op_of_event.emplace(e, index);
  const auto launch_of = kineto::LaunchesByCorrelation(trace);
  const std::unordered_map<const KinetoEvent*, int> launcher = AttributeLaunches(trace, host, op_of_event);
  const kineto::KernelCounts kernels =
      kineto::AttachKernels(trace, launch_of, launcher, window_lo, window_hi, kineto::KernelsOf(w));
  std::vector<const KinetoEvent*> event_of_op(w.ops_size(), nullptr);
  for (const auto& [index, e] : links) event_of_op[index] = e;
  kineto::AttachSyncs(trace, event_of_op, launch_of, launcher, kineto::SyncsOf(w));
  kineto::SetSegmentSpans(w);
  kineto::RecordStepMemory(trace, w);
  kineto::AddTraceProvenance(trace, w);

  auto& summary = *w.mutable_kineto();
  summary.set_present(true);
  summary.set_link_method(method);
  summary.set_host_ops(linkable);
  summary.set_host_ops_linked(static_cast<int64_t>(links.size()));
  summary.set_kernels(kernels.in_window);
  summary.set_kernels_linked(kernels.linked);
  summary.set_kernels_total(kernels.total);
  summary.set_observer_probe_events(kernels.observer_probes);
  summary.set_observer_probe_us(kernels.observer_probe_us);
  summary.set_kineto_pid(kineto_pid);
  return Status::Ok();
}

}  // namespace mimic::eg
