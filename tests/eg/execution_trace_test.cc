// Conformance on the public traces in ../shared/traces: every one parses and converts, and what
// the workload holds agrees with counts taken independently from the JSON itself.
#include <simdjson.h>
#include <unistd.h>

#include "mimic/base/file.h"
#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

struct JsonCounts {
  int64_t nodes = 0;
  int64_t with_schema = 0;
  int64_t steps = 0;
  int64_t tensor_inputs = 0;  // top-level input values whose type is a tensor
  std::string schema;
};

// Counts straight from the JSON with simdjson's DOM (a different path from eg's reader).
JsonCounts CountFromJson(const std::string& path) {
  auto file = ReadFile(path);
  EXPECT_TRUE(file.ok());
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(file->bytes.data(), file->bytes.size(), false);
  JsonCounts c;
  c.schema = std::string(std::string_view(doc["schema"]));
  for (simdjson::dom::element node : doc["nodes"].get_array()) {
    ++c.nodes;
    std::string_view name = node["name"];
    if (name.rfind("ProfilerStep#", 0) == 0) ++c.steps;
    std::string_view op_schema;
    if (node["op_schema"].get(op_schema) == simdjson::SUCCESS) {
      c.with_schema += !op_schema.empty();
    } else {
      for (simdjson::dom::element a : node["attrs"].get_array())
        if (std::string_view(a["name"]) == "op_schema") c.with_schema += !std::string_view(a["value"]).empty();
    }
    simdjson::dom::element types;
    if (node["input_types"].get(types) != simdjson::SUCCESS) types = node["inputs"]["types"];
    for (simdjson::dom::element t : types.get_array())
      if (std::string_view(t).rfind("Tensor(", 0) == 0) ++c.tensor_inputs;
  }
  return c;
}

class SharedTrace : public ::testing::TestWithParam<const char*> {};

TEST_P(SharedTrace, ParsesWithCountsMatchingTheJson) {
  const std::string path = mimic::testing::SharedTraces() + "/" + GetParam();
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  const JsonCounts expected = CountFromJson(path);
  EXPECT_EQ(w->provenance().schema(), expected.schema);
  EXPECT_EQ(w->ops_size(), expected.nodes);
  int64_t with_schema = 0, tensor_inputs = 0, steps = 0;
  for (const proto::Op& op : w->ops()) {
    with_schema += op.schema() >= 0;
    for (const proto::Value& v : op.inputs()) tensor_inputs += v.kind_case() == proto::Value::kTensor;
  }
  for (const proto::Segment& s : w->segments()) steps += s.kind() == proto::Segment::ITERATION;
  EXPECT_EQ(with_schema, expected.with_schema);
  EXPECT_EQ(tensor_inputs, expected.tensor_inputs);
  EXPECT_EQ(steps, expected.steps);
  EXPECT_GT(w->tensors_size(), 0);
  EXPECT_EQ(w->provenance().sources(0).sha256().size(), 64u);
  // Ops are in id order, and every tensor reference points into the table.
  for (int i = 1; i < w->ops_size(); ++i) EXPECT_LT(w->ops(i - 1).id(), w->ops(i).id());
}

TEST_P(SharedTrace, ConvertRoundTripsBitIdentical) {
  const std::string path = mimic::testing::SharedTraces() + "/" + GetParam();
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  const std::string out = ::testing::TempDir() + "/roundtrip_" + std::to_string(getpid()) + ".mimic";
  ASSERT_TRUE(SaveWorkload(out, *w).ok());
  auto back = LoadWorkload(out);
  ASSERT_THAT(back, IsOk());
  EXPECT_EQ(back->SerializeAsString(), w->SerializeAsString());
}

INSTANTIATE_TEST_SUITE_P(
    Traces, SharedTrace,
    ::testing::Values("param-linear/linear_et.json.gz", "hta-simple-add/simple_add_et.json.gz",
                      "chakra-allgather/allgather_1.0.2_et.json.gz",
                      "param-resnet-1gpu/resnet_1gpu_et.json.gz", "param-pt2/pt2_et.json.gz"));

TEST(ExecutionTrace, ProcessGroupsAreReadFromTheInitNode) {
  const std::string path = mimic::testing::SharedTraces() + "/chakra-allgather/allgather_1.0.2_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->provenance().process_groups_size(), 1);
  EXPECT_EQ(w->provenance().process_groups(0).name(), "0");
  EXPECT_EQ(w->provenance().process_groups(0).backend(), "cuda:nccl");
  EXPECT_EQ(w->provenance().process_groups(0).size(), 2);
  EXPECT_EQ(w->provenance().world_size(), 2);
}

TEST(ExecutionTrace, ReplayableOpsAreTopMostWithSchemaAndNoWrappers) {
  const std::string path = mimic::testing::SharedTraces() + "/param-resnet-1gpu/resnet_1gpu_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  const OpTree tree(*w);
  const std::vector<int> ops = ReplayableOps(*w, tree);
  ASSERT_FALSE(ops.empty());
  for (int i : ops) {
    // Collectives and their waits count even without a schema (record_param_comms).
    EXPECT_TRUE(w->ops(i).schema() >= 0 || w->ops(i).has_collective()) << w->ops(i).name();
    EXPECT_FALSE(IsWrapperOp(w->ops(i)));
    for (int p = tree.Parent(i); p >= 0; p = tree.Parent(p))
      EXPECT_TRUE(w->ops(p).schema() < 0 || IsWrapperOp(w->ops(p)) ||
                  (w->ops(i).has_collective() && w->ops(p).has_collective()))
          << w->ops(i).name();
  }
  // Selecting an iteration keeps only ops inside its ProfilerStep subtree.
  const proto::Segment& step = w->segments(0);
  const std::vector<int> in_step = ReplayableOps(*w, tree, tree.IndexOf(step.op_id()));
  EXPECT_GT(in_step.size(), 0u);
  EXPECT_LT(in_step.size(), ops.size());
}

TEST(ExecutionTrace, FleetSamplesCarryTensorRanges) {
  const std::string path = mimic::testing::SourceDir() + "/fleet_samples/embbag_rec.et.json.gz";
  auto w = LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  EXPECT_EQ(w->provenance().schema(), "1.1.1-chakra.0.0.4");
  int64_t ranged = 0, strided = 0;
  for (const proto::Tensor& t : w->tensors()) {
    ranged += t.has_range();
    strided += t.strides_size() == t.shape_size() && t.shape_size() > 0;
  }
  EXPECT_GT(ranged, 0);
  EXPECT_GT(strided, 0);
}

}  // namespace
}  // namespace mimic::eg
