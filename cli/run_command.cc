// mimic run: replays the embedded default fleet sample on the best device present and compares
// it with the original run's own measurements.
#include <cstdio>

#include "cli.h"
#include "mimic/eg/capture_manifest.h"
#include "mimic/eg/workload.h"
#include "mimic/fleet_samples/embedded.h"

namespace mimic::cli {

Runner AddRun(CLI::App& app) {
  struct Args {
    std::string report, from;
    replay::ReplayOptions options;
  };
  auto args = std::make_shared<Args>();
  args->options.iters = 20;
  args->options.warmup = 3;
  AddReplayOptions(app, args->options, args->report);
  app.add_option(
      "--from", args->from,
      "Replay the same sample captured afresh into this folder by "
      "scripts/capture_fleet_samples.py (scripts/run.sh does), so that the original ran on "
      "this machine");
  return [args]() {
    const fleet_samples::EmbeddedSample& sample = fleet_samples::DefaultSample();
    if (!args->from.empty()) {
      const std::string trace = args->from + "/" + std::string(sample.et_name);
      Result<LoadedInput> in = LoadInput(trace, "");
      if (!in.ok()) return Fail(in.status());
      if (args->options.device.empty()) args->options.device = replay::BestDevice();
      std::fprintf(stderr, "mimic: replaying the fleet sample '%s' captured in %s on %s\n",
                   std::string(sample.name).c_str(), args->from.c_str(),
                   args->options.device.c_str());
      return ReplayAndReport(in->workload, trace, args->options, args->report);
    }
    const std::string origin = "embedded:fleet_samples/";
    Result<proto::Workload> w = eg::LoadWorkloadFromMemory(
        origin + std::string(sample.et_name), sample.et_bytes, origin + std::string(sample.kineto_name),
        sample.kineto_bytes);
    if (!w.ok()) return Fail(w.status());
    Result<eg::CaptureManifest> m = eg::ParseCaptureManifest(origin + "manifest.json", sample.manifest_json);
    if (!m.ok()) return Fail(m.status());
    const eg::CaptureSample* s = m->Find(sample.name);
    if (!s) return Fail(Status::Internal("the embedded manifest has no sample " + std::string(sample.name)));
    eg::ApplyCaptureSample(*s, origin + "manifest.json", *w);
    if (args->options.device.empty()) args->options.device = replay::BestDevice();
    std::fprintf(stderr, "mimic: replaying the embedded fleet sample '%s' (%s) on %s\n", s->name.c_str(),
                 s->description.c_str(), args->options.device.c_str());
    return ReplayAndReport(*w, origin + std::string(sample.et_name), args->options, args->report);
  };
}

}  // namespace mimic::cli
