// mimic_capture_cost_state_bench [--rounds N] [--only TEXT]: what the capture's instrumentation
// (Kineto with shapes and memory events, and the execution-trace observer, as the capture scripts
// record) costs in the gap before an op, by the state the host is in when the op comes. `mimic
// calibrate` prices the capture on a hot loop of back-to-back calls (replay/src/capture_cost.cc);
// this bench asks what changes that price: record functions inside the gap, the depth of the
// record-function stack, how many distinct tensors the observer has seen, and the memory or the
// kernel code the host ran between two recorded calls without recording it.
//
// Every condition is a loop of aten::cat of one one-element tensor; the gap is the recorded start
// of a call less the recorded end of the call before, median over the loop. The work between two
// calls (a walk over a buffer, an unrecorded matrix product) is timed apart with the steady
// clock and taken off: "capture us" is what the instrumentation cost there.
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones.h>
#include <ATen/record_function.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mimic/base/stats.h"
#include "profile.h"

namespace {

using mimic::Median;
using mimic::replay::CapturedLoop;
using Clock = std::chrono::steady_clock;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

// One condition: a loop `body(work_us)` of calls of `op` that appends the time of the
// unrecorded work before each call to work_us.
struct Condition {
  std::string name;
  std::function<void(std::vector<double>&)> body;
  const char* op = "aten::cat";
};

// The median recorded gap before a call, and the median unrecorded work before one, timed in a
// first pass without the capture (which also warms the dispatcher, the allocator and the
// caches): under the capture the work's own allocations would pay for their memory events.
bool Measure(const Condition& c, double* gap_us, double* work_us) {
  std::vector<double> work, under_capture;
  c.body(work);
  mimic::Result<CapturedLoop> loop = mimic::replay::RunUnderCapture(
      c10::Device(c10::kCPU), c.op, false, [&] { c.body(under_capture); });
  if (!loop.ok() || loop->spans_ns.size() < 2) {
    std::fprintf(stderr, "%s: %s\n", c.name.c_str(),
                 loop.ok() ? "too few calls recorded" : loop.status().message().c_str());
    return false;
  }
  std::vector<double> gaps;
  for (size_t i = 1; i < loop->spans_ns.size(); ++i)
    gaps.push_back(static_cast<double>(loop->spans_ns[i].first - loop->spans_ns[i - 1].second) /
                   1000.0);
  *gap_us = Median(gaps);
  *work_us = work.empty() ? 0 : Median(work);
  return true;
}

std::vector<Condition> Conditions() {
  const at::Tensor one = at::ones({1});
  const std::vector<at::Tensor> list(1, one);
  std::vector<Condition> out;
  auto cat = [list] { (void)at::cat(list); };
  out.push_back({"back to back (calibrate's loop)", [cat](std::vector<double>&) {
                   for (int r = 0; r < 2000; ++r) cat();
                 }});
  for (int k : {1, 2, 4})
    out.push_back({std::to_string(k) + " empty record function(s) in the gap",
                   [cat, k](std::vector<double>&) {
                     for (int r = 0; r < 1000; ++r) {
                       for (int j = 0; j < k; ++j) {
                         RECORD_FUNCTION("mimic::bench_scope", c10::ArrayRef<const c10::IValue>());
                       }
                       cat();
                     }
                   }});
  // As the autograd engine runs a node's ops: inside the node's scope (its name, its grad input
  // and its sequence number), inside an input-less `evaluate_function` wrapper; the gap between
  // two calls then holds four boundaries of the scopes.
  const at::Tensor grad = at::ones({32, 128});
  out.push_back(
      {"each call inside an autograd-like node (a wrapper around a scope with one tensor and a "
       "sequence number)",
       [cat, grad](std::vector<double>&) {
         std::vector<c10::IValue> inputs{grad};
         for (int r = 0; r < 1000; ++r) {
           RECORD_FUNCTION("autograd::engine::evaluate_function: MimicBackward0",
                           c10::ArrayRef<const c10::IValue>());
           at::RecordFunction node(at::RecordScope::BACKWARD_FUNCTION);
           if (node.isActive())
             node.before("MimicBackward0",
                         c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size()),
                         static_cast<int64_t>(r));
           cat();
         }
       }});
  out.push_back({"inside 3 nested record functions", [cat](std::vector<double>&) {
                   std::vector<std::unique_ptr<at::RecordFunction>> scopes;
                   for (int d = 0; d < 3; ++d) {
                     scopes.push_back(
                         std::make_unique<at::RecordFunction>(at::RecordScope::FUNCTION));
                     if (scopes.back()->isActive()) scopes.back()->before("mimic::bench_depth", -1);
                   }
                   for (int r = 0; r < 2000; ++r) cat();
                 }});
  for (int distinct : {3000, 30000}) {
    auto lists = std::make_shared<std::vector<std::vector<at::Tensor>>>();
    for (int i = 0; i < distinct; ++i) lists->emplace_back(1, at::ones({1}));
    out.push_back({"a tensor of " + std::to_string(distinct) + " in turn",
                   [lists, distinct](std::vector<double>&) {
                     for (int r = 0; r < 6000; ++r) (void)at::cat((*lists)[r % distinct]);
                   }});
  }
  for (size_t kib : {256, 1024, 4096, 16384}) {
    auto buf = std::make_shared<std::vector<char>>(kib << 10, 1);
    out.push_back({"a walk over " + std::to_string(kib) + " KiB before each call",
                   [cat, buf](std::vector<double>& work) {
                     for (int r = 0; r < 300; ++r) {
                       const auto t0 = Clock::now();
                       int acc = 0;
                       for (size_t i = 0; i < buf->size(); i += 64) acc += (*buf)[i]++;
                       (*buf)[0] = static_cast<char>(acc);
                       work.push_back(Us(Clock::now() - t0));
                       cat();
                     }
                   }});
  }
  for (int64_t rows : {32, 128}) {
    const at::Tensor a = at::ones({rows, 128}), w = at::ones({128, 384});
    out.push_back({"an unrecorded mm [" + std::to_string(rows) + ",128]x[128,384] before each call",
                   [cat, a, w](std::vector<double>& work) {
                     for (int r = 0; r < 600; ++r) {
                       const auto t0 = Clock::now();
                       {
                         at::RecordFunctionGuard off(false);
                         (void)at::mm(a, w);
                       }
                       work.push_back(Us(Clock::now() - t0));
                       cat();
                     }
                   }});
  }
  // Two allocator events in each gap (profile_memory records an allocation and a free) that no
  // record function sees: against the loop back to back, what the profiler's memory events cost.
  out.push_back({"an unrecorded allocation and free of one element before each call",
                 [cat](std::vector<double>& work) {
                   for (int r = 0; r < 2000; ++r) {
                     const auto t0 = Clock::now();
                     {
                       at::RecordFunctionGuard off(false);
                       (void)at::empty({1});
                     }
                     work.push_back(Us(Clock::now() - t0));
                     cat();
                   }
                 }});
  // The same in-place add of a 0-dim tensor, one that calls nothing and one whose dtype differs
  // from the float tensor's, so that the add first converts it (aten::to -> _to_copy ->
  // empty_strided + copy_), as `p.add_(1)` does from Python in an optimizer's loop.
  const at::Tensor p = at::ones({128, 128});
  for (const auto& [what, other] :
       {std::pair{"a float", at::ones({})}, std::pair{"a long", at::ones({}, at::kLong)}}) {
    out.push_back({std::string("aten::add_ of ") + what + " 0-dim tensor",
                   [p, other](std::vector<double>&) {
                     for (int r = 0; r < 2000; ++r) (void)p.add_(other);
                   },
                   "aten::add_"});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: mimic_capture_cost_state_bench [--rounds N] [--only TEXT]\n");
      return 2;
    }
  }
  std::vector<Condition> conditions;
  for (Condition& c : Conditions())
    if (c.name.find(only) != std::string::npos) conditions.push_back(std::move(c));
  std::vector<std::vector<double>> gap(conditions.size()), work(conditions.size());
  for (int r = 0; r < rounds; ++r)  // the conditions alternate within each round
    for (size_t c = 0; c < conditions.size(); ++c) {
      double g = 0, w = 0;
      if (!Measure(conditions[c], &g, &w)) return 1;
      gap[c].push_back(g);
      work[c].push_back(w);
    }
  std::printf(
      "| condition | gap us | unrecorded work us | capture us (per round) "
      "|\n|---|---:|---:|---|\n");
  for (size_t c = 0; c < conditions.size(); ++c) {
    std::string per_round;
    for (int r = 0; r < rounds; ++r) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%s%.2f", r ? ", " : "", gap[c][r] - work[c][r]);
      per_round += buf;
    }
    std::printf("| %s | %.2f | %.2f | %s |\n", conditions[c].name.c_str(), Median(gap[c]),
                Median(work[c]), per_round.c_str());
  }
  return 0;
}
