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

#include "mimic/replay/overheads.h"
#include "mimic/replay/replayer.h"
#include "proto/workload.pb.h"

namespace {

int g_ops = 2000;

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
  const mimic::proto::Workload w = mimic::replay::TinyOpChain(g_ops);
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
