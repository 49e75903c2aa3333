// Collectives read from every form a trace records them in: the public Chakra all-gather trace
// (schema 1.0.2, NCCL), the project's DDP-over-Gloo captures (1.1.1), and small hand-written
// traces for record_param_comms' 1.0.3 tuple and 1.1.0 attrs and for functional collectives.
#include "mimic/eg/collective.h"

#include <map>

#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

using ::testing::ElementsAre;

std::vector<const proto::Op*> Communications(const proto::Workload& w) {
  std::vector<const proto::Op*> out;
  for (const proto::Op& op : w.ops())
    if (IsCommunication(op)) out.push_back(&op);
  return out;
}

TEST(Collective, NamesOfEveryForm) {
  EXPECT_EQ(CollectiveTypeOfName("c10d::allreduce_"), proto::Collective::ALL_REDUCE);
  EXPECT_EQ(CollectiveTypeOfName("c10d::_allgather_base_"), proto::Collective::ALL_GATHER);
  EXPECT_EQ(CollectiveTypeOfName("all_gather_into_tensor_coalesced"), proto::Collective::ALL_GATHER);
  EXPECT_EQ(CollectiveTypeOfName("_c10d_functional::reduce_scatter_tensor"), proto::Collective::REDUCE_SCATTER);
  EXPECT_EQ(CollectiveTypeOfName("c10d::reduce_"), proto::Collective::REDUCE);
  EXPECT_EQ(CollectiveTypeOfName("all_to_all_single"), proto::Collective::ALL_TO_ALL);
  EXPECT_EQ(CollectiveTypeOfName("nccl:all_reduce"), proto::Collective::ALL_REDUCE);
  EXPECT_EQ(CollectiveTypeOfName("c10d::recv_any_source_"), proto::Collective::RECV);
  EXPECT_EQ(CollectiveTypeOfName("wait"), proto::Collective::WAIT);
  EXPECT_EQ(CollectiveTypeOfName("_c10d_functional::wait_tensor"), proto::Collective::WAIT);
  EXPECT_EQ(CollectiveTypeOfName("aten::add"), proto::Collective::TYPE_UNKNOWN);
}

TEST(Collective, BusBandwidthFactorsOfNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(proto::Collective::ALL_REDUCE, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(proto::Collective::ALL_GATHER, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(proto::Collective::REDUCE_SCATTER, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor(proto::Collective::BROADCAST, 8), 1.0);
}

TEST(Collective, ChakraAllGatherTraceHoldsTenAllGathersOnATwoRankGroup) {
  const std::string path = testing::SharedTraces() + "/chakra-allgather/allgather_1.0.2_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  const auto comms = Communications(*w);
  ASSERT_EQ(comms.size(), 10u);
  std::vector<int64_t> seqs;
  for (const proto::Op* op : comms) {
    const proto::Collective& c = op->collective();
    EXPECT_EQ(op->name(), "c10d::allgather_");
    EXPECT_EQ(c.type(), proto::Collective::ALL_GATHER);
    EXPECT_EQ(c.process_group(), "0");  // matched through record_param_comms' pg id = backend_id
    EXPECT_EQ(c.group_size(), 2);
    EXPECT_EQ(c.dtype(), proto::FLOAT32);
    EXPECT_EQ(c.in_elems(), 1);
    EXPECT_EQ(c.out_elems(), 2);
    EXPECT_EQ(CollectiveBytes(c), 8);
    EXPECT_TRUE(c.async());
    // Each is waited for by the record_param_comms "wait" with its sequence number.
    ASSERT_NE(c.wait_op(), 0);
    const OpTree tree(*w);
    const proto::Op& wait = w->ops(tree.IndexOf(c.wait_op()));
    EXPECT_EQ(wait.collective().type(), proto::Collective::WAIT);
    EXPECT_EQ(wait.collective().waits_for(), op->id());
    EXPECT_EQ(wait.collective().seq(), c.seq());
    seqs.push_back(c.seq());
  }
  EXPECT_THAT(seqs, ElementsAre(12, 13, 14, 15, 16, 17, 18, 19, 20, 21));
  const CollectiveTotals totals = CountCollectives(*w);
  EXPECT_EQ(totals.issued, 10);
  EXPECT_EQ(totals.by_type.at("all_gather").count, 10);
}

TEST(Collective, DdpOverGlooCaptureHasItsBucketsAndBufferBroadcasts) {
  for (int rank : {0, 1}) {
    const std::string dir = testing::SourceDir() + "/fleet_samples/ddp_mlp_2r/";
    auto w = LoadWorkload(dir + "rank-" + std::to_string(rank) + ".et.json.gz",
                          {.kineto_path = dir + "rank-" + std::to_string(rank) + ".kineto.json.gz"});
    ASSERT_THAT(w, IsOk());
    EXPECT_EQ(w->provenance().world_size(), 2);
    ASSERT_EQ(w->provenance().process_groups_size(), 1);
    EXPECT_EQ(w->provenance().process_groups(0).backend(), "cpu:gloo,cuda:gloo");
    std::map<std::string, int> count;
    int64_t all_reduce_bytes = 0;
    for (const proto::Op* op : Communications(*w)) {
      const proto::Collective& c = op->collective();
      ++count[CollectiveTypeName(c.type())];
      EXPECT_EQ(c.process_group(), "0");
      EXPECT_EQ(c.group_size(), 2);
      EXPECT_TRUE(c.async()) << op->name();  // DDP passes async_op=True
      EXPECT_GT(c.original_us(), 0) << op->id();  // from gloo:* or the op's own span
      if (c.type() == proto::Collective::ALL_REDUCE) all_reduce_bytes += CollectiveBytes(c);
    }
    // Two profiled steps: each all-reduces every gradient once, in buckets, and broadcasts
    // the BatchNorm's running mean+var (flattened) and num_batches_tracked.
    EXPECT_EQ(count["all_reduce"], 6);
    EXPECT_EQ(count["broadcast"], 4);
    const int64_t params = (1024 * 1024 + 1024) * 2 + (1024 * 512 + 512) + (512 * 10 + 10) + 2 * 1024;
    EXPECT_EQ(all_reduce_bytes, 2 * params * 4);
  }
}

Result<proto::Workload> Parse(const std::string& json) { return LoadWorkloadFromMemory("test.json", json, "", ""); }

constexpr const char* kNodeAttrs =
    R"j("attrs": [{"name": "rf_id", "type": "uint64", "value": 1}, {"name": "tid", "type": "uint64", "value": 1}])j";

std::string Node(int id, int parent, const std::string& name, const std::string& inputs,
                 const std::string& outputs = R"j({"values": [], "shapes": [], "types": []})j",
                 const std::string& attrs = kNodeAttrs) {
  return R"j({"id": )j" + std::to_string(id) + R"j(, "name": ")j" + name + R"j(", "ctrl_deps": )j" +
         std::to_string(parent) + R"j(, "inputs": )j" + inputs + R"j(, "outputs": )j" + outputs + ", " + attrs + "}";
}

std::string Trace(const std::string& schema, const std::vector<std::string>& nodes) {
  std::string s = R"j({"schema": ")j" + schema + R"j(", "pid": 1, "time": "t", "start_ts": 0, "nodes": [)j";
  s += R"j({"id": 1, "name": "[pytorch|profiler|execution_trace|thread]", "ctrl_deps": 0, )j"
       R"j("inputs": {"values": [], "shapes": [], "types": []}, "outputs": {"values": [], "shapes": [], "types": []}, )j" +
       std::string(kNodeAttrs) + "}";
  s += R"j(, {"id": 2, "name": "## process_group:init ##", "ctrl_deps": 1, "inputs": {"values": ["[{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"ranks\": [], \"group_size\": 4}, {\"pg_name\": \"3\", \"pg_desc\": \"tp\", \"backend_config\": \"cuda:nccl\", \"ranks\": [0, 1], \"group_size\": 2}]"], "shapes": [[]], "types": ["String"]}, "outputs": {"values": [], "shapes": [], "types": []}, )j" +
       std::string(kNodeAttrs) + "}";
  for (const std::string& n : nodes) s += ", " + n;
  return s + "]}";
}

TEST(Collective, RecordParamCommsAttrsOfSchema110) {
  const std::string attrs =
      R"j("attrs": [{"name": "rf_id", "type": "uint64", "value": 5}, {"name": "tid", "type": "uint64", "value": 1},)j"
      R"j( {"name": "collective_name", "type": "string", "value": "all_to_allv"},)j"
      R"j( {"name": "dtype", "type": "string", "value": "BFloat16"},)j"
      R"j( {"name": "in_msg_nelems", "type": "uint64", "value": 60},)j"
      R"j( {"name": "out_msg_nelems", "type": "uint64", "value": 40},)j"
      R"j( {"name": "in_split_size", "type": "string", "value": "[10, 50]"},)j"
      R"j( {"name": "pg_name", "type": "string", "value": "3"}, {"name": "pg_size", "type": "uint64", "value": 2}])j";
  auto w = Parse(Trace("1.1.0-chakra.0.0.4",
                       {Node(10, 1, "record_param_comms",
                             R"j({"values": [[[20, 21, 0, 60, 2, "cuda:0"]], 7, ["3", "tp"], 0, "all_to_allv", 60, 40, "BFloat16", [10, 50], [20, 20], 0, 1, 2],)j"
                             R"j( "shapes": [[[60]], [], [], [], [], [], [], [], [], [], [], [], []],)j"
                             R"j( "types": ["GenericList[Tensor(c10::BFloat16)]", "Int", "Tuple[String,String]", "Int", "String", "Int", "Int", "String", "GenericList[Int,Int]", "GenericList[Int,Int]", "Int", "Int", "Int"]})j",
                             R"j({"values": [], "shapes": [], "types": []})j", attrs)}));
  ASSERT_THAT(w, IsOk());
  const auto comms = Communications(*w);
  ASSERT_EQ(comms.size(), 1u);
  const proto::Collective& c = comms[0]->collective();
  EXPECT_EQ(c.type(), proto::Collective::ALL_TO_ALL);
  EXPECT_EQ(c.source(), "record_param_comms");
  EXPECT_EQ(c.process_group(), "3");
  EXPECT_EQ(c.group_size(), 2);
  EXPECT_EQ(c.dtype(), proto::BFLOAT16);
  EXPECT_EQ(c.in_elems(), 60);
  EXPECT_EQ(c.out_elems(), 40);
  EXPECT_EQ(c.seq(), 7);
  EXPECT_THAT(c.in_split_sizes(), ElementsAre(10, 50));   // from the positional list
  EXPECT_THAT(c.out_split_sizes(), ElementsAre(20, 20));
  EXPECT_EQ(CollectiveBytes(c), 120);  // the larger side, 2-byte elements
}

TEST(Collective, FunctionalCollectivePairsWithItsWaitTensor) {
  auto w = Parse(Trace(
      "1.1.1-chakra.0.0.4",
      {Node(10, 1, "_c10d_functional::all_reduce",
            R"j({"values": [[20, 21, 0, 8, 4, "cuda:0"], "sum", "3"], "shapes": [[8], [], []], "types": ["Tensor(float)", "String", "String"]})j",
            R"j({"values": [[22, 23, 0, 8, 4, "cuda:0"]], "shapes": [[8]], "types": ["Tensor(float)"]})j",
            R"j("attrs": [{"name": "rf_id", "type": "uint64", "value": 5}, {"name": "tid", "type": "uint64", "value": 1}, {"name": "op_schema", "type": "string", "value": "_c10d_functional::all_reduce(Tensor input, str reduce_op, str group_name) -> Tensor"}])j"),
       Node(11, 1, "aten::mul",
            R"j({"values": [[24, 25, 0, 8, 4, "cuda:0"], [24, 25, 0, 8, 4, "cuda:0"]], "shapes": [[8], [8]], "types": ["Tensor(float)", "Tensor(float)"]})j"),
       Node(12, 1, "_c10d_functional::wait_tensor",
            R"j({"values": [[22, 23, 0, 8, 4, "cuda:0"]], "shapes": [[8]], "types": ["Tensor(float)"]})j",
            R"j({"values": [[22, 23, 0, 8, 4, "cuda:0"]], "shapes": [[8]], "types": ["Tensor(float)"]})j",
            R"j("attrs": [{"name": "rf_id", "type": "uint64", "value": 6}, {"name": "tid", "type": "uint64", "value": 1}, {"name": "op_schema", "type": "string", "value": "_c10d_functional::wait_tensor(Tensor tensor) -> Tensor"}])j")}));
  ASSERT_THAT(w, IsOk());
  const OpTree tree(*w);
  const proto::Collective& c = w->ops(tree.IndexOf(10)).collective();
  EXPECT_EQ(c.type(), proto::Collective::ALL_REDUCE);
  EXPECT_EQ(c.process_group(), "3");  // group_name
  EXPECT_EQ(c.group_size(), 2);       // from the process-group table
  EXPECT_EQ(c.in_elems(), 8);
  EXPECT_TRUE(c.async());
  EXPECT_EQ(c.wait_op(), 12);
  EXPECT_EQ(w->ops(tree.IndexOf(12)).collective().waits_for(), 10);
  EXPECT_FALSE(w->ops(tree.IndexOf(11)).has_collective());
  // The replay runs the collective and its wait, in order.
  const std::vector<int> ops = ReplayableOps(*w, tree);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(w->ops(ops[0]).id(), 10);
  EXPECT_EQ(w->ops(ops[1]).id(), 12);
}

}  // namespace
}  // namespace mimic::eg
