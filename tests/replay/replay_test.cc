// CPU replay of the fleet samples and of public CUDA traces remapped to the CPU.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/min.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "mimic/eg/workload.h"
#include "mimic/replay/replayer.h"
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

// The transformer fleet sample: AdamW steps each parameter with an aten::sqrt of its
// exp_avg_sq, after updating it in place with mul_ and addcmul_.
struct Transformer {
  Transformer() {
    auto loaded =
        eg::LoadWorkload(mimic::testing::SourceDir() + "/fleet_samples/transformer.et.json.gz");
    EXPECT_THAT(loaded, IsOk());
    if (!loaded.ok()) return;
    w = std::move(*loaded);
    const eg::OpTree tree(w);
    auto seg = eg::FindSegment(w, -1, "");
    EXPECT_THAT(seg, IsOk());
    if (seg.ok()) ops = eg::ReplayableOps(w, tree, tree.IndexOf((*seg)->op_id()), true);
  }
  // Plans the first step's ops into `store` and prepares its inputs.
  void Prepare(TensorStore& store) const {
    const Status planned = store.Plan(ops);
    ASSERT_TRUE(planned.ok()) << planned.message();
    const Status prepared = store.Allocate();
    ASSERT_TRUE(prepared.ok()) << prepared.message();
  }
  TensorStore Store() const {
    return TensorStore(w, c10::Device(c10::kCPU), at::make_generator<at::CPUGeneratorImpl>(1));
  }
  proto::Workload w;
  std::vector<int> ops;  // the first step's replayable ops
};

// Adam's exp_avg_sq reaches aten::sqrt: the replay fills it in [0, 1), not with the symmetric
// fill that makes sqrt compute NaNs (9x slower on this project's CPU host).
TEST(TensorStore, InputsOfSqrtAreFilledNonNegative) {
  const Transformer t;
  TensorStore store = t.Store();
  ASSERT_NO_FATAL_FAILURE(t.Prepare(store));
  int sqrt_inputs = 0, symmetric = 0;
  for (int i : t.ops) {
    const proto::Op& op = t.w.ops(i);
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

// The capture's value profile saw zero rows, scattered zeros and subnormals in what each
// aten::sqrt read (AdamW's exp_avg_sq, after its in-place mul_ and addcmul_): the state's
// prepared buffer holds them in those shares, over the non-negative fill, before the replay's
// own updates run.
TEST(TensorStore, TheStateASqrtReadsIsPreparedWithTheProfilesShares) {
  Transformer t;
  std::set<int> states;
  for (int i : t.ops)
    if (proto::Op& op = *t.w.mutable_ops(i); op.name() == "aten::sqrt") {
      proto::InputValues& v = *op.add_input_values();
      v.set_zeros(0.5), v.set_zero_rows(0.25), v.set_subnormals(0.125);
      states.insert(op.inputs(0).tensor());
    }
  TensorStore store = t.Store();
  ASSERT_NO_FATAL_FAILURE(t.Prepare(store));
  EXPECT_EQ(store.value_fills().leaves, static_cast<int64_t>(states.size()));
  int checked = 0;
  for (int state : states) {
    const at::Tensor x = store.Get(state);
    const double n = static_cast<double>(x.numel());
    if (n < 4096) continue;  // shares of a few elements are too coarse to check
    ++checked;
    const at::Tensor zero = x.eq(0);
    EXPECT_NEAR(zero.sum().item<double>() / n, 0.5, 0.03) << state;
    EXPECT_NEAR(
        x.gt(0).logical_and_(x.lt(std::numeric_limits<float>::min())).sum().item<double>() / n,
        0.125, 0.03)
        << state;
    EXPECT_GE(x.min().item<float>(), 0.0f) << state;
    if (x.dim() >= 2) {
      EXPECT_DOUBLE_EQ(zero.reshape({x.size(0), -1}).all(1).sum().item<double>(),
                       std::round(0.25 * x.size(0)))
          << state;
    }
  }
  EXPECT_GT(checked, 2);
}

// Without a profile, or on an op whose time does not depend on values, nothing changes.
TEST(TensorStore, ProfiledInputsOfOtherOpsKeepTheUniformFill) {
  Transformer t;
  for (int i : t.ops)
    if (proto::Op& op = *t.w.mutable_ops(i); op.name() == "aten::addcmul_")
      op.add_input_values()->set_zeros(1);
  TensorStore store = t.Store();
  ASSERT_NO_FATAL_FAILURE(t.Prepare(store));
  EXPECT_EQ(store.value_fills().inputs, 0);
  EXPECT_EQ(store.value_fills().leaves, 0);
  for (int i : t.ops) {
    if (const proto::Op& op = t.w.ops(i); op.name() == "aten::addcmul_") {
      EXPECT_GT(store.Get(op.inputs(0).tensor()).ne(0).sum().item<int64_t>(), 0) << op.id();
    }
  }
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

namespace mimic::replay {
namespace {

// A capture that saved its integer inputs beside the trace (tests/data/make_hot_embedding.py:
// nine in ten embedding indices hit three hot rows): every integer tensor the replay prepares
// holds exactly the values saved for it, not values drawn from the recorded ranges.
TEST(TensorStore, IntegerInputsHoldTheValuesTheCaptureSaved) {
  auto w = eg::LoadWorkload(mimic::testing::SourceDir() + "/tests/data/hot_embedding.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->integer_data_size(), 4);  // embedding's, embedding_bag's two, the labels
  const eg::OpTree tree(*w);
  auto seg = eg::FindSegment(*w, -1, "");
  ASSERT_THAT(seg, IsOk());
  const std::vector<int> ops = eg::ReplayableOps(*w, tree, tree.IndexOf((*seg)->op_id()), true);
  TensorStore store(*w, c10::Device(c10::kCPU), at::make_generator<at::CPUGeneratorImpl>(1));
  ASSERT_TRUE(store.Plan(ops).ok());
  ASSERT_TRUE(store.Allocate().ok());
  EXPECT_EQ(store.integer_inputs().recorded, 4);
  EXPECT_EQ(store.integer_inputs().leaves, 4);
  EXPECT_THAT(store.integer_inputs().rejected, ::testing::IsEmpty());
  int64_t hot = 0, indices = 0;
  for (const proto::IntegerData& d : w->integer_data()) {
    const int t = eg::InputTensorByOrdinal(w->ops(tree.IndexOf(d.op_id())), d.ordinal());
    ASSERT_GE(t, 0) << d.file();
    const at::Tensor x = store.Get(t).contiguous();
    ASSERT_EQ(x.scalar_type(), at::kLong) << d.file();
    ASSERT_EQ(static_cast<size_t>(x.numel()) * sizeof(int64_t), d.data().size()) << d.file();
    EXPECT_EQ(std::memcmp(x.data_ptr(), d.data().data(), d.data().size()), 0) << d.file();
    if (x.numel() == 48) {  // the embedding's 8x6 tokens
      indices = x.numel();
      const int64_t* v = x.data_ptr<int64_t>();
      for (int64_t k = 0; k < x.numel(); ++k) hot += v[k] == 5 || v[k] == 17 || v[k] == 42;
    }
  }
  EXPECT_GT(hot, indices / 2);  // the saved skew, which no draw from 0..499 would give
}

// Saved values that do not fit their tensor are not used, and the report says why; the tensor
// is then filled from its range as before.
TEST(TensorStore, SavedIntegerDataThatDoesNotFitIsRejected) {
  auto w = eg::LoadWorkload(mimic::testing::SourceDir() + "/tests/data/hot_embedding.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ASSERT_GT(w->integer_data_size(), 0);
  for (proto::IntegerData& d : *w->mutable_integer_data()) {
    if (d.data().size() != 48 * sizeof(int64_t)) continue;
    const int64_t out_of_range = 10000;  // beyond the 500-row table
    std::memcpy(d.mutable_data()->data(), &out_of_range, sizeof(out_of_range));
  }
  (*w->mutable_integer_data())[0].mutable_data()->append("x");  // a size that fits nothing
  ReplayOptions options = OneIterationOnCpu();
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->integer_inputs.leaves, 4);
  EXPECT_EQ(r->integer_inputs.recorded, 2);
  ASSERT_EQ(r->integer_inputs.rejected.size(), 2u);
  std::string all = r->integer_inputs.rejected[0] + "\n" + r->integer_inputs.rejected[1];
  EXPECT_NE(all.find("bytes for a tensor of"), std::string::npos) << all;
  EXPECT_NE(all.find("the trace recorded"), std::string::npos) << all;
}

}  // namespace
}  // namespace mimic::replay

namespace mimic::replay {
namespace {

// tests/data/make_data_dependent.py: rows routed by nonzero on values the replay's own fill
// never selects, a sparse embedding gradient (a tensor the trace records without storage)
// stepped by SparseAdam, whose sqrt reads its state through sparse_mask and add_, and binary
// cross-entropy on targets in [0, 1]. Every op replays in every iteration, with the recorded
// shapes: nonzero's output is replaced by a stand-in of the recorded shape, the sparse gradient
// flows from its producer, the state is filled non-negative (no NaN reaches the loss in the
// later iterations), the targets lie in [0, 1), and the saved indices give the recorded nnz.
TEST(Replay, DataDependentShapesSparseGradientsAndDomainsReplayEveryOp) {
  const std::string dir = mimic::testing::SourceDir() + "/tests/data/";
  auto w = eg::LoadWorkload(dir + "data_dependent.et.json.gz",
                            {.kineto_path = dir + "data_dependent.kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  ReplayOptions options = OneIterationOnCpu();
  options.iters = 3;
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  for (const SkippedOp& s : r->skipped)
    ADD_FAILURE() << s.name << ": " << s.reason << ": " << s.detail;
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->outputs_mismatched, 0);
  for (const std::string& m : r->mismatches) ADD_FAILURE() << m;
  ASSERT_EQ(r->outputs_stand_ins, 1);
  EXPECT_NE(r->stand_ins[0].find("aten::nonzero) made [0, 1], recorded [16, 1]"), std::string::npos)
      << r->stand_ins[0];
  EXPECT_EQ(r->integer_inputs.recorded, 1);
}

}  // namespace
}  // namespace mimic::replay
