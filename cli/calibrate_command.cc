// mimic calibrate [--device D] [--threads T] [--base P] [--name N] [--quick] -o P.json
#include <cstdio>

#include "cli.h"
#include "mimic/calibrate/calibrate.h"
#include "mimic/model/platform.h"
#include "mimic/model/shapes.h"

namespace mimic::cli {

Runner AddCalibrate(CLI::App& app) {
  struct Args {
    calibrate::CalibrateOptions options;
    std::string output;
    std::vector<std::string> workloads;
  };
  auto args = std::make_shared<Args>();
  app.add_option("--device", args->options.device, "Device to measure: cpu, or cuda[:N] where LibTorch has CUDA")->capture_default_str();
  app.add_option("--threads", args->options.threads, "Intra-op threads (default: LibTorch's)");
  app.add_option("--base", args->options.base, "Start from this platform's datasheet figures (a built-in name or a file)");
  app.add_option("--name", args->options.name, "Name of the measured platform (default: cpu_host, or the base's)");
  app.add_option("--trials", args->options.trials, "Timed trials per point; the median is kept")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--statistic", args->options.statistic, "How trials combine: median, or min (robust to other work on a shared machine)")
      ->capture_default_str()->check(CLI::IsMember({"median", "min"}));
  app.add_option("--workload", args->workloads,
                 "Also measure the GEMM and convolution shapes of this trace or workload (repeatable)");
  app.add_flag("--quick", args->options.quick, "A small sweep (seconds, for tests); less accurate");
  app.add_option("-o,--output", args->output, "Platform JSON to write ('-' for stdout)")->required();
  return [args]() -> int {
    for (const std::string& path : args->workloads) {
      // A trace's Kineto file is not needed for its shapes.
      Result<LoadedInput> in = LoadInput(path, "");
      if (!in.ok()) return Fail(in.status());
      args->options.workloads.push_back(model::ShapesOf(in->workload));
    }
    Result<proto::Platform> p = calibrate::Calibrate(args->options, [](const std::string& line) {
      std::fprintf(stderr, "mimic: calibrate: %s\n", line.c_str());
    });
    if (!p.ok()) return Fail(p.status());
    Status st = WriteOutput(args->output, model::PlatformToJson(*p) + "\n");
    if (!st.ok()) return Fail(st);
    return kExitOk;
  };
}

}  // namespace mimic::cli
