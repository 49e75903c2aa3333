// The CUDA executor, on a GPU: registered in CUDA builds only, and each test skips itself when
// no CUDA device is visible (scripts/gpu_check.sh runs them on a GPU machine).
#include "mimic/eg/workload.h"
#include "mimic/replay/executor.h"
#include "mimic/replay/replayer.h"
#include "testing.h"
#include "workload_builder.h"

namespace mimic::replay {
namespace {

using mimic::testing::WorkloadBuilder;

bool HaveGpu() {
  for (const ExecutorDevices& e : ListDevices())
    if (e.type == "cuda" && !e.devices.empty()) return true;
  return false;
}

#define MIMIC_SKIP_WITHOUT_GPU() \
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device visible"

TEST(CudaExecutor, IsTheBestDeviceWhenAGpuIsVisible) {
  MIMIC_SKIP_WITHOUT_GPU();
  EXPECT_EQ(BestDevice(), "cuda");
}

// A CPU capture replayed on the GPU: every op, device-timed per op, with the caching
// allocator's figures and NVML's.
TEST(CudaExecutor, ReplaysAFleetSampleWithDeviceTimingAndMemory) {
  MIMIC_SKIP_WITHOUT_GPU();
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = eg::LoadWorkload(dir + "transformer.et.json.gz",
                            {.kineto_path = dir + "transformer.kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.device = "cuda";
  options.per_op_device_time = true;
  options.warmup = 2;
  options.iters = 5;
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_TRUE(r->stop_reason.empty()) << r->stop_reason;
  EXPECT_EQ(r->executor, "cuda");
  EXPECT_EQ(r->replayed_ops, r->total_ops);
  EXPECT_EQ(r->outputs_mismatched, 0);
  EXPECT_TRUE(r->per_op_timed);
  double op_sum = 0;
  for (const OpNameStats& s : r->per_op) op_sum += s.replay_ms;
  EXPECT_GT(op_sum, 0);
  for (double ms : r->iteration_ms)
    EXPECT_GE(ms, 0.5 * op_sum);  // ops on one stream do not overlap
  EXPECT_GT(r->memory.peak_allocated_bytes, 0);
  EXPECT_GE(r->memory.reserved_bytes, r->memory.allocated_bytes);
  EXPECT_FALSE(r->device_metrics.source.empty());
}

TEST(CudaExecutor, TwoStreamsOverlapOnTheDevice) {
  MIMIC_SKIP_WITHOUT_GPU();
  WorkloadBuilder b;
  b.Step(1);
  const int64_t n = 4096;
  const int x = b.Tensor({n, n}), w1 = b.Tensor({n, n}), y = b.Tensor({n, n}),
            w2 = b.Tensor({n, n});
  const int a = b.Tensor({n, n}), p = b.Tensor({n, n}), c = b.Tensor({n, n});
  const char* mm = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
  const int64_t mm_a = b.Op(mm, {b.T(x), b.T(w1)}, {b.T(a)}, 7).id();
  const int64_t mm_b = b.Op(mm, {b.T(y), b.T(w2)}, {b.T(p)}, 20).id();
  const int64_t add =
      b.Op("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
           {b.T(a), b.T(p), b.I(1)}, {b.T(c)}, 7)
          .id();
  ReplayOptions options;
  options.device = "cuda";
  options.per_op_device_time = true;
  options.warmup = 2;
  options.iters = 3;
  auto r = Replay(b.workload(), options);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->lanes.size(), 2u);
  EXPECT_EQ(r->cross_lane_waits, 1);
  auto timing = [&](int64_t id) {
    for (const OpTiming& t : r->timeline)
      if (t.op_id == id) return t;
    return OpTiming{};
  };
  const OpTiming ta = timing(mm_a), tb = timing(mm_b), tc = timing(add);
  EXPECT_GE(tc.start_ms, tb.start_ms + tb.duration_ms - 1e-3);
  EXPECT_GE(tc.start_ms, ta.start_ms + ta.duration_ms - 1e-3);
}

TEST(CudaExecutor, OutOfMemoryStopsAndSuggestsLazyAllocation) {
  MIMIC_SKIP_WITHOUT_GPU();
  WorkloadBuilder b;
  b.Step(1);
  const int out = b.Tensor({1});
  proto::Value size;
  size.mutable_list()->add_items()->set_int_value(int64_t{1} << 42);  // 16 TiB of floats
  b.Op(
      "aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
      "device=None, "
      "bool? pin_memory=None) -> Tensor",
      {size}, {b.T(out)});
  ReplayOptions options;
  options.device = "cuda";
  options.warmup = 0;
  options.iters = 1;
  auto r = Replay(b.workload(), options);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->stop_reason, ::testing::HasSubstr("out of memory"));
  EXPECT_THAT(r->stop_reason, ::testing::HasSubstr("--lazy-alloc"));
}

}  // namespace
}  // namespace mimic::replay
