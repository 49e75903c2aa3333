// mimic predict W [--kineto K] [--platform P] [--iteration N | --label L] [--world-size N] [--json]
#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "cli.h"
#include "mimic/model/platform.h"
#include "mimic/model/predict.h"

namespace mimic::cli {
namespace {

void PrintClasses(const model::Prediction& p) {
  std::printf("  %-18s %6s %14s %14s\n", "op class", "ops", "predicted ms", "trace ms");
  for (const auto& [name, c] : p.by_class) {
    if (c.original_ms >= 0)
      std::printf("  %-18s %6lld %14.3f %14.3f\n", name.c_str(), static_cast<long long>(c.ops),
                  c.predicted_ms, c.original_ms);
    else
      std::printf("  %-18s %6lld %14.3f %14s\n", name.c_str(), static_cast<long long>(c.ops),
                  c.predicted_ms, "-");
  }
}

// The ops' compute time by what set it (OpPrediction::bound), the most first.
void PrintLimiters(const model::Prediction& p) {
  std::map<std::string, std::pair<int, double>> by;  // ops, compute ms
  for (const model::OpPrediction& o : p.ops)
    if (!o.bound.empty()) ++by[o.bound].first, by[o.bound].second += o.compute_us / 1000;
  std::vector<std::pair<std::string, std::pair<int, double>>> rows(by.begin(), by.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::printf("\n  %-18s %6s %14s\n", "limited by", "ops", "compute ms");
  for (const auto& [bound, r] : rows)
    std::printf("  %-18s %6d %14.3f\n", bound.c_str(), r.first, r.second);
}

}  // namespace

Runner AddPredict(CLI::App& app) {
  struct Args {
    std::string input, kineto, platform, output;
    model::PredictOptions options;
    bool json = false, no_trace_overheads = false;
  };
  auto args = std::make_shared<Args>();
  app.add_option("input", args->input,
                 "Execution trace (.json, .json.gz), Kineto trace alone, .mimic workload or "
                 "bundle")
      ->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with it, to link");
  app.add_option("--platform", args->platform,
                 "Platform: a built-in name (platforms/*.json) or a platform JSON file (default: "
                 "the GPU the Kineto "
                 "trace's deviceProperties describe)");
  app.add_option("--iteration", args->options.iteration,
                 "Predict ProfilerStep#N (default: the first step, else the whole trace)");
  app.add_option("--label", args->options.label,
                 "Predict a \"## label ##\" range instead of an iteration");
  app.add_option("--world-size", args->options.world_size,
                 "Ranks in the collectives (default: the trace's)");
  app.add_flag("--no-trace-overheads", args->no_trace_overheads,
               "Take the CPU overheads T1-T5 from the platform, not from the Kineto trace");
  app.add_flag("--json", args->json, "Print the prediction as JSON");
  app.add_option("-o,--output", args->output, "Write the JSON prediction here instead of stdout");
  return [args]() -> int {
    Result<LoadedInput> in = LoadInput(args->input, args->kineto, /*allow_kineto_only=*/true);
    if (!in.ok()) return Fail(in.status());
    std::string chosen_by;
    Result<std::string> name = ChoosePlatform(args->platform, *in, args->input, "", &chosen_by);
    if (!name.ok()) return Fail(name.status());
    Result<proto::Platform> platform = model::FindPlatform(*name);
    if (!platform.ok()) return Fail(platform.status());
    std::vector<std::string> host_notes;
    *platform = ForThisHost(std::move(*platform), host_notes);
    args->options.overheads_from_trace = !args->no_trace_overheads;
    Result<model::Prediction> p = model::Predict(in->workload, *platform, args->options);
    if (!p.ok()) return Fail(p.status().WithContext(args->input));
    if (chosen_by != "--platform")
      p->notes.push_back("platform " + platform->name() + ": " + chosen_by);
    p->notes.insert(p->notes.end(), host_notes.begin(), host_notes.end());
    if (args->json || !args->output.empty()) {
      Status st =
          WriteOutput(args->output.empty() ? "-" : args->output, model::PredictionToJson(*p));
      if (!st.ok()) return Fail(st);
      if (args->json) return kExitOk;
    }
    std::printf("Mimic %s prediction of %s on %s (%s)\n", MIMIC_VERSION, args->input.c_str(),
                p->platform.c_str(), platform->device_type().c_str());
    std::printf("  selection %s: %zu ops\n\n", p->selection.c_str(), p->ops.size());
    PrintClasses(*p);
    PrintLimiters(*p);
    std::printf("\n  iteration        %10.3f ms\n", p->iteration_ms);
    std::printf("  %-16s %10.3f ms\n", platform->device_type() == "cuda" ? "gpu active" : "compute",
                p->gpu_active_ms);
    std::printf("  exposed comm     %10.3f ms\n", p->exposed_comm_ms);
    std::printf("  cpu overhead     %10.3f ms\n", p->cpu_overhead_ms);
    if (p->page_fault_ms > 0)
      std::printf("  page faults      %10.3f ms (%.0f a step, the original's)\n", p->page_fault_ms,
                  p->page_faults);
    for (const std::string& n : p->notes) std::printf("  note: %s\n", n.c_str());
    return kExitOk;
  };
}

}  // namespace mimic::cli
