// mimic: the command-line entry point. Subcommands live in cli/*_command.cc.
#include <cstdio>
#include <map>

#include "cli.h"
#include "mimic/base/file.h"
#include "mimic/synth/standalone.h"

namespace mimic::cli {

int Fail(const Status& status) {
  std::fprintf(stderr, "mimic: error: %s\n", status.message().c_str());
  return status.IsInputError() ? kExitBadInput : kExitRuntime;
}

Status WriteOutput(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  return WriteFileAtomic(path, text);
}

}  // namespace mimic::cli

int main(int argc, char** argv) {
  using namespace mimic::cli;
  // A standalone benchmark is this binary with a bundle appended: run as that benchmark.
  mimic::Result<std::optional<mimic::proto::Bundle>> embedded =
      mimic::synth::ReadEmbeddedBundle("/proc/self/exe");
  if (!embedded.ok()) return Fail(embedded.status());
  if (embedded->has_value()) return RunStandalone(argc, argv, **embedded);

  CLI::App app{
      "Mimic: turns PyTorch execution traces into replayable benchmarks, replays them through "
      "LibTorch, and compares the replay with the original run.\n"
      "Exit codes: 0 success, 1 runtime failure, 2 bad input or usage."};
  app.set_version_flag("--version", std::string("mimic ") + MIMIC_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  auto add = [&](Runner (*fn)(CLI::App&), const char* name, const char* help) {
    CLI::App* sub = app.add_subcommand(name, help);
    runners[sub] = fn(*sub);
  };
  add(AddInspect, "inspect", "Summarize an execution trace (and its Kineto trace)");
  add(AddConvert, "convert", "Normalize a trace into a .mimic workload file");
  add(AddReplay, "replay", "Replay a trace or workload operator by operator and report timings (one rank per process under torchrun/srun/mpirun)");
  add(AddRun, "run", "Replay the embedded default fleet sample and compare it with the original");
  add(AddSynth, "synth", "Transform workloads: select, filter, substitute, scale batch, change dtype, compose, repeat, scale world size");
  add(AddPack, "pack", "Write a self-contained, checksummed benchmark bundle");
  add(AddBuildBenchmark, "build-benchmark", "Build a standalone benchmark executable from a bundle");
  add(AddExportChakra, "export-chakra", "Write a trace or workload as a Chakra .et trace (ASTRA-sim input)");
  add(AddImportChakra, "import-chakra", "Summarize a Chakra .et trace: node types, collectives, dependencies");
  add(AddCalibrate, "calibrate", "Measure this machine's platform figures (GEMM, conv, bandwidth, overheads) into a platform JSON");
  add(AddPredict, "predict", "Predict a workload's time on a platform, per op, per op class and end to end");
  add(AddCompare, "compare", "Replay and predict a trace; set original, replay and prediction side by side (JSON + HTML)");
  add(AddDevices, "devices", "List the executors compiled in (cpu, cuda) and the devices present");
  add(AddPlan, "plan", "Plan a fleet: step times, GPUs and cost per target platform, simulated queueing");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  for (const auto& [sub, run] : runners)
    if (sub->parsed()) return run();
  return kExitBadInput;
}
