// Shared pieces of the mimic command line: exit codes, error reporting, subcommand registration.
// The CLI is the only part of Mimic that prints to the user.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/replay/replayer.h"
#include "proto/platform.pb.h"
#include "proto/workload.pb.h"

namespace mimic::cli {

enum ExitCode { kExitOk = 0, kExitRuntime = 1, kExitBadInput = 2 };

// Prints "mimic: error: <message>" on one line to stderr and returns the exit code for `status`.
int Fail(const Status& status);

// Writes `text` to `path` atomically, or to stdout when path is "-".
Status WriteOutput(const std::string& path, const std::string& text);

// What a command was given to work on, loaded: a PyTorch execution trace (with its Kineto
// trace, and the capture manifest's unprofiled step times when one lies beside it), a .mimic
// workload, or a bundle (which also carries the seed of its random tensor contents); with
// `allow_kineto_only`, also a Kineto trace alone (for commands that need no tensors), which is
// otherwise refused with a one-line hint (exit 2).
struct LoadedInput {
  proto::Workload workload;
  bool has_seed = false;
  uint64_t seed = 0;
  std::string kineto_path;  // the Kineto trace linked into it, if any
};
Result<LoadedInput> LoadInput(const std::string& path, const std::string& kineto_path,
                              bool allow_kineto_only = false);

// The platform to predict `in` for: `given` (a --platform value) when set, else the built-in
// platform of the GPU that the Kineto trace's deviceProperties describe (the linked one, or
// `input` itself when it is a Kineto trace), else `fallback`; an empty fallback makes a GPU
// trace without usable deviceProperties an error naming --platform. `chosen_by` says which.
Result<std::string> ChoosePlatform(const std::string& given, const LoadedInput& in, const std::string& input,
                                   const std::string& fallback, std::string* chosen_by);

// Intra-op threads: the original run's when the options leave them to the default (0).
void UseOriginalThreads(const proto::Workload& w, replay::ReplayOptions& options);

// Options shared by `replay` and `run`, registered on `app` into `options`.
void AddReplayOptions(CLI::App& app, replay::ReplayOptions& options, std::string& report_path);

// Replays `workload` and prints the console report; writes the JSON report when report_path
// is set. Returns the exit code.
int ReplayAndReport(const proto::Workload& workload, const std::string& input,
                    const replay::ReplayOptions& options, const std::string& report_path);

// The folder of the running executable.
std::string ExecutableDir();

// A CPU platform is calibrated for one host: the CPU model, logical CPUs and intra-op threads
// in its calibrated_on "(...)". This host's, for `threads` threads.
std::string HostCalibrationKey(int64_t threads);
// Where `mimic calibrate --cache` keeps this host's calibration of platform `name`
// ($XDG_CACHE_HOME or ~/.cache, mimic/platforms/NAME@KEY.json).
std::string HostPlatformCachePath(const std::string& name, int64_t threads);
// A CPU platform calibrated on another host is replaced by this host's cached calibration when
// there is one; otherwise a note says plainly that the prediction is for the other machine.
// GPU platforms pass through. `*needs_calibration` (optional) tells the caller none was found.
proto::Platform ForThisHost(proto::Platform platform, std::vector<std::string>& notes,
                            bool* needs_calibration = nullptr);

// The figures the replay's host gaps take from a platform. --host-gaps recorded on the CPU: the
// capture's cost from `platform` (cpu_overheads.capture_*, model::CaptureCostOf) when it is a
// CPU platform calibrated on this host with one, so that the replay and the model take the
// same figures off the recorded gaps; otherwise the replay measures it at setup. A capture
// cost already given (--capture-cost-us) is kept.
// Also --host-gaps modelled's per-issuer T1s (model::IssuerT1) from `platform`, whatever its
// host, where it has them and none were taken yet.
void UseHostGapFiguresOf(const proto::Platform& platform, replay::ReplayOptions& options);
// The same from this host's calibration of cpu_host: the one `calibrate --cache` kept, else the
// built-in one where it was calibrated on this host.
void UseHostCaptureCost(replay::ReplayOptions& options);
// The capture's cost as the capture measured it, right after its profiled steps
// (OriginalRun.capture_cost, from its manifest), where it did and none was given: it, not a
// host's figures, is what the recorded gaps hold. Call before the two above.
void UseCaptureTimeCost(const proto::Workload& workload, replay::ReplayOptions& options);

// Calibrates this host (a quick sweep from `base`'s datasheet figures, with progress on stderr)
// and keeps it at HostPlatformCachePath. Needs LibTorch (mimic-torch).
Result<proto::Platform> CalibrateThisHost(const proto::Platform& base);

// LibTorch lives in the `mimic-torch` executable beside `mimic` (docs/cli.md): `mimic` starts in
// milliseconds and runs `mimic-torch` for the commands that replay or measure. In `mimic`,
// NeedLibTorch hands this command line over to `mimic-torch` (exec, with LibTorch's folder on the
// library path) and returns only on failure; in `mimic-torch` it returns Ok at once.
Status NeedLibTorch();

// The command line main() was given (argv, null-terminated), for NeedLibTorch.
void SetCommandLine(int argc, char** argv);
char* const* CommandLine();

// Runs this executable as the standalone benchmark it was built into, when it is one (`mimic
// build-benchmark`), and returns its exit code; returns -1 when it carries no benchmark.
int MaybeRunStandalone(int argc, char** argv);

// Each subcommand registers its options on `app` and returns the function that runs it.
using Runner = std::function<int()>;
Runner AddInspect(CLI::App& app);
Runner AddConvert(CLI::App& app);
Runner AddReplay(CLI::App& app);
Runner AddRun(CLI::App& app);
Runner AddExportChakra(CLI::App& app);
Runner AddImportChakra(CLI::App& app);
Runner AddSynth(CLI::App& app);
Runner AddPack(CLI::App& app);
Runner AddBuildBenchmark(CLI::App& app);
Runner AddCalibrate(CLI::App& app);
Runner AddPredict(CLI::App& app);
Runner AddCompare(CLI::App& app);
Runner AddPlan(CLI::App& app);
Runner AddDevices(CLI::App& app);

// One iteration time of `w` measured by replay on this machine (`mimic plan`): the median of
// options.iters iterations; on_iteration sees each. Needs LibTorch (mimic-torch).
Result<double> MeasureByReplay(const proto::Workload& w, const replay::ReplayOptions& options,
                               const std::function<void(int done, int total)>& on_iteration,
                               std::string* detail);

}  // namespace mimic::cli
