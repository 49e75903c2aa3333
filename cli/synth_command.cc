// mimic synth INPUT [--iteration N | --label L] [--filter P] [--portable [--target cpu|cuda]]
//   [--dtype T] [--repeat K] -o OUT
// mimic pack INPUT [--kineto K] [--seed S] -o OUT.bundle
#include <cstdio>
#include <cstdlib>

#include "cli.h"
#include "mimic/eg/workload.h"
#include "mimic/synth/batch.h"
#include "mimic/synth/bundle.h"
#include "mimic/synth/standalone.h"
#include "mimic/synth/transform.h"

namespace mimic::cli {

Runner AddSynth(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string kineto, out, label, filter, dtype, compose = "seq", substitute, target = "cpu";
    bool portable = false;
    std::vector<int> weights;
    int64_t iteration = -1;
    int repeat = 1;
    int64_t rank = -1;
    int world_size = 0;
    double batch_scale = 0;
    int64_t batch = 0;
  };
  auto args = std::make_shared<Args>();
  app.add_option("inputs", args->inputs, "Execution traces, .mimic workloads or bundles")->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with the trace, to link");
  app.add_option("--iteration", args->iteration, "Keep ProfilerStep#N (default: the first step)");
  app.add_option("--label", args->label, "Keep a \"## label ##\" range instead of an iteration");
  app.add_option("--filter", args->filter,
                 "Keep top-level ops matching a name pattern (aten::mm, aten::*norm*) or an op class "
                 "(gemm, conv, attention, embedding, reduction_norm, memcpy, collective, elementwise, other)");
  auto* scale = app.add_option("--batch-scale", args->batch_scale, "Scale the batch size by F")
                    ->check(CLI::PositiveNumber);
  app.add_option("--batch", args->batch, "Set the batch size to N")->check(CLI::PositiveNumber)->excludes(scale);
  app.add_flag("--portable", args->portable,
               "Rewrite vendor ops (cudnn_*, miopen_*, mkldnn_*, pin_memory) that --target has no "
               "kernel for as their portable ATen equivalents");
  app.add_option("--target", args->target, "Device the --portable workload is for: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--dtype", args->dtype, "Change floating-point tensors to bf16, fp16 or fp32");
  app.add_option("--substitute", args->substitute,
                 "Substitution table (docs/substitution.md): drop ops, or keep their time as a delay");
  app.add_option("--repeat", args->repeat, "Repeat the iteration K times")->check(CLI::PositiveNumber);
  app.add_option("--compose", args->compose,
                 "How several inputs combine: seq (one after another) or concurrent (co-located "
                 "tenants, each on its own thread)")
      ->check(CLI::IsMember({"seq", "concurrent"}));
  app.add_option("--weights", args->weights, "Times each input runs in the mix (default 1 each)")->delimiter(',');
  app.add_option("--rank", args->rank,
                 "Of per-rank traces given as inputs, keep rank R's (its rank as the trace records it)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--world-size", args->world_size,
                 "Scale the job to W ranks: collectives on the world group get W ranks, per-rank message "
                 "sizes follow each collective (weak scaling); replay the result with W ranks")
      ->check(CLI::PositiveNumber);
  app.add_option("-o,--output", args->out, "Workload file to write (.mimic)")->required();
  app.footer(
      "Transformations run in this order, on each input: rank, select (always: one iteration or "
      "label), filter, substitute, portable, batch, dtype; then the inputs are composed, repeated, "
      "and scaled "
      "to the world size. Each is recorded in the workload.");
  return [args]() {
    if (args->inputs.size() > 1 && !args->kineto.empty())
      return Fail(Status::InvalidInput("--kineto applies to a single input"));
    proto::DType dtype = proto::DTYPE_UNKNOWN;
    if (!args->dtype.empty() && !synth::ParseFloatDType(args->dtype, &dtype))
      return Fail(Status::InvalidInput("--dtype " + args->dtype + ": expected bf16, fp16 or fp32"));
    std::vector<proto::Workload> parts;
    bool rank_found = false;
    for (const std::string& input : args->inputs) {
      Result<LoadedInput> in = LoadInput(input, args->kineto);
      if (!in.ok()) return Fail(in.status());
      if (args->rank >= 0) {
        if (in->workload.provenance().rank() != args->rank) continue;
        if (rank_found) return Fail(Status::InvalidInput("--rank " + std::to_string(args->rank) + ": " + input +
                                                         " is that rank's too; give one job's traces"));
        rank_found = true;
      }
      Result<proto::Workload> w = synth::Select(in->workload, {.iteration = args->iteration, .label = args->label});
      if (w.ok() && !args->filter.empty()) w = synth::Filter(*w, args->filter);
      if (w.ok() && !args->substitute.empty()) w = synth::Substitute(*w, args->substitute);
      if (w.ok() && args->portable) w = synth::MakePortable(*w, args->target);
      if (w.ok() && (args->batch > 0 || args->batch_scale > 0))
        w = synth::ScaleBatch(*w, {.factor = args->batch_scale, .batch = args->batch});
      if (w.ok() && dtype != proto::DTYPE_UNKNOWN) w = synth::ChangeDtype(*w, dtype);
      if (!w.ok()) return Fail(w.status().WithContext(input));
      parts.push_back(std::move(*w));
    }
    if (parts.empty())
      return Fail(Status::InvalidInput("--rank " + std::to_string(args->rank) +
                                       ": no input is that rank's trace (the rank comes from the capture manifest or the Kineto trace's distributedInfo)"));
    Result<proto::Workload> w = parts.front();
    if (parts.size() > 1) {
      std::vector<int> weights = args->weights.empty() ? std::vector<int>(parts.size(), 1) : args->weights;
      w = synth::Compose(parts, weights,
                         args->compose == "concurrent" ? synth::ComposeMode::kConcurrent : synth::ComposeMode::kSequential);
    } else if (!args->weights.empty()) {
      return Fail(Status::InvalidInput("--weights needs several inputs"));
    }
    if (w.ok() && args->repeat > 1) w = synth::Repeat(*w, args->repeat);
    if (w.ok() && args->world_size > 0) w = synth::ScaleWorldSize(*w, args->world_size);
    if (!w.ok()) return Fail(w.status());
    Status st = eg::SaveWorkload(args->out, *w);
    if (!st.ok()) return Fail(st);
    for (const proto::Transformation& t : w->transformations())
      std::fprintf(stderr, "mimic: %s: %s\n", t.name().c_str(), t.summary().c_str());
    std::fprintf(stderr, "mimic: wrote %s\n", args->out.c_str());
    return static_cast<int>(kExitOk);
  };
}

Runner AddPack(CLI::App& app) {
  struct Args {
    std::string input, kineto, out;
    uint64_t seed = 1;
  };
  auto args = std::make_shared<Args>();
  app.add_option("input", args->input, "Execution trace or .mimic workload")->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with the trace, to link");
  app.add_option("--seed", args->seed, "Seed of every random tensor content when replayed")->capture_default_str();
  app.add_option("-o,--output", args->out, "Bundle to write")->required();
  return [args]() {
    Result<LoadedInput> in = LoadInput(args->input, args->kineto);
    if (!in.ok()) return Fail(in.status());
    const proto::Bundle bundle = synth::MakeBundle(std::move(in->workload), args->seed);
    Status st = synth::WriteBundle(args->out, bundle);
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "mimic: wrote %s (%d ops, seed %llu)\n", args->out.c_str(),
                 bundle.workload().ops_size(), static_cast<unsigned long long>(bundle.seed()));
    return static_cast<int>(kExitOk);
  };
}

Runner AddBuildBenchmark(CLI::App& app) {
  struct Args {
    std::string bundle, out;
  };
  auto args = std::make_shared<Args>();
  app.add_option("bundle", args->bundle, "Bundle written by `mimic pack`")->required();
  app.add_option("-o,--output", args->out, "Executable to write")->required();
  app.footer(
      "The executable carries mimic's launcher, its LibTorch runner and the bundle; `./NAME "
      "--help` "
      "lists its options. It needs torch " MIMIC_TORCH_VERSION
      " installed where it runs (pip; found through "
      "python3, or MIMIC_TORCH_LIB naming torch's lib folder), and nothing from this machine.");
  return [args]() {
    Status st = synth::BuildStandalone(ExecutableDir() + "/mimic", "/proc/self/exe", args->bundle,
                                       args->out);
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "mimic: wrote %s\n", args->out.c_str());
    return static_cast<int>(kExitOk);
  };
}

namespace {

int RunStandalone(int argc, char** argv, const proto::Bundle& bundle) {
  const std::string self = argv[0];
  const std::string name = self.substr(self.find_last_of('/') + 1);
  const proto::Workload& w = bundle.workload();
  std::string about = name + ": a Mimic benchmark (" + bundle.created_by() + ", " + bundle.created_at() + ").\n";
  for (const proto::SourceFile& s : w.provenance().sources())
    about += "  from " + s.role() + " " + s.path() + " (sha256 " + s.sha256().substr(0, 12) + ")\n";
  for (const proto::Transformation& t : w.transformations()) about += "  " + t.name() + ": " + t.summary() + "\n";
  about += "Replays the embedded workload operator by operator and compares it with the original run.\n"
           "Exit codes: 0 success, 1 runtime failure, 2 bad input or usage.";
  CLI::App app{about, name};
  replay::ReplayOptions options;
  options.seed = bundle.seed();
  options.warmup = 3;
  options.iters = 20;
  std::string report;
  AddReplayOptions(app, options, report);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  if (options.device.empty()) options.device = replay::BestDevice();
  return ReplayAndReport(w, name + " (embedded bundle)", options, report);
}

}  // namespace

// The launcher of a standalone benchmark runs this executable with MIMIC_STANDALONE naming the
// file that carries the bundle.
int MaybeRunStandalone(int argc, char** argv) {
  const char* path = std::getenv("MIMIC_STANDALONE");
  if (!path || !*path) return -1;
  Result<std::optional<proto::Bundle>> bundle = synth::ReadEmbeddedBundle(path);
  if (!bundle.ok()) return Fail(bundle.status());
  if (!bundle->has_value())
    return Fail(Status::InvalidInput(std::string(path) + ": carries no benchmark bundle"));
  return RunStandalone(argc, argv, **bundle);
}

}  // namespace mimic::cli
