// mimic_capture_callback_order_bench [--calls N]: where the execution-trace observer's work lands
// against the op spans Kineto records, and so which of it a recorded host gap holds. Two
// RecordFunction callbacks of our own bracket the capture's: A is added before the observer and
// Kineto start, B after, so at each end of an op A runs before the observer and B after it. Each
// top-level call is stamped at A and B on entry and exit with Kineto's clock, beside Kineto's own
// start and end of that call (replay::RunUnderCapture, the capture's settings).
//
// The loop is an in-place add of a 0-dim tensor to a float matrix: a float one (the add calls
// nothing), a double one (the add first converts it: aten::to -> _to_copy -> empty_strided +
// copy_), a long one (converted too, and an integer input, whose range the observer computes).
// Per kind, medians over the calls: the recorded gap, the time outside all callbacks, the
// callbacks between A and B on entry (the observer's) and on exit, and where Kineto stamped the
// start and the end relative to A and B.
#include <ATen/ops/ones.h>
#include <ATen/record_function.h>
#include <c10/util/ApproximateClock.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "mimic/base/stats.h"
#include "profile.h"

namespace {

// One top-level call's stamps (ns, Kineto's clock).
struct Stamps {
  int64_t a_enter = 0, b_enter = 0, a_exit = 0, b_exit = 0;
};

// The stamps of the calls while `recording`; nested ops (depth > 1) are not stamped.
struct Bracket {
  std::vector<Stamps> calls;
  bool recording = false;
};
Bracket bracket;
thread_local int depth_a = 0, depth_b = 0;

std::unique_ptr<at::ObserverContext> AEnter(const at::RecordFunction&) {
  if (bracket.recording && depth_a++ == 0) bracket.calls.push_back({c10::getTime(), 0, 0, 0});
  return nullptr;
}
void AExit(const at::RecordFunction&, at::ObserverContext*) {
  if (bracket.recording && --depth_a == 0) bracket.calls.back().a_exit = c10::getTime();
}
std::unique_ptr<at::ObserverContext> BEnter(const at::RecordFunction&) {
  if (bracket.recording && depth_b++ == 0) bracket.calls.back().b_enter = c10::getTime();
  return nullptr;
}
void BExit(const at::RecordFunction&, at::ObserverContext*) {
  if (bracket.recording && --depth_b == 0) bracket.calls.back().b_exit = c10::getTime();
}

double Us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Runs `calls` adds of `other` under the capture between the two brackets and prints a row.
bool Row(const char* what, const at::Tensor& other, int calls) {
  at::Tensor p = at::ones({128, 128});
  for (int i = 0; i < 500; ++i) p.add_(other);  // warm the dispatcher and allocator
  bracket = Bracket();
  const at::CallbackHandle a = at::addGlobalCallback(at::RecordFunctionCallback(AEnter, AExit));
  at::CallbackHandle b = 0;
  auto loop = mimic::replay::RunUnderCapture(c10::Device(c10::kCPU), "aten::add_", false, [&] {
    b = at::addGlobalCallback(at::RecordFunctionCallback(BEnter, BExit));
    bracket.recording = true;
    for (int i = 0; i < calls; ++i) p.add_(other);
    bracket.recording = false;
  });
  at::removeCallback(a);
  if (b != 0) at::removeCallback(b);
  if (!loop.ok() || loop->spans_ns.size() != bracket.calls.size()) {
    std::fprintf(stderr, "%s: %s\n", what,
                 loop.ok() ? "Kineto and the brackets saw different calls"
                           : loop.status().message().c_str());
    return false;
  }
  std::vector<double> gap, outside, enter, exit, start_after_a, end_before_b;
  for (size_t i = 1; i < bracket.calls.size(); ++i) {
    const Stamps& s = bracket.calls[i];
    const auto& span = loop->spans_ns[i];
    gap.push_back(Us(span.first - loop->spans_ns[i - 1].second));
    outside.push_back(Us(s.a_enter - bracket.calls[i - 1].b_exit));
    enter.push_back(Us(s.b_enter - s.a_enter));
    exit.push_back(Us(s.b_exit - s.a_exit));
    start_after_a.push_back(Us(span.first - s.a_enter));
    end_before_b.push_back(Us(s.b_exit - span.second));
  }
  using mimic::Median;
  std::printf("| %s | %.2f | %.2f | %.2f | %+.2f | %.2f | %+.2f |\n", what, Median(gap),
              Median(outside), Median(enter), Median(start_after_a) - Median(enter), Median(exit),
              -Median(end_before_b));
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 3000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
      calls = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: mimic_capture_callback_order_bench [--calls N]\n");
      return 2;
    }
  }
  std::printf(
      "| p.add_(0-dim tensor) | recorded gap us | outside all callbacks us | A -> B on entry us | "
      "Kineto's start after B us | A -> B on exit us | Kineto's end after B us |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n");
  const std::pair<const char*, at::ScalarType> kinds[] = {
      {"float (calls nothing)", at::kFloat},
      {"double (converted first)", at::kDouble},
      {"long (converted first, ranged)", at::kLong}};
  for (const auto& [what, dtype] : kinds)
    if (!Row(what, at::ones({}, dtype), calls)) return 1;
  return 0;
}
