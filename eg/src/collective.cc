#include "mimic/eg/collective.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

using Type = proto::Collective::Type;

// Names by the prefix of their squashed form (namespace, underscores and case dropped:
// "c10d::_allgather_base_" -> "allgatherbase"). A prefix that starts another comes after it
// ("reducescatter" before "reduce", "allgather" before "gather").
struct NamePrefix {
  std::string_view prefix;
  Type type;
};
constexpr NamePrefix kNames[] = {
    {"allreduce", proto::Collective::ALL_REDUCE},
    {"allgather", proto::Collective::ALL_GATHER},  // _allgather_base, all_gather_into_tensor
    {"alltoall", proto::Collective::ALL_TO_ALL},   // alltoall_base, all_to_all_single
    {"reducescatter", proto::Collective::REDUCE_SCATTER},
    {"reduce", proto::Collective::REDUCE},
    {"gather", proto::Collective::GATHER},
    {"scatter", proto::Collective::SCATTER},
    {"broadcast", proto::Collective::BROADCAST},
    {"barrier", proto::Collective::BARRIER},
    {"send", proto::Collective::SEND},
    {"recv", proto::Collective::RECV},  // recv_, recv_any_source_
    {"wait", proto::Collective::WAIT},  // record_param_comms "wait", wait_tensor
};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// Backend spans: the same communication as the c10d op or record_param_comms that issued it.
bool IsBackendSpan(const proto::Op& op) {
  return StartsWith(op.name(), "nccl:") || StartsWith(op.name(), "gloo:");
}
bool IsRecordParamComms(const proto::Op& op) { return op.name() == "record_param_comms"; }
bool IsFunctional(const proto::Op& op) {
  return StartsWith(op.name(), "_c10d_functional::") || StartsWith(op.name(), "c10d_functional::");
}
// Ops that issue (or wait for) a communication: everything IsCollectiveOp names but the
// backends' spans.
bool IsIssuer(const proto::Op& op) { return IsCollectiveOp(op) && !IsBackendSpan(op); }

int64_t IntAttr(const proto::Op& op, const std::string& key, int64_t fallback) {
  auto it = op.attrs().find(key);
  return it != op.attrs().end() && it->second.kind_case() == proto::Value::kIntValue
             ? it->second.int_value()
             : fallback;
}
const std::string* StringAttr(const proto::Op& op, const std::string& key) {
  auto it = op.attrs().find(key);
  return it != op.attrs().end() && it->second.kind_case() == proto::Value::kStringValue
             ? &it->second.string_value()
             : nullptr;
}
void IntListAttr(const proto::Op& op, const std::string& key,
                 google::protobuf::RepeatedField<int64_t>* out) {
  auto it = op.attrs().find(key);
  if (it == op.attrs().end() || it->second.kind_case() != proto::Value::kList) return;
  for (const proto::Value& v : it->second.list().items())
    if (v.kind_case() == proto::Value::kIntValue) out->Add(v.int_value());
}

// Sum of the elements of every tensor `v` holds (itself, or inside lists); the first tensor's
// dtype and item size go to `c` when it has none yet.
int64_t Elements(const proto::Workload& w, const proto::Value& v, proto::Collective& c, int depth = 0) {
  if (v.kind_case() == proto::Value::kTensor) {
    if (v.tensor() < 0 || v.tensor() >= w.tensors_size()) return 0;
    const proto::Tensor& t = w.tensors(v.tensor());
    if (c.dtype() == proto::DTYPE_UNKNOWN) {
      c.set_dtype(t.dtype());
      c.set_itemsize(t.itemsize());
    }
    return t.numel();
  }
  int64_t n = 0;
  if (v.kind_case() == proto::Value::kList && depth < 32)
    for (const proto::Value& item : v.list().items()) n += Elements(w, item, c, depth + 1);
  return n;
}

// c10d::* and _c10d_functional::* ops: arguments by their schema names.
void ReadDispatcherOp(const proto::Workload& w, const proto::Op& op, proto::Collective& c) {
  c.set_source(IsFunctional(op) ? "c10d_functional" : "c10d");
  if (op.schema() < 0 || op.schema() >= w.schemas_size()) {
    // No schema: the first argument is what it sends.
    if (op.inputs_size() > 0) c.set_in_elems(Elements(w, op.inputs(0), c));
    c.set_out_elems(c.in_elems());
    return;
  }
  const std::vector<SchemaArg> args = ParseSchemaArgs(w.schemas(op.schema()));
  int64_t in = 0, out = 0;
  bool has_out = false;
  for (int i = 0; i < op.inputs_size() && i < static_cast<int>(args.size()); ++i) {
    const std::string& name = args[i].name;
    const proto::Value& v = op.inputs(i);
    if (StartsWith(name, "output") && name.find("split") == std::string::npos) {
      has_out = true;
      out += Elements(w, v, c);
    } else if (name == "tensors" || name == "tensor" || name == "input" || name == "self" ||
               (StartsWith(name, "input") && name.find("split") == std::string::npos)) {
      in += Elements(w, v, c);
    } else if (name == "output_split_sizes" || name == "input_split_sizes") {
      auto* dst = name[0] == 'o' ? c.mutable_out_split_sizes() : c.mutable_in_split_sizes();
      if (v.kind_case() == proto::Value::kList)
        for (const proto::Value& s : v.list().items())
          if (s.kind_case() == proto::Value::kIntValue) dst->Add(s.int_value());
    } else if ((name == "root_rank" || name == "dstRank" || name == "srcRank" || name == "src" ||
                name == "dst") && v.kind_case() == proto::Value::kIntValue) {
      c.set_root(v.int_value());
    } else if (name == "async_op" && v.kind_case() == proto::Value::kBoolValue) {
      c.set_async(v.bool_value());
    } else if ((name == "group_name" || name == "tag") && v.kind_case() == proto::Value::kStringValue) {
      c.set_process_group(v.string_value());
    } else if (name == "group_size" && v.kind_case() == proto::Value::kIntValue) {
      c.set_group_size(v.int_value());
    }
  }
  // In-place collectives (allreduce_, broadcast_) and functional ones return their result.
  if (!has_out && IsFunctional(op) && op.outputs_size() > 0) {
    has_out = true;
    out = Elements(w, op.outputs(0), c);
  }
  c.set_in_elems(in);
  c.set_out_elems(has_out ? out : in);
}

// record_param_comms' `dtype` attribute (1.1.0+, c10 ScalarType names), for a collective whose
// tensors the trace did not record.
struct ScalarTypeName {
  std::string_view name;
  proto::DType dtype;
  int64_t itemsize;
};
constexpr ScalarTypeName kScalarTypes[] = {
    {"Float", proto::FLOAT32, 4},      {"Double", proto::FLOAT64, 8},  {"Half", proto::FLOAT16, 2},
    {"BFloat16", proto::BFLOAT16, 2},  {"Long", proto::INT64, 8},      {"Int", proto::INT32, 4},
    {"Short", proto::INT16, 2},        {"Char", proto::INT8, 1},       {"Byte", proto::UINT8, 1},
    {"Bool", proto::BOOL, 1},          {"UInt16", proto::UINT16, 2},   {"UInt32", proto::UINT32, 4},
    {"UInt64", proto::UINT64, 8},      {"ComplexFloat", proto::COMPLEX64, 8},
    {"ComplexDouble", proto::COMPLEX128, 16}, {"Float8_e4m3fn", proto::FLOAT8_E4M3FN, 1},
    {"Float8_e5m2", proto::FLOAT8_E5M2, 1},
};

// record_param_comms: attrs from schema 1.1.0, positional arguments before (and still there):
//   1.0.2:  (tensors, seq, pg_id, rank, name, in_split, out_split, world_size)
//   1.0.3+: (tensors, seq, (pg_name, pg_desc), rank, name, in_nelems, out_nelems, dtype,
//            in_split, out_split, global_rank_start, global_rank_stride, world_size)
void ReadRecordParamComms(const proto::Workload& w, const proto::Op& op, proto::Collective& c,
                          int64_t* backend_id) {
  c.set_source("record_param_comms");
  if (op.inputs_size() > 0) c.set_in_elems(Elements(w, op.inputs(0), c));
  if (op.outputs_size() > 0) c.set_out_elems(Elements(w, op.outputs(0), c));
  if (c.out_elems() == 0) c.set_out_elems(c.in_elems());
  int name_at = -1;
  for (int i = 0; i < op.inputs_size(); ++i)
    if (op.inputs(i).kind_case() == proto::Value::kStringValue &&
        CollectiveTypeOfName(op.inputs(i).string_value()) != proto::Collective::TYPE_UNKNOWN) {
      name_at = i;
      break;
    }
  // A "wait" records no tensors: its arguments start at the sequence number.
  const int at = op.inputs_size() > 0 && op.inputs(0).kind_case() == proto::Value::kIntValue ? 0 : 1;
  if (op.inputs_size() > at && op.inputs(at).kind_case() == proto::Value::kIntValue) c.set_seq(op.inputs(at).int_value());
  if (op.inputs_size() > at + 1) {
    const proto::Value& pg = op.inputs(at + 1);
    if (pg.kind_case() == proto::Value::kIntValue) *backend_id = pg.int_value();
    if (pg.kind_case() == proto::Value::kStringValue) c.set_process_group(pg.string_value());
    if (pg.kind_case() == proto::Value::kList && pg.list().items_size() > 0 &&
        pg.list().items(0).kind_case() == proto::Value::kStringValue)
      c.set_process_group(pg.list().items(0).string_value());
  }
  if (name_at >= 0) {
    // After the name: element counts (1.0.3+) then two split-size lists, and the group size last.
    std::vector<const proto::Value*> lists;
    for (int i = name_at + 1; i < op.inputs_size(); ++i)
      if (op.inputs(i).kind_case() == proto::Value::kList) lists.push_back(&op.inputs(i));
    auto copy = [](const proto::Value* v, google::protobuf::RepeatedField<int64_t>* dst) {
      for (const proto::Value& s : v->list().items())
        if (s.kind_case() == proto::Value::kIntValue) dst->Add(s.int_value());
    };
    if (lists.size() >= 2) {
      copy(lists[0], c.mutable_in_split_sizes());
      copy(lists[1], c.mutable_out_split_sizes());
    }
    const proto::Value& last = op.inputs(op.inputs_size() - 1);
    if (op.inputs_size() - 1 > name_at && last.kind_case() == proto::Value::kIntValue)
      c.set_group_size(last.int_value());
  }
  // Schema 1.1.0+ attrs are authoritative.
  if (const std::string* pg = StringAttr(op, "pg_name")) c.set_process_group(*pg);
  c.set_group_size(IntAttr(op, "pg_size", c.group_size()));
  c.set_in_elems(IntAttr(op, "in_msg_nelems", c.in_elems()));
  c.set_out_elems(IntAttr(op, "out_msg_nelems", c.out_elems()));
  if (c.in_split_sizes().empty()) IntListAttr(op, "in_split_size", c.mutable_in_split_sizes());
  if (c.out_split_sizes().empty()) IntListAttr(op, "out_split_size", c.mutable_out_split_sizes());
  c.set_seq(IntAttr(op, "seq", c.seq()));
  if (const std::string* dtype = StringAttr(op, "dtype"))
    for (const ScalarTypeName& t : kScalarTypes)
      if (t.name == *dtype) c.set_dtype(t.dtype), c.set_itemsize(t.itemsize);
}

Type TypeOf(const proto::Op& op) {
  if (!IsRecordParamComms(op)) return CollectiveTypeOfName(op.name());
  if (const std::string* name = StringAttr(op, "collective_name")) return CollectiveTypeOfName(*name);
  for (const proto::Value& v : op.inputs()) {
    if (v.kind_case() != proto::Value::kStringValue) continue;
    const Type t = CollectiveTypeOfName(v.string_value());
    if (t != proto::Collective::TYPE_UNKNOWN) return t;
  }
  return proto::Collective::TYPE_UNKNOWN;
}

// Fills the process group's name and size from what the collective recorded, the trace's
// process-group table, and the world.
void ResolveGroup(const proto::Workload& w, int64_t backend_id, proto::Collective& c) {
  const auto& groups = w.provenance().process_groups();
  const proto::ProcessGroup* match = nullptr;
  for (const proto::ProcessGroup& g : groups) {
    if ((!c.process_group().empty() && g.name() == c.process_group()) ||
        (backend_id != 0 && g.backend_id() == backend_id))
      match = &g;
  }
  // c10d ops record their group only as "<Object>": with one group it is that one.
  if (!match && c.process_group().empty() && groups.size() == 1) match = &groups[0];
  if (match) {
    c.set_process_group(match->name());
    if (c.group_size() <= 0) c.set_group_size(match->size());
  }
  if (c.group_size() <= 0 && w.provenance().world_size() > 0) c.set_group_size(w.provenance().world_size());
}

int64_t FirstTensorId(const proto::Workload& w, const proto::Value& v, int depth = 0) {
  if (v.kind_case() == proto::Value::kTensor)
    return v.tensor() >= 0 && v.tensor() < w.tensors_size() ? w.tensors(v.tensor()).tensor_id() : -1;
  if (v.kind_case() == proto::Value::kList && depth < 32)
    for (const proto::Value& item : v.list().items())
      if (int64_t id = FirstTensorId(w, item, depth + 1); id >= 0) return id;
  return -1;
}

}  // namespace

Type CollectiveTypeOfName(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos) name.remove_prefix(colon + 1);
  std::string squashed;
  for (char ch : name)
    if (ch != '_') squashed += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const NamePrefix& n : kNames)
    if (StartsWith(squashed, n.prefix)) return n.type;
  return proto::Collective::TYPE_UNKNOWN;
}

const char* CollectiveTypeName(Type type) {
  switch (type) {
    case proto::Collective::ALL_REDUCE: return "all_reduce";
    case proto::Collective::ALL_GATHER: return "all_gather";
    case proto::Collective::REDUCE_SCATTER: return "reduce_scatter";
    case proto::Collective::ALL_TO_ALL: return "all_to_all";
    case proto::Collective::BROADCAST: return "broadcast";
    case proto::Collective::REDUCE: return "reduce";
    case proto::Collective::GATHER: return "gather";
    case proto::Collective::SCATTER: return "scatter";
    case proto::Collective::BARRIER: return "barrier";
    case proto::Collective::SEND: return "send";
    case proto::Collective::RECV: return "recv";
    case proto::Collective::WAIT: return "wait";
    default: return "unknown";
  }
}

int64_t CollectiveBytes(const proto::Collective& c) {
  const int64_t item = std::max<int64_t>(c.itemsize(), 0);
  switch (c.type()) {
    case proto::Collective::ALL_GATHER:
    case proto::Collective::REDUCE_SCATTER:
    case proto::Collective::ALL_TO_ALL:
    case proto::Collective::GATHER:
    case proto::Collective::SCATTER:
      return std::max(c.in_elems(), c.out_elems()) * item;
    default:
      return c.in_elems() * item;
  }
}

double BusBandwidthFactor(Type type, int64_t n) {
  if (n <= 0) return 1;
  const double r = static_cast<double>(n);
  switch (type) {
    case proto::Collective::ALL_REDUCE: return 2 * (r - 1) / r;
    case proto::Collective::ALL_GATHER:
    case proto::Collective::REDUCE_SCATTER:
    case proto::Collective::ALL_TO_ALL: return (r - 1) / r;
    default: return 1;
  }
}

void AddCollective(CollectiveTotals& t, const proto::Collective& c) {
  const int64_t bytes = CollectiveBytes(c);
  ++t.issued;
  t.bytes += bytes;
  for (CollectiveCount* n : {&t.by_type[CollectiveTypeName(c.type())], &t.by_group[c.process_group()]}) {
    ++n->count;
    n->bytes += bytes;
  }
}

CollectiveTotals CountCollectives(const proto::Workload& w, const std::vector<int>& indices) {
  CollectiveTotals t;
  for (int i : indices)
    if (IsCommunication(w.ops(i))) AddCollective(t, w.ops(i).collective());
  return t;
}

CollectiveTotals CountCollectives(const proto::Workload& w) {
  std::vector<int> all(w.ops_size());
  for (int i = 0; i < w.ops_size(); ++i) all[i] = i;
  return CountCollectives(w, all);
}

namespace {

// Annotates a workload's communication ops with what they communicate (AnnotateCollectives):
// each issuer (a c10d or functional op, a record_param_comms not inside one), then each backend
// span no issuer holds, then each wait paired with what it waits for.
class CollectiveAnnotator {
 public:
  explicit CollectiveAnnotator(proto::Workload& w) : w_(w), tree_(w), n_(w.ops_size()) {
    // Backend spans by type, in op order, for collectives whose span is not nested in them
    // (Gloo records its span from its worker thread, under whatever op was current).
    for (int i = 0; i < n_; ++i)
      if (IsBackendSpan(w.ops(i)) && !IssuerAbove(i))
        loose_spans_[CollectiveTypeOfName(w.ops(i).name())].push_back(i);
  }

  void Run() {
    for (int i = 0; i < n_; ++i) AnnotateIssuer(i);
    AnnotateLooseSpans();
    std::sort(issued_.begin(), issued_.end());
    PairWaits();
  }

 private:
  bool IssuerAbove(int i) const {
    for (int p = tree_.Parent(i), guard = 0; p >= 0 && guard < n_; p = tree_.Parent(p), ++guard)
      if (IsIssuer(w_.ops(p))) return true;
    return false;
  }

  // The ops below `i`, in op order, without entering another c10d or functional op (which is a
  // communication of its own, misfiled under `i`).
  std::vector<int> OwnDescendants(int i) const {
    std::vector<int> out, stack(tree_.Children(i).rbegin(), tree_.Children(i).rend());
    while (!stack.empty()) {
      const int k = stack.back();
      stack.pop_back();
      if (IsIssuer(w_.ops(k)) && !IsRecordParamComms(w_.ops(k))) continue;
      out.push_back(k);
      stack.insert(stack.end(), tree_.Children(k).rbegin(), tree_.Children(k).rend());
    }
    return out;
  }

  // Op `i`'s collective, where it issues one. record_param_comms inside a c10d op is that op's
  // own record. c10d and functional ops are each a communication even when nested in another:
  // with Gloo, whose worker threads record spans too, the observer sometimes files one c10d op
  // under the previous one.
  void AnnotateIssuer(int i) {
    proto::Op& op = *w_.mutable_ops(i);
    op.clear_collective();
    if (!IsIssuer(op) || (IsRecordParamComms(op) && IssuerAbove(i))) return;
    // A Kineto trace records no arguments of record_param_comms and none of a c10d op's tensor
    // list: the backend span inside (nccl:all_to_all, with its tensor's shape) names it then.
    const std::vector<int> below = OwnDescendants(i);
    const auto span =
        std::find_if(below.begin(), below.end(), [&](int k) { return IsBackendSpan(w_.ops(k)); });
    Type type = TypeOf(op);
    if (type == proto::Collective::TYPE_UNKNOWN && span != below.end())
      type = CollectiveTypeOfName(w_.ops(*span).name());
    if (type == proto::Collective::TYPE_UNKNOWN) return;
    proto::Collective c;
    c.set_type(type);
    c.set_seq(-1);
    c.set_original_us(-1);
    int64_t backend_id = 0;
    if (IsRecordParamComms(op)) {
      ReadRecordParamComms(w_, op, c, &backend_id);
    } else {
      ReadDispatcherOp(w_, op, c);
      TakeInnerRecord(below, type, c, &backend_id);
    }
    if (c.in_elems() == 0 && c.out_elems() == 0 && span != below.end() &&
        w_.ops(*span).inputs_size() > 0) {
      c.set_in_elems(Elements(w_, w_.ops(*span).inputs(0), c));
      c.set_out_elems(c.in_elems());
    }
    // c10d ops return a Work, NCCL's record_param_comms enqueue on a stream and functional
    // collectives return before their wait_tensor: asynchronous unless the call said otherwise.
    bool has_async_arg = false;
    if (op.schema() >= 0 && op.schema() < w_.schemas_size())
      for (const SchemaArg& a : ParseSchemaArgs(w_.schemas(op.schema())))
        has_async_arg |= a.name == "async_op";
    if (!has_async_arg) c.set_async(type != proto::Collective::WAIT);
    ResolveGroup(w_, backend_id, c);
    c.set_original_us(OriginalUs(i, below, type));
    *op.mutable_collective() = std::move(c);
    issued_.push_back(i);
  }

  // A record_param_comms among `below` of the same type names the group and the sequence
  // number; what the dispatcher op's own arguments did not give, it does.
  void TakeInnerRecord(const std::vector<int>& below, Type type, proto::Collective& c,
                       int64_t* backend_id) const {
    for (int k : below) {
      if (!IsRecordParamComms(w_.ops(k)) || TypeOf(w_.ops(k)) != type) continue;
      proto::Collective inner;
      ReadRecordParamComms(w_, w_.ops(k), inner, backend_id);
      if (c.process_group().empty()) c.set_process_group(inner.process_group());
      if (c.group_size() <= 0) c.set_group_size(inner.group_size());
      if (c.in_split_sizes().empty()) *c.mutable_in_split_sizes() = inner.in_split_sizes();
      if (c.out_split_sizes().empty()) *c.mutable_out_split_sizes() = inner.out_split_sizes();
      c.set_seq(inner.seq());
      return;
    }
  }

  // The original time of op `i`'s collective: the device kernels under it (else its backend
  // span's), a loose backend span of the same type that starts after it (taken from the loose
  // ones), or the op's own CPU span; -1 where none is known.
  double OriginalUs(int i, const std::vector<int>& below, Type type) {
    const proto::Op& op = w_.ops(i);
    double span_us = -1, kernels_us = 0;
    for (const proto::Kernel& k : op.kernels()) kernels_us += k.duration_us();
    for (int k : below) {
      const proto::Op& d = w_.ops(k);
      if (IsBackendSpan(d) && d.has_cpu_span() && span_us < 0) span_us = d.cpu_duration_us();
      for (const proto::Kernel& kk : d.kernels()) kernels_us += kk.duration_us();
    }
    if (kernels_us > 0) return kernels_us;
    if (span_us >= 0) return span_us;
    std::deque<int>& q = loose_spans_[type];
    if (auto loose = std::find_if(q.begin(), q.end(), [i](int k) { return k > i; });
        loose != q.end()) {
      const double us = w_.ops(*loose).has_cpu_span() ? w_.ops(*loose).cpu_duration_us() : -1;
      q.erase(loose);
      if (us >= 0) return us;
    }
    return op.has_cpu_span() ? op.cpu_duration_us() : -1;
  }

  // A backend span that no c10d op or record_param_comms issued (traces that recorded only
  // nccl:all_reduce) is the communication itself.
  void AnnotateLooseSpans() {
    for (auto& [type, spans] : loose_spans_) {
      if (type == proto::Collective::TYPE_UNKNOWN || type == proto::Collective::WAIT) continue;
      for (int i : spans) {
        proto::Op& op = *w_.mutable_ops(i);
        proto::Collective c;
        c.set_type(type);
        c.set_seq(-1);
        c.set_source("backend span");
        c.set_async(true);
        if (op.inputs_size() > 0) c.set_in_elems(Elements(w_, op.inputs(0), c));
        c.set_out_elems(c.in_elems());
        ResolveGroup(w_, 0, c);
        double kernels_us = 0;
        for (const proto::Kernel& k : op.kernels()) kernels_us += k.duration_us();
        c.set_original_us(kernels_us > 0      ? kernels_us
                          : op.has_cpu_span() ? op.cpu_duration_us()
                                              : -1);
        *op.mutable_collective() = std::move(c);
        issued_.push_back(i);
      }
    }
  }

  // Waits: by sequence number, by the tensor a functional collective returned, else the latest
  // unpaired asynchronous collective of the same thread.
  void PairWaits() {
    std::unordered_map<int64_t, int> by_seq, by_tensor;
    std::map<int64_t, std::vector<int>> pending_by_thread;
    for (int i : issued_) {
      proto::Op& op = *w_.mutable_ops(i);
      proto::Collective& c = *op.mutable_collective();
      if (c.type() != proto::Collective::WAIT) {
        if (!c.async()) continue;
        if (c.seq() >= 0) by_seq[c.seq()] = i;
        if (IsFunctional(op) && op.outputs_size() > 0)
          if (int64_t t = FirstTensorId(w_, op.outputs(0)); t >= 0) by_tensor[t] = i;
        pending_by_thread[op.thread()].push_back(i);
        continue;
      }
      std::optional<int> target;
      if (c.seq() >= 0 && by_seq.count(c.seq())) target = by_seq[c.seq()];
      if (!target && op.inputs_size() > 0)
        if (int64_t t = FirstTensorId(w_, op.inputs(0)); t >= 0 && by_tensor.count(t))
          target = by_tensor[t];
      std::vector<int>& pending = pending_by_thread[op.thread()];
      if (!target && !pending.empty()) target = pending.back();
      if (!target) continue;
      pending.erase(std::remove(pending.begin(), pending.end(), *target), pending.end());
      proto::Collective& issued_c = *w_.mutable_ops(*target)->mutable_collective();
      if (issued_c.wait_op() != 0) continue;
      issued_c.set_wait_op(op.id());
      c.set_waits_for(w_.ops(*target).id());
    }
  }

  proto::Workload& w_;
  const OpTree tree_;
  const int n_;
  std::map<Type, std::deque<int>> loose_spans_;
  std::vector<int> issued_;  // indices of annotated collectives
};

}  // namespace

void AnnotateCollectives(proto::Workload& w) { CollectiveAnnotator(w).Run(); }

}  // namespace mimic::eg
