// mimic_replay_overhead_bench: what the replay costs per op, next to a bare boxed dispatcher
// call, on a chain of tiny ops where the op itself costs almost nothing (Google Benchmark).
//
//   mimic_replay_overhead_bench [--ops N] [--benchmark_repetitions=R ...]
//
// The workload is N `aten::add.Tensor` ops on one-element float tensors, each consuming the
// previous op's output: the kind of trace where a replayer's own bookkeeping dominates
// (/work/shared/REFERENCE.md §8: PARAM's et_replay costs about 10 us per op on such a trace).
//   BM_BareBoxedCall: the same operator called through the dispatcher (callBoxed) on stacks
//     built before timing; the floor any replayer pays.
//   BM_Replay: mimic::replay::Replay on the workload; the time of one measured replay
//     iteration (its own clock), reported per op.
// Counters: us_per_op.

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/ones.h>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mimic/replay/replayer.h"
#include "proto/workload.pb.h"

namespace {

int g_ops = 2000;

constexpr const char* kAddSchema =
    "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor";

// t[i+1] = t[i] + c, for i < n: entry 0 and the constant c are leaves, the rest are produced.
mimic::proto::Workload AddChain(int n) {
  mimic::proto::Workload w;
  w.mutable_format()->set_major(1);
  w.add_types("");
  w.add_types("Tensor(float)");
  w.add_types("Int");
  w.add_schemas(kAddSchema);
  auto add_tensor = [&](int64_t id) {
    mimic::proto::Tensor* t = w.add_tensors();
    t->set_tensor_id(id);
    t->set_storage_id(id);
    t->set_numel(1);
    t->set_itemsize(4);
    t->set_dtype(mimic::proto::FLOAT32);
    t->add_shape(1);
    t->add_strides(1);
    t->set_device("cpu");
    t->set_type(1);
    return w.tensors_size() - 1;
  };
  const int constant = add_tensor(1'000'000);
  int prev = add_tensor(1);
  for (int i = 0; i < n; ++i) {
    const int next = add_tensor(i + 2);
    mimic::proto::Op* op = w.add_ops();
    op->set_id(i + 1);
    op->set_name("aten::add");
    op->set_schema(0);
    op->set_thread(1);
    auto tensor_value = [](int entry) {
      mimic::proto::Value v;
      v.set_tensor(entry);
      v.set_type(1);
      return v;
    };
    *op->add_inputs() = tensor_value(prev);
    *op->add_inputs() = tensor_value(constant);
    mimic::proto::Value* alpha = op->add_inputs();
    alpha->set_int_value(1);
    alpha->set_type(2);
    *op->add_outputs() = tensor_value(next);
    prev = next;
  }
  return w;
}

void BM_BareBoxedCall(benchmark::State& state) {
  const c10::OperatorHandle add = *c10::Dispatcher::singleton().findSchema({"aten::add", "Tensor"});
  const at::Tensor a = at::ones({1}), c = at::ones({1});
  std::vector<torch::jit::Stack> stacks(g_ops, torch::jit::Stack{a, c, c10::IValue(int64_t{1})});
  torch::jit::Stack stack;
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const torch::jit::Stack& s : stacks) {
      stack = s;
      add.callBoxed(&stack);
      benchmark::DoNotOptimize(stack);
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(seconds);
  }
  state.counters["us_per_op"] = seconds * 1e6 / g_ops;
}

void BM_Replay(benchmark::State& state) {
  const mimic::proto::Workload w = AddChain(g_ops);
  mimic::replay::ReplayOptions options;
  options.device = "cpu";
  options.warmup = 2;
  options.iters = 20;
  options.num_threads = 1;
  double seconds_per_iteration = 0;
  for (auto _ : state) {
    auto r = mimic::replay::Replay(w, options);
    if (!r.ok() || r->replayed_ops != g_ops) {
      state.SkipWithError(r.ok() ? "not every op replayed" : r.status().message().c_str());
      return;
    }
    std::vector<double> ms = r->iteration_ms;
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    seconds_per_iteration = ms[ms.size() / 2] / 1000.0;
    state.SetIterationTime(seconds_per_iteration);
  }
  state.counters["us_per_op"] = seconds_per_iteration * 1e6 / g_ops;
}

}  // namespace

BENCHMARK(BM_BareBoxedCall)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Replay)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(5);

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
      g_ops = std::max(1, std::atoi(argv[++i]));
      continue;
    }
    args.push_back(argv[i]);
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
