#include "mimic/synth/chakra.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <unordered_map>

#include "mimic/base/file.h"
#include "mimic/base/json_writer.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"

namespace mimic::synth {
namespace {

namespace cpm = ChakraProtoMsg;
using cpm::AttributeProto;
using cpm::Node;

// ---------------------------------------------------------------------------------------------
// What a communication op is, by name.

enum class CommKind { kNone, kCollective, kSend, kRecv };

struct CommType {
  CommKind kind = CommKind::kNone;
  cpm::CollectiveCommType collective = cpm::ALL_REDUCE;
};

// The Chakra type of a communication as eg read it (eg/collective.h). kNone for waits and
// anything else.
CommType ChakraCommType(proto::Collective::Type type) {
  switch (type) {
    case proto::Collective::ALL_REDUCE: return {CommKind::kCollective, cpm::ALL_REDUCE};
    case proto::Collective::ALL_GATHER: return {CommKind::kCollective, cpm::ALL_GATHER};
    case proto::Collective::ALL_TO_ALL: return {CommKind::kCollective, cpm::ALL_TO_ALL};
    case proto::Collective::REDUCE_SCATTER: return {CommKind::kCollective, cpm::REDUCE_SCATTER};
    case proto::Collective::REDUCE: return {CommKind::kCollective, cpm::REDUCE};
    case proto::Collective::GATHER: return {CommKind::kCollective, cpm::GATHER};
    case proto::Collective::SCATTER: return {CommKind::kCollective, cpm::SCATTER};
    case proto::Collective::BROADCAST: return {CommKind::kCollective, cpm::BROADCAST};
    case proto::Collective::BARRIER: return {CommKind::kCollective, cpm::BARRIER};
    case proto::Collective::SEND: return {CommKind::kSend, cpm::ALL_REDUCE};
    case proto::Collective::RECV: return {CommKind::kRecv, cpm::ALL_REDUCE};
    default: return {};
  }
}

// ---------------------------------------------------------------------------------------------
// Reading ops: tensors, schema arguments, FLOPs.

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0) return 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t TensorBytes(const proto::Tensor& t) { return SaturatingMul(t.numel(), t.itemsize()); }

// Appends the indices of the tensors `v` holds (itself, or inside its lists) that point into
// the tensor table.
void CollectTensors(const proto::Workload& w, const proto::Value& v, std::vector<int>& out,
                    int depth = 0) {
  if (v.kind_case() == proto::Value::kTensor) {
    if (v.tensor() >= 0 && v.tensor() < w.tensors_size()) out.push_back(v.tensor());
  } else if (v.kind_case() == proto::Value::kList && depth < 32) {
    for (const proto::Value& item : v.list().items()) CollectTensors(w, item, out, depth + 1);
  }
}

std::vector<int> DistinctTensors(const proto::Workload& w,
                                 const google::protobuf::RepeatedPtrField<proto::Value>& values) {
  std::vector<int> out;
  for (const proto::Value& v : values) CollectTensors(w, v, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int64_t BytesOf(const proto::Workload& w, const std::vector<int>& tensors) {
  int64_t bytes = 0;
  for (int t : tensors) bytes = SaturatingAdd(bytes, TensorBytes(w.tensors(t)));
  return bytes;
}

// The argument names of an operator schema, in order (eg/schema_args.h).
std::vector<std::string> ArgNames(std::string_view schema) {
  std::vector<std::string> out;
  for (const eg::SchemaArg& a : eg::ParseSchemaArgs(std::string(schema))) out.push_back(a.name);
  return out;
}

std::string_view SchemaOf(const proto::Workload& w, const proto::Op& op) {
  return op.schema() >= 0 && op.schema() < w.schemas_size() ? std::string_view(w.schemas(op.schema()))
                                                           : std::string_view();
}

int ArgIndex(const std::vector<std::string>& names, std::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

std::optional<int64_t> IntInput(const proto::Op& op, int index) {
  if (index < 0 || index >= op.inputs_size() || op.inputs(index).kind_case() != proto::Value::kIntValue)
    return std::nullopt;
  return op.inputs(index).int_value();
}

// The table entry of the first tensor in `values[index]`, or nullptr.
const proto::Tensor* TensorAt(const proto::Workload& w,
                              const google::protobuf::RepeatedPtrField<proto::Value>& values, int index) {
  if (index < 0 || index >= values.size()) return nullptr;
  std::vector<int> tensors;
  CollectTensors(w, values.Get(index), tensors);
  return tensors.empty() ? nullptr : &w.tensors(tensors.front());
}

// FLOP estimates, by table: 2 x output elements x the reduction length. For a GEMM the
// reduction length is the last dimension of its left operand; for a convolution the weight's
// elements per output channel. `operand` is the input index of that left operand or weight.
enum class FlopFormula { kGemm, kConv };
struct FlopRule {
  std::string_view op;
  FlopFormula formula;
  int operand;
};
constexpr FlopRule kFlopRules[] = {
    {"aten::mm", FlopFormula::kGemm, 0},          {"aten::bmm", FlopFormula::kGemm, 0},
    {"aten::matmul", FlopFormula::kGemm, 0},      {"aten::linear", FlopFormula::kGemm, 0},
    {"aten::addmm", FlopFormula::kGemm, 1},       {"aten::baddbmm", FlopFormula::kGemm, 1},
    {"aten::conv1d", FlopFormula::kConv, 1},      {"aten::conv2d", FlopFormula::kConv, 1},
    {"aten::conv3d", FlopFormula::kConv, 1},      {"aten::convolution", FlopFormula::kConv, 1},
    {"aten::_convolution", FlopFormula::kConv, 1},
};

int64_t EstimateFlops(const proto::Workload& w, const proto::Op& op) {
  const FlopRule* rule = nullptr;
  for (const FlopRule& r : kFlopRules)
    if (r.op == op.name()) rule = &r;
  if (rule == nullptr) return 0;
  const proto::Tensor* out = TensorAt(w, op.outputs(), 0);
  const proto::Tensor* operand = TensorAt(w, op.inputs(), rule->operand);
  if (out == nullptr || operand == nullptr || operand->shape_size() == 0) return 0;
  int64_t reduction = 0;
  if (rule->formula == FlopFormula::kGemm) {
    reduction = operand->shape(operand->shape_size() - 1);
  } else {
    // A transposed convolution's FLOPs follow its input, not its output: not estimated.
    const int transposed = ArgIndex(ArgNames(SchemaOf(w, op)), "transposed");
    if (transposed >= 0 && transposed < op.inputs_size() && op.inputs(transposed).bool_value()) return 0;
    if (operand->shape(0) > 0) reduction = operand->numel() / operand->shape(0);
  }
  return SaturatingMul(SaturatingMul(2, out->numel()), reduction);
}

// True when the op touches a tensor on an accelerator (used to tell GPU ops without Kineto).
bool TouchesDevice(const proto::Workload& w, const proto::Op& op) {
  for (const auto* values : {&op.inputs(), &op.outputs()}) {
    std::vector<int> tensors;
    for (const proto::Value& v : *values) CollectTensors(w, v, tensors);
    for (int t : tensors) {
      const std::string& d = w.tensors(t).device();
      if (!d.empty() && d != "cpu" && d != "meta") return true;
    }
  }
  return false;
}

// Microseconds as Chakra stores them: unsigned integers. Durations round up, so that work that
// took any time never reads as none.
uint64_t StartMicros(double us) {
  return std::isfinite(us) && us > 0 ? static_cast<uint64_t>(std::llround(std::min(us, 1e18))) : 0;
}
uint64_t DurationMicros(double us) {
  return std::isfinite(us) && us > 0 ? static_cast<uint64_t>(std::ceil(std::min(us, 1e18))) : 0;
}

// ---------------------------------------------------------------------------------------------
// Attributes.

AttributeProto& AddAttr(google::protobuf::RepeatedPtrField<AttributeProto>& attrs, std::string_view name) {
  AttributeProto& a = *attrs.Add();
  a.set_name(std::string(name));
  return a;
}
void AddBool(Node& n, std::string_view name, bool v) { AddAttr(*n.mutable_attr(), name).set_bool_val(v); }
void AddInt64(Node& n, std::string_view name, int64_t v) { AddAttr(*n.mutable_attr(), name).set_int64_val(v); }
void AddUint64(Node& n, std::string_view name, uint64_t v) { AddAttr(*n.mutable_attr(), name).set_uint64_val(v); }
void AddInt32(Node& n, std::string_view name, int64_t v) {
  AddAttr(*n.mutable_attr(), name)
      .set_int32_val(static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX)));
}
void AddString(Node& n, std::string_view name, const std::string& v) {
  AddAttr(*n.mutable_attr(), name).set_string_val(v);
}

// ---------------------------------------------------------------------------------------------
// Export.

// What a communication node stands for.
struct CommInfo {
  CommType type;
  int64_t size = 0;     // bytes
  std::string pg_name;  // process group
  int64_t peer = -1;    // the other rank of a send/recv; -1 when the trace does not tell
  int64_t tag = 0;
};

class Exporter {
 public:
  Exporter(const proto::Workload& w, const ChakraExportOptions& options)
      : w_(w), options_(options), tree_(w), producer_of_tensor_(w.tensors_size(), -1) {}

  ChakraTrace Run() {
    WriteMetadata();
    for (int index : NodeOps()) EmitOp(index);
    return std::move(trace_);
  }

 private:
  // Dependencies collected for one node; sorted and deduplicated when it is written.
  struct Deps {
    std::vector<uint64_t> ctrl;
    std::vector<uint64_t> data;
  };

  void WriteMetadata() {
    cpm::GlobalMetadata& m = trace_.metadata;
    m.set_version(std::string(kChakraVersion));
    const proto::Provenance& p = w_.provenance();
    auto add = [&](std::string_view name) -> AttributeProto& { return AddAttr(*m.mutable_attr(), name); };
    add("schema").set_string_val(p.schema());
    for (const proto::SourceFile& s : p.sources())
      if (s.role() == "execution_trace") add("source").set_string_val(s.path());
    add("generator").set_string_val(std::string("mimic ") + MIMIC_VERSION);
    add("rank").set_int64_val(p.rank());
    add("world_size").set_int64_val(p.world_size());
    add("kernel_nodes").set_bool_val(options_.kernel_nodes);
  }

  // The ops that become nodes, in start order: the top-level ops a replay runs, collectives
  // included, but not waits: Chakra orders a collective by its dependencies.
  std::vector<int> NodeOps() const {
    std::vector<int> out;
    for (int i : eg::ReplayableOps(w_, tree_, -1, /*include_compiled=*/true))
      if (!(w_.ops(i).has_collective() && w_.ops(i).collective().type() == proto::Collective::WAIT)) out.push_back(i);
    return out;
  }

  // The subtree of op `index` in preorder, the op first.
  std::vector<int> Subtree(int index) const {
    std::vector<int> order, stack{index};
    while (!stack.empty() && order.size() <= static_cast<size_t>(w_.ops_size())) {
      const int j = stack.back();
      stack.pop_back();
      order.push_back(j);
      const std::vector<int>& children = tree_.Children(j);
      for (auto it = children.rbegin(); it != children.rend(); ++it) stack.push_back(*it);
    }
    return order;
  }

  // The communication a top-level op's `subtree` performs: eg's reading of its first
  // communication op. Chakra's comm_size is the message this rank sends. nullopt when none.
  std::optional<CommInfo> FindComm(const std::vector<int>& subtree) const {
    for (int j : subtree) {
      const proto::Op& op = w_.ops(j);
      if (!eg::IsCommunication(op)) continue;
      const proto::Collective& c = op.collective();
      CommInfo info;
      info.type = ChakraCommType(c.type());
      info.size = SaturatingMul(c.in_elems(), c.itemsize());
      info.pg_name = c.process_group();
      if (info.type.kind == CommKind::kSend || info.type.kind == CommKind::kRecv) FindPeer(subtree, info);
      return info;
    }
    return std::nullopt;
  }

  // The peer and tag of a send/recv, from the arguments its c10d op names (dstRank or srcRank,
  // and tag).
  void FindPeer(const std::vector<int>& subtree, CommInfo& info) const {
    const char* peer_arg = info.type.kind == CommKind::kSend ? "dstRank" : "srcRank";
    for (int j : subtree) {
      const proto::Op& op = w_.ops(j);
      const std::vector<std::string> names = ArgNames(SchemaOf(w_, op));
      const int peer = ArgIndex(names, peer_arg);
      const int tag = ArgIndex(names, "tag");
      if (peer < 0 && tag < 0) continue;
      info.peer = IntInput(op, peer).value_or(-1);
      info.tag = IntInput(op, tag).value_or(0);
      return;
    }
  }

  // The device work launched inside the subtree, by start time.
  std::vector<const proto::Kernel*> Kernels(const std::vector<int>& subtree) const {
    std::vector<const proto::Kernel*> out;
    for (int j : subtree)
      for (const proto::Kernel& k : w_.ops(j).kernels()) out.push_back(&k);
    std::stable_sort(out.begin(), out.end(),
                     [](const proto::Kernel* a, const proto::Kernel* b) { return a->start_us() < b->start_us(); });
    return out;
  }

  // The nodes that last produced the tensors in `reads` (by table entry and by storage).
  std::vector<uint64_t> Producers(const std::vector<int>& reads) const {
    std::vector<uint64_t> out;
    for (int t : reads) {
      if (producer_of_tensor_[t] >= 0) out.push_back(static_cast<uint64_t>(producer_of_tensor_[t]));
      auto it = producer_of_storage_.find(w_.tensors(t).storage_id());
      if (it != producer_of_storage_.end()) out.push_back(it->second);
    }
    return out;
  }

  void RecordWrites(const std::vector<int>& writes, uint64_t producer) {
    for (int t : writes) {
      producer_of_tensor_[t] = static_cast<int64_t>(producer);
      producer_of_storage_[w_.tensors(t).storage_id()] = producer;
    }
  }

  // Tensors that name memory: undefined tensors ([id, 0, 0, 0, 0, ""]) have storage 0.
  std::vector<int> RealTensors(const google::protobuf::RepeatedPtrField<proto::Value>& values) const {
    std::vector<int> out = DistinctTensors(w_, values);
    std::erase_if(out, [&](int t) { return w_.tensors(t).storage_id() == 0; });
    return out;
  }

  Node& NewNode(const std::string& name, cpm::NodeType type) {
    Node& n = trace_.nodes.emplace_back();
    n.set_id(trace_.nodes.size() - 1);
    n.set_name(name);
    n.set_type(type);
    return n;
  }

  static void SetDeps(Node& n, Deps deps) {
    for (std::vector<uint64_t>* list : {&deps.ctrl, &deps.data}) {
      std::sort(list->begin(), list->end());
      list->erase(std::unique(list->begin(), list->end()), list->end());
    }
    n.mutable_ctrl_deps()->Add(deps.ctrl.begin(), deps.ctrl.end());
    n.mutable_data_deps()->Add(deps.data.begin(), deps.data.end());
  }

  template <typename Map, typename Key>
  static void DependOn(std::vector<uint64_t>& deps, const Map& last, const Key& key) {
    auto it = last.find(key);
    if (it != last.end()) deps.push_back(it->second);
  }

  void SetIo(Node& n, const proto::Op& op) const {
    SetIoInfo(*n.mutable_inputs(), op.inputs());
    SetIoInfo(*n.mutable_outputs(), op.outputs());
  }

  // IOInfo as Chakra's converter writes it: JSON arrays of the shapes and of the type strings.
  void SetIoInfo(cpm::IOInfo& io, const google::protobuf::RepeatedPtrField<proto::Value>& values) const {
    std::string shapes = "[", types = "[";
    for (int i = 0; i < values.size(); ++i) {
      if (i > 0) shapes += ',', types += ',';
      AppendShape(values.Get(i), shapes, 0);
      AppendJsonString(types, eg::TypeName(w_, values.Get(i).type()));
    }
    io.set_shapes(shapes + "]");
    io.set_types(types + "]");
  }

  void AppendShape(const proto::Value& v, std::string& out, int depth) const {
    out += '[';
    if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0 && v.tensor() < w_.tensors_size()) {
      const proto::Tensor& t = w_.tensors(v.tensor());
      for (int i = 0; i < t.shape_size(); ++i) out += (i ? "," : "") + std::to_string(t.shape(i));
    } else if (v.kind_case() == proto::Value::kList && depth < 32) {
      for (int i = 0; i < v.list().items_size(); ++i) {
        if (i > 0) out += ',';
        AppendShape(v.list().items(i), out, depth + 1);
      }
    }
    out += ']';
  }

  static void SetSpan(Node& n, const proto::Op& op) {
    if (!op.has_cpu_span()) return;
    n.set_start_time_micros(StartMicros(op.cpu_start_us()));
    n.set_duration_micros(DurationMicros(op.cpu_duration_us()));
  }

  // REQUIRES: !kernels.empty().
  static void SetKernelSpan(Node& n, const std::vector<const proto::Kernel*>& kernels) {
    double busy = 0;
    for (const proto::Kernel* k : kernels) busy += k->duration_us();
    n.set_start_time_micros(StartMicros(kernels.front()->start_us()));
    n.set_duration_micros(DurationMicros(busy));
  }

  void EmitOp(int index) {
    const proto::Op& op = w_.ops(index);
    const std::vector<int> subtree = Subtree(index);
    const std::vector<int> reads = RealTensors(op.inputs());
    const std::vector<int> writes = RealTensors(op.outputs());
    const std::vector<uint64_t> producers = Producers(reads);
    const std::vector<const proto::Kernel*> kernels = Kernels(subtree);
    const int64_t tensor_bytes = BytesOf(w_, reads);
    const std::optional<CommInfo> comm = FindComm(subtree);
    const uint64_t writer = comm ? EmitComm(op, *comm, kernels, producers, tensor_bytes)
                                 : EmitComp(op, kernels, producers, tensor_bytes);
    RecordWrites(writes, writer);
  }

  // A collective or send/recv: issued after the thread's previous CPU node, in order with the
  // previous communication on its process group; off the CPU chain, so that the thread's next
  // op overlaps with it (its consumers wait for it through their data dependencies). Returns
  // the node's id.
  uint64_t EmitComm(const proto::Op& op, const CommInfo& comm,
                    const std::vector<const proto::Kernel*>& kernels,
                    const std::vector<uint64_t>& producers, int64_t tensor_bytes) {
    const cpm::NodeType type = comm.type.kind == CommKind::kSend   ? cpm::COMM_SEND_NODE
                               : comm.type.kind == CommKind::kRecv ? cpm::COMM_RECV_NODE
                                                                   : cpm::COMM_COLL_NODE;
    Node& n = NewNode(op.name(), type);
    Deps deps;
    DependOn(deps.ctrl, last_cpu_of_thread_, op.thread());
    DependOn(deps.ctrl, last_comm_of_group_, comm.pg_name);
    deps.data = producers;
    SetDeps(n, std::move(deps));
    if (kernels.empty()) SetSpan(n, op);
    else SetKernelSpan(n, kernels);
    SetIo(n, op);
    AddBool(n, "is_cpu_op", false);
    if (type == cpm::COMM_COLL_NODE) AddInt64(n, "comm_type", comm.type.collective);
    AddInt64(n, "comm_size", comm.size);
    AddInt32(n, "comm_priority", 0);
    AddString(n, "pg_name", comm.pg_name);
    if (type != cpm::COMM_COLL_NODE) {
      const int64_t rank = w_.provenance().rank();
      AddInt32(n, "comm_src", type == cpm::COMM_SEND_NODE ? rank : comm.peer);
      AddInt32(n, "comm_dst", type == cpm::COMM_SEND_NODE ? comm.peer : rank);
      AddInt32(n, "comm_tag", comm.tag);
    }
    AddUint64(n, "tensor_size", static_cast<uint64_t>(tensor_bytes));
    AddOrigin(n, op);
    if (!kernels.empty()) AddInt64(n, "stream", kernels.front()->stream());
    last_comm_of_group_[comm.pg_name] = n.id();
    return n.id();
  }

  // A computation. A CPU node follows the previous CPU node of its thread (program order). A
  // GPU node is launched after the thread's previous CPU node and runs after the previous GPU
  // node of its stream; it does not hold up the thread. Returns the id of the node that
  // completes the op (its last kernel node with kernel_nodes).
  uint64_t EmitComp(const proto::Op& op, const std::vector<const proto::Kernel*>& kernels,
                    const std::vector<uint64_t>& producers, int64_t tensor_bytes) {
    const bool split = options_.kernel_nodes && !kernels.empty();
    const bool gpu = w_.kineto().present() ? !kernels.empty() : TouchesDevice(w_, op);
    const bool cpu_node = split || !gpu;
    const int64_t flops = EstimateFlops(w_, op);
    const eg::PortableEquivalent* portable =
        options_.portable_names ? eg::PortableOf(op.name()) : nullptr;
    Node& n = NewNode(portable ? std::string(portable->portable) : op.name(), cpm::COMP_NODE);
    if (portable) AddString(n, "vendor_name", op.name());
    const uint64_t id = n.id();
    Deps deps;
    DependOn(deps.ctrl, last_cpu_of_thread_, op.thread());
    const int64_t stream = kernels.empty() ? -1 : kernels.front()->stream();
    if (!cpu_node) DependOn(deps.ctrl, last_gpu_of_stream_, stream);
    if (!split) deps.data = producers;
    SetDeps(n, std::move(deps));
    if (cpu_node || kernels.empty()) SetSpan(n, op);
    else SetKernelSpan(n, kernels);
    SetIo(n, op);
    AddBool(n, "is_cpu_op", cpu_node);
    AddInt64(n, "num_ops", split ? 0 : flops);
    AddUint64(n, "tensor_size", split ? 0 : static_cast<uint64_t>(tensor_bytes));
    AddOrigin(n, op);
    if (!cpu_node) AddInt64(n, "stream", stream);
    if (cpu_node) last_cpu_of_thread_[op.thread()] = id;
    else last_gpu_of_stream_[stream] = id;
    if (!split) return id;

    // One node per kernel, after the op's CPU node and the previous work of its stream. The
    // op's first kernel on each stream waits for its inputs; its first kernel carries its FLOPs.
    std::vector<int64_t> streams_seen;
    for (const proto::Kernel* k : kernels) {
      Node& kn = NewNode(k->name(), cpm::COMP_NODE);
      const bool first_on_stream =
          std::find(streams_seen.begin(), streams_seen.end(), k->stream()) == streams_seen.end();
      Deps kdeps;
      kdeps.ctrl.push_back(id);
      DependOn(kdeps.ctrl, last_gpu_of_stream_, k->stream());
      if (first_on_stream) {
        kdeps.data = producers;
        streams_seen.push_back(k->stream());
      }
      SetDeps(kn, std::move(kdeps));
      kn.set_start_time_micros(StartMicros(k->start_us()));
      kn.set_duration_micros(DurationMicros(k->duration_us()));
      const bool carries_op = k == kernels.front();
      AddBool(kn, "is_cpu_op", false);
      AddInt64(kn, "num_ops", carries_op ? flops : 0);
      AddUint64(kn, "tensor_size", carries_op ? static_cast<uint64_t>(tensor_bytes) : 0);
      AddOrigin(kn, op);
      AddInt64(kn, "stream", k->stream());
      last_gpu_of_stream_[k->stream()] = kn.id();
    }
    return trace_.nodes.back().id();
  }

  // Where a node came from: the ET node id and thread.
  static void AddOrigin(Node& n, const proto::Op& op) {
    AddInt64(n, "et_id", op.id());
    AddInt64(n, "tid", op.thread());
  }

  const proto::Workload& w_;
  const ChakraExportOptions options_;
  const eg::OpTree tree_;
  ChakraTrace trace_;
  std::unordered_map<int64_t, uint64_t> last_cpu_of_thread_;
  std::unordered_map<int64_t, uint64_t> last_gpu_of_stream_;
  std::unordered_map<std::string, uint64_t> last_comm_of_group_;
  std::vector<int64_t> producer_of_tensor_;  // node id, -1 for none
  std::unordered_map<int64_t, uint64_t> producer_of_storage_;
};

// ---------------------------------------------------------------------------------------------
// The stream format.

void WriteMessages(google::protobuf::io::ZeroCopyOutputStream& sink, const ChakraTrace& trace) {
  google::protobuf::io::CodedOutputStream out(&sink);
  auto write = [&](const google::protobuf::MessageLite& m) {
    out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
    m.SerializeWithCachedSizes(&out);
  };
  write(trace.metadata);
  for (const Node& n : trace.nodes) write(n);
}

std::string At(const std::string& name, int64_t offset) {
  return name + ":byte " + std::to_string(offset) + ": ";
}

// Parses the decompressed stream.
Result<ChakraTrace> ParseStream(const std::string& name, std::string_view bytes) {
  if (bytes.empty()) return Status::InvalidInput(At(name, 0) + "empty Chakra trace (no GlobalMetadata)");
  if (bytes.size() >= static_cast<size_t>(INT_MAX))
    return Status::Unsupported(At(name, 0) + "Chakra trace of 2 GiB or more");
  const int size = static_cast<int>(bytes.size());
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), size);
  ChakraTrace trace;
  for (int64_t index = -1; in.CurrentPosition() < size; ++index) {
    const std::string what = index < 0 ? "GlobalMetadata" : "node " + std::to_string(index);
    const int offset = in.CurrentPosition();
    uint32_t length = 0;
    if (!in.ReadVarint32(&length))
      return Status::InvalidInput(At(name, offset) + "bad or truncated length prefix of " + what);
    const int body = in.CurrentPosition();
    if (length > static_cast<uint32_t>(size - body))
      return Status::InvalidInput(At(name, offset) + what + " of " + std::to_string(length) +
                                  " bytes runs past the end of the trace (" + std::to_string(size - body) +
                                  " bytes left)");
    const auto limit = in.PushLimit(static_cast<int>(length));
    google::protobuf::Message& message =
        index < 0 ? static_cast<google::protobuf::Message&>(trace.metadata) : trace.nodes.emplace_back();
    if (!message.ParseFromCodedStream(&in))
      return Status::InvalidInput(At(name, body) + what + " (" + std::to_string(length) +
                                  " bytes) does not parse as Chakra protobuf");
    in.PopLimit(limit);
  }
  return trace;
}

std::string AttrText(const AttributeProto& a) {
  switch (a.value_case()) {
    case AttributeProto::kDoubleVal: return std::to_string(a.double_val());
    case AttributeProto::kInt32Val: return std::to_string(a.int32_val());
    case AttributeProto::kInt64Val: return std::to_string(a.int64_val());
    case AttributeProto::kUint32Val: return std::to_string(a.uint32_val());
    case AttributeProto::kUint64Val: return std::to_string(a.uint64_val());
    case AttributeProto::kBoolVal: return a.bool_val() ? "true" : "false";
    case AttributeProto::kStringVal: return a.string_val();
    default: return "";
  }
}

}  // namespace

ChakraTrace ToChakra(const proto::Workload& workload, const ChakraExportOptions& options) {
  return Exporter(workload, options).Run();
}

std::string ChakraPath(const std::string& prefix, int64_t rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

std::string SerializeChakra(const ChakraTrace& trace) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream sink(&bytes);
    WriteMessages(sink, trace);
  }  // the streams flush into `bytes` when they go
  return bytes;
}

Status WriteChakra(const std::string& path, const ChakraTrace& trace) {
  if (!path.ends_with(".gz")) return WriteFileAtomic(path, SerializeChakra(trace));
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream sink(&bytes);
    google::protobuf::io::GzipOutputStream::Options gzip_options;
    gzip_options.format = google::protobuf::io::GzipOutputStream::GZIP;
    google::protobuf::io::GzipOutputStream gzip(&sink, gzip_options);
    WriteMessages(gzip, trace);
    if (!gzip.Close())
      return Status::Internal(path + ": gzip compression failed: " +
                              (gzip.ZlibErrorMessage() ? gzip.ZlibErrorMessage() : "unknown error"));
  }
  return WriteFileAtomic(path, bytes);
}

Result<ChakraTrace> ParseChakra(const std::string& name, std::string_view bytes) {
  if (bytes.empty()) return ParseStream(name, bytes);
  MIMIC_ASSIGN_OR_RETURN(FileContents contents, ReadBytes(name, bytes));
  return ParseStream(name, contents.bytes.view());
}

Result<ChakraTrace> ReadChakra(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(FileContents contents, ReadFile(path));
  return ParseStream(path, contents.bytes.view());
}

const AttributeProto* FindAttr(const Node& node, std::string_view name) {
  for (const AttributeProto& a : node.attr())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<int64_t> IntAttr(const Node& node, std::string_view name) {
  const AttributeProto* a = FindAttr(node, name);
  if (a == nullptr) return std::nullopt;
  switch (a->value_case()) {
    case AttributeProto::kInt32Val: return a->int32_val();
    case AttributeProto::kInt64Val: return a->int64_val();
    case AttributeProto::kUint32Val: return a->uint32_val();
    case AttributeProto::kUint64Val:
      if (a->uint64_val() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
      return static_cast<int64_t>(a->uint64_val());
    case AttributeProto::kBoolVal: return a->bool_val() ? 1 : 0;
    default: return std::nullopt;
  }
}

std::optional<std::string> StringAttr(const Node& node, std::string_view name) {
  const AttributeProto* a = FindAttr(node, name);
  if (a == nullptr || a->value_case() != AttributeProto::kStringVal) return std::nullopt;
  return a->string_val();
}

std::string_view NodeTypeName(int type) {
  if (!cpm::NodeType_IsValid(type)) return "UNKNOWN";
  return cpm::NodeType_Name(static_cast<cpm::NodeType>(type));
}

std::string_view CommTypeName(int64_t comm_type) {
  if (comm_type < INT32_MIN || comm_type > INT32_MAX || !cpm::CollectiveCommType_IsValid(static_cast<int>(comm_type)))
    return "UNKNOWN";
  return cpm::CollectiveCommType_Name(static_cast<cpm::CollectiveCommType>(comm_type));
}

ChakraSummary SummarizeChakra(const ChakraTrace& trace) {
  ChakraSummary s;
  s.version = trace.metadata.version();
  for (const AttributeProto& a : trace.metadata.attr()) s.metadata[a.name()] = AttrText(a);
  s.nodes = static_cast<int64_t>(trace.nodes.size());
  std::unordered_map<uint64_t, size_t> position;  // id -> first node with it
  position.reserve(trace.nodes.size());
  for (size_t i = 0; i < trace.nodes.size(); ++i)
    if (!position.emplace(trace.nodes[i].id(), i).second) ++s.duplicate_ids;
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const Node& n = trace.nodes[i];
    ++s.node_types[std::string(NodeTypeName(n.type()))];
    if (n.type() == cpm::COMP_NODE) {
      const std::optional<int64_t> cpu = IntAttr(n, "is_cpu_op");
      (cpu.value_or(1) ? s.cpu_nodes : s.gpu_nodes) += 1;
    }
    if (n.type() == cpm::COMM_COLL_NODE || n.type() == cpm::COMM_SEND_NODE || n.type() == cpm::COMM_RECV_NODE) {
      const std::string kind = n.type() == cpm::COMM_SEND_NODE   ? "SEND"
                               : n.type() == cpm::COMM_RECV_NODE ? "RECV"
                                                                 : std::string(CommTypeName(IntAttr(n, "comm_type").value_or(-1)));
      const int64_t bytes = IntAttr(n, "comm_size").value_or(0);
      ChakraSummary::Comm& c = s.comms[kind];
      c.min_bytes = c.count == 0 ? bytes : std::min(c.min_bytes, bytes);
      c.max_bytes = c.count == 0 ? bytes : std::max(c.max_bytes, bytes);
      c.total_bytes = SaturatingAdd(c.total_bytes, std::max<int64_t>(bytes, 0));
      ++c.count;
    }
    s.ctrl_deps += n.ctrl_deps_size();
    s.data_deps += n.data_deps_size();
    s.roots += n.ctrl_deps_size() == 0 && n.data_deps_size() == 0;
    const std::optional<int64_t> stream = IntAttr(n, "stream");
    for (const auto* deps : {&n.ctrl_deps(), &n.data_deps()}) {
      for (uint64_t dep : *deps) {
        auto it = position.find(dep);
        if (it == position.end()) {
          ++s.dangling_deps;
          continue;
        }
        if (it->second >= i) ++s.forward_deps;
        if (deps == &n.data_deps() && stream) {
          const std::optional<int64_t> other = IntAttr(trace.nodes[it->second], "stream");
          s.cross_stream_deps += other && *other != *stream;
        }
      }
    }
  }
  return s;
}

}  // namespace mimic::synth
