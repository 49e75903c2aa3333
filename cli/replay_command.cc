// mimic replay TRACE_OR_WORKLOAD... [--trace-dir DIR [--rank-pattern P]] [--kineto K] [--device D]
//              [--mode full|compute|comm] [--warmup W] [--iters N] [--report R]
// Under torchrun, srun or mpirun each rank replays its own trace with the job's collectives.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "mimic/base/stats.h"
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
  app.add_option(
      "--device", o.device,
      "Device to replay on: cpu, cuda or cuda:N (default: the best present; see `mimic devices`)");
  app.add_option("--warmup", o.warmup, "Warm-up iterations, not measured")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--iters", o.iters, "Measured iterations")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--iteration", o.iteration, "Replay ProfilerStep#N (default: the first step, else the whole trace)");
  app.add_option("--label", o.label, "Replay a \"## label ##\" range instead of an iteration");
  app.add_option("--threads", o.num_threads, "Intra-op threads (default: the original run's when known, else LibTorch's)");
  app.add_option("--seed", o.seed, "Seed of all random tensor contents")->capture_default_str();
  app.add_flag(
      "--heap-trim,!--no-heap-trim",
      [&o](int64_t n) {
        o.heap =
            n > 0 ? replay::ReplayOptions::Heap::kTrimmed : replay::ReplayOptions::Heap::kRetained;
      },
      "Let the C library hand freed host memory back to the kernel, as glibc does by default; host "
      "tensors then page-fault afresh, as often as the heap's layout makes them. --no-heap-trim "
      "keeps the heap, as a long-running process's is. Default: kept, and where the capture "
      "recorded the original's page faults per step, as many taken on purpose each step");
  app.add_flag("!--no-decompose", o.decompose,
               "Run composite ops (those with no kernel of their own, like max_pool2d or linear) as themselves, "
               "not as the ops the trace recorded under them");
  app.add_flag("--strict", o.strict,
               "Stop at the first op that cannot be replayed instead of skipping it (exit 1, with "
               "the report)");
  app.add_flag("--per-op", o.per_op_device_time,
               "Time every op on the device's own clock (CUDA events around each op); ops are "
               "always timed on the CPU");
  app.add_flag("--lazy-alloc", o.lazy_alloc,
               "Allocate the prepared inputs only while they are used in each iteration (for "
               "selections whose inputs "
               "do not fit the device at once); outputs are freed after their last use either way");
  app.add_option("--profile", o.profile_path,
                 "Write a Kineto (Chrome trace) profile of the measured iterations, through "
                 "LibTorch's profiler: one "
                 "cpu_op per replayed op, ProfilerStep#N per iteration; opens in Perfetto");
  app.add_option("--report", report_path,
                 "Write the JSON report here ('-' for stdout); in a multi-rank replay {rank} in the path is "
                 "this rank, else .rank<N> is added before the extension");
  static const std::map<std::string, replay::ReplayMode> kModes = {
      {"full", replay::ReplayMode::kFull}, {"compute", replay::ReplayMode::kCompute}, {"comm", replay::ReplayMode::kComm}};
  app.add_option("--mode", o.mode,
                 "full: compute ops and collectives; compute: without the collectives; comm: the collectives "
                 "alone on buffers of the recorded sizes, each timed on its own (nccl-tests style)")
      ->transform(CLI::CheckedTransformer(kModes, CLI::ignore_case))
      ->default_str("full");
  static const std::map<std::string, replay::HostGaps> kGaps = {
      {"recorded", replay::HostGaps::kRecorded},
      {"modelled", replay::HostGaps::kModelled},
      {"none", replay::HostGaps::kNone}};
  app.add_option("--host-gaps", o.host_gaps,
                 "recorded: before each op, wait as long as the original's host did with no op "
                 "running (Python, the autograd engine, optimizer loops), from its Kineto trace, "
                 "less the capture's own cost; modelled: wait the platform's host time for what "
                 "issued the op (forward, backward, optimizer: cpu_host's cpu_overheads.t1_*_us, "
                 "measured by calibrate on other captures); none: ops back to back (default: "
                 "recorded when a Kineto trace is linked, else modelled where cpu_host has them)")
      ->transform(CLI::CheckedTransformer(kGaps, CLI::ignore_case));
  app.add_option("--capture-cost-us", o.capture_cost.boundary_us,
                 "The capture's own cost per event boundary (an op starting or ending) taken off "
                 "the recorded gaps, alone (default on the CPU: this host's calibration of "
                 "cpu_host, `mimic calibrate --cache`, where it has one; else measured at setup "
                 "on known loops under the profiler and the execution-trace observer, with what "
                 "an op's input tensors and integer inputs add before it starts)")
      ->check(CLI::NonNegativeNumber);
  app.add_option_function<double>(
         "--timeout", [&o](double s) { o.comm_timeout_ms = static_cast<int64_t>(s * 1000); },
         "Seconds a rank waits for the others (rendezvous, each collective) before it stops with an error "
         "naming the ranks that stopped responding (default 300)")
      ->check(CLI::PositiveNumber);
}

// This process's rank in a multi-rank job, from its launcher's environment.
Status ApplyLaunchEnvironment(replay::ReplayOptions& options) {
  MIMIC_ASSIGN_OR_RETURN(options.dist, replay::DistEnvFromEnvironment());
  return Status::Ok();
}

// `path` with its "{rank}" replaced by `rank`; nullopt when it has none.
std::optional<std::string> WithRank(const std::string& path, int rank) {
  const size_t at = path.find("{rank}");
  if (at == std::string::npos) return std::nullopt;
  return path.substr(0, at) + std::to_string(rank) + path.substr(at + 6);
}

std::string RankReportPath(const std::string& path, const replay::ReplayOptions& options) {
  if (!options.dist || options.dist->world_size <= 1 || path == "-" || path.empty()) return path;
  if (std::optional<std::string> p = WithRank(path, options.dist->rank)) return *p;
  const std::string rank = std::to_string(options.dist->rank);
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + ".rank" + rank;
  return path.substr(0, dot) + ".rank" + rank + path.substr(dot);
}

void UseOriginalThreads(const proto::Workload& w, replay::ReplayOptions& options) {
  if (options.num_threads == 0 && w.original().num_threads() > 0)
    options.num_threads = static_cast<int>(w.original().num_threads());
}

Status NeedLibTorch() { return Status::Ok(); }

Result<double> MeasureByReplay(const proto::Workload& w, const replay::ReplayOptions& given,
                               const std::function<void(int done, int total)>& on_iteration,
                               std::string* detail) {
  replay::ReplayOptions options = given;
  UseOriginalThreads(w, options);
  UseCaptureTimeCost(w, options);
  UseHostCaptureCost(options);
  MIMIC_ASSIGN_OR_RETURN(
      const replay::ReplayResult r,
      replay::Replay(w, options, [&](int done, int total, double) { on_iteration(done, total); }));
  if (!r.stop_reason.empty() || r.iteration_ms.empty())
    return Status::Internal(
        "the replay stopped early: " +
        (r.stop_reason.empty() ? std::string("no iteration measured") : r.stop_reason));
  *detail = "replay on " + r.device + ", median of " + std::to_string(r.iteration_ms.size()) +
            " iterations, " + std::to_string(r.replayed_ops) + "/" + std::to_string(r.total_ops) +
            " ops replayed";
  if (auto it = r.skipped_by_reason.find("collective"); it != r.skipped_by_reason.end())
    *detail += " (" + std::to_string(it->second) +
               " collectives skipped: one process, the step holds no communication)";
  if (w.original().iteration_ms_size() > 0) {
    std::vector<double> original(w.original().iteration_ms().begin(),
                                 w.original().iteration_ms().end());
    char buf[96];
    std::snprintf(buf, sizeof(buf), "; the original run: %.3f ms median", Median(original));
    *detail += buf;
  }
  return Median(r.iteration_ms);
}

int ReplayAndReport(const proto::Workload& w, const std::string& input,
                    const replay::ReplayOptions& given, const std::string& report_path) {
  replay::ReplayOptions options = given;
  UseOriginalThreads(w, options);
  UseCaptureTimeCost(w, options);
  UseHostCaptureCost(options);
  const bool tty = isatty(fileno(stderr));
  const std::string who = options.dist ? "rank " + std::to_string(options.dist->rank) + ": " : "";
  auto progress = [tty, who](int done, int total, double ms) {
    if (tty) std::fprintf(stderr, "\r  %siteration %d/%d  %.3f ms   ", who.c_str(), done, total, ms);
    else std::fprintf(stderr, "mimic: %siteration %d/%d: %.3f ms\n", who.c_str(), done, total, ms);
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
  // Rank 0 speaks for a multi-rank job on the console; every rank writes its own JSON. With the
  // JSON on stdout, the console report goes to stderr.
  if (!options.dist || options.dist->rank == 0)
    std::fputs(replay::CreateReporter("console")->Render(ctx, w, *r).c_str(),
               report_path == "-" ? stderr : stdout);
  if (!report_path.empty()) {
    Status st = WriteOutput(RankReportPath(report_path, options), replay::CreateReporter("json")->Render(ctx, w, *r));
    if (!st.ok()) return Fail(st);
  }
  if (!r->stop_reason.empty()) {
    std::fprintf(stderr, "mimic: error: replay stopped early: %s\n", r->stop_reason.c_str());
    if (options.dist && !r->comm.backend.empty()) {
      // The process groups were abandoned with threads that may be blocked on a dead peer:
      // leave without unwinding them (the report is written, the streams flushed).
      std::fflush(nullptr);
      _exit(kExitRuntime);
    }
    return kExitRuntime;
  }
  return kExitOk;
}

Runner AddReplay(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string trace_dir, rank_pattern = "rank-{rank}.et.json.gz", kineto, report;
    replay::ReplayOptions options;
    bool seed_given = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("input", args->inputs,
                 "Execution trace (.json, .json.gz), .mimic workload or bundle; in a multi-rank replay, one "
                 "per rank in rank order (or use --trace-dir)");
  app.add_option("--trace-dir", args->trace_dir, "Folder of per-rank traces, named by --rank-pattern");
  app.add_option("--rank-pattern", args->rank_pattern, "File name of rank N's trace in --trace-dir, {rank} = N")
      ->capture_default_str();
  app.add_option(
      "--kineto", args->kineto,
      "Kineto trace captured with it, to link; in a multi-rank replay {rank} in the path is "
      "replaced by the rank, as --rank-pattern does");
  AddReplayOptions(app, args->options, args->report);
  return [args, &app]() {
    args->seed_given = app.count("--seed") > 0;
    if (Status st = ApplyLaunchEnvironment(args->options); !st.ok()) return Fail(st);
    const int rank = args->options.dist ? args->options.dist->rank : 0;
    const int world = args->options.dist ? args->options.dist->world_size : 1;
    std::string input;
    if (!args->trace_dir.empty()) {
      if (!args->inputs.empty()) return Fail(Status::InvalidInput("give either traces or --trace-dir, not both"));
      std::optional<std::string> name = WithRank(args->rank_pattern, rank);
      if (!name)
        return Fail(Status::InvalidInput("--rank-pattern \"" + args->rank_pattern + "\" has no {rank}"));
      input = args->trace_dir + "/" + *name;
    } else if (args->inputs.size() == 1) {
      input = args->inputs[0];
    } else if (args->inputs.empty()) {
      return Fail(Status::InvalidInput("no input: give a trace, a workload or a bundle (or --trace-dir)"));
    } else if (static_cast<int>(args->inputs.size()) != world) {
      return Fail(Status::InvalidInput(std::to_string(args->inputs.size()) + " traces for " + std::to_string(world) +
                                       " rank(s): give one per rank, in rank order"));
    } else {
      input = args->inputs[rank];
    }
    // Each rank's Kineto trace by the same pattern as the traces: "{rank}" in --kineto.
    const std::string kineto = WithRank(args->kineto, rank).value_or(args->kineto);
    Result<LoadedInput> in = LoadInput(input, kineto);
    if (!in.ok()) return Fail(in.status());
    if (in->has_seed && !args->seed_given) args->options.seed = in->seed;
    if (args->options.device.empty()) args->options.device = replay::BestDevice();
    return ReplayAndReport(in->workload, input, args->options, args->report);
  };
}

}  // namespace mimic::cli
