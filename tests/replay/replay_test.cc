// CPU replay of the fleet samples and of public CUDA traces remapped to the CPU.
#include "mimic/replay/replayer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/min.h>

#include <set>

#include "mimic/eg/workload.h"
#include "tensor_store.h"  // replay/src: the replay's own tensor store
#include "testing.h"

namespace mimic::replay {
namespace {

// One measured iteration, no warm-up, on the CPU.
ReplayOptions OneIterationOnCpu() {
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 1;
  return options;
}

class FleetSample : public ::testing::TestWithParam<const char*> {};

TEST_P(FleetSample, ReplaysEveryOpWithTheRecordedShapesAndDtypes) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  const std::string name = GetParam();
  auto w = eg::LoadWorkload(dir + name + ".et.json.gz", {.kineto_path = dir + name + ".kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 1;
  options.iters = 2;
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_GT(r->total_ops, 0);
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  for (const SkippedOp& s : r->skipped) ADD_FAILURE() << s.name << ": " << s.reason << ": " << s.detail;
  EXPECT_GT(r->outputs_checked, 0);
  EXPECT_EQ(r->outputs_mismatched, 0);
  for (const std::string& m : r->mismatches) ADD_FAILURE() << m;
  ASSERT_EQ(r->iteration_ms.size(), 2u);
  for (double ms : r->iteration_ms) EXPECT_GT(ms, 0);
  EXPECT_EQ(r->selection, "ProfilerStep#1");
}

INSTANTIATE_TEST_SUITE_P(Samples, FleetSample, ::testing::Values("mlp", "cnn_bn", "transformer", "embbag_rec"));

// A capture whose trace reuses a freed float storage id for max-pool indices (int64): the
// indices once became a view of float data and max_pool2d_with_indices_backward wrote out of
// bounds. Index tensors now get their own buffer with valid values.
TEST(Replay, ReusedStorageIdsDoNotAliasIndexTensors) {
  const std::string path = mimic::testing::SourceDir() + "/tests/data/cnn_bn_storage_reuse.et.json.gz";
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.warmup = 0;
  options.iters = 2;
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->outputs_mismatched, 0);
  EXPECT_TRUE(r->stop_reason.empty()) << r->stop_reason;
}

TEST(Replay, CudaTraceIsRemappedToTheCpu) {
  const std::string path = mimic::testing::SharedTraces() + "/param-linear/linear_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  ReplayOptions options = OneIterationOnCpu();
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->outputs_mismatched, 0);
}

TEST(Replay, CollectivesAreSkippedAndCountedNotFatal) {
  const std::string path = mimic::testing::SharedTraces() + "/chakra-allgather/allgather_1.0.2_et.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = eg::LoadWorkload(path);
  ASSERT_THAT(w, IsOk());
  ReplayOptions options = OneIterationOnCpu();
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  // 10 all-gathers and the 10 record_param_comms "wait"s that wait for them.
  EXPECT_EQ(r->skipped_by_reason["collective"], 20);
  EXPECT_EQ(r->replayed_ops + 20, r->total_ops);
  // Under --strict the first of them stops the replay before it starts; the result still
  // comes back (the command writes its report and exits 1).
  options.strict = true;
  auto strict = Replay(*w, options);
  ASSERT_THAT(strict, IsOk());
  EXPECT_THAT(strict->stop_reason, ::testing::HasSubstr("cannot be replayed (--strict): collective"));
  EXPECT_TRUE(strict->iteration_ms.empty());
}

TEST(Replay, SelectionErrorsAreInvalidInput) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = eg::LoadWorkload(dir + "mlp.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.iteration = 99;
  EXPECT_THAT(Replay(*w, options), StatusIs(StatusCode::kInvalidInput));
  options.iteration = -1;
  options.label = "no such label";
  EXPECT_THAT(Replay(*w, options), StatusIs(StatusCode::kInvalidInput));
  options.label.clear();
  options.device = "tpu:0";
  EXPECT_FALSE(Replay(*w, options).ok());
}

TEST(Replay, SameSeedSameInputs) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = eg::LoadWorkload(dir + "embbag_rec.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ReplayOptions options = OneIterationOnCpu();
  auto a = Replay(*w, options);
  auto b = Replay(*w, options);
  options.seed += 1;
  auto c = Replay(*w, options);
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(a->inputs_sha256.size(), 64u);
  EXPECT_EQ(a->inputs_sha256, b->inputs_sha256);  // the seed drives every random content
  EXPECT_NE(a->inputs_sha256, c->inputs_sha256);
  EXPECT_EQ(a->preallocated_bytes, c->preallocated_bytes);
  EXPECT_EQ(a->replayed_ops, a->total_ops);
}

}  // namespace
}  // namespace mimic::replay

namespace mimic::replay {
namespace {

// Adam's exp_avg_sq reaches aten::sqrt: the replay fills it in [0, 1), not with the symmetric
// fill that makes sqrt compute NaNs (9x slower on this project's CPU host).
TEST(TensorStore, InputsOfSqrtAreFilledNonNegative) {
  auto w = eg::LoadWorkload(mimic::testing::SourceDir() + "/fleet_samples/transformer.et.json.gz");
  ASSERT_THAT(w, IsOk());
  const eg::OpTree tree(*w);
  auto seg = eg::FindSegment(*w, -1, "");
  ASSERT_THAT(seg, IsOk());
  const std::vector<int> ops = eg::ReplayableOps(*w, tree, tree.IndexOf((*seg)->op_id()), true);
  TensorStore store(*w, c10::Device(c10::kCPU), at::make_generator<at::CPUGeneratorImpl>(1));
  const Status planned = store.Plan(ops);
  ASSERT_TRUE(planned.ok()) << planned.message();
  const Status prepared = store.Allocate();
  ASSERT_TRUE(prepared.ok()) << prepared.message();
  int sqrt_inputs = 0, symmetric = 0;
  for (int i : ops) {
    const proto::Op& op = w->ops(i);
    if (op.inputs_size() == 0 || op.inputs(0).kind_case() != proto::Value::kTensor) continue;
    const at::Tensor x = store.Get(op.inputs(0).tensor());
    if (!x.is_floating_point() || x.numel() < 16) continue;
    if (op.name() == "aten::sqrt") {
      EXPECT_GE(x.min().item<float>(), 0.0f) << "op " << op.id();
      ++sqrt_inputs;
    } else if (op.name() == "aten::linear" && x.min().item<float>() < 0) {
      ++symmetric;  // activations keep the symmetric fill
    }
  }
  EXPECT_GT(sqrt_inputs, 10);
  EXPECT_GT(symmetric, 0);
}

}  // namespace
}  // namespace mimic::replay

namespace mimic::replay {
namespace {

// PyTorch 2.x optimizers with foreach=True (the default on CUDA): Adam, AdamW and Adagrad step
// with aten::_foreach_* ops taking Tensor[] and Scalar[] arguments; every one replays.
TEST(Replay, ForeachOptimizersReplayEveryOp) {
  const std::string dir = mimic::testing::SourceDir() + "/tests/data/";
  auto w = eg::LoadWorkload(dir + "foreach_optimizers.et.json.gz",
                            {.kineto_path = dir + "foreach_optimizers.kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  ReplayOptions options = OneIterationOnCpu();
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  for (const SkippedOp& s : r->skipped) ADD_FAILURE() << s.name << ": " << s.reason << ": " << s.detail;
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->outputs_mismatched, 0);
  std::set<std::string> foreach;
  for (const OpNameStats& s : r->per_op)
    if (s.name.rfind("aten::_foreach_", 0) == 0) foreach.insert(s.name);
  for (const char* name : {"aten::_foreach_div_", "aten::_foreach_addcdiv_", "aten::_foreach_addcmul_",
                           "aten::_foreach_sqrt", "aten::_foreach_lerp_"})
    EXPECT_TRUE(foreach.count(name)) << name;
}

}  // namespace
}  // namespace mimic::replay
