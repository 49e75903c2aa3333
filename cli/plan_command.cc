// mimic plan MANIFEST --target T [--target T2 ...] [--report R.json] [--html R.html]: fleet
// capacity planning (docs/fleet.md). Step times are measured by replay where the platform is
// this machine's device and predicted by the model elsewhere; the rest is mimic::fleet.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "cli.h"
#include "mimic/base/clock.h"
#include "mimic/base/file.h"
#include "mimic/base/host.h"
#include "mimic/base/stats.h"
#include "mimic/fleet/manifest.h"
#include "mimic/fleet/plan.h"
#include "mimic/fleet/report.h"
#include "mimic/model/platform.h"
#include "mimic/model/predict.h"

namespace mimic::cli {
namespace {

// Step times for `mimic plan`: each class's workload is loaded once; a platform whose device is
// this machine's is measured by replay, any other is predicted.
class CliEnvironment final : public fleet::PlanEnvironment {
 public:
  CliEnvironment(const proto::FleetManifest& m, const replay::ReplayOptions& replay_options,
                 std::function<void(const std::string&, double)> progress)
      : manifest_(m), replay_options_(replay_options), progress_(std::move(progress)) {}

  Result<fleet::StepTime> StepTimeOf(int cls, const std::string& platform) override {
    MIMIC_ASSIGN_OR_RETURN(const proto::Workload* w, WorkloadOf(cls));
    MIMIC_ASSIGN_OR_RETURN(const bool local, IsLocal(platform));
    const std::string& name = manifest_.classes(cls).name();
    if (local) {
      replay::ReplayOptions o = replay_options_;
      o.device = "cpu";
      const std::string stage = "measuring " + name + " on " + platform + " (replay)";
      auto on_iteration = [&](int done, int total) {
        if (progress_) progress_(stage, static_cast<double>(done) / total);
      };
      fleet::StepTime st;
      Result<double> ms = MeasureByReplay(*w, o, on_iteration, &st.detail);
      if (!ms.ok())
        return ms.status().WithContext("classes[" + std::to_string(cls) + "] (" + name + ")");
      st.ms = *ms;
      st.source = "measured";
      return st;
    }
    return Predict(cls, *w, platform);
  }

  // A CPU platform is this machine's device: measured. GPU platforms are predicted (the replay
  // runs on the CPU only until the GPU replay lands).
  Result<bool> IsLocal(const std::string& platform) {
    MIMIC_ASSIGN_OR_RETURN(const proto::Platform* p, PlatformOf(platform));
    return p->device_type() == "cpu";
  }

  Result<double> PricePerGpuHour(const std::string& platform) override {
    MIMIC_ASSIGN_OR_RETURN(const proto::Platform* p, PlatformOf(platform));
    return p->price_per_gpu_hour();
  }

 private:
  Result<const proto::Workload*> WorkloadOf(int cls) {
    auto it = workloads_.find(cls);
    if (it != workloads_.end()) return &it->second;
    const proto::WorkloadClass& k = manifest_.classes(cls);
    Result<LoadedInput> in = LoadInput(k.trace(), k.kineto());
    if (!in.ok()) return in.status().WithContext("classes[" + std::to_string(cls) + "].trace");
    return &(workloads_[cls] = std::move(in->workload));
  }

  Result<const proto::Platform*> PlatformOf(const std::string& name) {
    auto it = platforms_.find(name);
    if (it != platforms_.end()) return &it->second;
    Result<proto::Platform> p = model::FindPlatform(name);
    if (!p.ok()) return p.status().WithContext("platform '" + name + "'");
    return &(platforms_[name] = std::move(*p));
  }

  // A class of several GPUs per job carries its collectives into the step: the model prices
  // the trace's communication at the class's rank count on `platform` and overlaps it with
  // compute as its stream simulation does.
  Result<fleet::StepTime> Predict(int cls, const proto::Workload& w, const std::string& platform) {
    MIMIC_ASSIGN_OR_RETURN(const proto::Platform* p, PlatformOf(platform));
    model::PredictOptions options;
    options.world_size = static_cast<int>(manifest_.classes(cls).gpus_per_job());
    Result<model::Prediction> pred = model::Predict(w, *p, options);
    if (!pred.ok()) return pred.status().WithContext("predicting on '" + platform + "'");
    fleet::StepTime st;
    st.ms = pred->iteration_ms;
    st.source = "predicted";
    st.ranks = pred->ranks;
    st.collective_ms = pred->comm_ms;
    st.exposed_collective_ms = pred->exposed_comm_ms;
    st.detail = "model (mimic predict) on " + p->name() + ", " + pred->selection + ", " +
                std::to_string(pred->ops.size()) + " ops";
    char buf[200];
    if (pred->collectives > 0)
      std::snprintf(buf, sizeof(buf),
                    "; %lld collectives at %lld ranks: %.3f ms, %.3f ms of it not overlapped by "
                    "compute",
                    static_cast<long long>(pred->collectives), static_cast<long long>(st.ranks),
                    st.collective_ms, st.exposed_collective_ms);
    else if (st.ranks > 1)
      std::snprintf(buf, sizeof(buf),
                    "; %lld GPUs per job, but the trace holds no collective: one rank's step",
                    static_cast<long long>(st.ranks));
    else
      buf[0] = '\0';
    st.detail += buf;
    // A step the host sets is the same on every GPU: say so, with the figures that show it.
    if (p->device_type() == "cuda" && pred->gpu_active_ms < 0.5 * pred->iteration_ms) {
      std::snprintf(buf, sizeof(buf),
                    "; host-bound: the CPU timeline (%.3f ms of overheads) sets the step, the GPU "
                    "is busy %.3f ms",
                    pred->cpu_overhead_ms, pred->gpu_active_ms);
      st.detail += buf;
    }
    return st;
  }

  const proto::FleetManifest& manifest_;
  replay::ReplayOptions replay_options_;
  std::function<void(const std::string&, double)> progress_;
  std::map<int, proto::Workload> workloads_;
  std::map<std::string, proto::Platform> platforms_;
};

// Progress on stderr: a line per stage, and at most one update a second while a stage runs.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(isatty(fileno(stderr))) {}
  void operator()(const std::string& stage, double fraction) {
    if (quiet_) return;
    const auto now = std::chrono::steady_clock::now();
    const bool new_stage = stage != stage_;
    if (!new_stage && fraction < 1.0 && now - last_ < std::chrono::seconds(1)) return;
    if (!new_stage && fraction >= 1.0 && done_) return;
    if (new_stage && tty_ && !stage_.empty() && !done_) std::fputc('\n', stderr);
    stage_ = stage;
    last_ = now;
    done_ = fraction >= 1.0;
    if (tty_)
      std::fprintf(stderr, "\rmimic: %s: %3.0f%%%s", stage.c_str(), fraction * 100,
                   done_ ? "\n" : "");
    else
      std::fprintf(stderr, "mimic: %s: %.0f%%\n", stage.c_str(), fraction * 100);
  }

 private:
  bool quiet_, tty_;
  std::string stage_;
  bool done_ = false;
  std::chrono::steady_clock::time_point last_{};
};

void PrintSummary(const fleet::PlanResult& p) {
  std::printf(
      "Mimic plan of %s: %lld jobs from %s over %.2f h (%.2f jobs/h), inventory %lld GPUs\n\n",
      p.manifest.c_str(), static_cast<long long>(p.jobs), p.arrivals.c_str(), p.span_hours,
      p.jobs_per_hour, static_cast<long long>(p.inventory_gpus));
  std::printf("  step time (ms)        %-20s", "today");
  std::vector<std::string> targets;
  for (const fleet::Scenario& s : p.scenarios)
    if (s.is_target) targets.push_back(s.name), std::printf(" %-20s", s.name.c_str());
  std::printf("\n");
  for (const fleet::ClassPlan& k : p.classes) {
    const fleet::StepTime& today = k.step.at(k.platform);
    std::printf("  %-20s %9.3f %-10s", k.name.c_str(), today.ms, today.source.c_str());
    for (const std::string& t : targets) {
      const fleet::StepTime& s = k.step.at(t);
      std::printf(" %9.3f %-10s", s.ms, s.source.c_str());
    }
    std::printf("\n");
  }
  for (const fleet::ClassPlan& k : p.classes)
    for (const std::string& t : targets)
      if (k.step.at(t).detail.find("host-bound") != std::string::npos)
        std::printf(
            "  note: %s on %s is host-bound (%s)\n", k.name.c_str(), t.c_str(),
            k.step.at(t).detail.substr(k.step.at(t).detail.find("host-bound") + 12).c_str());
  for (const fleet::ClassPlan& k : p.classes)
    for (const auto& [platform, s] : k.step)
      if (s.collective_ms > 0)
        std::printf(
            "  collectives: %s on %s at %lld ranks: %.3f ms (%.1f%% of the step), %.3f ms "
            "(%.1f%%) not overlapped by compute\n",
            k.name.c_str(), platform.c_str(), static_cast<long long>(s.ranks), s.collective_ms,
            100 * s.collective_ms / s.ms, s.exposed_collective_ms,
            100 * s.exposed_collective_ms / s.ms);
  std::printf("\n  %-12s %12s %10s %12s %11s %12s\n", "scenario", "GPU-hours", "rel.thpt",
              "offered GPUs", "GPUs needed", "cost");
  for (const fleet::Scenario& s : p.scenarios) {
    std::printf("  %-12s %12.2f %10.3f %12.2f %11lld", s.name.c_str(), s.gpu_hours,
                s.relative_throughput, s.offered_load_gpus, static_cast<long long>(s.gpus_needed));
    if (s.cost)
      std::printf(" %12.0f\n", *s.cost);
    else
      std::printf(" %12s\n", "-");
  }
  std::printf("\n  %-12s %-6s %12s %12s %14s %14s %8s\n", "scenario", "policy", "mean JCT h",
              "p99 JCT h", "mean queue h", "p99 queue h", "util");
  for (const fleet::Scenario& s : p.scenarios)
    for (const fleet::PolicyOutcome& o : s.outcomes)
      std::printf("  %-12s %-6s %12.3f %12.3f %14.3f %14.3f %8.3f\n", s.name.c_str(),
                  o.policy.c_str(), o.mean_jct_s / 3600, o.p99_jct_s / 3600, o.mean_queue_s / 3600,
                  o.p99_queue_s / 3600, o.utilization);
  std::printf("\n  simulated %lld jobs in %.3f s (%.0f jobs/s)\n",
              static_cast<long long>(p.simulated_jobs), p.simulate_seconds,
              p.simulate_seconds > 0 ? p.simulated_jobs / p.simulate_seconds : 0.0);
}

}  // namespace

Runner AddPlan(CLI::App& app) {
  struct Args {
    std::string manifest;
    std::vector<std::string> targets;
    std::string report, html;
    bool quiet = false;
    replay::ReplayOptions replay;
  };
  auto args = std::make_shared<Args>();
  // Enough iterations that one descheduled step on a shared machine does not move the median.
  args->replay.warmup = 2;
  args->replay.iters = 10;
  app.add_option("MANIFEST", args->manifest,
                 "Fleet manifest (JSON or protobuf text, docs/fleet.md)")
      ->required();
  app.add_option("--target", args->targets,
                 "Platform to plan for (repeatable): h200, cpu_host, or a platform file")
      ->required();
  app.add_option("--report", args->report, "Write the JSON report here ('-' for stdout)");
  app.add_option("--html", args->html, "Write the self-contained HTML report here");
  app.add_option("--warmup", args->replay.warmup, "Warm-up iterations of each measured replay")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iters", args->replay.iters, "Measured iterations of each replay")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", args->replay.num_threads,
                 "Intra-op threads of measured replays (default: the capture's)");
  app.add_flag("--quiet", args->quiet, "No progress on stderr");
  return [args]() {
    Result<fleet::LoadedManifest> m = fleet::LoadManifest(args->manifest);
    if (!m.ok()) return Fail(m.status());
    Progress progress(args->quiet);
    auto report_progress = [&progress](const std::string& stage, double f) { progress(stage, f); };
    CliEnvironment env(m->manifest, args->replay, report_progress);
    // Every target is checked before any work; measuring one locally needs LibTorch.
    for (const std::string& target : args->targets) {
      Result<bool> local = env.IsLocal(target);
      if (!local.ok()) return Fail(local.status().WithContext("--target"));
      if (*local) {
        if (Status st = NeedLibTorch(); !st.ok()) return Fail(st);
      }
    }
    fleet::PlanOptions options;
    options.targets = args->targets;
    options.progress = report_progress;
    Result<fleet::PlanResult> plan = fleet::Plan(*m, env, options);
    if (!plan.ok()) return Fail(plan.status());
    const fleet::ReportContext ctx{MIMIC_VERSION, UtcNowIso8601(), HostName(), m->sha256};
    PrintSummary(*plan);
    if (!args->report.empty()) {
      Status st = WriteOutput(args->report, fleet::PlanJson(ctx, *plan));
      if (!st.ok()) return Fail(st);
    }
    if (!args->html.empty()) {
      Status st = WriteOutput(args->html, fleet::PlanHtml(ctx, *plan));
      if (!st.ok()) return Fail(st);
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace mimic::cli
