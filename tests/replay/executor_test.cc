// The executor on the CPU: lanes from the original's streams run concurrently and join where
// their data meets; an out-of-memory stops the replay; memory, lazy allocation and profiles.
#include "mimic/replay/executor.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <sys/resource.h>
#include <torch/library.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "mimic/base/file.h"
#include "mimic/base/host.h"
#include "mimic/eg/kineto.h"
#include "mimic/eg/workload.h"
#include "mimic/replay/overheads.h"
#include "mimic/replay/page_faults.h"
#include "mimic/replay/replayer.h"
#include "testing.h"
#include "workload_builder.h"

namespace mimic::replay {
namespace {

using mimic::testing::WorkloadBuilder;

constexpr const char* kMm = "aten::mm(Tensor self, Tensor mat2) -> Tensor";
constexpr const char* kAdd =
    "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";

const OpTiming& TimingOf(const ReplayResult& r, int64_t op_id) {
  static const OpTiming none{-1, 0, -1, 0};
  for (const OpTiming& t : r.timeline)
    if (t.op_id == op_id) return t;
  ADD_FAILURE() << "op " << op_id << " is not in the timeline";
  return none;
}

// Two matrix products the original ran on streams 7 and 20, and an add of both on stream 7: on
// the CPU each stream is a lane of its own, the products overlap, and the add waits for both.
TEST(Executor, TwoStreamsOverlapAndJoinWhereTheirDataMeets) {
  WorkloadBuilder b;
  b.Step(1);
  const int64_t n = 1024;  // ~0.1 s per product on one core: scheduling delays on a busy host stay
                           // small beside it
  const int x = b.Tensor({n, n}), w1 = b.Tensor({n, n}), y = b.Tensor({n, n}),
            w2 = b.Tensor({n, n});
  const int a = b.Tensor({n, n}), p = b.Tensor({n, n}), c = b.Tensor({n, n});
  const int64_t mm_a = b.Op(kMm, {b.T(x), b.T(w1)}, {b.T(a)}, 7).id();
  const int64_t mm_b = b.Op(kMm, {b.T(y), b.T(w2)}, {b.T(p)}, 20).id();
  const int64_t add = b.Op(kAdd, {b.T(a), b.T(p), b.I(1)}, {b.T(c)}, 7).id();
  ReplayOptions options;
  options.device = "cpu";
  options.num_threads = 1;  // one core per lane
  options.warmup = 1;
  options.iters = 1;
  auto r = Replay(b.workload(), options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, 3);
  EXPECT_EQ(r->outputs_mismatched, 0);
  ASSERT_EQ(r->lanes.size(), 2u);
  EXPECT_EQ(r->lanes[0].original_stream, 7);  // the stream with the most kernels
  EXPECT_EQ(r->lanes[1].original_stream, 20);
  EXPECT_EQ(r->lanes[0].ops, 2);
  EXPECT_EQ(r->cross_lane_waits, 1);  // the add waits for stream 20's product, nothing else
  const OpTiming &ta = TimingOf(*r, mm_a), &tb = TimingOf(*r, mm_b), &tc = TimingOf(*r, add);
  EXPECT_NE(ta.lane, tb.lane);
  EXPECT_LT(std::max(ta.start_ms, tb.start_ms),
            std::min(ta.start_ms + ta.duration_ms, tb.start_ms + tb.duration_ms))
      << "the two products did not overlap";
  EXPECT_GE(tc.start_ms, ta.start_ms + ta.duration_ms);
  EXPECT_GE(tc.start_ms, tb.start_ms + tb.duration_ms);
}

// The host's threads, this process's included.
int64_t ThreadsOfThisProcess() {
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.exists();
  return n;
}

struct ThreadsSeen {
  at::Tensor a = at::ones({512, 512});  // made on the driving thread, as a replay's state is
  int64_t during_product = 0;
};

// A matrix product first thing on its thread: a BLAS call that no at::parallel_for preceded.
void ProductThenCountThreads(void* ctx, int32_t) {
  auto& seen = *static_cast<ThreadsSeen*>(ctx);
  (void)at::mm(seen.a, seen.a);
  seen.during_product = ThreadsOfThisProcess();
}

// A lane runs with the thread count the replay set, not with the host's: a lane's matrix
// product at one thread starts no thread pool of its own (before, each lane's BLAS ran a pool
// of every core, and its threads outlived the lane).
TEST(Executor, ALaneRunsWithTheReplaysThreadCount) {
  at::set_num_threads(1);
  auto executor = CreateExecutor("cpu");
  ASSERT_THAT(executor, IsOk());
  const int64_t before = ThreadsOfThisProcess();
  const Status configured = (*executor)->Configure(2, 0, 0, false);
  ASSERT_TRUE(configured.ok()) << configured.message();
  (*executor)->BeginIteration();
  ThreadsSeen seen;
  (*executor)->Submit(1, {}, Work{ProductThenCountThreads, &seen, 0}, -1, -1);
  (*executor)->EndIteration();
  EXPECT_EQ(seen.during_product, before + 2) << "two lanes' threads and nothing else";
}

// A trace whose fp32 GEMM kernels ran in TF32 is replayed with TF32 matmuls allowed, and the
// process's setting is given back after; one that shows no TF32 kernel keeps PyTorch's default.
TEST(Executor, FloatMatmulsMultiplyInTheOriginalsPrecisionForTheReplayOnly) {
  auto replay = [](const char* kernel) {
    WorkloadBuilder b;
    b.Step(1);
    const int x = b.Tensor({64, 64}), y = b.Tensor({64, 64}), z = b.Tensor({64, 64});
    b.Op(kMm, {b.T(x), b.T(y)}, {b.T(z)}, 7).mutable_kernels(0)->set_name(kernel);
    ReplayOptions options;
    options.device = "cpu";
    options.warmup = 0;
    options.iters = 1;
    auto r = Replay(b.workload(), options);
    EXPECT_THAT(r, IsOk());
    EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());  // given back
    return r.ok() ? r->fp32_matmul : "";
  };
  ASSERT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_EQ(replay("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>()"),
            "tf32");
  EXPECT_EQ(replay("ampere_sgemm_128x64_nn"), "ieee");
}

// By default the heap is kept and, where the capture recorded the original's page faults per
// step, the replay takes as many a step on purpose, on top of its own; asked to keep or trim
// the heap, or with nothing recorded, it takes none.
TEST(Executor, TheHeapTakesTheOriginalsPageFaultsOnPurpose) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({1024, 1000}), y = b.Tensor({1024, 1000});
  b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)});
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 2;
  options.iters = 3;
  proto::Workload recorded = b.workload();
  recorded.mutable_original()->set_page_faults_per_iteration(3000);
  auto taken = Replay(recorded, options);
  auto unrecorded = Replay(b.workload(), options);
  options.heap = ReplayOptions::Heap::kRetained;
  auto retained = Replay(recorded, options);
  options.heap = ReplayOptions::Heap::kTrimmed;
  auto trimmed = Replay(recorded, options);
  for (const auto* r : {&taken, &unrecorded, &retained, &trimmed}) ASSERT_THAT(*r, IsOk());
  EXPECT_EQ(trimmed->heap, "default");
  for (const auto* r : {&unrecorded, &retained, &trimmed})
    EXPECT_THAT((*r)->heap, ::testing::Not(::testing::HasSubstr("on purpose")));
  // Under a sanitizer malloc is not glibc's and the heap cannot be kept: "default" then, and
  // no faults are taken on top of a heap that makes its own.
  if (RetainFreedHeap().empty()) {
    EXPECT_EQ(taken->heap, "default");
    return;
  }
  EXPECT_THAT(retained->heap, ::testing::StartsWith("retained"));
  EXPECT_THAT(taken->heap, ::testing::StartsWith("retained"));
  EXPECT_THAT(taken->heap,
              ::testing::HasSubstr("the original's 3000 page faults a step taken on purpose"));
  // Each step writes 3,000 fresh pages; beyond them, at most y's own 1,000 pages and a few
  // (the heap may put y elsewhere in a step), as with nothing recorded.
  EXPECT_GE(taken->page_faults_per_iteration, 3000);
  EXPECT_LT(taken->page_faults_per_iteration, 3000 + 1500);
  EXPECT_LT(unrecorded->page_faults_per_iteration, 1500);
}

int64_t ThisThreadsMinorFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// The faults taken on purpose are taken as an op's output is written: by its intra-op threads,
// each a part, not all by the thread that issues the op.
TEST(Executor, FaultsTakenOnPurposeAreSplitAmongTheIntraOpThreads) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  FreshPages pages(4096);
  ASSERT_EQ(pages.pages(), 4096);
  const int64_t before = MinorPageFaults(), mine_before = ThisThreadsMinorFaults();
  FaultInOnIntraOpThreads(pages, 4096);
  const int64_t all = MinorPageFaults() - before, mine = ThisThreadsMinorFaults() - mine_before;
  at::set_num_threads(threads);
  EXPECT_GE(all, 4096);
  EXPECT_LT(mine, 3 * 4096 / 4) << "of " << all << " faults, the issuing thread took";
  FaultInOnIntraOpThreads(pages, 1);  // all taken since the mapping: nothing left to write
  EXPECT_LT(MinorPageFaults() - before - all, 64);
}

// Stream 20 waited for an event recorded on stream 7 after its product was launched (a
// "Stream Wait Event" the trace recorded): the add on stream 20 waits for that product although
// it does not read it; without the recorded wait the lanes would not meet at all.
TEST(Executor, ARecordedStreamWaitBecomesAnEventWait) {
  WorkloadBuilder b;
  b.Step(1);
  const int64_t n = 768;
  const int x = b.Tensor({n, n}), w1 = b.Tensor({n, n}), y = b.Tensor({n, n}),
            w2 = b.Tensor({n, n});
  const int a = b.Tensor({n, n}), p = b.Tensor({n, n}), c = b.Tensor({n, n});
  proto::Op& mm_a = b.Op(kMm, {b.T(x), b.T(w1)}, {b.T(a)}, 7);
  proto::Op& mm_b = b.Op(kMm, {b.T(y), b.T(w2)}, {b.T(p)}, 20);
  proto::Op& add = b.Op(kAdd, {b.T(p), b.T(p), b.I(1)}, {b.T(c)}, 20);
  double start = 100;
  for (proto::Op* op : {&mm_a, &mm_b, &add}) {
    op->set_has_cpu_span(true);
    op->set_cpu_start_us(start);
    op->set_cpu_duration_us(10);
    start += 100;
  }
  proto::CudaSync& sync = *add.add_syncs();
  sync.set_kind("Stream Wait Event");
  sync.set_stream(20);
  sync.set_wait_on_stream(7);
  sync.set_ts_us(290);
  sync.set_record_us(150);  // after mm_a's launch
  const int64_t ida = mm_a.id(), idadd = add.id();
  ReplayOptions options;
  options.device = "cpu";
  options.num_threads = 1;
  options.warmup = 0;
  options.iters = 1;
  options.host_gaps = HostGaps::kNone;
  auto r = Replay(b.workload(), options);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->lanes.size(), 2u);
  EXPECT_EQ(r->cross_lane_waits, 1);
  const OpTiming &ta = TimingOf(*r, ida), &tc = TimingOf(*r, idadd);
  EXPECT_GE(tc.start_ms, ta.start_ms + ta.duration_ms);
}

// Without a Kineto trace there is one stream: one lane, run on the calling thread.
TEST(Executor, ATraceWithoutKernelsRunsOnOneLane) {
  auto w = eg::LoadWorkload(mimic::testing::SourceDir() + "/fleet_samples/mlp.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 1;
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->lanes.size(), 1u);
  EXPECT_EQ(r->lanes[0].original_stream, -1);
  EXPECT_EQ(r->cross_lane_waits, 0);
  EXPECT_EQ(r->executor, "cpu");
  // The tensors the replay holds at once, prepared inputs included, as its allocator counted.
  EXPECT_GE(r->memory.peak_allocated_bytes, r->preallocated_bytes);
  EXPECT_GT(r->memory.allocations, 0);
  EXPECT_GE(r->estimated_peak_bytes, r->preallocated_bytes);
}

// Gives each op a 10 us span on the original's host, from its start (us).
void SetSpans(std::initializer_list<std::pair<proto::Op*, double>> starts) {
  for (auto [op, start] : starts) {
    op->set_has_cpu_span(true);
    op->set_cpu_start_us(start);
    op->set_cpu_duration_us(10);
  }
}

// Two adds (two input tensors each) the original's host ran 2 ms apart: the first one's span is
// 1000-1010 us, the second one's starts at 3010 us.
proto::Workload TwoAddsTwoMsApart() {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), y = b.Tensor({4}), z = b.Tensor({4});
  proto::Op& first = b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)});
  proto::Op& second = b.Op(kAdd, {b.T(y), b.T(x), b.I(1)}, {b.T(z)});
  SetSpans({{&first, 1000}, {&second, 3010}});
  return b.workload();
}

ReplayOptions RecordedGapsOnce(const eg::CaptureCost& cost) {
  ReplayOptions options;
  options.device = "cpu";
  options.num_threads = 1;
  options.warmup = 0;
  options.iters = 1;
  options.host_gaps = HostGaps::kRecorded;
  options.capture_cost = cost;
  return options;
}

// --host-gaps recorded waits the 2 ms before the second add (less the capture's cost per event
// boundary in the gap: here the first op's end and the second's start), and the wait is not the
// op's own time; --host-gaps none runs them back to back.
TEST(Executor, RecordedHostGapsWaitAsTheOriginalsHostDid) {
  const proto::Workload w = TwoAddsTwoMsApart();
  ReplayOptions options = RecordedGapsOnce({250});
  auto r = Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->host_gaps.mode, HostGaps::kRecorded);
  EXPECT_EQ(r->host_gaps.gaps, 1);
  EXPECT_DOUBLE_EQ(r->host_gaps.ms, (3010 - 1010 - 2 * 250) / 1000.0);
  EXPECT_EQ(r->host_gaps.capture_cost_from, "given");
  EXPECT_EQ(r->replayed_ops, 2);
  ASSERT_EQ(r->iteration_ms.size(), 1u);
  EXPECT_GE(r->iteration_ms[0], 1.5);
  double ops_ms = 0;
  for (const OpTiming& t : r->timeline) ops_ms += t.duration_ms;
  EXPECT_LT(ops_ms, r->iteration_ms[0] - 1.4) << "the gap was counted as an op's time";

  options.host_gaps = HostGaps::kNone;
  r = Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->host_gaps.mode, HostGaps::kNone);
  EXPECT_EQ(r->host_gaps.gaps, 0);
}

// The replay's own work after an op (storing its output, freeing what died, the loop) fills the
// host gap after it, as the original's Python and autograd engine filled it: a gap shorter than
// that work is filled whole, a long one only in part, and the spin waits the rest.
TEST(Executor, TheReplaysOwnWorkAfterAnOpFillsTheHostGapFirst) {
  proto::Workload w = TwoAddsTwoMsApart();
  auto r = Replay(w, RecordedGapsOnce({250}));
  ASSERT_THAT(r, IsOk());
  EXPECT_GT(r->host_gaps.own_ms, 0);
  EXPECT_LT(r->host_gaps.own_ms, r->host_gaps.ms / 2);
  EXPECT_GE(r->iteration_ms[0], r->host_gaps.ms);

  // A gap of a nanosecond: the clock read that ends the first op's span alone outlasts it.
  w.mutable_ops(w.ops_size() - 1)->set_cpu_start_us(1010.001);
  r = Replay(w, RecordedGapsOnce({0}));
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->host_gaps.gaps, 1);
  EXPECT_NEAR(r->host_gaps.ms, 1e-6, 1e-9);
  EXPECT_DOUBLE_EQ(r->host_gaps.own_ms, r->host_gaps.ms);
}

// The replay's preparing an op fills the host gap before it too, as the original's Python filled
// it parsing the op's arguments: the gap is waited out once the op's stack is ready, and the
// op's time is its call's. Here the second add's 16 MiB input, allocated and filled just before
// it (--lazy-alloc), takes far longer than its 1 ms gap, which it fills whole; the add's time
// leaves that out.
TEST(Executor, PreparingAnOpFillsTheHostGapBeforeIt) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), y = b.Tensor({4}), big = b.Tensor({4 << 20}),
            z = b.Tensor({4 << 20});
  proto::Op& first = b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)});
  proto::Op& second = b.Op(kAdd, {b.T(big), b.T(big), b.I(1)}, {b.T(z)});
  SetSpans({{&first, 1000}, {&second, 2010}});
  const int64_t second_id = second.id();
  ReplayOptions options = RecordedGapsOnce({0});
  options.lazy_alloc = true;
  auto r = Replay(b.workload(), options);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->host_gaps.gaps, 1);
  EXPECT_DOUBLE_EQ(r->host_gaps.ms, 1.0);
  EXPECT_DOUBLE_EQ(r->host_gaps.own_ms, r->host_gaps.ms);
  // The input's filling (16 MiB of generated values) alone outlasts the gap and the add.
  EXPECT_LT(TimingOf(*r, second_id).duration_ms, r->iteration_ms[0] - r->host_gaps.ms);
}

// An op's time on the capture's host timeline is its span less Kineto's cost at the events inside
// it: an add whose 100 us span holds three ops it called (six event boundaries at 2 us each)
// took 88 us of its own; the replay's per-op table says so. Its own two ends' cost lies in the
// gaps beside it, which are read less theirs; another thread's events in the meantime are not
// its.
TEST(Executor, AnOpsTimelineSpanIsTakenLessTheCostOfTheEventsInsideIt) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), y = b.Tensor({4});
  proto::Op& add = b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)});
  SetSpans({{&add, 1000}});
  add.set_timeline_start_us(5000), add.set_timeline_duration_us(100);
  const int64_t add_id = add.id();
  for (int k = 0; k < 3; ++k) {
    proto::Op& inner = b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)});
    inner.set_parent(add_id);
    inner.set_timeline_start_us(5010 + 30 * k), inner.set_timeline_duration_us(20);
  }
  // An annotation another thread recorded meanwhile is not the add's: its events take no part.
  proto::Op& other = b.Op(kAdd, {}, {});
  other.set_name("## other thread ##"), other.set_schema(-1), other.set_thread(2);
  other.set_timeline_start_us(5005), other.set_timeline_duration_us(90);
  ReplayOptions options = RecordedGapsOnce({.boundary_us = 0, .timeline_boundary_us = 2});
  auto timeline_ms = [&](const ReplayOptions& o) {
    auto r = Replay(b.workload(), o);
    EXPECT_THAT(r, IsOk());
    if (r.ok())
      for (const OpNameStats& s : r->per_op)
        if (s.name == "aten::add") return s.timeline_ms;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(timeline_ms(options), 0.088);
  options.capture_cost.timeline_boundary_us = 0;  // unknown: the span as recorded
  EXPECT_DOUBLE_EQ(timeline_ms(options), 0.1);
}

// Three ops, each taking the one before's output (the first takes x): one of the forward pass,
// one the autograd engine ran (under its evaluate_function record_function), one an optimizer
// ran (under Optimizer.step#SGD.step). `op(b, x, in, out)` adds one.
template <typename AddOp>
proto::Workload ForwardBackwardOptimizer(AddOp op) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), y = b.Tensor({4}), z = b.Tensor({4}), u = b.Tensor({4});
  op(b, x, x, y);
  b.Op(kAdd, {}, {});  // the autograd node's record_function, below
  op(b, x, y, z);
  b.Op(kAdd, {}, {});  // the optimizer's record_function, below
  op(b, x, z, u);
  proto::Workload w = b.workload();
  const int64_t step = w.ops(0).id();
  auto wrap = [&](int wrapper, const char* name) {
    w.mutable_ops(wrapper)->set_name(name);
    w.mutable_ops(wrapper)->set_schema(-1);
    w.mutable_ops(wrapper + 1)->set_parent(w.ops(wrapper).id());
    w.mutable_ops(wrapper)->set_parent(step);
  };
  wrap(2, "autograd::engine::evaluate_function: AddBackward0");
  wrap(4, "Optimizer.step#SGD.step");
  return w;
}

// A test operator that notes whether autograd was on when it ran.
std::vector<bool> grad_mode_seen;
at::Tensor NoteGradMode(const at::Tensor& x) {
  grad_mode_seen.push_back(c10::GradMode::is_enabled());
  return x.clone();
}
// A test operator that notes whether its input requires grad: whether the op that computed it
// recorded the autograd graph.
std::vector<bool> requires_grad_seen;
at::Tensor NoteRequiresGrad(const at::Tensor& x) {
  requires_grad_seen.push_back(x.requires_grad());
  return x.detach().clone();
}
TORCH_LIBRARY(mimic_test, m) {
  m.def("note_grad_mode(Tensor x) -> Tensor", &NoteGradMode);
  m.def("note_requires_grad(Tensor x) -> Tensor", &NoteRequiresGrad);
}
constexpr const char* kNoteGradMode = "mimic_test::note_grad_mode(Tensor x) -> Tensor";
constexpr const char* kNoteRequiresGrad = "mimic_test::note_requires_grad(Tensor x) -> Tensor";

// The original ran a training step's forward with autograd on, and the autograd engine's and
// the optimizer's ops with it off; ops read it (an LSTM layer keeps the workspace its backward
// reads only with it on). The replay runs each op so; a step without a backward (inference)
// runs with it off throughout.
TEST(Executor, OpsRunWithAutogradOnOrOffAsTheOriginalRanThem) {
  proto::Workload w = ForwardBackwardOptimizer(
      [](WorkloadBuilder& b, int, int in, int out) { b.Op(kNoteGradMode, {b.T(in)}, {b.T(out)}); });
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 1;
  options.host_gaps = HostGaps::kNone;
  grad_mode_seen.clear();
  auto r = Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, 3);
  EXPECT_EQ(grad_mode_seen, (std::vector<bool>{true, false, false}));

  w.mutable_ops(2)->set_name("Optimizer.zero_grad#SGD.zero_grad");  // no backward now
  grad_mode_seen.clear();
  r = Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(grad_mode_seen, (std::vector<bool>{false, false, false}));
}

// A training step: its forward computes y = x * p and notes whether y requires grad; the
// autograd engine runs one op; the optimizer runs `update` (p += g in place, say), under their
// record_functions. `forward_update` adds an in-place update of p (p *= x) before the forward;
// `view_first` a view of p (an alias on its storage) before it.
proto::Workload TrainingStep(const char* update, bool forward_update = false,
                             bool view_first = false) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), p = b.Tensor({4}), y = b.Tensor({4}), z = b.Tensor({4}),
            g = b.Tensor({4}), u = b.Tensor({4});
  if (forward_update)
    b.Op("aten::mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", {b.T(p), b.T(x)},
         {b.T(p)});
  const int view = view_first ? b.Tensor({4}) : -1;
  if (view_first) b.Op("aten::alias(Tensor(a) self) -> Tensor(a)", {b.T(p)}, {b.T(view)});
  b.Op("aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", {b.T(x), b.T(p)}, {b.T(y)});
  b.Op(kNoteRequiresGrad, {b.T(y)}, {b.T(z)});
  const int backward = b.workload().ops_size();
  b.Op(kAdd, {}, {});  // the autograd node's record_function, around the next op
  b.Op(kAdd, {b.T(z), b.T(x), b.I(1)}, {b.T(g)});
  const int optimizer = b.workload().ops_size();
  b.Op(kAdd, {}, {});  // the optimizer's record_function, around the next op
  const bool in_place = std::string_view(update).find("_.") != std::string_view::npos;
  b.Op(update, {b.T(p), b.T(g), b.I(1)}, {b.T(in_place ? p : u)});
  proto::Workload w = b.workload();
  if (view_first) w.mutable_tensors(view)->set_storage_id(w.tensors(p).storage_id());
  for (auto [wrapper, name] : {std::pair{backward, "autograd::engine::evaluate_function: X"},
                               std::pair{optimizer, "Optimizer.step#SGD.step"}}) {
    w.mutable_ops(wrapper)->set_name(name);
    w.mutable_ops(wrapper)->set_schema(-1);
    w.mutable_ops(wrapper + 1)->set_parent(w.ops(wrapper).id());
  }
  return w;
}

constexpr const char* kAddInPlace =
    "aten::add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)";

// Replays `w` once, stopping at an op that fails: whether every op ran, the parameters the
// replay made require grad, and whether the forward's note saw its input require grad.
std::tuple<bool, int64_t, bool> ReplayNotingGrad(const proto::Workload& w) {
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 1;
  options.host_gaps = HostGaps::kNone;
  options.strict = true;
  requires_grad_seen.clear();
  auto r = Replay(w, options);
  EXPECT_THAT(r, IsOk());
  if (!r.ok() || requires_grad_seen.empty()) return {false, -1, false};
  return {r->stop_reason.empty() && r->replayed_ops == r->total_ops, r->parameters,
          requires_grad_seen[0]};
}

// The original's forward recorded the autograd graph over the model's parameters (each op on
// them allocated its node and saved its inputs; its time and memory hold that): the replay's
// parameters, the leaves the forward reads that the optimizer updates in place, require grad, so
// that its forward records the graph too; also where the forward read a parameter again after
// making a view of it (an RNN's t() of its weight at each step). A leaf the optimizer does not
// update stays a constant.
TEST(Executor, ATrainingStepsForwardRecordsTheAutogradGraphOverItsParameters) {
  EXPECT_EQ(ReplayNotingGrad(TrainingStep(kAddInPlace)), std::make_tuple(true, 1, true));
  EXPECT_EQ(ReplayNotingGrad(TrainingStep(kAddInPlace, false, /*view_first=*/true)),
            std::make_tuple(true, 1, true));
  EXPECT_EQ(ReplayNotingGrad(TrainingStep(kAdd)), std::make_tuple(true, 0, false));  // p + g
}

// Autograd refuses an in-place update of a leaf that requires grad: a forward op that updates
// a parameter ran under no_grad in the original, and runs with autograd off in the replay.
TEST(Executor, AForwardOpThatUpdatesAParameterInPlaceRunsWithAutogradOff) {
  EXPECT_EQ(ReplayNotingGrad(TrainingStep(kAddInPlace, /*forward_update=*/true)),
            std::make_tuple(true, 1, true));
}

// With several lanes the gaps wait on the driving thread while the ops run on their lanes'
// threads: each gap is still waited whole, one after the other.
TEST(Executor, HostGapsAreWaitedWholeWhenOpsRunOnLanesOfTheirOwn) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), y = b.Tensor({4}), z = b.Tensor({4}), u = b.Tensor({4});
  proto::Op* ops[] = {&b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)}, 7),
                      &b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(z)}, 20),
                      &b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(u)}, 7)};
  for (int k = 0; k < 3; ++k) {
    ops[k]->set_has_cpu_span(true);
    ops[k]->set_cpu_start_us(1000 + 2010 * k);
    ops[k]->set_cpu_duration_us(10);
  }
  auto r = Replay(b.workload(), RecordedGapsOnce({0}));
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->lanes.size(), 2u);
  ASSERT_EQ(r->host_gaps.gaps, 2);
  EXPECT_DOUBLE_EQ(r->host_gaps.ms, 4.0);
  EXPECT_GE(r->iteration_ms[0], 4.0);
}

// Three ops a forward pass, the autograd engine and an optimizer issued, no Kineto trace:
// --host-gaps modelled (and auto, given the figures) waits the given T1 of each op's issuer
// before it; asked for without figures, it is refused.
TEST(Executor, ModelledHostGapsWaitTheT1OfWhatIssuedEachOp) {
  const proto::Workload w =
      ForwardBackwardOptimizer([](WorkloadBuilder& b, int x, int in, int out) {
        b.Op(kAdd, {b.T(in), b.T(x), b.I(1)}, {b.T(out)});
      });
  ReplayOptions options;
  options.device = "cpu";
  options.num_threads = 1;
  options.warmup = 0;
  options.iters = 1;
  options.host_gaps = HostGaps::kModelled;
  auto r = Replay(w, options);
  EXPECT_THAT(r, StatusIs(StatusCode::kInvalidInput));
  options.modelled_t1_us = {300, 500, 700};
  options.modelled_t1_source = "given";
  for (HostGaps mode : {HostGaps::kModelled, HostGaps::kAuto}) {
    options.host_gaps = mode;
    r = Replay(w, options);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->host_gaps.mode, HostGaps::kModelled);
    EXPECT_EQ(r->host_gaps.modelled_from, "given");
    EXPECT_EQ(r->replayed_ops, 3);
    EXPECT_EQ(r->host_gaps.gaps, 3);
    EXPECT_DOUBLE_EQ(r->host_gaps.ms, (300 + 500 + 700) / 1000.0);
    ASSERT_EQ(r->iteration_ms.size(), 1u);
    EXPECT_GE(r->iteration_ms[0], 1.5);
  }
  options.host_gaps = HostGaps::kNone;
  r = Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->host_gaps.gaps, 0);
}

// Without a given figure the replay measures the capture's cost per event boundary at setup,
// with the same function `mimic calibrate` keeps in the platform.
TEST(Executor, CaptureCostIsMeasuredAtSetupWhenNoneIsGiven) {
  WorkloadBuilder b;
  b.Step(1);
  const int x = b.Tensor({4}), y = b.Tensor({4});
  proto::Op& op = b.Op(kAdd, {b.T(x), b.T(x), b.I(1)}, {b.T(y)});
  op.set_has_cpu_span(true);
  op.set_cpu_duration_us(10);
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 1;
  options.host_gaps = HostGaps::kRecorded;
  // Each figure is a slope or a median of gaps measured there; beside other tests on two cores
  // a burst of other work can flatten one to 0 in one replay, so each must come out positive
  // in one of three (as in CaptureCostGrowsWithTheInputTensorsValuesAndTheIntegerInputs).
  double boundary_us = 0, input_tensor_us = 0;
  for (int attempt = 0; attempt < 3 && (boundary_us <= 0 || input_tensor_us <= 0); ++attempt) {
    auto r = Replay(b.workload(), options);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->host_gaps.capture_cost_from, "measured at setup");
    boundary_us = std::max(boundary_us, r->host_gaps.capture_cost.boundary_us);
    // Its input tensors are priced too; it recorded no integer inputs, so their figures are not.
    input_tensor_us = std::max(input_tensor_us, r->host_gaps.capture_cost.input_tensor_us);
    EXPECT_EQ(r->host_gaps.capture_cost.range_us_per_melem, 0);
    EXPECT_EQ(r->host_gaps.capture_cost.saved_us_per_mb, 0);
  }
  EXPECT_GT(boundary_us, 0);
  EXPECT_GT(input_tensor_us, 0);
}

// The known loops: the observer's cost grows with the input tensors (aten::cat of up to 256
// tensors), more for integer ones it ranges, the other input values (aten::empty_strided of
// lists of up to 48 items each), and with the integer inputs' elements it ranges and saves
// (aten::sum of up to 10^6 indices), and the host timeline's own cost per boundary (of an op,
// and in a backward through 200 nodes, timed with the profiler and without):
// each slope is far above a quiet machine's noise, so each comes out positive. Beside other
// tests on two cores a burst of other work can still flatten one slope to 0 in one
// measurement, so each figure must come out positive in one of three.
TEST(Executor, CaptureCostGrowsWithTheInputTensorsValuesAndTheIntegerInputs) {
  eg::CaptureCost most;
  auto measured = [&] {
    return std::all_of(eg::kCaptureFigures.begin(), eg::kCaptureFigures.end(),
                       [&](const eg::CaptureFigure& f) { return most.*f.member > 0; });
  };
  for (int attempt = 0; attempt < 3 && !measured(); ++attempt) {
    auto cost = MeasureCaptureCost(c10::Device(c10::kCPU), /*integer_inputs=*/true,
                                   /*host_timeline=*/true);
    ASSERT_THAT(cost, IsOk());
    for (const eg::CaptureFigure& f : eg::kCaptureFigures)
      most.*f.member = std::max(most.*f.member, (*cost).*f.member);
  }
  for (const eg::CaptureFigure& f : eg::kCaptureFigures)
    EXPECT_GT(most.*f.member, 0) << f.figures_field;
  // The host timeline records no inputs and no memory events: a boundary costs it less.
  EXPECT_LT(most.timeline_boundary_us, most.boundary_us);
}

// The input tensors of the op after a gap are taken off with the gap: 2 at 100 us each.
TEST(Executor, RecordedHostGapsTakeOffTheNextOpsInputTensors) {
  auto r = Replay(TwoAddsTwoMsApart(), RecordedGapsOnce({250, 100}));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->host_gaps.gaps, 1);
  EXPECT_DOUBLE_EQ(r->host_gaps.ms, (3010 - 1010 - 2 * 250 - 2 * 100) / 1000.0);
}

// The known loop of the replay's own cost per op: the whole chain replays, and both sides of
// the measurement are times.
TEST(Overheads, TheTinyOpChainReplaysInFullBesideBareBoxedCalls) {
  const proto::Workload w = TinyOpChain(50);
  EXPECT_EQ(w.ops_size(), 50);
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 1;
  auto r = Replay(w, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->replayed_ops, 50);
  EXPECT_EQ(r->outputs_mismatched, 0);
  auto cost = MeasureReplayOpCost("cpu", 2, /*use_min=*/true, 200);
  ASSERT_THAT(cost, IsOk());
  EXPECT_GT(cost->replay_us, 0);
  EXPECT_GT(cost->boxed_us, 0);
  EXPECT_GE(cost->framework_us(), 0);
  EXPECT_THAT(MeasureReplayOpCost("tpu", 1, true, 10), ::testing::Not(IsOk()));
}

// An op that needs more memory than the machine has (its recorded output is small, so the plan
// cannot see it coming) stops the replay: never a skip, never a completed run.
TEST(Executor, OutOfMemoryStopsTheReplay) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on an allocation this large instead of failing it";
#endif
  WorkloadBuilder b;
  b.Step(1);
  const int out = b.Tensor({1});
  proto::Value size;
  size.mutable_list()->add_items()->set_int_value(int64_t{1} << 40);  // 4 TiB of floats
  b.Op(
      "aten::ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? "
      "device=None, "
      "bool? pin_memory=None) -> Tensor",
      {size}, {b.T(out)});
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 0;
  options.iters = 2;
  auto r = Replay(b.workload(), options);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->stop_reason, ::testing::HasSubstr("out of memory in op 2 (aten::ones)"));
  EXPECT_TRUE(r->iteration_ms.empty());
  EXPECT_TRUE(r->skipped.empty());
}

// With --lazy-alloc the prepared inputs live only while they are used: the same ops replay
// with the same shapes, and the replay needs no more than when they are prepared up front.
TEST(Executor, LazyAllocationReplaysTheSameOps) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = eg::LoadWorkload(dir + "cnn_bn.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 1;
  options.iters = 1;
  auto eager = Replay(*w, options);
  options.lazy_alloc = true;
  auto lazy = Replay(*w, options);
  ASSERT_THAT(eager, IsOk());
  ASSERT_THAT(lazy, IsOk());
  EXPECT_EQ(lazy->replayed_ops, lazy->total_ops);
  EXPECT_EQ(lazy->outputs_mismatched, 0);
  EXPECT_GT(lazy->outputs_checked, 0);
  EXPECT_TRUE(lazy->stop_reason.empty()) << lazy->stop_reason;
  EXPECT_EQ(lazy->preallocated_bytes, 0);
  EXPECT_LE(lazy->estimated_peak_bytes, eager->estimated_peak_bytes);
}

// --profile: LibTorch's profiler writes a Kineto trace with a ProfilerStep#N per measured
// iteration and a cpu_op for every replayed op.
TEST(Executor, ProfileHoldsEveryReplayedOpAndEachIteration) {
  auto w = eg::LoadWorkload(mimic::testing::SourceDir() + "/fleet_samples/mlp.et.json.gz");
  ASSERT_THAT(w, IsOk());
  ReplayOptions options;
  options.device = "cpu";
  options.warmup = 1;
  options.iters = 2;
  options.profile_path =
      ::testing::TempDir() + "/mimic_profile_" + std::to_string(getpid()) + ".json";
  auto r = Replay(*w, options);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->profile_path, options.profile_path);
  auto text = ReadFile(options.profile_path);
  ASSERT_THAT(text, IsOk());
  std::remove(options.profile_path.c_str());
  auto trace = eg::ParseKinetoTrace(options.profile_path, text->bytes.view());
  ASSERT_THAT(trace, IsOk());
  int steps = 0;
  std::map<std::string, int> ops;
  for (const eg::KinetoEvent& e : trace->events) {
    if (e.kind == eg::KinetoEvent::Kind::kAnnotation && e.name.rfind("ProfilerStep#", 0) == 0)
      ++steps;
    if (e.kind == eg::KinetoEvent::Kind::kHostOp) ++ops[e.name];
  }
  EXPECT_EQ(steps, 2);
  for (const OpNameStats& s : r->per_op) EXPECT_GE(ops[s.name], 2 * s.calls) << s.name;
}

TEST(Executor, RegistryNamesTheDevicesItLacks) {
  EXPECT_THAT(CreateExecutor("cpu"), IsOk());
  EXPECT_THAT(CreateExecutor("xla:0"), StatusIs(StatusCode::kUnsupported));
  EXPECT_THAT(CreateExecutor("not a device"), StatusIs(StatusCode::kInvalidInput));
  EXPECT_EQ(ExecutorTypes().front().name, std::string("cpu"));
}

}  // namespace
}  // namespace mimic::replay
