// What issued each top-level op of a training step (forward, the autograd engine's backward, the
// optimizer), and the recorded host gaps before them by issuer, on a real CPU capture.
#include <map>
#include <string>

#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

// fleet_samples/mlp (scripts/capture_fleet_samples.py): its first step's top-level ops by issuer,
// as a reading of the ET's parent links (ctrl_deps) outside Mimic counts them: 9 forward ops,
// 43 under autograd::engine::evaluate_function, 24 under Optimizer.step#SGD.step or
// Optimizer.zero_grad#SGD.zero_grad.
TEST(Issuer, TheMlpStepsOpsByWhatIssuedThem) {
  auto w = LoadWorkload(testing::SourceDir() + "/fleet_samples/mlp.et.json.gz");
  ASSERT_THAT(w, IsOk());
  const OpTree tree(*w);
  auto seg = FindSegment(*w, -1, "");
  ASSERT_THAT(seg, IsOk());
  std::map<std::string, int> n;
  const std::vector<int> top = ReplayableOps(*w, tree, tree.IndexOf((*seg)->op_id()), true);
  for (int i : top) ++n[IssuerName(IssuerOf(*w, tree, i))];
  EXPECT_EQ(n["forward"], 9);
  EXPECT_EQ(n["backward"], 43);
  EXPECT_EQ(n["optimizer"], 24);
  // SGD's step ends the step.
  EXPECT_EQ(IssuerOf(*w, tree, top.back()), Issuer::kOptimizer);
}

// The gaps by issuer are the recorded gaps of the step's ops (RecordedHostGaps, the rule of
// replay --host-gaps recorded), all but the first op's, each filed under its op's issuer.
TEST(Issuer, RecordedGapsByIssuerSplitTheStepsRecordedGaps) {
  auto w =
      LoadWorkload(testing::SourceDir() + "/fleet_samples/mlp.et.json.gz",
                   {.kineto_path = testing::SourceDir() + "/fleet_samples/mlp.kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  auto g = RecordedGapsByIssuer(*w, {1.5});
  ASSERT_THAT(g, IsOk());
  EXPECT_EQ(g->us[0].size() + 1, 9u);  // no gap before the step's first op, a forward one
  EXPECT_EQ(g->us[1].size(), 43u);
  EXPECT_EQ(g->us[2].size(), 24u);
  const OpTree tree(*w);
  auto seg = FindSegment(*w, -1, "");
  ASSERT_THAT(seg, IsOk());
  RecordedHostGaps gaps(*w, -1, {1.5});
  double total = 0, by_issuer = 0;
  for (int i : ReplayableOps(*w, tree, tree.IndexOf((*seg)->op_id()), true))
    total += gaps.Before(w->ops(i));
  for (const auto& us : g->us)
    for (double v : us) {
      EXPECT_GE(v, 0);
      by_issuer += v;
    }
  EXPECT_NEAR(by_issuer, total, 1e-6);
  EXPECT_GT(by_issuer, 0);

  // Without a Kineto trace there is nothing recorded.
  auto bare = LoadWorkload(testing::SourceDir() + "/fleet_samples/mlp.et.json.gz");
  ASSERT_THAT(bare, IsOk());
  EXPECT_THAT(RecordedGapsByIssuer(*bare, {1.5}), StatusIs(StatusCode::kInvalidInput));
}

}  // namespace
}  // namespace mimic::eg
