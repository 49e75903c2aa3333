// Value decoding across schema versions, on small hand-written traces.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "mimic/base/file.h"
#include "mimic/eg/execution_trace.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

Result<proto::Workload> Parse(const std::string& json) {
  return LoadWorkloadFromMemory("test.json", json, "", "");
}

const std::string kFlat101 = R"json({
  "schema": "1.0.1", "pid": 7, "time": "t", "start_ts": 1,
  "nodes": [
    {"name": "aten::cat", "id": 5, "rf_id": 2, "parent": 3, "fw_parent": 0, "seq_id": -1, "scope": 0,
     "tid": 1, "fw_tid": 0, "op_schema": "aten::cat(Tensor[] tensors, int dim=0) -> Tensor",
     "inputs": [[[10,11,0,6,4],[12,13,0,6,4]], 0], "input_shapes": [[[2,3],[2,3]],[]],
     "input_types": ["GenericList[Tensor(float),Tensor(float)]", "Int"],
     "outputs": [[14,15,0,12,4]], "output_shapes": [[4,3]], "output_types": ["Tensor(float)"]},
    {"name": "[pytorch|profiler|execution_graph|thread]", "id": 3, "rf_id": 0, "parent": 1,
     "fw_parent": 0, "seq_id": -1, "scope": 7, "tid": 1, "fw_tid": 0, "op_schema": "",
     "inputs": [], "input_shapes": [], "input_types": [], "outputs": [], "output_shapes": [], "output_types": []},
    {"name": "aten::clamp", "id": 6, "rf_id": 3, "parent": 3, "fw_parent": 0, "seq_id": -1, "scope": 0,
     "tid": 1, "fw_tid": 0, "op_schema": "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
     "inputs": [[14,15,0,12,4], "<None>", "inf"], "input_shapes": [[4,3],[],[]],
     "input_types": ["Tensor(float)", "None", "Double"],
     "outputs": [[16,17,0,12,4]], "output_shapes": [[4,3]], "output_types": ["Tensor(float)"]},
    {"name": "aten::randn", "id": 7, "rf_id": 4, "parent": 3, "fw_parent": 0, "seq_id": -1, "scope": 0,
     "tid": 1, "fw_tid": 0, "op_schema": "aten::randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
     "inputs": [[2,2], "<Generator>", 6, "<None>", "cuda:0", false], "input_shapes": [[[],[]],[],[],[],[],[]],
     "input_types": ["GenericList[Int,Int]", "Generator", "Int", "None", "Device", "Bool"],
     "outputs": [[18,19,0,4,4,"cuda:0"]], "output_shapes": [[2,2]], "output_types": ["Tensor(float)"]}
  ]})json";

TEST(Values, Schema101FlatNodesDecodeTyped) {
  auto w = Parse(kFlat101);
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->ops_size(), 4);
  EXPECT_EQ(w->ops(0).id(), 3);  // sorted by id
  const proto::Op& cat = w->ops(1);
  EXPECT_EQ(cat.name(), "aten::cat");
  EXPECT_EQ(w->schemas(cat.schema()), "aten::cat(Tensor[] tensors, int dim=0) -> Tensor");
  ASSERT_EQ(cat.inputs(0).kind_case(), proto::Value::kList);
  ASSERT_EQ(cat.inputs(0).list().items_size(), 2);
  const proto::Tensor& t0 = w->tensors(cat.inputs(0).list().items(0).tensor());
  EXPECT_EQ(t0.tensor_id(), 10);
  EXPECT_EQ(t0.storage_id(), 11);
  EXPECT_EQ(t0.numel(), 6);
  EXPECT_EQ(t0.dtype(), proto::FLOAT32);
  EXPECT_THAT(t0.shape(), ::testing::ElementsAre(2, 3));
  EXPECT_EQ(t0.device(), "");  // 5-field tensors carry no device
  EXPECT_EQ(cat.inputs(1).int_value(), 0);

  const proto::Op& clamp = w->ops(2);
  EXPECT_TRUE(clamp.inputs(1).none());
  EXPECT_TRUE(std::isinf(clamp.inputs(2).double_value()));
  // The clamp input is the cat output: one table entry.
  EXPECT_EQ(clamp.inputs(0).tensor(), cat.outputs(0).tensor());

  const proto::Op& randn = w->ops(3);
  EXPECT_EQ(randn.inputs(0).list().items_size(), 2);
  EXPECT_EQ(randn.inputs(1).opaque(), "<Generator>");
  EXPECT_EQ(randn.inputs(4).device(), "cuda:0");
  EXPECT_FALSE(randn.inputs(5).bool_value());
  EXPECT_EQ(w->tensors(randn.outputs(0).tensor()).device(), "cuda:0");
}

TEST(Values, Schema111NestedNodesKeepStridesAndTensorRange) {
  const std::string json = R"json({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [
    {"id": 2, "name": "aten::embedding", "ctrl_deps": 1,
     "inputs": {"values": [[1,2,0,40,4,"cpu"],[3,4,0,8,8,"cpu"],-1,false,false],
                "shapes": [[10,4],[8],[],[],[]], "strides": [[4,1],[1],[],[],[]],
                "types": ["Tensor(float)","Tensor(long int)","Int","Bool","Bool"]},
     "outputs": {"values": [[5,6,0,32,4,"cpu"]], "shapes": [[8,4]], "strides": [[4,1]], "types": ["Tensor(float)"]},
     "attrs": [{"name": "rf_id", "type": "uint64", "value": 9},
               {"name": "op_schema", "type": "string", "value": "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor"},
               {"name": "tensor_range", "type": "string", "value": "{\"1\":[0,9]}"},
               {"name": "collective_name", "type": "string", "value": "none"}]}]})json";
  auto w = Parse(json);
  ASSERT_THAT(w, IsOk());
  const proto::Op& op = w->ops(0);
  EXPECT_EQ(op.rf_id(), 9);
  const proto::Tensor& idx = w->tensors(op.inputs(1).tensor());
  EXPECT_EQ(idx.dtype(), proto::INT64);
  EXPECT_TRUE(idx.has_range());
  EXPECT_EQ(idx.range_min(), 0);
  EXPECT_EQ(idx.range_max(), 9);
  EXPECT_THAT(w->tensors(op.inputs(0).tensor()).strides(), ::testing::ElementsAre(4, 1));
  EXPECT_EQ(op.attrs().at("collective_name").string_value(), "none");
  EXPECT_TRUE(w->provenance().warnings().empty());
}

// The observer keys tensor_range by a tensor's index among the op's tensors, not by its
// argument position: index_select(self, dim, index) records its index as "1", and a list's
// tensors count one by one (torch 2.11's execution_trace_observer.cpp, checked on a capture).
TEST(Values, TensorRangeKeysCountTensorsNotArguments) {
  const std::string json = R"json({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [
    {"id": 2, "name": "aten::index_select", "ctrl_deps": 1,
     "inputs": {"values": [[1,2,0,30,4,"cpu"],0,[3,4,0,2,8,"cpu"]], "shapes": [[10,3],[],[2]],
                "types": ["Tensor(float)","Int","Tensor(long int)"]},
     "outputs": {"values": [[5,6,0,6,4,"cpu"]], "shapes": [[2,3]], "types": ["Tensor(float)"]},
     "attrs": [{"name": "op_schema", "type": "string", "value": "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor"},
               {"name": "tensor_range", "type": "string", "value": "{\"1\":[2,9]}"}]},
    {"id": 3, "name": "aten::index", "ctrl_deps": 1,
     "inputs": {"values": [[1,2,0,30,4,"cpu"],[[7,8,0,4,8,"cpu"],[9,10,0,4,8,"cpu"]]], "shapes": [[10,3],[[4],[4]]],
                "types": ["Tensor(float)","GenericList[Tensor(long int),Tensor(long int)]"]},
     "outputs": {"values": [[11,12,0,4,4,"cpu"]], "shapes": [[4]], "types": ["Tensor(float)"]},
     "attrs": [{"name": "op_schema", "type": "string", "value": "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor"},
               {"name": "tensor_range", "type": "string", "value": "{\"1\":[0,9],\"2\":[1,2]}"}]}]})json";
  auto w = Parse(json);
  ASSERT_THAT(w, IsOk());
  const proto::Tensor& index = w->tensors(w->ops(0).inputs(2).tensor());
  ASSERT_TRUE(index.has_range());
  EXPECT_EQ(index.range_min(), 2);
  EXPECT_EQ(index.range_max(), 9);
  EXPECT_FALSE(w->tensors(w->ops(0).inputs(0).tensor()).has_range());
  const proto::ValueList& list = w->ops(1).inputs(1).list();
  const proto::Tensor& rows = w->tensors(list.items(0).tensor());
  const proto::Tensor& cols = w->tensors(list.items(1).tensor());
  ASSERT_TRUE(rows.has_range() && cols.has_range());
  EXPECT_EQ(rows.range_max(), 9);
  EXPECT_EQ(cols.range_min(), 1);
  EXPECT_EQ(cols.range_max(), 2);
  EXPECT_EQ(InputTensorByOrdinal(w->ops(0), 1), w->ops(0).inputs(2).tensor());
  EXPECT_EQ(InputTensorByOrdinal(w->ops(0), 2), -1);
}

// Integer inputs saved by the observer beside the trace (X.json -> X_resources/, also for a
// trace gzipped afterwards) are read into the workload as stored, by op id and tensor ordinal.
TEST(Values, IntegerDataBesideTheTraceIsAttached) {
  char tmpl[] = "/tmp/mimic_intdata.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string json = R"json({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [
    {"id": 4, "name": "aten::embedding", "ctrl_deps": 1,
     "inputs": {"values": [[1,2,0,40,4,"cpu"],[3,4,0,3,8,"cpu"],-1,false,false], "shapes": [[10,4],[3],[],[],[]],
                "types": ["Tensor(float)","Tensor(long int)","Int","Bool","Bool"]},
     "outputs": {"values": [[5,6,0,12,4,"cpu"]], "shapes": [[3,4]], "types": ["Tensor(float)"]},
     "attrs": [{"name": "op_schema", "type": "string", "value": "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor"}]}]})json";
  ASSERT_TRUE(WriteFileAtomic(dir + "/t.et.json", json).ok());
  const int64_t values[3] = {7, 7, 2};
  EXPECT_EQ(IntegerDataDir(dir + "/t.et.json"), "");
  ASSERT_EQ(mkdir((dir + "/t.et_resources").c_str(), 0755), 0);
  ASSERT_TRUE(
      WriteFileAtomic(dir + "/t.et_resources/nid_4_tid_1.dat",
                      std::string_view(reinterpret_cast<const char*>(values), sizeof(values)))
          .ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/t.et_resources/notes.txt", "not data").ok());
  EXPECT_EQ(IntegerDataDir(dir + "/t.et.json"), dir + "/t.et_resources");
  EXPECT_EQ(IntegerDataDir(dir + "/t.et.json.gz"), dir + "/t.et_resources");
  auto w = LoadWorkload(dir + "/t.et.json");
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->integer_data_size(), 1);
  const proto::IntegerData& d = w->integer_data(0);
  EXPECT_EQ(d.op_id(), 4);
  EXPECT_EQ(d.ordinal(), 1);
  EXPECT_EQ(d.file(), "t.et_resources/nid_4_tid_1.dat");
  ASSERT_EQ(d.data().size(), sizeof(values));
  EXPECT_EQ(std::memcmp(d.data().data(), values, sizeof(values)), 0);
  EXPECT_EQ(InputTensorByOrdinal(w->ops(0), d.ordinal()), w->ops(0).inputs(1).tensor());
  std::system(("rm -rf " + dir).c_str());
}

// Saved files are untrusted: one that is not a regular file, or larger than any tensor of the
// trace, is an input error naming the file (and is never read whole into memory).
TEST(Values, IntegerDataFilesThatCannotBeValuesAreInputErrors) {
  char tmpl[] = "/tmp/mimic_intdata.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string json = R"json({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [
    {"id": 4, "name": "aten::embedding", "ctrl_deps": 1,
     "inputs": {"values": [[1,2,0,40,4,"cpu"],[3,4,0,3,8,"cpu"]], "shapes": [[10,4],[3]],
                "types": ["Tensor(float)","Tensor(long int)"]},
     "outputs": {"values": [[5,6,0,12,4,"cpu"]], "shapes": [[3,4]], "types": ["Tensor(float)"]},
     "attrs": []}]})json";
  ASSERT_TRUE(WriteFileAtomic(dir + "/t.et.json", json).ok());
  ASSERT_EQ(mkdir((dir + "/t.et_resources").c_str(), 0755), 0);
  const std::string file = dir + "/t.et_resources/nid_4_tid_1.dat";
  ASSERT_EQ(mkdir(file.c_str(), 0755), 0);
  auto w = LoadWorkload(dir + "/t.et.json");
  EXPECT_THAT(w, StatusIs(StatusCode::kInvalidInput));
  EXPECT_EQ(w.status().message(), file + ":byte 0: not a regular file");
  ASSERT_EQ(rmdir(file.c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(file, std::string(161, 'x')).ok());  // the largest tensor: 160 bytes
  w = LoadWorkload(dir + "/t.et.json");
  EXPECT_THAT(w, StatusIs(StatusCode::kInvalidInput));
  EXPECT_EQ(w.status().message(),
            file + ":byte 0: 161 bytes, more than any tensor of the trace holds (160)");
  ASSERT_TRUE(WriteFileAtomic(file, std::string(160, 'x')).ok());  // read; the replay judges it
  w = LoadWorkload(dir + "/t.et.json");
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->integer_data_size(), 1);
  EXPECT_EQ(w->integer_data(0).data().size(), 160u);
  std::system(("rm -rf " + dir).c_str());
}

// A sparse tensor has no storage, and the observer records it as [id, 0, 0, 0, 0, ""] with its
// dtype: a tensor of the table, not an undefined one (typed "Tensor(nullptr (uninitialized))").
TEST(Values, SparseTensorsAreTensorsUndefinedOnesAreNot) {
  const std::string json = R"json({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [
    {"id": 2, "name": "aten::_indices", "ctrl_deps": 1,
     "inputs": {"values": [[7,0,0,0,0,""]], "shapes": [[100,8]], "types": ["Tensor(float)"]},
     "outputs": {"values": [[8,9,0,12,8,"cpu"]], "shapes": [[1,12]], "types": ["Tensor(long int)"]},
     "attrs": [{"name": "op_schema", "type": "string", "value": "aten::_indices(Tensor(a) self) -> Tensor(a)"}]},
    {"id": 3, "name": "aten::add", "ctrl_deps": 1,
     "inputs": {"values": [[10,11,0,4,4,"cpu"],[12,0,0,0,0,""]], "shapes": [[4],[]],
                "types": ["Tensor(float)","Tensor(nullptr (uninitialized))"]},
     "outputs": {"values": [[13,14,0,4,4,"cpu"]], "shapes": [[4]], "types": ["Tensor(float)"]},
     "attrs": []}]})json";
  auto w = Parse(json);
  ASSERT_THAT(w, IsOk());
  ASSERT_GE(w->ops(0).inputs(0).tensor(), 0);
  const proto::Tensor& sparse = w->tensors(w->ops(0).inputs(0).tensor());
  EXPECT_EQ(sparse.storage_id(), 0);
  EXPECT_EQ(sparse.itemsize(), 0);
  EXPECT_THAT(sparse.shape(), ::testing::ElementsAre(100, 8));
  EXPECT_EQ(w->ops(1).inputs(1).tensor(), -1);
}

TEST(Values, UnknownSchemaIsReadBestEffortWithAWarning) {
  auto w = Parse(R"json({"schema": "9.9.9", "nodes": [{"id": 1, "name": "x"}]})json");
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->provenance().warnings_size(), 1);
  EXPECT_NE(w->provenance().warnings(0).find("9.9.9"), std::string::npos);
}

TEST(Values, MalformedTracesAreInvalidInputWithAPosition) {
  struct Case {
    const char* json;
    const char* expect;
  } cases[] = {
      {R"json({"schema": "1.0.1", "nodes": [{"id": 1, "name": "a"}, {"id": 1, "name": "b"}]})json", "duplicate node id 1"},
      {R"json({"schema": "1.0.1", "nodes": [{"id": 1, "name": "a"}, {"id": 2, )json", "byte"},
      {R"json({"traceEvents": []})json", "not a PyTorch execution trace"},
      {R"json([1, 2, 3])json", "expected a JSON object"},
      {R"json({"schema": "1.0.1", "nodes": [{"id": 2, "parent": 3}, {"id": 3, "parent": 2}]})json", "cycle"},
      {R"json({"schema": "1.0.1", "nodes": [{"id": 2, "inputs": [[1,2,0,-5,4]], "input_types": ["Tensor(float)"]}]})json", "negative"},
  };
  for (const Case& c : cases) {
    auto w = Parse(c.json);
    EXPECT_THAT(w, StatusIs(StatusCode::kInvalidInput)) << c.json;
    EXPECT_NE(w.status().message().find("test.json:"), std::string::npos) << w.status().message();
    EXPECT_NE(w.status().message().find(c.expect), std::string::npos) << c.expect << " in: " << w.status().message();
  }
}

TEST(SchemaArgs, TypesNamesAndMutation) {
  const auto args = ParseSchemaArgs(
      "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0].type, "Tensor(a!)");
  EXPECT_EQ(args[0].name, "self");
  EXPECT_TRUE(args[0].mutated);
  EXPECT_FALSE(args[1].mutated);
  EXPECT_EQ(args[2].name, "alpha");
  const auto sizes = ParseSchemaArgs("aten::empty.memory_format(SymInt[] size, *, ScalarType? dtype=None) -> Tensor");
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[0].type, "SymInt[]");
  EXPECT_EQ(sizes[1].type, "ScalarType?");
  EXPECT_TRUE(ParseSchemaArgs("no parenthesis").empty());
}

}  // namespace
}  // namespace mimic::eg
