// mimic replay TRACE_OR_WORKLOAD [--kineto K] [--device D] [--warmup W] [--iters N] [--report R]
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "cli.h"
#include "mimic/eg/workload.h"
#include "mimic/replay/report.h"

namespace mimic::cli {
namespace {

// SIGINT/SIGTERM stop the replay after the op in flight; the report of the completed
// iterations is still written. A second signal kills the process as usual.
std::atomic<bool> g_cancel{false};
std::atomic<int> g_signal{0};

void OnSignal(int sig) {
  g_signal.store(sig);
  g_cancel.store(true);
  signal(sig, SIG_DFL);
}

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace

void AddReplayOptions(CLI::App& app, replay::ReplayOptions& o, std::string& report_path) {
  app.add_option("--device", o.device, "Device to replay on: cpu (default: the best present)");
  app.add_option("--warmup", o.warmup, "Warm-up iterations, not measured")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--iters", o.iters, "Measured iterations")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--iteration", o.iteration, "Replay ProfilerStep#N (default: the first step, else the whole trace)");
  app.add_option("--label", o.label, "Replay a \"## label ##\" range instead of an iteration");
  app.add_option("--threads", o.num_threads, "Intra-op threads (default: the original run's when known, else LibTorch's)");
  app.add_option("--seed", o.seed, "Seed of all random tensor contents")->capture_default_str();
  app.add_flag("--strict", o.strict, "Fail on the first op that cannot be replayed instead of skipping it");
  app.add_option("--report", report_path, "Write the JSON report here ('-' for stdout)");
}

int ReplayAndReport(const proto::Workload& w, const std::string& input,
                    const replay::ReplayOptions& given, const std::string& report_path) {
  replay::ReplayOptions options = given;
  if (options.num_threads == 0 && w.original().num_threads() > 0)
    options.num_threads = static_cast<int>(w.original().num_threads());
  const bool tty = isatty(fileno(stderr));
  auto progress = [tty](int done, int total, double ms) {
    if (tty) std::fprintf(stderr, "\r  iteration %d/%d  %.3f ms   ", done, total, ms);
    else std::fprintf(stderr, "mimic: iteration %d/%d: %.3f ms\n", done, total, ms);
    if (tty && done == total) std::fprintf(stderr, "\n");
  };
  InstallSignalHandlers();
  options.cancel = &g_cancel;
  options.cancel_reason = "interrupted by a signal";
  Result<replay::ReplayResult> r = replay::Replay(w, options, progress);
  if (!r.ok()) return Fail(r.status().WithContext(input));
  if (r->stop_reason == options.cancel_reason)
    r->stop_reason = std::string("interrupted by ") + (g_signal.load() == SIGINT ? "SIGINT" : "SIGTERM");
  const replay::ReportContext ctx = replay::MakeContext(w, input, r->device);
  std::fputs(replay::CreateReporter("console")->Render(ctx, w, *r).c_str(), stdout);
  if (!report_path.empty()) {
    Status st = WriteOutput(report_path, replay::CreateReporter("json")->Render(ctx, w, *r));
    if (!st.ok()) return Fail(st);
  }
  if (!r->stop_reason.empty()) {
    std::fprintf(stderr, "mimic: error: replay stopped early: %s\n", r->stop_reason.c_str());
    return kExitRuntime;
  }
  return kExitOk;
}

Runner AddReplay(CLI::App& app) {
  struct Args {
    std::string input, kineto, report;
    replay::ReplayOptions options;
    bool seed_given = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("input", args->input, "Execution trace (.json, .json.gz), .mimic workload or bundle")->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with it, to link");
  AddReplayOptions(app, args->options, args->report);
  return [args, &app]() {
    args->seed_given = app.count("--seed") > 0;
    Result<LoadedInput> in = LoadInput(args->input, args->kineto);
    if (!in.ok()) return Fail(in.status());
    if (in->has_seed && !args->seed_given) args->options.seed = in->seed;
    if (args->options.device.empty()) args->options.device = replay::BestDevice();
    return ReplayAndReport(in->workload, args->input, args->options, args->report);
  };
}

}  // namespace mimic::cli
