// mimic compare TRACE [--kineto K] [--platform P] [--device D] [--no-replay] --report R.json --html
// R.html: replays the workload (unless --no-replay), predicts it, and sets original, replay and
// prediction side by side; on a GPU trace, also the original's recorded kernels (GPU active
// time per iteration and per op class) against the prediction's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "cli.h"
#include "mimic/base/file.h"
#include "mimic/base/stats.h"
#include "mimic/calibrate/calibrate.h"
#include "mimic/eg/kineto.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/workload.h"
#include "mimic/model/compare.h"
#include "mimic/model/platform.h"
#include "mimic/model/predict.h"
#include "mimic/replay/report.h"

namespace mimic::cli {
namespace {

std::string Fmt(std::optional<double> v, const char* f = "%.3f") {
  if (!v) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, *v);
  return buf;
}

std::string Pct(std::optional<double> v) { return v ? Fmt(*v * 100, "%+.1f%%") : "-"; }

void PrintRow(const std::string& name, const model::SideBySide& s) {
  std::printf("  %-16s %5lld %11s %11s %11s %9s %9s %9s\n", name.c_str(),
              static_cast<long long>(s.ops), Fmt(s.original_ms).c_str(), Fmt(s.replay_ms).c_str(),
              Fmt(s.predicted_ms).c_str(),
              Pct(model::RelativeError(s.replay_ms, s.original_ms)).c_str(),
              Pct(model::RelativeError(s.predicted_ms, s.replay_ms)).c_str(),
              Pct(model::RelativeError(s.predicted_ms, s.original_ms)).c_str());
}

// The replay's profile (compare --profile) set beside the original's Kineto spans, per op name
// and iteration: the top-level cpu_ops of each ProfilerStep#N of the profile against the
// selected ops' spans. Both sides carry the profiler's cost, so per-op differences are the
// replay's own.
Status AddProfiledOps(const std::string& profile, const proto::Workload& w,
                      const std::vector<model::OpPrediction>& ops, model::Comparison& c) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(profile));
  MIMIC_ASSIGN_OR_RETURN(const eg::KinetoTrace trace,
                         eg::ParseKinetoTrace(profile, file.bytes.view()));
  std::vector<const eg::KinetoEvent*> steps, cpu_ops;
  for (const eg::KinetoEvent& e : trace.events) {
    if (e.name.rfind("ProfilerStep#", 0) == 0)
      steps.push_back(&e);
    else if (e.kind == eg::KinetoEvent::Kind::kHostOp)
      cpu_ops.push_back(&e);
  }
  if (steps.empty())
    return Status::Internal(profile + ": the replay's profile holds no ProfilerStep");
  std::sort(cpu_ops.begin(), cpu_ops.end(),
            [](auto* a, auto* b) { return a->ts < b->ts || (a->ts == b->ts && a->dur > b->dur); });
  std::map<int64_t, double> open_until;  // per thread: the end of the outermost op open
  for (const eg::KinetoEvent* e : cpu_ops) {
    double& until = open_until[e->tid];
    if (e->ts < until) continue;  // nested under another op
    until = e->ts + e->dur;
    const bool in_step = std::any_of(steps.begin(), steps.end(), [e](auto* s) {
      return e->ts >= s->ts && e->ts <= s->ts + s->dur;
    });
    if (!in_step) continue;
    model::SideBySide& s = c.profiled_ops[e->name];
    s.replay_ms = s.replay_ms.value_or(0) + e->dur / 1000 / static_cast<double>(steps.size());
  }
  const eg::OpTree tree(w);
  for (const model::OpPrediction& o : ops) {
    const proto::Op& op = w.ops(tree.IndexOf(o.op_id));
    if (!op.has_cpu_span()) continue;
    model::SideBySide& s = c.profiled_ops[o.name];
    s.original_ms = s.original_ms.value_or(0) + op.cpu_duration_us() / 1000;
    ++s.ops;
  }
  return Status::Ok();
}

void PrintProfiledOps(const model::Comparison& c) {
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [name, s] : c.profiled_ops) order.emplace_back(s.original_ms.value_or(0), name);
  std::sort(order.rbegin(), order.rend());
  std::printf(
      "\n  both under the profiler (per iteration)      calls  original ms  replay ms  rep/orig\n");
  for (size_t i = 0; i < order.size() && i < 12; ++i) {
    const model::SideBySide& s = c.profiled_ops.at(order[i].second);
    const std::optional<double> e = model::RelativeError(s.replay_ms, s.original_ms);
    std::printf("  %-44s %5lld %12s %10s %9s\n", order[i].second.substr(0, 44).c_str(),
                static_cast<long long>(s.ops), Fmt(s.original_ms).c_str(), Fmt(s.replay_ms).c_str(),
                Fmt(e ? std::optional<double>(1 + *e) : std::nullopt, "%.2f").c_str());
  }
}

void PrintGpuRow(const std::string& name, const model::SideBySide& s) {
  std::printf(
      "  %-16s %5lld %14s %14s %9s\n", name.c_str(), static_cast<long long>(s.ops),
      Fmt(s.original_gpu_active_ms).c_str(), Fmt(s.predicted_gpu_active_ms).c_str(),
      Pct(model::RelativeError(s.predicted_gpu_active_ms, s.original_gpu_active_ms)).c_str());
}

// A prediction for another device than the trace's recorded one is a cross-platform
// prediction: its differences from the original are not errors.
void NoteCrossPlatform(const LoadedInput& in, const std::string& input, const proto::Platform& p,
                       std::vector<std::string>& notes) {
  std::string by;
  Result<std::string> recorded = ChoosePlatform("", in, input, "", &by);
  const bool gpu_trace = in.workload.kineto().kernels_linked() > 0;
  if ((recorded.ok() && *recorded != p.name()) || (gpu_trace && p.device_type() != "cuda"))
    notes.push_back("cross-platform prediction: the original ran on " +
                    (recorded.ok() ? *recorded : std::string("a GPU")) +
                    ", the prediction is for " + p.name() +
                    "; their differences are a prediction, not errors");
}

// A host that ran the platform's GEMM points more than 5 % slower or faster after the replay than
// at calibration (a shared machine's other work, its clocks): the prediction prices the host as
// calibrated, the replay ran on it as it is now, and that much of their difference is the host's.
void NoteHostSpeed(const calibrate::HostSpeed& speed, const proto::Platform& p,
                   std::vector<std::string>& notes) {
  if (speed.points == 0 || std::abs(speed.ratio - 1) <= 0.05) return;
  notes.push_back("this host ran " + std::to_string(speed.points) + " of " + p.name() +
                  "'s GEMM points " + Fmt(speed.ratio, "%.2f") +
                  "x as long after the replay as when it was calibrated (" + p.calibrated_at() +
                  "): the prediction prices the host as it was then, the replay ran on it as it "
                  "is now; calibrate again (mimic calibrate --cache) to price it now");
}

std::optional<double> Known(double v) { return v >= 0 ? std::optional<double>(v) : std::nullopt; }

// A CPU prediction charges the original's page faults a step (model::Prediction::page_faults);
// the replay counted its own: by default the original's, taken on purpose, and its own few;
// with --heap-trim as many as glibc's heap happens to make, a count that moves from run to run
// of one capture (docs/cli.md, host memory). The prediction at the replay's count sets the
// model against the replay without that difference; a note gives it where the two counts
// differ by more than a tenth.
void SetPageFaults(const model::Prediction& pred, const proto::Platform& p,
                   const replay::ReplayResult& r, model::Comparison& c) {
  const double us = p.cpu_overheads().page_fault_us();
  if (p.device_type() == "cuda" || !(us > 0) || pred.page_faults < 0 ||
      r.page_faults_per_iteration < 0 || r.iteration_ms.empty())
    return;
  model::PageFaults& f = c.page_faults;
  f.original = pred.page_faults, f.replay = r.page_faults_per_iteration, f.us_each = us;
  f.predicted_ms_at_replays = pred.iteration_ms - pred.page_fault_ms + *f.replay * us / 1000;
  if (std::abs(*f.replay - *f.original) <= 0.1 * std::max(*f.original, *f.replay)) return;
  const std::optional<double> error =
      model::RelativeError(f.predicted_ms_at_replays, c.end_to_end.replay_ms);
  c.notes.push_back("the replay page-faulted " + Fmt(*f.replay, "%.0f") +
                    " times a step, the original " + Fmt(*f.original, "%.0f") +
                    " (the count moves from run to run of one capture): priced at the replay's, "
                    "the prediction is " +
                    Fmt(*f.predicted_ms_at_replays) + " ms, " + Pct(error) + " against the replay");
}

// The GPU-active splits and the unmodelled share of `pred`, into `c`.
void SetUnmodelled(const model::Prediction& pred, model::Comparison& c) {
  c.compute.original_gpu_active_ms = Known(pred.compute.original_ms);
  c.compute.predicted_gpu_active_ms = Known(pred.compute.predicted_ms);
  c.modelled.original_gpu_active_ms = Known(pred.modelled.original_ms);
  c.modelled.predicted_gpu_active_ms = Known(pred.modelled.predicted_ms);
  model::UnmodelledOps& u = c.unmodelled;
  u.ops = pred.unmodelled.ops;
  u.predicted_ms = pred.unmodelled.predicted_ms;
  u.original_gpu_active_ms = Known(pred.unmodelled.original_gpu_active_ms);
  u.reasons = pred.unmodelled.reasons;
  std::map<std::string, model::UnmodelledOps::ByName> by_name;
  for (const model::OpPrediction& o : pred.ops) {
    c.compute.ops += o.op_class != "collective" ? 1 : 0;
    if (o.unmodelled.empty()) continue;
    model::UnmodelledOps::ByName& b = by_name[o.name];
    b.name = o.name, b.reason = o.unmodelled;
    b.ops += 1;
    b.predicted_ms += o.compute_us / 1000;
    if (o.original_us >= 0) b.original_ms = b.original_ms.value_or(0) + o.original_us / 1000;
  }
  for (auto& [name, b] : by_name) u.by_name.push_back(std::move(b));
  std::sort(u.by_name.begin(), u.by_name.end(), [](const auto& a, const auto& b) {
    return a.original_ms.value_or(0) > b.original_ms.value_or(0);
  });
  if (u.by_name.size() > 12) u.by_name.resize(12);
  c.modelled.ops = c.compute.ops - u.ops;
}

// An op's recorded tensor inputs as one line: "float32[2048, 1024], float32[512]" ("undefined"
// for an absent tensor).
std::string InputsText(const std::vector<model::OpPrediction::Input>& inputs) {
  std::string text;
  for (const model::OpPrediction::Input& in : inputs) {
    if (!text.empty()) text += ", ";
    text += in.dtype;
    if (!in.shape) continue;
    text += "[";
    for (size_t i = 0; i < in.shape->size(); ++i)
      text += (i ? ", " : "") + std::to_string((*in.shape)[i]);
    text += "]";
  }
  return text;
}

// On a GPU trace, the modelled compute ops grouped by name and inputs, their recorded kernel
// time against the predicted; the twelve farthest apart, into `c`.
void SetLargestDifferences(const model::Prediction& pred, const proto::Platform& p,
                           model::Comparison& c) {
  if (p.device_type() != "cuda" || pred.original_gpu_active_ms < 0) return;
  std::map<std::pair<std::string, std::string>, model::OpGroup> groups;
  for (const model::OpPrediction& o : pred.ops) {
    if (!o.unmodelled.empty() || o.op_class == "collective" || o.original_us < 0) continue;
    std::string inputs = InputsText(o.inputs);
    model::OpGroup& g = groups[{o.name, inputs}];
    if (g.ops++ == 0)
      g.name = o.name, g.op_class = o.op_class, g.inputs = inputs, g.bound = o.bound;
    g.original_ms += o.original_us / 1000;
    g.predicted_ms += o.compute_us / 1000;
  }
  std::vector<model::OpGroup>& out = c.largest_differences;
  for (auto& [key, g] : groups) out.push_back(std::move(g));
  auto gap = [](const model::OpGroup& g) { return std::abs(g.predicted_ms - g.original_ms); };
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto& a, const auto& b) { return gap(a) > gap(b); });
  if (out.size() > 12) out.resize(12);
}

void PrintLargestDifferences(const std::vector<model::OpGroup>& groups) {
  if (groups.empty()) return;
  std::printf(
      "\n  farthest from the recorded kernels (ms)    ops   recorded  predicted  pred/rec  limited "
      "by\n");
  for (size_t i = 0; i < groups.size() && i < 8; ++i) {
    const model::OpGroup& g = groups[i];
    std::printf("  %-40s %5lld %10.3f %10.3f %9s  %s\n", g.name.substr(0, 40).c_str(),
                static_cast<long long>(g.ops), g.original_ms, g.predicted_ms,
                Pct(model::RelativeError(g.predicted_ms, g.original_ms)).c_str(),
                g.bound.empty() ? "-" : g.bound.c_str());
    if (!g.inputs.empty())
      std::printf("    %s\n", g.inputs.size() > 90 ? (g.inputs.substr(0, 87) + "...").c_str()
                                                   : g.inputs.c_str());
  }
}

// The console: the side-by-side table, the GPU-active table where the trace recorded kernels,
// and the notes (as the HTML has them).
void PrintComparison(const model::Comparison& c, const std::string& input,
                     const std::string& selection) {
  std::printf("Mimic %s comparison of %s (%s), platform %s\n\n", MIMIC_VERSION, input.c_str(),
              selection.c_str(), c.platform_name.c_str());
  std::printf("  %-16s %5s %11s %11s %11s %9s %9s %9s\n", "", "ops", "original", "replay",
              "predicted", "rep/orig", "pred/rep", "pred/orig");
  PrintRow("end to end (ms)", c.end_to_end);
  for (const auto& [name, s] : c.op_classes) PrintRow(name, s);
  if (c.end_to_end.original_gpu_active_ms && c.end_to_end.predicted_gpu_active_ms) {
    std::printf("\n  GPU active (ms)  %5s %14s %14s %9s\n", "ops", "recorded", "predicted",
                "pred/rec");
    PrintGpuRow("iteration", c.end_to_end);
    for (const auto& [name, s] : c.op_classes)
      if (s.original_gpu_active_ms.value_or(0) > 0 || s.predicted_gpu_active_ms.value_or(0) > 0)
        PrintGpuRow(name, s);
    PrintGpuRow("no comm", c.compute);
    PrintGpuRow("modelled ops", c.modelled);
  }
  PrintLargestDifferences(c.largest_differences);
  const model::UnmodelledOps& u = c.unmodelled;
  if (u.ops > 0) {
    std::string reasons;
    for (const auto& [reason, n] : u.reasons)
      reasons += (reasons.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
    std::printf(
        "\n  unmodelled: %lld ops (%s), recorded %s ms of kernels, predicted %.3f ms "
        "(floors: their bytes at memory bandwidth)\n",
        static_cast<long long>(u.ops), reasons.c_str(), Fmt(u.original_gpu_active_ms).c_str(),
        u.predicted_ms);
    for (size_t i = 0; i < u.by_name.size() && i < 6; ++i)
      std::printf("    %-52s %-20s %10s %10.3f\n", u.by_name[i].name.substr(0, 52).c_str(),
                  u.by_name[i].reason.c_str(), Fmt(u.by_name[i].original_ms).c_str(),
                  u.by_name[i].predicted_ms);
  }
  if (!c.notes.empty()) std::printf("\n");
  for (const std::string& n : c.notes) std::printf("  note: %s\n", n.c_str());
}

struct CompareArgs {
  std::string input, kineto, platform, report, html;
  replay::ReplayOptions options;
  bool seed_given = false, no_replay = false;
};

// The platform compare predicts for (`chosen_by` says how it was chosen); a CPU platform
// calibrated on another host is replaced by this host's, calibrated first when not cached
// (said in `host_notes`).
Result<proto::Platform> ComparePlatform(const CompareArgs& a, const LoadedInput& in,
                                        const replay::ReplayOptions& ro, std::string* chosen_by,
                                        std::vector<std::string>& host_notes) {
  MIMIC_ASSIGN_OR_RETURN(
      const std::string name,
      ChoosePlatform(a.platform, in, a.input, ro.device == "cpu" ? "cpu_host" : "h200", chosen_by));
  MIMIC_ASSIGN_OR_RETURN(proto::Platform platform, model::FindPlatform(name));
  bool calibrate = false;
  platform = ForThisHost(std::move(platform), host_notes, &calibrate);
  if (!calibrate || a.no_replay) return platform;
  MIMIC_ASSIGN_OR_RETURN(proto::Platform here, CalibrateThisHost(platform));
  host_notes = {"platform " + platform.name() + ": this host calibrated first (quick sweep, " +
                "cached in " + HostPlatformCachePath(platform.name(), platform.threads()) + ")"};
  return here;
}

// The replay of the compared selection (none with --no-replay: an empty result). A replay that
// stopped early is a failure, not a side to compare.
Result<replay::ReplayResult> CompareReplay(const CompareArgs& a, const proto::Workload& w,
                                           const replay::ReplayOptions& ro,
                                           const std::string& selection) {
  if (a.no_replay) return replay::ReplayResult{};
  std::fprintf(stderr, "mimic: compare: replaying %s on %s (%d+%d iterations)\n", selection.c_str(),
               ro.device.c_str(), ro.warmup, ro.iters);
  Result<replay::ReplayResult> r = replay::Replay(w, ro);
  if (!r.ok()) return r.status().WithContext(a.input);
  if (!r->stop_reason.empty()) return Status::Internal("replay stopped early: " + r->stop_reason);
  return r;
}

bool OnPlatformsDevice(const proto::Platform& p, const std::string& device) {
  return (p.device_type() == "cuda") == (device.rfind("cuda", 0) == 0);
}

// The context block: where each side ran and what it ran with.
void SetContext(const CompareArgs& a, const proto::Workload& w, const model::Prediction& pred,
                const replay::ReplayResult& r, const proto::Platform& p,
                const calibrate::HostSpeed& speed, model::Comparison& c) {
  const replay::ReportContext ctx =
      replay::MakeContext(w, a.input, a.no_replay ? "none (--no-replay)" : r.device);
  c.context = {
      {"host", ctx.host},
      {"cpu", ctx.cpu},
      {"device", ctx.device},
      {"torch_version", ctx.torch_version},
      {"mimic_version", ctx.mimic_version},
      {"input", ctx.input_path},
      {"input_sha256", ctx.input_sha256},
      {"date", ctx.date},
      {"selection", pred.selection},
      {"platform", p.name()},
      {"platform_device_type", p.device_type()},
      {"platform_calibrated_at",
       p.calibrated_at().empty() ? "datasheet (not calibrated)" : p.calibrated_at()},
      {"platform_calibrated_on", p.calibrated_on()},
      {"replay_iterations", std::to_string(r.iteration_ms.size())},
      {"replay_threads", std::to_string(r.num_threads)},
      {"replay_fp32_matmul", r.fp32_matmul},
      {"replay_heap", r.heap},
      {"replay_page_faults_per_iteration",
       std::to_string(std::lround(r.page_faults_per_iteration))},
      // The replay process's CPU time per measured iteration (user + sys, all its threads): on a
      // shared machine, with one intra-op thread, its work without the time other processes held
      // the CPU.
      {"replay_cpu_ms_per_iteration", Fmt(r.system.cpu_user_ms() + r.system.cpu_sys_ms(), "%.3f")},
      {"original_source", w.original().source().empty() ? "Kineto ProfilerStep span (profiled)"
                                                        : w.original().source()}};
  if (speed.points == 0) return;
  c.context.push_back({"host_speed_after_replay", Fmt(speed.ratio, "%.3f")});
  c.context.push_back({"host_speed_how", "the time of " + std::to_string(speed.points) +
                                             " of the platform's GEMM points over their "
                                             "calibrated time (above 1: slower now); " +
                                             speed.how});
}

// End to end and per class, each side: the original's own unprofiled steps where the capture
// manifest has them (else the profiled step span from Kineto) and its linked Kineto spans per
// class; the replay's median iteration and per-op-name means; the models' prediction.
void SetSides(const proto::Workload& w, const model::Prediction& pred,
              const replay::ReplayResult& r, const proto::Platform& p, model::Comparison& c) {
  std::optional<double> original = replay::OriginalMedianMs(w);
  if (!original) {
    for (const proto::Segment& s : w.segments())
      if (s.name() == pred.selection && s.has_span()) original = s.duration_us() / 1000;
    if (original)
      c.notes.push_back(
          "original end to end: the profiled Kineto step span (no unprofiled measurement known)");
  }
  c.end_to_end.ops = static_cast<int64_t>(pred.ops.size());
  c.end_to_end.original_ms = original;
  if (!r.iteration_ms.empty()) c.end_to_end.replay_ms = Median(r.iteration_ms);
  c.end_to_end.predicted_ms = pred.iteration_ms;
  if (p.device_type() == "cuda") c.end_to_end.predicted_gpu_active_ms = pred.gpu_active_ms;
  c.end_to_end.original_gpu_active_ms = Known(pred.original_gpu_active_ms);
  c.exposed_comm_ms = pred.exposed_comm_ms;
  for (const auto& [name, ct] : pred.by_class) {
    model::SideBySide& s = c.op_classes[name];
    s.ops = ct.ops;
    s.predicted_ms = ct.predicted_ms;
    if (ct.original_ms >= 0) s.original_ms = ct.original_ms;
    s.original_gpu_active_ms = Known(ct.original_gpu_active_ms);
    s.predicted_gpu_active_ms = Known(ct.predicted_gpu_active_ms);
  }
  for (const replay::OpNameStats& st : r.per_op) {
    model::SideBySide& s = c.op_classes[std::string(eg::OpClassName(eg::ClassOf(st.name)))];
    s.replay_ms = s.replay_ms.value_or(0) + st.replay_ms;
  }
}

// Timeline strips: original spans from Kineto; the prediction's simulated starts; the replay's
// per-call means laid end to end in op order (the replay records no per-op starts).
void SetTimelines(const proto::Workload& w, const model::Prediction& pred,
                  const replay::ReplayResult& r, model::Comparison& c) {
  std::map<std::string, double> replay_per_call;
  for (const replay::OpNameStats& st : r.per_op)
    if (st.calls > 0) replay_per_call[st.name] = st.replay_ms / static_cast<double>(st.calls);
  double origin = -1, replay_t = 0;
  const eg::OpTree tree(w);
  for (const model::OpPrediction& o : pred.ops) {
    const proto::Op& op = w.ops(tree.IndexOf(o.op_id));
    if (op.has_cpu_span()) {
      if (origin < 0) origin = op.cpu_start_us();
      c.original_timeline.push_back(
          {(op.cpu_start_us() - origin) / 1000, op.cpu_duration_us() / 1000, o.op_class, o.name});
    }
    c.predicted_timeline.push_back({o.start_us / 1000, o.predicted_us / 1000, o.op_class, o.name});
    auto it = replay_per_call.find(o.name);
    if (it != replay_per_call.end()) {
      c.replay_timeline.push_back({replay_t, it->second, o.op_class, o.name});
      replay_t += it->second;
    }
  }
}

// The notes after the prediction's own: what the replay skipped, how the sides relate, how the
// platform was chosen, whether the host has moved since its calibration.
void AddNotes(const CompareArgs& a, const LoadedInput& in, const replay::ReplayOptions& ro,
              const replay::ReplayResult& r, const proto::Platform& p, const std::string& chosen_by,
              const calibrate::HostSpeed& speed, const std::vector<std::string>& host_notes,
              model::Comparison& c) {
  if (!a.no_replay && r.replayed_ops < r.total_ops)
    c.notes.push_back("replay skipped " + std::to_string(r.total_ops - r.replayed_ops) + " of " +
                      std::to_string(r.total_ops) + " ops");
  if (!a.no_replay && !OnPlatformsDevice(p, ro.device))
    c.notes.push_back(
        "the platform's device type differs from the replay's: the prediction is a "
        "cross-platform prediction, and its differences from the replay and the original are "
        "not errors");
  c.notes.push_back(a.no_replay ? "no replay (--no-replay): original against prediction only"
                                : "replay timeline: per-call means of each op name laid end to "
                                  "end (the replay records no per-op start times)");
  if (chosen_by != "--platform") c.notes.push_back("platform " + p.name() + ": " + chosen_by);
  NoteCrossPlatform(in, a.input, p, c.notes);
  NoteHostSpeed(speed, p, c.notes);
  c.notes.insert(c.notes.end(), host_notes.begin(), host_notes.end());
}

// Both reports or neither: the HTML first, and it goes again if the JSON cannot be written.
Status WriteReports(const CompareArgs& a, const model::Comparison& c) {
  if (!a.html.empty()) MIMIC_RETURN_IF_ERROR(WriteOutput(a.html, model::RenderComparisonHtml(c)));
  Status st = WriteOutput(a.report, model::RenderComparisonJson(c));
  if (!st.ok() && !a.html.empty() && a.html != "-") std::remove(a.html.c_str());
  return st;
}

// compare, once its arguments are parsed: the comparison, its reports and its console.
Status Compare(const CompareArgs& a) {
  MIMIC_ASSIGN_OR_RETURN(const LoadedInput in, LoadInput(a.input, a.kineto, a.no_replay));
  const proto::Workload& w = in.workload;
  replay::ReplayOptions ro = a.options;
  if (in.has_seed && !a.seed_given) ro.seed = in.seed;
  if (ro.device.empty()) ro.device = replay::BestDevice();
  UseOriginalThreads(w, ro);
  std::string chosen_by;
  std::vector<std::string> host_notes;
  MIMIC_ASSIGN_OR_RETURN(const proto::Platform platform,
                         ComparePlatform(a, in, ro, &chosen_by, host_notes));
  // The replay takes the same capture cost off the recorded gaps as the model.
  UseCaptureTimeCost(w, ro);
  UseHostGapFiguresOf(platform, ro);
  UseHostCaptureCost(ro);

  model::PredictOptions po;
  po.iteration = ro.iteration;
  po.label = ro.label;
  Result<model::Prediction> pred = model::Predict(w, platform, po);
  if (!pred.ok()) return pred.status().WithContext(a.input);
  MIMIC_ASSIGN_OR_RETURN(const replay::ReplayResult r, CompareReplay(a, w, ro, pred->selection));
  // The host's speed against the platform's calibration, after the replay: before it, the
  // check's own allocations would raise glibc's dynamic mmap and trim thresholds, and the
  // replay's default heap would then trim (and page-fault) less than the original's did.
  calibrate::HostSpeed speed;
  if (!a.no_replay && OnPlatformsDevice(platform, ro.device)) {
    MIMIC_ASSIGN_OR_RETURN(speed, calibrate::RetimeGemmPoints(platform, ro.device));
  }

  model::Comparison c;
  c.platform_name = platform.name();
  c.platform_chosen_by = chosen_by;
  SetContext(a, w, *pred, r, platform, speed, c);
  SetSides(w, *pred, r, platform, c);
  SetUnmodelled(*pred, c);
  SetLargestDifferences(*pred, platform, c);
  SetTimelines(w, *pred, r, c);
  c.notes.insert(c.notes.end(), pred->notes.begin(), pred->notes.end());
  SetPageFaults(*pred, platform, r, c);
  AddNotes(a, in, ro, r, platform, chosen_by, speed, host_notes, c);
  if (!a.no_replay && !ro.profile_path.empty()) {
    MIMIC_RETURN_IF_ERROR(AddProfiledOps(ro.profile_path, w, pred->ops, c));
    c.notes.push_back("profiled_ops: the replay's profile " + ro.profile_path +
                      " beside the original's Kineto spans, both under the profiler");
  }
  MIMIC_RETURN_IF_ERROR(WriteReports(a, c));
  PrintComparison(c, a.input, pred->selection);
  if (!c.profiled_ops.empty()) PrintProfiledOps(c);
  return Status::Ok();
}

}  // namespace

Runner AddCompare(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  args->options.warmup = 2;
  args->options.iters = 10;
  app.add_option("input", args->input,
                 "Execution trace (.json, .json.gz), .mimic workload or bundle (with "
                 "--no-replay, also a Kineto trace alone)")
      ->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with it, to link");
  app.add_option("--platform", args->platform,
                 "Platform to predict for: a built-in name or a platform JSON (default: the GPU in "
                 "the Kineto trace's "
                 "deviceProperties, else cpu_host on a CPU)");
  app.add_flag("--no-replay", args->no_replay,
               "Do not replay: set the prediction beside the original's recorded times only (on a "
               "GPU trace, its kernels)");
  app.add_option("--device", args->options.device,
                 "Device to replay on: cpu (default: the best present)");
  app.add_option("--warmup", args->options.warmup, "Warm-up iterations of the replay")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iters", args->options.iters, "Measured replay iterations")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--iteration", args->options.iteration,
                 "Compare ProfilerStep#N (default: the first step)");
  app.add_option("--label", args->options.label,
                 "Compare a \"## label ##\" range instead of an iteration");
  app.add_option("--threads", args->options.num_threads,
                 "Intra-op threads of the replay (default: the original run's)");
  app.add_option("--seed", args->options.seed, "Seed of all random tensor contents")
      ->capture_default_str();
  app.add_flag(
      "--heap-trim,!--no-heap-trim",
      [args](int64_t n) {
        args->options.heap =
            n > 0 ? replay::ReplayOptions::Heap::kTrimmed : replay::ReplayOptions::Heap::kRetained;
      },
      "Let the C library hand freed host memory back to the kernel during the replay (see replay "
      "--help)");
  app.add_option("--report", args->report, "JSON report to write ('-' for stdout)")->required();
  app.add_option("--html", args->html, "Self-contained HTML report to write");
  app.add_option("--profile", args->options.profile_path,
                 "Also profile the replay (a Kineto trace, as replay --profile) and set each op "
                 "name's profiled time beside the original's Kineto spans (profiled_ops)");
  return [args, &app]() -> int {
    args->seed_given = app.count("--seed") > 0;
    const Status st = Compare(*args);
    return st.ok() ? kExitOk : Fail(st);
  };
}

}  // namespace mimic::cli
