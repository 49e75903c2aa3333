#include "cold_dispatch.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/rand.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "mimic/base/stats.h"

namespace mimic::calibrate {
namespace {

using Clock = std::chrono::steady_clock;

// Distinct ops called in turn, and bytes copied between two calls, at which the figures are
// measured.
const int kInTurn[] = {1, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256};
const double kTraffic[] = {16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20,
                           8 << 20,  16 << 20, 32 << 20,  64 << 20};
// How many ops of each kind the figures average over (the in-turn ones: over the first K).
const int kTrafficKernels = 32, kViews = 16;

// One ATen op with its arguments, ready to call.
struct ColdCall {
  c10::OperatorHandle op;
  torch::jit::Stack args;
  bool view = false;  // its output aliases an input

  // Microseconds one boxed call takes (its stack built before, its output freed after).
  double Us() const {
    torch::jit::Stack stack = args;
    const auto t0 = Clock::now();
    op.callBoxed(stack);
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  }
};

// The stack of a call of `s` on `a` (and `b`): its required arguments, one or two tensors, then
// every other argument's default. nullopt for any other schema, for an op that writes to its
// arguments or returns other than one tensor, and for a backward op.
std::optional<torch::jit::Stack> ArgsOf(const c10::FunctionSchema& s, const at::Tensor& a,
                                        const at::Tensor& b) {
  if (s.is_mutable() || s.returns().size() != 1 ||
      s.returns()[0].type()->kind() != c10::TypeKind::TensorType || s.name().back() == '_' ||
      s.name().find("backward") != std::string::npos)
    return std::nullopt;
  torch::jit::Stack stack;
  int tensors = 0;
  for (const c10::Argument& arg : s.arguments()) {
    if (arg.default_value()) {
      stack.push_back(*arg.default_value());
      continue;
    }
    if (arg.kwarg_only() || arg.type()->kind() != c10::TypeKind::TensorType || tensors == 2)
      return std::nullopt;
    stack.push_back(tensors++ == 0 ? a : b);
  }
  if (tensors == 0) return std::nullopt;
  return stack;
}

// Whether `c` returns without an error or a warning (an op that warns on every call would time
// its warning) and in at most 20 us (these figures are of dispatches, not of kernels).
bool RunsQuietlyAndFast(const ColdCall& c) {
  struct Counter : c10::WarningHandler {
    int warnings = 0;
    void process(const c10::Warning&) override { ++warnings; }
  } counter;
  c10::WarningUtils::WarningHandlerGuard guard(&counter);
  double fastest = 1e9;
  try {
    for (int i = 0; i < 3; ++i) fastest = std::min(fastest, c.Us());
  } catch (const std::exception&) {
    return false;
  }
  return counter.warnings == 0 && fastest <= 20;
}

// Every ATen op ArgsOf can call that runs quietly and fast on one-element float tensors, one
// overload per name, shuffled with a fixed seed: the first K are K ops of unrelated code.
std::vector<ColdCall> ColdCalls() {
  const at::Tensor a = at::full({1}, 0.75), b = at::full({1}, 1.25);
  std::vector<c10::OperatorName> names = c10::Dispatcher::singleton().getAllOpNames();
  std::sort(names.begin(), names.end(), [](const c10::OperatorName& x, const c10::OperatorName& y) {
    return std::tie(x.name, x.overload_name) < std::tie(y.name, y.overload_name);
  });
  std::vector<ColdCall> calls;
  std::set<std::string> taken;
  for (const c10::OperatorName& name : names) {
    if (name.name.rfind("aten::", 0) != 0 || taken.count(name.name)) continue;
    const std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findOp(name);
    if (!op || !op->hasSchema()) continue;
    std::optional<torch::jit::Stack> args = ArgsOf(op->schema(), a, b);
    if (!args) continue;
    ColdCall call{*op, std::move(*args), op->schema().returns()[0].alias_info() != nullptr};
    if (!RunsQuietlyAndFast(call)) continue;
    taken.insert(name.name);
    calls.push_back(std::move(call));
  }
  std::shuffle(calls.begin(), calls.end(), std::mt19937(42));
  return calls;
}

// The median over `rounds` of `c`'s time called right after itself.
double HotUs(const ColdCall& c, int rounds) {
  std::vector<double> us;
  for (int r = 0; r < rounds; ++r) {
    c.Us();
    us.push_back(c.Us());
  }
  return Median(us);
}

// `cycle` called in turn, one untimed pass, then `rounds` timed ones: the median time beyond its
// hot time of the call at `timed` (every call where `timed` < 0), averaged. The hot time is
// measured again here, next to the rounds: measured once at the start instead, it came out
// about 0.2 us lower, and every figure that much higher (one op in turn: 0.22 us, not 0.03).
double InTurnExtraUs(const std::vector<const ColdCall*>& cycle, int timed, int rounds) {
  for (const ColdCall* c : cycle) c->Us();
  std::vector<std::vector<double>> us(cycle.size());
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < cycle.size(); ++i) us[i].push_back(cycle[i]->Us());
  double extra = 0;
  int n = 0;
  for (size_t i = 0; i < cycle.size(); ++i)
    if (timed < 0 || static_cast<int>(i) == timed)
      extra += Median(us[i]) - HotUs(*cycle[i], rounds), ++n;
  return std::max(0.0, extra / n);
}

// The mean over `calls` of the median over `rounds` of a call's time after `dst.copy_(src)`,
// beyond the same call right after it.
double AfterTrafficExtraUs(const std::vector<const ColdCall*>& calls, at::Tensor& dst,
                           const at::Tensor& src, int rounds) {
  double extra = 0;
  for (const ColdCall* c : calls) {
    std::vector<double> more;
    for (int r = 0; r < rounds; ++r) {
      dst.copy_(src);
      const double after = c->Us();
      more.push_back(after - c->Us());
    }
    extra += Median(more) / calls.size();
  }
  return std::max(0.0, extra);
}

// "K: x us, ..." of points with a field `key` and extra_us.
template <typename Points, typename Key>
std::string Describe(const Points& points, Key key) {
  std::string out;
  for (const auto& p : points) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s%s: %.2f", out.empty() ? "" : ", ", key(p).c_str(),
                  p.extra_us());
    out += buf;
  }
  return out + " us";
}

// `k` of `from`, drawn by `seed`.
std::vector<const ColdCall*> Draw(const std::vector<const ColdCall*>& from, int k, int seed) {
  std::vector<const ColdCall*> drawn = from;
  std::shuffle(drawn.begin(), drawn.end(), std::mt19937(seed));
  drawn.resize(k);
  return drawn;
}

// Each figure averages kDraws draws of the ops in turn: which ops they are moves it more than
// the rounds' noise does.
const int kDraws = 4;

void MeasureInTurn(const std::vector<const ColdCall*>& kernels,
                   const std::vector<const ColdCall*>& views, int rounds, proto::CpuOverheads& c) {
  c.clear_in_turn();
  c.clear_in_turn_views();
  for (int k : kInTurn) {
    if (k > static_cast<int>(kernels.size())) break;
    double extra = 0;
    for (int d = 0; d < kDraws; ++d)
      extra += InTurnExtraUs(Draw(kernels, k, d), -1, rounds) / kDraws;
    proto::InTurnPoint* point = c.add_in_turn();
    point->set_distinct_ops(k);
    point->set_extra_us(extra);
    // Each view among k - 1 ops that compute.
    if (views.empty()) continue;
    extra = 0;
    for (size_t v = 0; v < views.size(); ++v) {
      std::vector<const ColdCall*> cycle = Draw(kernels, k - 1, static_cast<int>(v % kDraws));
      cycle.push_back(views[v]);
      extra += InTurnExtraUs(cycle, k - 1, rounds) / views.size();
    }
    point = c.add_in_turn_views();
    point->set_distinct_ops(k);
    point->set_extra_us(extra);
  }
}

void MeasureAfterTraffic(const std::vector<const ColdCall*>& kernels,
                         const std::vector<const ColdCall*>& views, int rounds,
                         proto::CpuOverheads& c) {
  c.clear_after_traffic();
  c.clear_after_traffic_views();
  const int64_t most = static_cast<int64_t>(kTraffic[std::size(kTraffic) - 1]) / 2 / sizeof(float);
  const at::Tensor from = at::rand({most}), to = at::empty({most});
  const std::vector<const ColdCall*> some(
      kernels.begin(), kernels.begin() + std::min<size_t>(kernels.size(), kTrafficKernels));
  for (double bytes : kTraffic) {
    const int64_t elements = static_cast<int64_t>(bytes) / 2 / sizeof(float);
    at::Tensor src = from.narrow(0, 0, elements), dst = to.narrow(0, 0, elements);
    proto::TrafficPoint* point = c.add_after_traffic();
    point->set_bytes(bytes);
    point->set_extra_us(AfterTrafficExtraUs(some, dst, src, rounds));
    if (views.empty()) continue;
    point = c.add_after_traffic_views();
    point->set_bytes(bytes);
    point->set_extra_us(AfterTrafficExtraUs(views, dst, src, rounds));
  }
}

}  // namespace

std::string MeasureColdDispatch(int rounds, proto::CpuOverheads& c,
                                const std::function<void(const std::string&)>& log) {
  const std::vector<ColdCall> calls = ColdCalls();
  std::vector<const ColdCall*> kernels, views;
  for (const ColdCall& call : calls)
    if (!call.view)
      kernels.push_back(&call);
    else if (views.size() < kViews)
      views.push_back(&call);
  MeasureInTurn(kernels, views, rounds, c);
  MeasureAfterTraffic(kernels, views, rounds, c);
  auto ops = [](const proto::InTurnPoint& p) { return std::to_string(p.distinct_ops()); };
  auto kib = [](const proto::TrafficPoint& p) {
    return std::to_string(static_cast<int64_t>(p.bytes() / 1024)) + " KiB";
  };
  log("cold dispatch, beyond the same call right after: in turn with K ops " +
      Describe(c.in_turn(), ops) + " (views " + Describe(c.in_turn_views(), ops) +
      "); after a copy of " + Describe(c.after_traffic(), kib) + " (views " +
      Describe(c.after_traffic_views(), kib) + ")");
  return "in_turn, after_traffic = each call's time beyond the same call right after it, of " +
         std::to_string(kernels.size()) +
         " one-element ATen ops that take one or two tensors (K of them called in turn, " +
         std::to_string(kDraws) + " draws of K averaged; the first " +
         std::to_string(kTrafficKernels) +
         " after a copy reading and writing that many bytes in all), their views' (" +
         std::to_string(views.size()) +
         " ops returning an alias of an input, each after K - 1 of the others) in *_views; "
         "median of " +
         std::to_string(rounds) + " rounds, mean over the ops";
}

}  // namespace mimic::calibrate
