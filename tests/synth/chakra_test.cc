// Chakra export and import: the ASTRA-sim microbenchmark samples read back with what they hold,
// exports of the fleet samples and of the public traces round-trip through the file format and
// agree with figures taken from the workload itself, and corrupt files are refused.
#include "mimic/synth/chakra.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "mimic/base/file.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::synth {
namespace {

namespace cpm = ChakraProtoMsg;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/chakra_test_" + std::to_string(getpid()) + "_" + name;
}

std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteRaw(const std::string& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The ops of `w` by ET id.
std::map<int64_t, const proto::Op*> OpsById(const proto::Workload& w) {
  std::map<int64_t, const proto::Op*> out;
  for (const proto::Op& op : w.ops()) out[op.id()] = &op;
  return out;
}

// The tensor table entries in `values`, inside lists too.
std::vector<int> TensorsOf(const google::protobuf::RepeatedPtrField<proto::Value>& values) {
  std::vector<int> out;
  std::vector<const proto::Value*> stack;
  for (const proto::Value& v : values) stack.push_back(&v);
  while (!stack.empty()) {
    const proto::Value* v = stack.back();
    stack.pop_back();
    if (v->kind_case() == proto::Value::kTensor && v->tensor() >= 0) out.push_back(v->tensor());
    for (const proto::Value& item : v->list().items()) stack.push_back(&item);
  }
  return out;
}

// Ids are 0, 1, 2, ... in stream order and every dependency points to an earlier node.
void ExpectIdOrderedDag(const ChakraTrace& trace) {
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const cpm::Node& n = trace.nodes[i];
    ASSERT_EQ(n.id(), i);
    for (uint64_t dep : n.ctrl_deps()) EXPECT_LT(dep, n.id()) << n.name();
    for (uint64_t dep : n.data_deps()) EXPECT_LT(dep, n.id()) << n.name();
  }
}

// Writes `trace` to `path`, reads it back, and expects the same messages, byte for byte.
void ExpectRoundTrip(const ChakraTrace& trace, const std::string& path) {
  const Status written = WriteChakra(path, trace);
  ASSERT_TRUE(written.ok()) << written.ToString();
  auto back = ReadChakra(path);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->metadata.SerializeAsString(), trace.metadata.SerializeAsString());
  ASSERT_EQ(back->nodes.size(), trace.nodes.size());
  for (size_t i = 0; i < trace.nodes.size(); ++i)
    ASSERT_EQ(back->nodes[i].SerializeAsString(), trace.nodes[i].SerializeAsString()) << "node " << i;
  const ChakraSummary a = SummarizeChakra(trace), b = SummarizeChakra(*back);
  EXPECT_EQ(a.node_types, b.node_types);
  EXPECT_EQ(a.ctrl_deps, b.ctrl_deps);
  EXPECT_EQ(a.data_deps, b.data_deps);
  std::remove(path.c_str());
}

// ---------------------------------------------------------------------------------------------
// The ASTRA-sim microbenchmarks: one collective each, 4 ranks, 1 MiB.

struct Microbench {
  const char* file;
  const char* node_name;
  cpm::CollectiveCommType comm_type;
};

void PrintTo(const Microbench& m, std::ostream* os) { *os << m.file; }

class ChakraAstraSample : public ::testing::TestWithParam<Microbench> {};

TEST_P(ChakraAstraSample, ImportsWithItsCollectiveAndSize) {
  const std::string path = mimic::testing::SharedTraces() + "/astra-microbench/" + GetParam().file;
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto trace = ReadChakra(path);
  ASSERT_THAT(trace, IsOk());
  EXPECT_EQ(trace->metadata.version(), "0.0.4");
  ASSERT_EQ(trace->nodes.size(), 1u);
  const cpm::Node& n = trace->nodes[0];
  EXPECT_EQ(n.name(), GetParam().node_name);
  EXPECT_EQ(n.type(), cpm::COMM_COLL_NODE);
  EXPECT_EQ(IntAttr(n, "comm_type"), GetParam().comm_type);
  EXPECT_EQ(IntAttr(n, "comm_size"), 1 << 20);
  EXPECT_EQ(IntAttr(n, "is_cpu_op"), 0);
  const ChakraSummary s = SummarizeChakra(*trace);
  ASSERT_EQ(s.comms.size(), 1u);
  EXPECT_EQ(s.comms.begin()->first, CommTypeName(GetParam().comm_type));
  EXPECT_EQ(s.comms.begin()->second.total_bytes, 1 << 20);
  EXPECT_EQ(s.roots, 1);
  // Re-serialized, the file comes out byte for byte.
  EXPECT_EQ(SerializeChakra(*trace), ReadRaw(path));
}

INSTANTIATE_TEST_SUITE_P(
    Samples, ChakraAstraSample,
    ::testing::Values(Microbench{"all_gather.4npus_1MB.0.et", "all_gather_4npus_1MB", cpm::ALL_GATHER},
                      Microbench{"all_reduce.4npus_1MB.0.et", "all_reduce_4npus_1MB", cpm::ALL_REDUCE},
                      Microbench{"all_to_all.4npus_1MB.0.et", "all_to_all_4npus_1MB", cpm::ALL_TO_ALL},
                      Microbench{"reduce_scatter.4npus_1MB.0.et", "reduce_scatter_4npus_1MB",
                                 cpm::REDUCE_SCATTER}),
    [](const ::testing::TestParamInfo<Microbench>& info) { return std::string(CommTypeName(info.param.comm_type)); });

// ---------------------------------------------------------------------------------------------
// Exports of real traces.

class ChakraFleetSample : public ::testing::TestWithParam<const char*> {};

TEST_P(ChakraFleetSample, ExportRoundTripsAndFollowsTheWorkload) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = eg::LoadWorkload(dir + GetParam() + ".et.json.gz",
                            {.kineto_path = dir + GetParam() + ".kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  const ChakraTrace trace = ToChakra(*w);
  ExpectIdOrderedDag(trace);
  ExpectRoundTrip(trace, TempPath(std::string(GetParam()) + ".0.et"));
  ExpectRoundTrip(trace, TempPath(std::string(GetParam()) + ".0.et.gz"));

  // One node per top-level replayable op; CPU captures: no collective, no kernel.
  const eg::OpTree tree(*w);
  const std::vector<int> replayable = eg::ReplayableOps(*w, tree, -1, true);
  ASSERT_EQ(trace.nodes.size(), replayable.size());
  const auto ops = OpsById(*w);
  std::set<int64_t> threads;
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const cpm::Node& n = trace.nodes[i];
    const proto::Op& op = w->ops(replayable[i]);
    EXPECT_EQ(n.type(), cpm::COMP_NODE);
    EXPECT_EQ(n.name(), op.name());
    EXPECT_EQ(IntAttr(n, "et_id"), op.id());
    EXPECT_EQ(IntAttr(n, "is_cpu_op"), 1);
    threads.insert(op.thread());
    // Timing comes from the op's Kineto span.
    ASSERT_TRUE(op.has_cpu_span()) << op.name();
    EXPECT_NEAR(static_cast<double>(n.duration_micros()), op.cpu_duration_us(), 1.0) << op.name();
    EXPECT_NEAR(static_cast<double>(n.start_time_micros()), op.cpu_start_us(), 1.0) << op.name();
    // GEMM FLOPs from the recorded shapes: linear(input [..., K], weight [N, K]).
    if (op.name() == "aten::linear") {
      const proto::Tensor& input = w->tensors(op.inputs(0).tensor());
      const proto::Tensor& weight = w->tensors(op.inputs(1).tensor());
      int64_t rows = 1;
      for (int d = 0; d + 1 < input.shape_size(); ++d) rows *= input.shape(d);
      EXPECT_EQ(IntAttr(n, "num_ops"), 2 * rows * weight.shape(0) * weight.shape(1));
    }
    // conv2d(input, weight [Cout, Cin/groups, kh, kw]) -> [N, Cout, Hout, Wout].
    if (op.name() == "aten::conv2d") {
      const proto::Tensor& weight = w->tensors(op.inputs(1).tensor());
      const proto::Tensor& out = w->tensors(op.outputs(0).tensor());
      ASSERT_EQ(out.shape_size(), 4);
      EXPECT_EQ(IntAttr(n, "num_ops"), 2 * out.shape(0) * out.shape(1) * out.shape(2) * out.shape(3) *
                                           weight.shape(1) * weight.shape(2) * weight.shape(3));
    }
  }
  // Program order: each CPU node follows the previous one of its thread.
  const ChakraSummary s = SummarizeChakra(trace);
  EXPECT_EQ(s.ctrl_deps, s.nodes - static_cast<int64_t>(threads.size()));
  EXPECT_EQ(s.cpu_nodes, s.nodes);
  EXPECT_EQ(s.dangling_deps + s.forward_deps + s.duplicate_ids, 0);

  // Dataflow, by brute force: a node depends on the last earlier node whose op wrote a tensor
  // (table entry) that its op reads.
  std::map<int, uint64_t> last_writer;
  for (const cpm::Node& n : trace.nodes) {
    const proto::Op& op = *ops.at(*IntAttr(n, "et_id"));
    const std::set<uint64_t> data(n.data_deps().begin(), n.data_deps().end());
    for (int t : TensorsOf(op.inputs())) {
      auto it = last_writer.find(t);
      if (it != last_writer.end()) {
        EXPECT_TRUE(data.count(it->second)) << op.name() << " " << op.id();
      }
    }
    for (int t : TensorsOf(op.outputs())) last_writer[t] = n.id();
  }
  EXPECT_GT(s.data_deps, 0);
}

INSTANTIATE_TEST_SUITE_P(Samples, ChakraFleetSample, ::testing::Values("mlp", "cnn_bn", "embbag_rec", "transformer"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

TEST(ChakraExport, AllgatherTraceHasItsTenAllGathersOnGroupZero) {
  const std::string path = mimic::testing::SharedTraces() + "/chakra-allgather/allgather_1.0.2_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  // What the trace holds: c10d::allgather_ over record_param_comms("all_gather") over
  // nccl:all_gather, each gathering one float per rank; and "wait" markers that are no collective.
  std::vector<int64_t> expected_sizes;
  int64_t waits = 0;
  for (const proto::Op& op : w->ops()) {
    if (op.name() != "record_param_comms") continue;
    bool all_gather = false;
    for (const proto::Value& v : op.inputs()) {
      all_gather |= v.string_value() == "all_gather";
      waits += v.string_value() == "wait";
    }
    if (!all_gather) continue;
    const proto::Tensor& t = w->tensors(op.inputs(0).list().items(0).tensor());
    expected_sizes.push_back(t.numel() * t.itemsize());
  }
  ASSERT_EQ(expected_sizes.size(), 10u);
  EXPECT_EQ(waits, 10);

  const ChakraTrace trace = ToChakra(*w);
  ExpectIdOrderedDag(trace);
  ExpectRoundTrip(trace, TempPath("allgather.0.et"));
  std::vector<int64_t> sizes;
  for (const cpm::Node& n : trace.nodes) {
    EXPECT_NE(n.name(), "record_param_comms");  // neither wrapper levels nor waits become nodes
    if (n.type() != cpm::COMM_COLL_NODE) continue;
    EXPECT_EQ(n.name(), "c10d::allgather_");
    EXPECT_EQ(IntAttr(n, "comm_type"), cpm::ALL_GATHER);
    EXPECT_EQ(StringAttr(n, "pg_name"), "0");
    EXPECT_EQ(IntAttr(n, "comm_priority"), 0);
    EXPECT_EQ(IntAttr(n, "is_cpu_op"), 0);
    sizes.push_back(*IntAttr(n, "comm_size"));
  }
  EXPECT_EQ(sizes, expected_sizes);
  const ChakraSummary s = SummarizeChakra(trace);
  EXPECT_EQ(s.node_types.at("COMM_COLL_NODE"), 10);
  EXPECT_EQ(s.comms.at("ALL_GATHER").count, 10);
  // Each all-gather reads its output buffers and its input: all made by earlier nodes.
  for (const cpm::Node& n : trace.nodes)
    if (n.type() == cpm::COMM_COLL_NODE) {
      EXPECT_EQ(n.data_deps_size(), 3) << n.id();
    }
}

TEST(ChakraExport, ResnetCollectivesKeepTheirKindsSizesAndGroup) {
  const std::string path = mimic::testing::SharedTraces() + "/param-resnet-1gpu/resnet_1gpu_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  // Expected from the c10d ops themselves: their tensors' bytes.
  std::multiset<std::pair<int64_t, int64_t>> expected;  // (comm_type, bytes)
  for (const proto::Op& op : w->ops()) {
    const bool reduce = op.name() == "c10d::allreduce_", broadcast = op.name() == "c10d::broadcast_";
    if (!reduce && !broadcast) continue;
    const proto::Tensor& t = w->tensors(op.inputs(0).list().items(0).tensor());
    expected.insert({reduce ? cpm::ALL_REDUCE : cpm::BROADCAST, t.numel() * t.itemsize()});
  }
  ASSERT_EQ(expected.size(), 21u);
  const ChakraTrace trace = ToChakra(*w);
  ExpectIdOrderedDag(trace);
  std::multiset<std::pair<int64_t, int64_t>> got;
  for (const cpm::Node& n : trace.nodes) {
    if (n.type() != cpm::COMM_COLL_NODE) continue;
    got.insert({*IntAttr(n, "comm_type"), *IntAttr(n, "comm_size")});
    EXPECT_EQ(StringAttr(n, "pg_name"), "0");  // from the (pg_name, pg_desc) argument
  }
  EXPECT_EQ(got, expected);
}

TEST(ChakraExport, PortableNamesNameVendorNodesAfterTheirEquivalents) {
  const std::string path =
      mimic::testing::SharedTraces() + "/param-resnet-1gpu/resnet_1gpu_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  std::multiset<std::string> vendor;  // node names as recorded
  for (const cpm::Node& n : ToChakra(*w).nodes)
    if (eg::PortableOf(n.name())) vendor.insert(n.name());
  ASSERT_FALSE(vendor.empty());
  std::multiset<std::string> renamed;
  for (const cpm::Node& n : ToChakra(*w, {.portable_names = true}).nodes) {
    EXPECT_EQ(eg::PortableOf(n.name()), nullptr) << n.name();
    const std::optional<std::string> was = StringAttr(n, "vendor_name");
    if (!was) continue;
    renamed.insert(*was);
    EXPECT_EQ(n.name(), eg::PortableOf(*was)->portable);
  }
  EXPECT_EQ(renamed, vendor);
}

TEST(ChakraExport, KernelNodesFollowTheirLaunchingOps) {
  const std::string dir = mimic::testing::SharedTraces() + "/param-linear/";
  MIMIC_SKIP_UNLESS_EXISTS(dir + "linear_kineto.json.gz");
  auto w = eg::LoadWorkload(dir + "linear_et.json.gz", {.kineto_path = dir + "linear_kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  const eg::OpTree tree(*w);
  // The kernels launched inside the top-level ops, counted from the workload.
  int64_t kernels = 0, gpu_ops = 0;
  for (int r : eg::ReplayableOps(*w, tree, -1, true)) {
    int64_t inside = 0;
    for (int i = 0; i < w->ops_size(); ++i)
      if (tree.IsWithin(i, r)) inside += w->ops(i).kernels_size();
    kernels += inside;
    gpu_ops += inside > 0;
  }
  ASSERT_GT(kernels, 0);

  const ChakraTrace merged = ToChakra(*w);
  EXPECT_EQ(SummarizeChakra(merged).gpu_nodes, gpu_ops);
  const ChakraTrace split = ToChakra(*w, {.kernel_nodes = true});
  ExpectIdOrderedDag(split);
  ExpectRoundTrip(split, TempPath("linear.0.et.gz"));
  const ChakraSummary s = SummarizeChakra(split);
  EXPECT_EQ(s.gpu_nodes, kernels);
  EXPECT_EQ(s.cpu_nodes, static_cast<int64_t>(merged.nodes.size()));
  for (const cpm::Node& n : split.nodes) {
    if (IntAttr(n, "is_cpu_op") != 0) continue;
    // A kernel node waits for the CPU node of the op that launched it (same ET id).
    ASSERT_GE(n.ctrl_deps_size(), 1);
    bool after_launch = false;
    for (uint64_t dep : n.ctrl_deps()) {
      const cpm::Node& d = split.nodes[dep];
      after_launch |= IntAttr(d, "is_cpu_op") == 1 && IntAttr(d, "et_id") == IntAttr(n, "et_id");
    }
    EXPECT_TRUE(after_launch) << n.id();
    EXPECT_TRUE(IntAttr(n, "stream").has_value());
  }
}

// ---------------------------------------------------------------------------------------------
// Small synthetic workloads for what the public traces do not show.

class Builder {
 public:
  Builder() { w_.add_types(""); }

  int Tensor(int64_t storage, std::vector<int64_t> shape, const std::string& device = "cuda:0") {
    proto::Tensor& t = *w_.add_tensors();
    t.set_tensor_id(w_.tensors_size());
    t.set_storage_id(storage);
    t.set_itemsize(4);
    int64_t numel = 1;
    for (int64_t d : shape) numel *= d, t.add_shape(d);
    t.set_numel(numel);
    t.set_device(device);
    return w_.tensors_size() - 1;
  }

  proto::Op& Op(const std::string& name, int64_t parent = 1, const std::string& schema = "") {
    proto::Op& op = *w_.add_ops();
    op.set_id(next_id_++);
    op.set_name(name);
    op.set_parent(parent);
    op.set_thread(1);
    op.set_schema(-1);
    if (!schema.empty()) {
      w_.add_schemas(schema);
      op.set_schema(w_.schemas_size() - 1);
    }
    return op;
  }

  static proto::Value T(int tensor) {
    proto::Value v;
    v.set_tensor(tensor);
    return v;
  }
  static proto::Value Int(int64_t i) {
    proto::Value v;
    v.set_int_value(i);
    return v;
  }
  static proto::Value Str(const std::string& s) {
    proto::Value v;
    v.set_string_value(s);
    return v;
  }
  static proto::Value List(std::initializer_list<proto::Value> items) {
    proto::Value v;
    for (const proto::Value& item : items) *v.mutable_list()->add_items() = item;
    return v;
  }

  static void AddKernel(proto::Op& op, int64_t stream, double start, double duration) {
    proto::Kernel& k = *op.add_kernels();
    k.set_name(op.name() + "_kernel");
    k.set_category("kernel");
    k.set_stream(stream);
    k.set_start_us(start);
    k.set_duration_us(duration);
  }

  // The workload, its collectives read as reading a trace does.
  proto::Workload& w() {
    eg::AnnotateCollectives(w_);
    return w_;
  }

 private:
  proto::Workload w_;
  int64_t next_id_ = 2;
};

constexpr const char* kAddSchema = "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";
constexpr const char* kMmSchema = "aten::mm(Tensor self, Tensor mat2) -> Tensor";

TEST(ChakraExport, CrossStreamDataflowBecomesAnExplicitDependency) {
  Builder b;
  b.w().mutable_kineto()->set_present(true);
  const int x = b.Tensor(10, {64, 32}), y = b.Tensor(11, {32, 16}), z = b.Tensor(12, {64, 16}),
            u = b.Tensor(13, {64, 16});
  proto::Op& mm = b.Op("aten::mm", 1, kMmSchema);
  *mm.add_inputs() = Builder::T(x);
  *mm.add_inputs() = Builder::T(y);
  *mm.add_outputs() = Builder::T(z);
  Builder::AddKernel(mm, /*stream=*/7, 100, 20);
  proto::Op& add = b.Op("aten::add", 1, kAddSchema);
  *add.add_inputs() = Builder::T(z);
  *add.add_inputs() = Builder::T(z);
  *add.add_outputs() = Builder::T(u);
  Builder::AddKernel(add, /*stream=*/13, 130, 5);

  const ChakraTrace merged = ToChakra(b.w());
  ExpectIdOrderedDag(merged);
  ASSERT_EQ(merged.nodes.size(), 2u);
  const cpm::Node& mm_node = merged.nodes[0];
  EXPECT_EQ(IntAttr(mm_node, "is_cpu_op"), 0);
  EXPECT_EQ(IntAttr(mm_node, "num_ops"), 2 * 64 * 16 * 32);
  EXPECT_EQ(IntAttr(mm_node, "tensor_size"), (64 * 32 + 32 * 16) * 4);
  EXPECT_EQ(mm_node.start_time_micros(), 100u);
  EXPECT_EQ(mm_node.duration_micros(), 20u);
  // Different streams: no stream order ties them; the data dependency does.
  EXPECT_THAT(merged.nodes[1].data_deps(), ::testing::ElementsAre(0u));
  EXPECT_THAT(merged.nodes[1].ctrl_deps(), ::testing::IsEmpty());
  EXPECT_EQ(SummarizeChakra(merged).cross_stream_deps, 1);

  const ChakraTrace split = ToChakra(b.w(), {.kernel_nodes = true});
  ExpectIdOrderedDag(split);
  ASSERT_EQ(split.nodes.size(), 4u);  // mm (CPU), its kernel, add (CPU), its kernel
  EXPECT_EQ(IntAttr(split.nodes[0], "is_cpu_op"), 1);
  EXPECT_EQ(IntAttr(split.nodes[1], "num_ops"), 2 * 64 * 16 * 32);
  EXPECT_THAT(split.nodes[2].ctrl_deps(), ::testing::ElementsAre(0u));  // program order
  EXPECT_THAT(split.nodes[3].ctrl_deps(), ::testing::ElementsAre(2u));  // its launch
  EXPECT_THAT(split.nodes[3].data_deps(), ::testing::ElementsAre(1u));  // mm's kernel, stream 7
  EXPECT_EQ(SummarizeChakra(split).cross_stream_deps, 1);
}

TEST(ChakraExport, SendAndRecvCarryPeersAndTag) {
  Builder b;
  b.w().mutable_provenance()->set_rank(1);
  const int t = b.Tensor(20, {256});
  proto::Op& send = b.Op("c10d::send", 1,
                         "c10d::send(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup "
                         "process_group, int dstRank, int tag) -> __torch__.torch.classes.c10d.Work");
  *send.add_inputs() = Builder::List({Builder::T(t)});
  send.add_inputs()->set_opaque("<Object>");
  *send.add_inputs() = Builder::Int(3);
  *send.add_inputs() = Builder::Int(9);
  proto::Op& recv = b.Op("c10d::recv_", 1,
                         "c10d::recv_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup "
                         "process_group, int srcRank, int tag) -> __torch__.torch.classes.c10d.Work");
  *recv.add_inputs() = Builder::List({Builder::T(t)});
  recv.add_inputs()->set_opaque("<Object>");
  *recv.add_inputs() = Builder::Int(0);
  *recv.add_inputs() = Builder::Int(4);

  const ChakraTrace trace = ToChakra(b.w());
  ASSERT_EQ(trace.nodes.size(), 2u);
  const cpm::Node& s = trace.nodes[0];
  EXPECT_EQ(s.type(), cpm::COMM_SEND_NODE);
  EXPECT_EQ(IntAttr(s, "comm_src"), 1);
  EXPECT_EQ(IntAttr(s, "comm_dst"), 3);
  EXPECT_EQ(IntAttr(s, "comm_tag"), 9);
  EXPECT_EQ(IntAttr(s, "comm_size"), 256 * 4);
  EXPECT_EQ(FindAttr(s, "comm_src")->value_case(), cpm::AttributeProto::kInt32Val);
  const cpm::Node& r = trace.nodes[1];
  EXPECT_EQ(r.type(), cpm::COMM_RECV_NODE);
  EXPECT_EQ(IntAttr(r, "comm_src"), 0);
  EXPECT_EQ(IntAttr(r, "comm_dst"), 1);
  EXPECT_EQ(IntAttr(r, "comm_tag"), 4);
  const ChakraSummary sum = SummarizeChakra(trace);
  EXPECT_EQ(sum.comms.at("SEND").total_bytes, 1024);
  EXPECT_EQ(sum.comms.at("RECV").count, 1);
}

TEST(ChakraExport, RecordParamCommsAttributesGiveSizeAndGroup) {
  // 1.1.0+: the collective under an autograd wrapper, described by its attributes only.
  Builder b;
  const int t = b.Tensor(30, {1000}, "cuda:0");
  proto::Op& wrapper = b.Op("autograd::engine::evaluate_function: AccumulateGrad");
  proto::Op& rpc = b.Op("record_param_comms", wrapper.id());
  *rpc.add_inputs() = Builder::List({Builder::T(t)});
  auto& attrs = *rpc.mutable_attrs();
  attrs["collective_name"].set_string_value("reduce_scatter_tensor_coalesced");
  attrs["in_msg_nelems"].set_int_value(4096);
  attrs["dtype"].set_string_value("BFloat16");
  attrs["pg_name"].set_string_value("7");
  proto::Op& backend = b.Op("nccl:reduce_scatter", rpc.id());
  *backend.add_inputs() = Builder::T(t);
  proto::Op& wait = b.Op("record_param_comms");
  *wait.add_inputs() = Builder::Str("wait");

  const ChakraTrace trace = ToChakra(b.w());
  ASSERT_EQ(trace.nodes.size(), 1u);
  const cpm::Node& n = trace.nodes[0];
  EXPECT_EQ(n.name(), "record_param_comms");
  EXPECT_EQ(IntAttr(n, "comm_type"), cpm::REDUCE_SCATTER);
  EXPECT_EQ(IntAttr(n, "comm_size"), 4096 * 2);
  EXPECT_EQ(StringAttr(n, "pg_name"), "7");
}

TEST(ChakraExport, CollectiveNamesMapToCommTypes) {
  const std::pair<const char*, cpm::CollectiveCommType> cases[] = {
      {"c10d::allreduce_", cpm::ALL_REDUCE},
      {"nccl:all_reduce", cpm::ALL_REDUCE},
      {"c10d::allgather_", cpm::ALL_GATHER},
      {"c10d::_allgather_base_", cpm::ALL_GATHER},
      {"c10d::allgather_into_tensor_coalesced_", cpm::ALL_GATHER},
      {"c10d::reduce_scatter_", cpm::REDUCE_SCATTER},
      {"c10d::_reduce_scatter_base_", cpm::REDUCE_SCATTER},
      {"c10d::alltoall_", cpm::ALL_TO_ALL},
      {"c10d::alltoall_base_", cpm::ALL_TO_ALL},
      {"nccl:all_to_all", cpm::ALL_TO_ALL},
      {"c10d::broadcast_", cpm::BROADCAST},
      {"c10d::reduce_", cpm::REDUCE},
      {"c10d::gather_", cpm::GATHER},
      {"c10d::scatter_", cpm::SCATTER},
      {"c10d::barrier", cpm::BARRIER},
  };
  for (const auto& [name, type] : cases) {
    Builder b;
    b.Op(name);
    const ChakraTrace trace = ToChakra(b.w());
    ASSERT_EQ(trace.nodes.size(), 1u) << name;
    EXPECT_EQ(trace.nodes[0].type(), cpm::COMM_COLL_NODE) << name;
    EXPECT_EQ(IntAttr(trace.nodes[0], "comm_type"), type) << name;
  }
}

TEST(ChakraExport, CollectivesRunOffTheCpuChain) {
  // mm, all_reduce of its result, then an unrelated CPU op and a consumer of the reduced tensor.
  Builder b;
  const int x = b.Tensor(1, {8, 8}, "cpu"), y = b.Tensor(2, {8, 8}, "cpu"), z = b.Tensor(3, {8, 8}, "cpu");
  proto::Op& mm = b.Op("aten::mm", 1, kMmSchema);
  *mm.add_inputs() = Builder::T(x);
  *mm.add_inputs() = Builder::T(x);
  *mm.add_outputs() = Builder::T(y);
  proto::Op& ar = b.Op("c10d::allreduce_", 1,
                       "c10d::allreduce_(Tensor[] tensors, __torch__.torch.classes.c10d.ProcessGroup "
                       "process_group, __torch__.torch.classes.c10d.ReduceOp reduce_op, Tensor? "
                       "sparse_indices, int timeout) -> (Tensor[], __torch__.torch.classes.c10d.Work)");
  *ar.add_inputs() = Builder::List({Builder::T(y)});
  *ar.add_outputs() = Builder::List({Builder::T(y)});
  proto::Op& other = b.Op("aten::add", 1, kAddSchema);
  *other.add_inputs() = Builder::T(x);
  *other.add_inputs() = Builder::T(x);
  *other.add_outputs() = Builder::T(z);
  proto::Op& consumer = b.Op("aten::add", 1, kAddSchema);
  *consumer.add_inputs() = Builder::T(y);
  *consumer.add_inputs() = Builder::T(z);
  *consumer.add_outputs() = Builder::T(z);

  const ChakraTrace trace = ToChakra(b.w());
  ExpectIdOrderedDag(trace);
  ASSERT_EQ(trace.nodes.size(), 4u);
  EXPECT_EQ(trace.nodes[1].type(), cpm::COMM_COLL_NODE);
  EXPECT_EQ(IntAttr(trace.nodes[1], "comm_size"), 8 * 8 * 4);
  EXPECT_THAT(trace.nodes[1].ctrl_deps(), ::testing::ElementsAre(0u));
  EXPECT_THAT(trace.nodes[2].ctrl_deps(), ::testing::ElementsAre(0u));  // not after the collective
  EXPECT_THAT(trace.nodes[3].ctrl_deps(), ::testing::ElementsAre(2u));
  EXPECT_THAT(trace.nodes[3].data_deps(), ::testing::ElementsAre(1u, 2u));  // waits for the reduce
}

// ---------------------------------------------------------------------------------------------
// Untrusted files.

TEST(ChakraImport, CorruptStreamsAreRefusedWithTheirOffset) {
  const std::string sample = mimic::testing::SharedTraces() + "/astra-microbench/all_gather.4npus_1MB.0.et";
  MIMIC_SKIP_UNLESS_EXISTS(sample);
  const std::string good = ReadRaw(sample);
  ASSERT_EQ(good.size(), 81u);
  struct Case {
    std::string bytes;
    std::string message;
  };
  const Case cases[] = {
      {"", ":byte 0: empty"},
      {good.substr(0, good.size() - 1), ":byte 8: node 0 of 72 bytes runs past the end"},
      {good.substr(0, 8) + "\x80", ":byte 8: bad or truncated length prefix of node 0"},
      {good.substr(0, 8) + "\xff\xff\xff\xff\x0f" + "abc", ":byte 8: node 0 of 4294967295 bytes"},
      {std::string(11, '\xff'), ":byte 0: bad or truncated length prefix of GlobalMetadata"},
      {good + "\x02\xff\xff", ":byte 82: node 1 (2 bytes) does not parse"},
      {std::string("\x03\x0a\x05") + "0", ":byte 1: GlobalMetadata (3 bytes) does not parse"},
  };
  for (const Case& c : cases) {
    auto trace = ParseChakra("bad.et", c.bytes);
    EXPECT_THAT(trace, StatusIs(StatusCode::kInvalidInput));
    EXPECT_THAT(trace.status().message(), StartsWith("bad.et:byte ")) << c.message;
    EXPECT_THAT(trace.status().message(), HasSubstr(c.message));
  }
}

TEST(ChakraImport, TruncatedFileIsRefusedNamingIt) {
  const std::string sample = mimic::testing::SharedTraces() + "/astra-microbench/reduce_scatter.4npus_1MB.0.et";
  MIMIC_SKIP_UNLESS_EXISTS(sample);
  const std::string path = TempPath("truncated.0.et");
  WriteRaw(path, ReadRaw(sample).substr(0, 40));
  auto trace = ReadChakra(path);
  EXPECT_THAT(trace, StatusIs(StatusCode::kInvalidInput));
  EXPECT_THAT(trace.status().message(), StartsWith(path + ":byte 8: "));
  std::remove(path.c_str());

  // A gzip file cut short is refused by the gzip layer, naming the file too.
  const std::string gz = TempPath("truncated.0.et.gz");
  ChakraTrace t;
  t.metadata.set_version("0.0.4");
  for (int i = 0; i < 100; ++i) t.nodes.emplace_back().set_name("node " + std::to_string(i));
  const Status written = WriteChakra(gz, t);
  ASSERT_TRUE(written.ok()) << written.ToString();
  const std::string bytes = ReadRaw(gz);
  ASSERT_EQ(bytes.substr(0, 2), "\x1f\x8b");
  WriteRaw(gz, bytes.substr(0, bytes.size() / 2));
  auto cut = ReadChakra(gz);
  EXPECT_THAT(cut, StatusIs(StatusCode::kInvalidInput));
  EXPECT_THAT(cut.status().message(), StartsWith(gz + ":"));
  std::remove(gz.c_str());
}

TEST(ChakraImport, MissingFileIsNotFound) {
  EXPECT_THAT(ReadChakra(TempPath("missing.et")), StatusIs(StatusCode::kNotFound));
}

TEST(ChakraImport, SummaryCountsBrokenDependencies) {
  ChakraTrace t;
  t.metadata.set_version("0.0.4");
  for (int i = 0; i < 3; ++i) {
    cpm::Node& n = t.nodes.emplace_back();
    n.set_id(i == 2 ? 1 : i);  // a duplicate id
    n.set_type(cpm::COMP_NODE);
  }
  t.nodes[0].add_ctrl_deps(1);   // forward
  t.nodes[1].add_data_deps(42);  // dangling
  const ChakraSummary s = SummarizeChakra(t);
  EXPECT_EQ(s.duplicate_ids, 1);
  EXPECT_EQ(s.forward_deps, 1);
  EXPECT_EQ(s.dangling_deps, 1);
  EXPECT_EQ(s.roots, 1);
  EXPECT_EQ(s.cpu_nodes, 3);  // no is_cpu_op attribute reads as a CPU node
}

TEST(ChakraExport, FileNameCarriesTheRank) {
  EXPECT_EQ(ChakraPath("out/job", 3), "out/job.3.et");
}

}  // namespace
}  // namespace mimic::synth
