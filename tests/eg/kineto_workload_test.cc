// The workload of a Kineto trace alone, on the public traces that have no execution trace
// (HTA's) and on the Kineto halves of the ET + Kineto pairs: ops, parents, argument shapes,
// kernels, syncs, steps that hold their backward on the autograd thread.
#include <algorithm>
#include <set>

#include "mimic/eg/kineto.h"
#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

Result<proto::Workload> LoadAlone(const std::string& path) {
  return LoadWorkload(path, {.kineto_path = "", .allow_kineto_only = true});
}

const proto::Op* FindOp(const proto::Workload& w, const std::string& name) {
  for (const proto::Op& op : w.ops())
    if (op.name() == name) return &op;
  return nullptr;
}

std::vector<int64_t> ShapeOf(const proto::Workload& w, const proto::Value& v) {
  if (v.kind_case() != proto::Value::kTensor || v.tensor() < 0) return {};
  const proto::Tensor& t = w.tensors(v.tensor());
  return {t.shape().begin(), t.shape().end()};
}

// HTA's call-stack trace: ProfilerStep#552 on the main thread, the backward of an addmm on the
// autograd engine's thread; one GEMM kernel launched by aten::mm.
TEST(KinetoWorkload, BackwardOnTheAutogradThreadBelongsToTheStep) {
  const std::string path =
      testing::SharedTraces() + "/hta-backward-thread/backward_thread_kineto.json";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadAlone(path);
  ASSERT_THAT(w, IsOk());
  EXPECT_TRUE(IsKinetoOnly(*w));
  EXPECT_EQ(w->provenance().schema(), "kineto");
  ASSERT_EQ(w->provenance().sources_size(), 1);
  EXPECT_EQ(w->provenance().sources(0).role(), "kineto");
  ASSERT_EQ(w->ops_size(), 5);
  for (int i = 0; i < w->ops_size(); ++i) EXPECT_EQ(w->ops(i).id(), i + 1);  // start order

  const proto::Op* mm = FindOp(*w, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->thread(), 24922);
  const OpTree tree(*w);
  EXPECT_EQ(w->ops(tree.Parent(tree.IndexOf(mm->id()))).name(), "AddmmBackward0");
  ASSERT_EQ(mm->inputs_size(), 2);
  EXPECT_EQ(ShapeOf(*w, mm->inputs(0)), (std::vector<int64_t>{2048, 2048}));
  EXPECT_EQ(ShapeOf(*w, mm->inputs(1)), (std::vector<int64_t>{2048, 256}));
  EXPECT_EQ(w->tensors(mm->inputs(1).tensor()).dtype(), proto::FLOAT32);
  EXPECT_EQ(w->tensors(mm->inputs(1).tensor()).itemsize(), 4);
  ASSERT_EQ(mm->kernels_size(), 1);
  EXPECT_NE(mm->kernels(0).name().find("gemm"), std::string::npos);
  EXPECT_EQ(w->tensors(mm->inputs(0).tensor()).device(), "cuda:0");

  auto seg = FindSegment(*w, -1, "");
  ASSERT_THAT(seg, IsOk());
  ASSERT_NE(*seg, nullptr);
  EXPECT_EQ((*seg)->name(), "ProfilerStep#552");
  EXPECT_TRUE((*seg)->has_span());
  const std::vector<int> top = ReplayableOps(*w, tree, tree.IndexOf((*seg)->op_id()));
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(w->ops(top[0]).name(), "aten::mm");
  ASSERT_EQ(w->original().iteration_ms_size(), 1);
  EXPECT_DOUBLE_EQ(w->original().iteration_ms(0), 413.451);
}

// HTA's multi-stream trace: stream 24 waits on an event recorded on stream 20 (correlation
// 1385); the wait's runtime call lies between ops, so it goes on the next op the thread ran.
TEST(KinetoWorkload, CrossStreamWaitIsAttached) {
  const std::string path =
      testing::SharedTraces() + "/hta-event-sync/event_sync_multi_stream_kineto.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadAlone(path);
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->ops_size(), 6);
  EXPECT_EQ(w->kineto().kernels_total(), 6);  // 3 GEMMs, 3 memsets
  EXPECT_EQ(w->kineto().kernels_linked(), 6);
  std::set<int64_t> streams;
  int waits = 0;
  for (const proto::Op& op : w->ops()) {
    for (const proto::Kernel& k : op.kernels()) {
      streams.insert(k.stream());
      EXPECT_EQ(op.name(), "aten::mm");  // launched by the mm under each matmul
    }
    for (const proto::CudaSync& s : op.syncs()) {
      if (s.kind() != "Stream Wait Event") continue;
      ++waits;
      EXPECT_EQ(op.id(), 5);  // the third aten::matmul
      EXPECT_EQ(s.stream(), 24);
      EXPECT_EQ(s.wait_on_stream(), 20);
      EXPECT_DOUBLE_EQ(s.record_us(), 1712867402367666.0);
    }
  }
  EXPECT_EQ(waits, 1);
  EXPECT_EQ(streams, (std::set<int64_t>{20, 24, 28}));
}

// HTA's V100 training trace: 105k events, two threads (the main one and the autograd engine's),
// six profiled steps; every host span an op, the kernels on the ops that launched them.
TEST(KinetoWorkload, V100TrainingTrace) {
  const std::string path =
      testing::SharedTraces() + "/hta-gpu-kineto/trace_diff_test_kineto.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadAlone(path);
  ASSERT_THAT(w, IsOk());
  EXPECT_EQ(w->ops_size(), 31524);  // 31,236 cpu_op + 288 user_annotation
  const Summary s = Summarize(*w);
  EXPECT_EQ(s.threads, 2);
  EXPECT_EQ(s.iterations, 6);
  EXPECT_EQ(w->original().iteration_ms_size(), 6);
  EXPECT_EQ(w->kineto().kernels_total(), 15632);  // kernels, memcpys, memsets
  // Launched from a thread no host span covers: a few hundred, never most.
  EXPECT_GT(w->kineto().kernels_linked(), 15000);
  EXPECT_EQ(w->provenance().rank(), 1);
  EXPECT_EQ(w->provenance().world_size(), 2);
  ASSERT_GE(w->provenance().devices_size(), 1);
  EXPECT_EQ(w->provenance().devices(0), "Tesla V100-SXM2-16GB");

  // The first GEMM of the trace: aten::mm of [1024, 96] x [96, 512] fp32.
  const proto::Op* mm = FindOp(*w, "aten::mm");
  ASSERT_NE(mm, nullptr);
  ASSERT_GE(mm->inputs_size(), 2);
  EXPECT_EQ(ShapeOf(*w, mm->inputs(0)), (std::vector<int64_t>{1024, 96}));
  EXPECT_EQ(ShapeOf(*w, mm->inputs(1)), (std::vector<int64_t>{96, 512}));
  EXPECT_GT(mm->kernels_size(), 0);

  // The first step holds the autograd thread's backward ops that ran during it.
  const OpTree tree(*w);
  auto seg = FindSegment(*w, -1, "");
  ASSERT_THAT(seg, IsOk());
  const int step = tree.IndexOf((*seg)->op_id());
  const std::vector<char> member = SegmentMembers(*w, tree, step);
  std::set<int64_t> threads;
  for (int i = 0; i < w->ops_size(); ++i)
    if (member[i]) threads.insert(w->ops(i).thread());
  EXPECT_EQ(threads.size(), 2u);
  int64_t top_on_backward_thread = 0;
  for (int i : ReplayableOps(*w, tree, step)) {
    top_on_backward_thread += w->ops(i).thread() != w->ops(step).thread();
    EXPECT_FALSE(IsWrapperOp(w->ops(i))) << w->ops(i).name();
  }
  EXPECT_GT(top_on_backward_thread, 100);

  // The all-to-alls: record_param_comms records nothing in Kineto; the nccl:all_to_all span
  // inside names the collective and its tensor's size.
  // (Embeddings go as fp32, the input features' lengths and ids as int32.)
  int64_t all_to_all = 0, fp32 = 0;
  for (const proto::Op& op : w->ops())
    if (op.has_collective() && op.collective().type() == proto::Collective::ALL_TO_ALL) {
      ++all_to_all;
      EXPECT_GT(op.collective().in_elems(), 0) << op.id();
      EXPECT_NE(op.collective().dtype(), proto::DTYPE_UNKNOWN) << op.id();
      EXPECT_GT(op.collective().itemsize(), 0) << op.id();
      fp32 += op.collective().dtype() == proto::FLOAT32;
    }
  EXPECT_EQ(all_to_all, 42);
  EXPECT_GT(fp32, 0);
}

// A trace without deviceProperties still loads (its platform must then be named).
TEST(KinetoWorkload, SampledRankWithoutDeviceProperties) {
  const std::string path = testing::SharedTraces() + "/hta-gpu-kineto/sampled_rank0_kineto.json.gz";
  MIMIC_SKIP_UNLESS_EXISTS(path);
  auto w = LoadAlone(path);
  ASSERT_THAT(w, IsOk());
  EXPECT_EQ(w->provenance().devices_size(), 0);
  EXPECT_EQ(w->provenance().world_size(), 128);
  EXPECT_EQ(w->kineto().kernels_total(), 1204);  // 1,154 kernels, 40 memcpys, 10 memsets
  int64_t all_reduce = 0;
  for (const proto::Op& op : w->ops())
    if (op.has_collective() && op.collective().type() == proto::Collective::ALL_REDUCE) {
      ++all_reduce;
      EXPECT_EQ(op.name(), "c10d::allreduce_");
      EXPECT_GT(op.collective().in_elems(), 0);
    }
  EXPECT_EQ(all_reduce, 4);
}

// The Kineto halves of the pairs, captured with torch 2.11 on the CPU: arguments with their
// Concrete Inputs (scalars, scalar lists) and strides; no device activity, so tensors on the CPU.
TEST(KinetoWorkload, CpuTraceWithConcreteInputs) {
  const std::string path = testing::SourceDir() + "/fleet_samples/mlp.kineto.json.gz";
  auto w = LoadAlone(path);
  ASSERT_THAT(w, IsOk());
  const proto::Op* addmm = FindOp(*w, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  ASSERT_EQ(addmm->inputs_size(), 5);
  EXPECT_EQ(ShapeOf(*w, addmm->inputs(0)), (std::vector<int64_t>{1024}));
  EXPECT_EQ(ShapeOf(*w, addmm->inputs(1)), (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(ShapeOf(*w, addmm->inputs(2)), (std::vector<int64_t>{1024, 1024}));
  const proto::Tensor& weight = w->tensors(addmm->inputs(2).tensor());
  EXPECT_EQ(std::vector<int64_t>(weight.strides().begin(), weight.strides().end()),
            (std::vector<int64_t>{1, 1024}));  // transposed
  EXPECT_EQ(weight.device(), "cpu");
  EXPECT_EQ(addmm->inputs(3).int_value(), 1);  // beta
  const proto::Op* as_strided = FindOp(*w, "aten::as_strided");
  ASSERT_NE(as_strided, nullptr);
  ASSERT_EQ(as_strided->inputs(1).kind_case(), proto::Value::kList);
  EXPECT_EQ(as_strided->inputs(1).list().items_size(), 2);
  EXPECT_GE(Summarize(*w).iterations, 1);
  for (const proto::Segment& seg : w->segments()) EXPECT_TRUE(seg.has_span()) << seg.name();
}

// An op that launched nothing itself has its arguments on the device of its first child that
// did (its own kernels first); an op that neither launched nor holds a launcher stays unplaced.
TEST(KinetoWorkload, ArgumentsLiveWhereTheFirstKernelBelowRan) {
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 1, "ts": 0, "dur": 100,
     "args": {"Input Dims": [[4, 8]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::t", "pid": 1, "tid": 1, "ts": 1, "dur": 5,
     "args": {"Input Dims": [[8, 8]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
     "args": {"Input Dims": [[4, 8]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 40, "dur": 20,
     "args": {"Input Dims": [[4, 8]], "Input type": ["float"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12,
     "dur": 2, "args": {"correlation": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 42,
     "dur": 2, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"correlation": 7, "device": 1, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 50, "dur": 5,
     "args": {"correlation": 8, "device": 2, "stream": 7}}
  ]})";
  auto in = InputStream::FromMemory("devices.json", json);
  auto t = ParseKinetoTrace("devices.json", *in, {.inputs = true});
  ASSERT_THAT(t, IsOk());
  auto w = BuildKinetoWorkload("devices.json", std::move(*t));
  ASSERT_THAT(w, IsOk());
  auto device_of = [&](const char* name) {
    const proto::Op* op = FindOp(*w, name);
    return op ? w->tensors(op->inputs(0).tensor()).device() : "no op";
  };
  EXPECT_EQ(device_of("aten::addmm"), "cuda:1");
  EXPECT_EQ(device_of("aten::relu"), "cuda:2");
  EXPECT_EQ(device_of("aten::linear"), "cuda:1");  // its first child with a kernel, not the last
  EXPECT_EQ(device_of("aten::t"), "");
  EXPECT_EQ(FindOp(*w, "aten::addmm")->kernels(0).name(), "gemm");
}

// The ET observer's integer-range probe (min, copy back, max, copy back, launched inside the op
// it records) is the capture's work, not the op's: it is attached to no op and counted apart,
// with the contiguous copy and memset that a strided tensor's min() and max() launch first. An
// op's own max of an integer tensor and the item that reads it back are recorded as ops of their
// own, and keep their kernels (tests/data/kineto_observer_probes.json; also a fuzzing seed).
TEST(KinetoWorkload, TheObserversIntegerRangeProbesAreLeftOut) {
  auto w = LoadAlone(testing::SourceDir() + "/tests/data/kineto_observer_probes.json");
  ASSERT_THAT(w, IsOk());
  auto correlations = [&](const char* name) {
    std::vector<int64_t> out;
    for (const proto::Kernel& k : FindOp(*w, name)->kernels()) out.push_back(k.correlation());
    return out;
  };
  EXPECT_EQ(correlations("aten::embedding_bag"), std::vector<int64_t>{5});
  EXPECT_EQ(correlations("aten::index_select"), std::vector<int64_t>{18});
  EXPECT_EQ(correlations("aten::max"), std::vector<int64_t>{20});
  EXPECT_EQ(correlations("aten::item"), std::vector<int64_t>{21});
  EXPECT_EQ(w->kineto().observer_probe_events(), 12);
  EXPECT_DOUBLE_EQ(w->kineto().observer_probe_us(), 36);
  EXPECT_EQ(w->kineto().kernels_linked(), 4);
}

// The same on a real capture: the H200 DLRM's ids, probed under every op that takes them,
// including those whose min() and max() first copy a strided tensor into a contiguous one.
TEST(Kineto, TheObserversProbesOnAnH200CaptureAreOnNoOp) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/h200/";
  auto w = LoadWorkload(dir + "dlrm.et.json.gz", {.kineto_path = dir + "dlrm.kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  EXPECT_GT(w->kineto().observer_probe_events(), 1000);
  int64_t attached = 0;
  for (const proto::Op& op : w->ops())
    for (const proto::Kernel& k : op.kernels()) {
      ++attached;
      EXPECT_EQ(k.name().find("NanFunctor<long>"), std::string::npos)
          << op.name() << ": " << k.name();
    }
  EXPECT_EQ(attached, w->kineto().kernels_linked());
  EXPECT_LE(w->kineto().kernels_linked() + w->kineto().observer_probe_events(),
            w->kineto().kernels());
}

TEST(KinetoWorkload, RefusedUnlessAllowed) {
  const std::string path = testing::SourceDir() + "/fleet_samples/mlp.kineto.json.gz";
  auto w = LoadWorkload(path);
  EXPECT_THAT(w, StatusIs(StatusCode::kInvalidInput));
  EXPECT_NE(w.status().message().find("but a Kineto trace"), std::string::npos);
  EXPECT_NE(w.status().message().find("--kineto"), std::string::npos);
}

}  // namespace
}  // namespace mimic::eg
