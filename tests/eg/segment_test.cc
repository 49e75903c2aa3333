// A training step is everything that ran between its start and end, on every thread: the
// backward that the autograd engine runs on a thread of its own (on a GPU, and in the CPU capture
// of tests/data/make_autograd_thread.py) belongs to the step, in its recorded order.
#include <map>
#include <string>

#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

std::map<std::string, int> CountByName(const proto::Workload& w, const std::vector<int>& ops) {
  std::map<std::string, int> n;
  for (int i : ops) ++n[w.ops(i).name()];
  return n;
}

std::vector<int> FirstStep(const proto::Workload& w, const OpTree& tree) {
  auto seg = FindSegment(w, -1, "");
  EXPECT_THAT(seg, IsOk());
  return ReplayableOps(w, tree, tree.IndexOf((*seg)->op_id()), /*include_compiled=*/true);
}

// PARAM's ResNet on one GPU: the backward runs on the autograd engine's device thread.
TEST(Segment, AGpuStepHoldsTheBackwardOfTheAutogradThread) {
  auto w = LoadWorkload(testing::SharedTraces() + "/param-resnet-1gpu/resnet_1gpu_et.json.gz");
  ASSERT_THAT(w, IsOk());
  const OpTree tree(*w);
  const std::vector<int> step = FirstStep(*w, tree);
  std::map<std::string, int> n = CountByName(*w, step);
  EXPECT_GT(n["aten::convolution_backward"], 0);
  EXPECT_EQ(n["aten::convolution_backward"], n["aten::conv2d"]);
  std::map<int64_t, int> threads;
  for (int i : step) ++threads[w->ops(i).thread()];
  EXPECT_EQ(threads.size(), 2u);
  // In start order across threads: ids increase.
  for (size_t k = 1; k < step.size(); ++k)
    EXPECT_LT(w->ops(step[k - 1]).id(), w->ops(step[k]).id());
  // Nothing of the next step: each step holds its own backward, and the three add up to the trace.
  size_t all_steps = 0;
  for (const proto::Segment& s : w->segments())
    if (s.kind() == proto::Segment::ITERATION)
      all_steps += ReplayableOps(*w, tree, tree.IndexOf(s.op_id()), true).size();
  EXPECT_LE(all_steps, ReplayableOps(*w, tree, -1, true).size());
  EXPECT_EQ(all_steps, 3 * step.size());
}

TEST(Segment, ACpuStepHoldsTheBackwardRunOnAnotherThread) {
  const std::string data = testing::SourceDir() + "/tests/data/autograd_thread.";
  auto w = LoadWorkload(data + "et.json.gz", {.kineto_path = data + "kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  const OpTree tree(*w);
  const std::vector<int> step = FirstStep(*w, tree);
  std::map<std::string, int> n = CountByName(*w, step);
  EXPECT_EQ(n["aten::convolution_backward"], 2);
  EXPECT_EQ(n["aten::convolution_backward"], n["aten::conv2d"]);
  EXPECT_EQ(step.size(), ReplayableOps(*w, tree, -1, true).size());
  std::vector<char> member = SegmentMembers(*w, tree, tree.IndexOf(w->segments(0).op_id()));
  int on_other_threads = 0;
  for (int i : step) on_other_threads += w->ops(i).thread() != w->ops(step.front()).thread();
  EXPECT_GT(on_other_threads, 0);
  for (int i : step) EXPECT_TRUE(member[i]);
}

}  // namespace
}  // namespace mimic::eg
