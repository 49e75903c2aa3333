// Transformations on the fleet samples: each result replays with every op and the shapes and
// dtypes it records; bundles round-trip bit-identical.
#include "mimic/synth/transform.h"

#include <unistd.h>

#include <functional>
#include <map>

#include "mimic/base/file.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"
#include "mimic/replay/replayer.h"
#include "mimic/synth/batch.h"
#include "mimic/synth/bundle.h"
#include "mimic/synth/standalone.h"
#include "testing.h"

namespace mimic::synth {
namespace {

proto::Workload Load(const std::string& name) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = eg::LoadWorkload(dir + name + ".et.json.gz", {.kineto_path = dir + name + ".kineto.json.gz"});
  EXPECT_THAT(w, IsOk());
  return *w;
}

// Replays one iteration and checks full coverage with the recorded shapes and dtypes.
void ExpectReplaysFully(const proto::Workload& w, int64_t* replayed = nullptr) {
  replay::ReplayOptions options;
  options.warmup = 0;
  options.iters = 1;
  auto r = replay::Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  for (const replay::SkippedOp& s : r->skipped) ADD_FAILURE() << s.name << ": " << s.reason << ": " << s.detail;
  EXPECT_EQ(r->outputs_mismatched, 0);
  for (const std::string& m : r->mismatches) ADD_FAILURE() << m;
  if (replayed) *replayed = r->replayed_ops;
}

// One iteration of each named sample, and how many ops it replays on its own.
void SelectAndReplay(std::initializer_list<const char*> names, std::vector<proto::Workload>& parts,
                     std::vector<int64_t>& ops) {
  for (const char* name : names) {
    auto s = Select(Load(name), {});
    ASSERT_THAT(s, IsOk());
    int64_t replayed = 0;
    ExpectReplaysFully(*s, &replayed);
    ops.push_back(replayed);
    parts.push_back(*s);
  }
}

class Sample : public ::testing::TestWithParam<const char*> {};

// The fleet samples ran on one thread: the step is its subtree, kept with the thread root it
// hangs off.
TEST_P(Sample, SelectKeepsOneIterationSubtree) {
  const proto::Workload w = Load(GetParam());
  auto s = Select(w, {.iteration = 2, .label = ""});
  ASSERT_THAT(s, IsOk());
  ASSERT_EQ(s->segments_size(), 1);
  EXPECT_EQ(s->segments(0).name(), "ProfilerStep#2");
  EXPECT_LT(s->ops_size(), w.ops_size());
  const eg::OpTree tree(*s);
  for (int i = 0; i < s->ops_size(); ++i)
    EXPECT_TRUE(tree.IsWithin(i, tree.IndexOf(s->segments(0).op_id())) || eg::IsWrapperOp(s->ops(i)))
        << s->ops(i).name();
  ASSERT_EQ(s->transformations_size(), 1);
  EXPECT_EQ(s->transformations(0).name(), "select");
  ExpectReplaysFully(*s);
  EXPECT_THAT(Select(w, {.iteration = 42, .label = ""}), StatusIs(StatusCode::kInvalidInput));
}

TEST_P(Sample, DtypeChangeKeepsIntegerTensorsAndReplays) {
  const proto::Workload w = Load(GetParam());
  for (proto::DType dtype : {proto::BFLOAT16, proto::FLOAT16}) {
    auto s = Select(w, {});
    ASSERT_THAT(s, IsOk());
    auto d = ChangeDtype(*s, dtype);
    ASSERT_THAT(d, IsOk());
    for (int i = 0; i < d->tensors_size(); ++i) {
      const proto::DType before = s->tensors(i).dtype();
      const bool floating = before == proto::FLOAT32 || before == proto::FLOAT64 ||
                            before == proto::FLOAT16 || before == proto::BFLOAT16;
      EXPECT_EQ(d->tensors(i).dtype(), floating ? dtype : before);
      EXPECT_EQ(d->tensors(i).itemsize(), floating ? 2 : s->tensors(i).itemsize());
    }
    EXPECT_EQ(d->original().iteration_ms_size(), 0);  // the original never ran in this dtype
    ExpectReplaysFully(*d);
  }
}

TEST_P(Sample, FilterByClassKeepsOnlyThatClass) {
  auto s = Select(Load(GetParam()), {});
  ASSERT_THAT(s, IsOk());
  auto f = Filter(*s, "gemm");
  ASSERT_THAT(f, IsOk());
  const eg::OpTree tree(*f);
  const std::vector<int> top = eg::ReplayableOps(*f, tree, -1, true);
  ASSERT_FALSE(top.empty());
  for (int i : top) EXPECT_EQ(eg::ClassOf(f->ops(i).name()), eg::OpClass::kGemm) << f->ops(i).name();
  ExpectReplaysFully(*f);
  EXPECT_THAT(Filter(*s, "no::such_op*"), StatusIs(StatusCode::kInvalidInput));
}

TEST_P(Sample, RepeatRunsKStepsInOneIteration) {
  auto s = Select(Load(GetParam()), {});
  ASSERT_THAT(s, IsOk());
  int64_t once = 0, thrice = 0;
  ExpectReplaysFully(*s, &once);
  s->mutable_original()->set_page_faults_per_iteration(700);
  s->mutable_original()->mutable_system()->set_minor_faults(650);
  s->mutable_original()->mutable_system()->set_cpu_utilization(1.9);
  auto r = Repeat(*s, 3);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->segments_size(), 1);
  ExpectReplaysFully(*r, &thrice);
  EXPECT_EQ(thrice, 3 * once);
  ASSERT_EQ(r->original().iteration_ms_size(), s->original().iteration_ms_size());
  for (int i = 0; i < r->original().iteration_ms_size(); ++i)
    EXPECT_DOUBLE_EQ(r->original().iteration_ms(i), 3 * s->original().iteration_ms(i));
  // Per-step counts are per iteration of three steps now; a rate stays.
  EXPECT_DOUBLE_EQ(r->original().page_faults_per_iteration(), 3 * 700);
  EXPECT_DOUBLE_EQ(r->original().system().minor_faults(), 3 * 650);
  EXPECT_DOUBLE_EQ(r->original().system().cpu_utilization(), 1.9);
  EXPECT_THAT(Repeat(Load(GetParam()), 2), StatusIs(StatusCode::kInvalidInput));  // two steps
}

TEST_P(Sample, DoublingTheBatchDoublesEveryBatchDependentTensor) {
  auto s = Select(Load(GetParam()), {});
  ASSERT_THAT(s, IsOk());
  BatchReport rep;
  auto b = ScaleBatch(*s, {.factor = 2, .batch = 0}, &rep);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(rep.new_batch, 2 * rep.old_batch);
  EXPECT_GT(rep.leaves_scaled, 0);
  EXPECT_GT(rep.tensors_reshaped, 0);
  int64_t doubled = 0;
  for (int i = 0; i < b->tensors_size(); ++i) {
    const proto::Tensor& before = s->tensors(i);
    const proto::Tensor& after = b->tensors(i);
    if (after.numel() == before.numel()) continue;
    EXPECT_EQ(after.numel(), 2 * before.numel()) << "tensor " << before.tensor_id();
    int dims_doubled = 0;  // the batch dimension (not always the first: transposed gradients)
    for (int d = 0; d < after.shape_size(); ++d) dims_doubled += after.shape(d) == 2 * before.shape(d);
    EXPECT_EQ(dims_doubled, 1) << "tensor " << before.tensor_id();
    ++doubled;
  }
  EXPECT_EQ(doubled, rep.tensors_reshaped);
  EXPECT_EQ(b->original().iteration_ms_size(), 0);
  ExpectReplaysFully(*b);
  // The model's input batch itself doubled.
  auto again = ScaleBatch(*b, {.factor = 0, .batch = rep.old_batch});
  ASSERT_THAT(again, IsOk());
  for (int i = 0; i < again->tensors_size(); ++i) EXPECT_EQ(again->tensors(i).numel(), s->tensors(i).numel());
}

TEST(Compose, SequentialMixRunsEveryPartItsWeight) {
  std::vector<proto::Workload> parts;
  std::vector<int64_t> ops;
  ASSERT_NO_FATAL_FAILURE(SelectAndReplay({"mlp", "embbag_rec"}, parts, ops));
  auto mix = Compose(parts, {2, 1}, ComposeMode::kSequential);
  ASSERT_THAT(mix, IsOk());
  int64_t replayed = 0;
  ExpectReplaysFully(*mix, &replayed);
  EXPECT_EQ(replayed, 2 * ops[0] + ops[1]);
  // The parts never share storage: their ids were renumbered apart.
  std::map<int64_t, int> part_of_storage;
  for (int i = 0; i < mix->tensors_size(); ++i) {
    const int part = i < parts[0].tensors_size() ? 0 : 1;
    auto [it, fresh] = part_of_storage.emplace(mix->tensors(i).storage_id(), part);
    EXPECT_EQ(it->second, part) << "storage " << mix->tensors(i).storage_id();
  }
  ASSERT_EQ(mix->original().iteration_ms_size(), 1);
  EXPECT_FALSE(mix->original().has_page_faults_per_iteration());  // the samples recorded none
  parts[0].mutable_original()->set_page_faults_per_iteration(100);
  parts[1].mutable_original()->set_page_faults_per_iteration(30);
  auto faulting = Compose(parts, {2, 1}, ComposeMode::kSequential);
  ASSERT_THAT(faulting, IsOk());
  EXPECT_DOUBLE_EQ(faulting->original().page_faults_per_iteration(), 2 * 100 + 30);
  EXPECT_THAT(Compose(parts, {1}, ComposeMode::kSequential), StatusIs(StatusCode::kInvalidInput));
}

TEST(Compose, ConcurrentTenantsEachReplayOnTheirOwnThread) {
  std::vector<proto::Workload> parts;
  std::vector<int64_t> ops;
  ASSERT_NO_FATAL_FAILURE(SelectAndReplay({"mlp", "embbag_rec"}, parts, ops));
  auto mix = Compose(parts, {1, 1}, ComposeMode::kConcurrent);
  ASSERT_THAT(mix, IsOk());
  EXPECT_EQ(mix->original().iteration_ms_size(), 0);  // no original ran them together
  replay::ReplayOptions options;
  options.warmup = 0;
  options.iters = 2;
  auto r = replay::Replay(*mix, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, ops[0] + ops[1]);
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->outputs_mismatched, 0);
  EXPECT_NE(r->selection.find("2 concurrent tenants"), std::string::npos) << r->selection;
  // Each tenant is also a label range of its own.
  options.label = "## mimic:tenant:1 ##";
  auto one = replay::Replay(*mix, options);
  ASSERT_THAT(one, IsOk());
  EXPECT_EQ(one->replayed_ops, ops[1]);
}

TEST(Substitute, DelaysKeepTheRecordedTimeAndDropsRemove) {
  auto s = Select(Load("transformer"), {});
  ASSERT_THAT(s, IsOk());
  const std::string table = ::testing::TempDir() + "/subst_" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(WriteFileAtomic(table, R"({"substitutions": [
      {"match": "aten::dropout", "action": "delay"},
      {"match": "aten::scaled_dot_product_attention", "action": "delay", "delay_us": 250},
      {"match": "aten::relu", "action": "drop"}]})").ok());
  auto sub = Substitute(*s, table);
  ASSERT_THAT(sub, IsOk());
  int delays = 0, dropouts = 0, relus = 0;
  for (const proto::Op& op : sub->ops()) {
    if (eg::IsDelayOp(op)) {
      ++delays;
      EXPECT_GT(op.attrs().at("delay_us").double_value(), 0);
    }
    dropouts += op.name() == "aten::dropout";
    relus += op.name() == "aten::relu";
  }
  EXPECT_GT(delays, 0);
  EXPECT_EQ(dropouts, 0);
  EXPECT_EQ(relus, 0);
  const std::string& summary = sub->transformations(sub->transformations_size() - 1).summary();
  EXPECT_NE(summary.find("aten::relu -> drop: "), std::string::npos) << summary;
  EXPECT_EQ(sub->original().iteration_ms_size(), 0);  // dropped time: the original no longer applies
  ExpectReplaysFully(*sub);
  ASSERT_TRUE(WriteFileAtomic(table, R"({"substitutions": [{"match": "x", "action": "explode"}]})").ok());
  EXPECT_THAT(Substitute(*s, table), StatusIs(StatusCode::kInvalidInput));
}

INSTANTIATE_TEST_SUITE_P(Fleet, Sample, ::testing::Values("mlp", "cnn_bn", "transformer", "embbag_rec"));

// Captures of real model kinds (tests/data/make_*.py): an LSTM (its initial hidden state
// [layers, B, H] made by aten::zeros in the step; oneDNN's RNN layers on the CPU, whose
// backward reads a workspace the forward sized) and a GPT-2-shaped decoder without an
// optimizer step (its parameters are leaves no op writes, several leading with a multiple of
// the batch). The batch found is the leading dimension of the token ids the first embedding
// looks up, and the scaled workload replays fully at twice that batch.
class Capture : public ::testing::TestWithParam<const char*> {};

TEST_P(Capture, BatchIsTheDataInputsAndScales) {
  const std::string dir = mimic::testing::SourceDir() + "/tests/data/";
  auto w = eg::LoadWorkload(dir + GetParam() + ".et.json.gz",
                            {.kineto_path = dir + GetParam() + ".kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  auto s = Select(*w, {});
  ASSERT_THAT(s, IsOk());
  int ids = -1;
  for (const proto::Op& op : s->ops())
    if (ids < 0 && op.name() == "aten::embedding") ids = op.inputs(1).tensor();
  ASSERT_GE(ids, 0);
  BatchReport rep;
  auto b = ScaleBatch(*s, {.factor = 2}, &rep);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(rep.old_batch, s->tensors(ids).shape(0));
  EXPECT_EQ(b->tensors(ids).shape(0), 2 * s->tensors(ids).shape(0));
  for (int d = 1; d < s->tensors(ids).shape_size(); ++d)
    EXPECT_EQ(b->tensors(ids).shape(d), s->tensors(ids).shape(d));
  ExpectReplaysFully(*b);
}

INSTANTIATE_TEST_SUITE_P(Data, Capture, ::testing::Values("lstm", "gpt2_like"));

// The H200 captures (fleet_samples/h200): bf16 autocast, channels-last activations, cuDNN's
// batch norm and attention backwards (no meta or CPU kernel: propagated as their portable
// equivalents), DLRM's sparse embedding gradients. ResNet-50 was captured at batch 64 and 128:
// the first scaled to 128 has the second's ops, each with the shapes, dtypes and strides of
// the other's inputs.
// One step of a trace (its execution trace alone).
proto::Workload Step(const std::string& path) {
  auto w = eg::LoadWorkload(path);
  EXPECT_THAT(w, IsOk());
  auto s = Select(*w, {});
  EXPECT_THAT(s, IsOk());
  return s.ok() ? *s : proto::Workload();
}

proto::Workload H200Step(const std::string& name) {
  return Step(mimic::testing::SourceDir() + "/fleet_samples/h200/" + name + ".et.json.gz");
}

TEST(H200Capture, ResNetScaledToTheOtherCapturedBatchHasThatCapturesShapes) {
  BatchReport rep;
  auto scaled = ScaleBatch(H200Step("resnet50_b64"), {.batch = 128}, &rep);
  ASSERT_THAT(scaled, IsOk());
  EXPECT_EQ(rep.old_batch, 64);
  EXPECT_GT(rep.portable_equivalents, 0);  // cudnn_batch_norm_backward
  const proto::Workload captured = H200Step("resnet50_b128");
  const std::vector<int> a = eg::ReplayableOps(*scaled, eg::OpTree(*scaled));
  const std::vector<int> b = eg::ReplayableOps(captured, eg::OpTree(captured));
  ASSERT_EQ(a.size(), b.size());
  // Each input tensor's dtype, shape and strides.
  auto tensors = [](const proto::Workload& w, int op) {
    std::vector<std::vector<int64_t>> out;
    std::function<void(const proto::Value&)> add = [&](const proto::Value& v) {
      if (v.kind_case() == proto::Value::kTensor && v.tensor() >= 0) {
        const proto::Tensor& t = w.tensors(v.tensor());
        out.push_back({t.dtype()});
        out.push_back({t.shape().begin(), t.shape().end()});
        out.push_back({t.strides().begin(), t.strides().end()});
      }
      if (v.kind_case() == proto::Value::kList)
        for (const proto::Value& item : v.list().items()) add(item);
    };
    for (const proto::Value& v : w.ops(op).inputs()) add(v);
    return out;
  };
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(scaled->ops(a[i]).name(), captured.ops(b[i]).name()) << "op " << i;
    EXPECT_EQ(tensors(*scaled, a[i]), tensors(captured, b[i])) << scaled->ops(a[i]).name();
  }
}

// GPT-2 (cuDNN's attention backward) and the DLRM (sparse gradients) at twice their batch:
// every tensor that changed holds twice the elements, one dimension doubled.
class H200Doubling : public ::testing::TestWithParam<const char*> {};

TEST_P(H200Doubling, DoublesEveryBatchDependentTensor) {
  const proto::Workload step = H200Step(GetParam());
  BatchReport rep;
  auto scaled = ScaleBatch(step, {.factor = 2}, &rep);
  ASSERT_THAT(scaled, IsOk());
  EXPECT_GT(rep.tensors_reshaped, 0);
  for (int i = 0; i < scaled->tensors_size(); ++i) {
    const proto::Tensor& before = step.tensors(i);
    const proto::Tensor& after = scaled->tensors(i);
    if (after.numel() == before.numel()) continue;
    EXPECT_EQ(after.numel(), 2 * before.numel()) << "tensor " << before.tensor_id();
    int doubled = 0;
    for (int d = 0; d < after.shape_size(); ++d) doubled += after.shape(d) == 2 * before.shape(d);
    EXPECT_EQ(doubled, 1) << "tensor " << before.tensor_id();
  }
}

INSTANTIATE_TEST_SUITE_P(Captures, H200Doubling, ::testing::Values("gpt2", "dlrm"));

// PARAM's public traces: a ResNet on one GPU (cuDNN's batch norms; its [256]-long parameters
// are not its batch, its 32 images are) and a 4 x 4 linear layer at batch 4, whose weight is
// read as a model input until the mm that reads it refuses [8, 4] x [8, 4].
proto::Workload PublicStep(const std::string& path) {
  return Step(mimic::testing::SharedTraces() + "/" + path);
}

TEST(PublicTrace, ResNetOnOneGpuScalesItsImages) {
  BatchReport rep;
  auto scaled =
      ScaleBatch(PublicStep("param-resnet-1gpu/resnet_1gpu_et.json.gz"), {.factor = 2}, &rep);
  ASSERT_THAT(scaled, IsOk());
  EXPECT_EQ(rep.old_batch, 32);
  EXPECT_EQ(rep.leaves_scaled, 2);  // the images and their labels
  EXPECT_GT(rep.portable_equivalents, 0);
}

TEST(PublicTrace, AParameterOfTheBatchsSizeStaysAParameter) {
  const proto::Workload step = PublicStep("param-pt2/pt2_et.json.gz");
  BatchReport rep;
  auto scaled = ScaleBatch(step, {.factor = 2}, &rep);
  ASSERT_THAT(scaled, IsOk());
  EXPECT_EQ(rep.old_batch, 4);
  EXPECT_EQ(rep.leaves_scaled, 1);
  int mms = 0;
  for (const proto::Op& op : scaled->ops()) {
    if (op.name() != "aten::mm") continue;
    EXPECT_EQ(scaled->tensors(op.inputs(0).tensor()).shape(0), 8);
    EXPECT_EQ(scaled->tensors(op.inputs(1).tensor()).shape(0), 4);
    ++mms;
  }
  EXPECT_GT(mms, 0);
}

// The capture's values go with their tensor to its place among the replacement's inputs.
TEST(Substitute, AReplacementCarriesInputValuesToTheirNewPlaces) {
  auto s = Select(Load("mlp"), {});
  ASSERT_THAT(s, IsOk());
  int mms = 0;
  for (proto::Op& op : *s->mutable_ops())
    if (op.name() == "aten::mm") {
      op.add_input_values()->set_input(1);  // mat2
      op.mutable_input_values(0)->set_zeros(0.25);
      ++mms;
    }
  ASSERT_GT(mms, 0);
  const std::string table = ::testing::TempDir() + "/swap_" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(WriteFileAtomic(table, R"({"substitutions": [
      {"match": "aten::mm", "action": "replace", "with": "aten::mm(Tensor self, Tensor mat2) -> Tensor",
       "inputs": [1, 0]}]})")
                  .ok());
  auto sub = Substitute(*s, table);
  ASSERT_THAT(sub, IsOk());
  int carried = 0;
  for (const proto::Op& op : sub->ops())
    if (op.name() == "aten::mm" && op.attrs().count("replaces")) {
      ASSERT_EQ(op.input_values_size(), 1);
      EXPECT_EQ(op.input_values(0).input(), 0);  // mat2 is now first
      EXPECT_EQ(op.input_values(0).zeros(), 0.25);
      ++carried;
    }
  EXPECT_EQ(carried, mms);
}

TEST(Substitute, ReplaceRunsAnAtenEquivalentOnTheSameTensors) {
  auto s = Select(Load("mlp"), {});
  ASSERT_THAT(s, IsOk());
  int mms = 0, relus = 0;
  for (int i : eg::ReplayableOps(*s, eg::OpTree(*s))) {
    mms += s->ops(i).name() == "aten::mm";
    relus += s->ops(i).name() == "aten::relu";
  }
  ASSERT_GT(mms, 0);
  ASSERT_GT(relus, 0);
  const std::string table = ::testing::TempDir() + "/replace_" + std::to_string(getpid()) + ".json";
  ASSERT_TRUE(WriteFileAtomic(table, R"({"substitutions": [
      {"match": "aten::mm", "action": "replace", "with": "aten::matmul(Tensor self, Tensor other) -> Tensor",
       "inputs": [0, 1]},
      {"match": "aten::relu", "action": "replace",
       "with": "aten::clamp_min(Tensor self, Scalar min) -> Tensor", "inputs": [0], "args": {"min": 0}}]})")
                  .ok());
  auto sub = Substitute(*s, table);
  ASSERT_THAT(sub, IsOk());
  int matmuls = 0, clamps = 0;
  for (const proto::Op& op : sub->ops()) {
    EXPECT_NE(op.name(), "aten::mm");
    if (op.name() == "aten::matmul" && op.attrs().count("replaces")) {
      ++matmuls;
      EXPECT_EQ(op.attrs().at("replaces").string_value(), "aten::mm");
      EXPECT_TRUE(op.has_cpu_span());  // the original's time stays with it
    }
    if (op.name() == "aten::clamp_min") {
      ++clamps;
      ASSERT_EQ(op.inputs_size(), 2);
      EXPECT_EQ(op.inputs(1).int_value(), 0);
    }
  }
  EXPECT_EQ(matmuls, mms);
  EXPECT_EQ(clamps, relus);
  const std::string& summary = sub->transformations(sub->transformations_size() - 1).summary();
  EXPECT_NE(summary.find("aten::mm -> replace aten::matmul: " + std::to_string(mms)), std::string::npos) << summary;
  EXPECT_GT(sub->original().iteration_ms_size(), 0);  // a replacement keeps the work: the original applies
  ExpectReplaysFully(*sub);  // every replacement's outputs have the recorded shapes and dtypes

  // Rules that cannot work are refused, naming the table and the rule.
  for (const char* bad : {
           R"({"substitutions": [{"match": "aten::mm", "action": "replace", "with": "aten::no_such_op(Tensor self) -> Tensor"}]})",
           R"({"substitutions": [{"match": "aten::mm", "action": "replace", "with": "aten::matmul(Tensor self, Tensor other) -> Tensor", "inputs": [0, 5]}]})",
           R"({"substitutions": [{"match": "aten::relu", "action": "replace", "with": "aten::clamp_min(Tensor self, Scalar min) -> Tensor", "inputs": [0], "args": {"max": 0}}]})",
           R"({"substitutions": [{"match": "aten::mm", "action": "replace"}]})"}) {
    ASSERT_TRUE(WriteFileAtomic(table, bad).ok());
    auto r = Substitute(*s, table);
    EXPECT_THAT(r, StatusIs(StatusCode::kInvalidInput)) << bad;
    const std::string m = r.status().message();
    EXPECT_EQ(m.rfind(table, 0), 0u) << m;
    EXPECT_TRUE(m.find("substitutions[0]") != std::string::npos || m.find("rule \"aten::mm\"") != std::string::npos) << m;
  }
}

TEST(Bundle, PackRoundTripsBitIdentical) {
  const proto::Workload w = Load("embbag_rec");
  const std::string path = ::testing::TempDir() + "/bundle_" + std::to_string(getpid());
  ASSERT_TRUE(WriteBundle(path, MakeBundle(w, 1234)).ok());
  auto b = ReadBundle(path);
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(b->seed(), 1234u);
  EXPECT_EQ(b->workload().SerializeAsString(), w.SerializeAsString());
  EXPECT_EQ(b->format().major(), kBundleFormatMajor);
}

TEST(Bundle, CorruptOrNewerBundlesAreRefused) {
  std::string payload;
  proto::Bundle b = MakeBundle(Load("mlp"), 1);
  ASSERT_TRUE(b.SerializeToString(&payload));
  const std::string path = ::testing::TempDir() + "/bundle_bad_" + std::to_string(getpid());
  ASSERT_TRUE(WriteBundle(path, b).ok());
  auto good = ReadBundle(path);
  ASSERT_THAT(good, IsOk());
  // Flip one payload byte: the checksum catches it.
  std::string bytes = "MIMICBN\n" + std::string(64, '0') + "\n" + payload;
  EXPECT_THAT(ParseBundle("x.bundle", bytes), StatusIs(StatusCode::kInvalidInput));
  b.mutable_format()->set_major(kBundleFormatMajor + 1);
  ASSERT_TRUE(WriteBundle(path, b).ok());
  EXPECT_THAT(ReadBundle(path), StatusIs(StatusCode::kUnsupported));
}

TEST(Standalone, CarriesLauncherRunnerAndBundleAndReadsThemBack) {
  const std::string dir = ::testing::TempDir() + "/standalone_" + std::to_string(getpid());
  const std::string launcher = dir + ".launcher", runner = dir + ".runner",
                    bundle = dir + ".bundle", exe = dir + ".exe", exe2 = dir + ".exe2";
  const std::string launcher_bytes =
                        "\x7f"
                        "ELF pretend launcher",
                    runner_bytes =
                        "\x7f"
                        "ELF pretend runner";
  ASSERT_TRUE(WriteFileAtomic(launcher, launcher_bytes).ok());
  ASSERT_TRUE(WriteFileAtomic(runner, runner_bytes).ok());
  const proto::Bundle b = MakeBundle(Load("mlp"), 77);
  ASSERT_TRUE(WriteBundle(bundle, b).ok());
  ASSERT_TRUE(BuildStandalone(launcher, runner, bundle, exe).ok());
  // Building from a standalone replaces its runner and bundle instead of stacking more.
  ASSERT_TRUE(BuildStandalone(exe, exe, bundle, exe2).ok());
  auto a = ReadFile(exe), c = ReadFile(exe2), raw = ReadFile(bundle);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(a->bytes.view().substr(0, launcher_bytes.size()), launcher_bytes);
  EXPECT_EQ(a->bytes.size(), launcher_bytes.size() + runner_bytes.size() + raw->bytes.size() + 32);
  EXPECT_EQ(c->bytes.size(),
            launcher_bytes.size() + launcher_bytes.size() + raw->bytes.size() + 32);
  auto embedded = ReadEmbeddedBundle(exe2);
  ASSERT_THAT(embedded, IsOk());
  ASSERT_TRUE(embedded->has_value());
  EXPECT_EQ((*embedded)->SerializeAsString(), b.SerializeAsString());
  auto part = FindEmbeddedRunner(exe);
  ASSERT_THAT(part, IsOk());
  ASSERT_TRUE(part->has_value());
  EXPECT_EQ(a->bytes.view().substr((*part)->offset, (*part)->size), runner_bytes);
  auto none = ReadEmbeddedBundle(runner);
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->has_value());
  auto no_runner = FindEmbeddedRunner(runner);
  ASSERT_THAT(no_runner, IsOk());
  EXPECT_FALSE(no_runner->has_value());
}

}  // namespace
}  // namespace mimic::synth

namespace mimic::synth {
namespace {

proto::Workload LoadRank(int world, int rank) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/ddp_mlp_" + std::to_string(world) + "r/";
  const std::string name = dir + "rank-" + std::to_string(rank);
  auto w = eg::LoadWorkload(name + ".et.json.gz", {.kineto_path = name + ".kineto.json.gz"});
  EXPECT_THAT(w, IsOk());
  return *w;
}

TEST(WorldSize, DataParallelCollectivesKeepPerRankSizesOnTheLargerWorld) {
  auto one = Select(LoadRank(2, 0), {});
  ASSERT_THAT(one, IsOk());
  const eg::CollectiveTotals before = eg::CountCollectives(*one);
  auto scaled = ScaleWorldSize(*one, 8);
  ASSERT_THAT(scaled, IsOk());
  EXPECT_EQ(scaled->provenance().world_size(), 8);
  EXPECT_EQ(scaled->provenance().process_groups(0).size(), 8);
  const eg::CollectiveTotals after = eg::CountCollectives(*scaled);
  EXPECT_EQ(after.issued, before.issued);
  EXPECT_EQ(after.bytes, before.bytes);  // all-reduce and broadcast: the same bytes per rank
  for (const proto::Op& op : scaled->ops())
    if (eg::IsCommunication(op)) {
      EXPECT_EQ(op.collective().group_size(), 8);
    }
  ASSERT_EQ(scaled->transformations_size(), 2);
  EXPECT_EQ(scaled->transformations(1).name(), "world_size");
}

TEST(WorldSize, AllGatherReceivesOneInputPerRank) {
  const std::string path = mimic::testing::SharedTraces() + "/chakra-allgather/allgather_1.0.2_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  auto scaled = ScaleWorldSize(*w, 4);
  ASSERT_THAT(scaled, IsOk());
  int gathers = 0;
  for (const proto::Op& op : scaled->ops()) {
    if (!eg::IsCommunication(op)) continue;
    ++gathers;
    EXPECT_EQ(op.collective().in_elems(), 1);
    EXPECT_EQ(op.collective().out_elems(), 4);
    EXPECT_EQ(eg::CollectiveBytes(op.collective()), 16);
  }
  EXPECT_EQ(gathers, 10);
}

TEST(WorldSize, NeedsATraceThatKnowsItsWorld) {
  EXPECT_THAT(ScaleWorldSize(Load("mlp"), 4), StatusIs(StatusCode::kInvalidInput));
  EXPECT_THAT(ScaleWorldSize(LoadRank(2, 1), 0), StatusIs(StatusCode::kInvalidInput));
}

TEST(Collectives, BatchScalingResizesTheBucketsWithTheirGradients) {
  // Gradient buckets hold parameters, not activations: doubling the batch keeps them.
  auto one = Select(LoadRank(2, 0), {});
  ASSERT_THAT(one, IsOk());
  auto scaled = ScaleBatch(*one, {.factor = 2});
  ASSERT_THAT(scaled, IsOk());
  EXPECT_EQ(eg::CountCollectives(*scaled).bytes, eg::CountCollectives(*one).bytes);
  EXPECT_EQ(eg::CountCollectives(*scaled).issued, 5);
}

}  // namespace
}  // namespace mimic::synth
