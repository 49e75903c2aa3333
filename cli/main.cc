// mimic: the command-line entry point. Subcommands live in cli/*_command.cc. This file builds two
// executables (cli/CMakeLists.txt): `mimic`, without LibTorch (MIMIC_CLI_LIGHT), which runs the
// commands that need none and hands the others to `mimic-torch`, which runs them all.
#include <cstring>
#include <exception>
#include <map>
#include <string>

#include "cli.h"

namespace {

using mimic::cli::Runner;

#ifdef MIMIC_CLI_LIGHT
#define MIMIC_TORCH_COMMAND(fn) nullptr
#else
#define MIMIC_TORCH_COMMAND(fn) fn
#endif

struct Command {
  const char* name;
  Runner (*add)(CLI::App&);  // null where this executable hands the command to mimic-torch
  const char* help;
};

const Command kCommands[] = {
    {"inspect", mimic::cli::AddInspect, "Summarize an execution trace (and its Kineto trace)"},
    {"convert", mimic::cli::AddConvert, "Normalize a trace into a .mimic workload file"},
    {"replay", MIMIC_TORCH_COMMAND(mimic::cli::AddReplay),
     "Replay a trace or workload operator by operator and report timings (one rank per process "
     "under "
     "torchrun/srun/mpirun)"},
    {"run", MIMIC_TORCH_COMMAND(mimic::cli::AddRun),
     "Replay the embedded default fleet sample and compare it with the original"},
    {"synth", MIMIC_TORCH_COMMAND(mimic::cli::AddSynth),
     "Transform workloads: select, filter, substitute, scale batch, change dtype, compose, repeat, "
     "scale world "
     "size"},
    {"pack", MIMIC_TORCH_COMMAND(mimic::cli::AddPack),
     "Write a self-contained, checksummed benchmark bundle"},
    {"build-benchmark", MIMIC_TORCH_COMMAND(mimic::cli::AddBuildBenchmark),
     "Build a standalone benchmark executable from a bundle"},
    {"export-chakra", mimic::cli::AddExportChakra,
     "Write a trace or workload as a Chakra .et trace (ASTRA-sim input)"},
    {"import-chakra", mimic::cli::AddImportChakra,
     "Summarize a Chakra .et trace: node types, collectives, dependencies"},
    {"calibrate", MIMIC_TORCH_COMMAND(mimic::cli::AddCalibrate),
     "Measure this machine's platform figures (GEMM, conv, bandwidth, overheads) into a platform "
     "JSON"},
    {"predict", mimic::cli::AddPredict,
     "Predict a workload's time on a platform, per op, per op class and end to end"},
    {"compare", MIMIC_TORCH_COMMAND(mimic::cli::AddCompare),
     "Replay and predict a trace; set original, replay and prediction side by side (JSON + HTML)"},
    {"devices", MIMIC_TORCH_COMMAND(mimic::cli::AddDevices),
     "List the executors compiled in (cpu, cuda) and the devices present"},
    {"plan", mimic::cli::AddPlan,
     "Plan a fleet: step times, GPUs and cost per target platform, simulated queueing"},
};

// The command named on the command line (its first word that is not an option), or null.
const Command* NamedCommand(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    for (const Command& c : kCommands)
      if (std::strcmp(c.name, argv[i]) == 0) return &c;
    return nullptr;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace mimic::cli;
  SetCommandLine(argc, argv);
  // A standalone benchmark (mimic build-benchmark) runs as that benchmark.
  if (const int code = MaybeRunStandalone(argc, argv); code >= 0) return code;
  if (const Command* named = NamedCommand(argc, argv); named && !named->add)
    return Fail(NeedLibTorch());

  CLI::App app{
      "Mimic: turns PyTorch execution traces into replayable benchmarks, replays them through "
      "LibTorch, and compares the replay with the original run.\n"
      "Exit codes: 0 success, 1 runtime failure, 2 bad input or usage."};
  app.set_version_flag("--version", std::string("mimic ") + MIMIC_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  for (const Command& c : kCommands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    if (c.add) runners[sub] = c.add(*sub);
  }
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
  // What a command did not turn into a Status (a LibTorch error from the device, say) ends
  // it as a runtime failure with one line, not an abort with a backtrace.
  for (const auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const std::exception& e) {  // LibTorch's errors end their first line with the place
      const std::string what = e.what();
      return Fail(mimic::Status::Internal(what.substr(0, what.find('\n'))));
    }
  }
  return kExitBadInput;
}
