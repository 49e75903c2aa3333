// mimic calibrate [--device D] [--threads T] [--base P] [--name N] [--quick] [--workload W...]
//                 [--only
//                 index|conv_transpose|conv_strided|values|layouts|sort|capture|cold_dispatch|
//                 page_faults|host_gaps]
//                 [--min-trial-ms MS] -o P.json
// Under torchrun, srun or mpirun it also sweeps the collectives across the launched ranks.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "cli.h"
#include "mimic/base/clock.h"
#include "mimic/base/file.h"
#include "mimic/calibrate/calibrate.h"
#include "mimic/eg/collective.h"
#include "mimic/model/platform.h"
#include "mimic/model/shapes.h"
#include "mimic/replay/comm_sweep.h"

namespace mimic::cli {
namespace {

// Sweeps the collectives over the launched ranks and fits each one's alpha-beta parameters.
Result<std::vector<proto::CollectiveParams>> CalibrateCollectives(const replay::DistEnv& env, bool quick) {
  replay::SweepOptions o;
  o.types = {proto::Collective::ALL_REDUCE, proto::Collective::ALL_GATHER, proto::Collective::REDUCE_SCATTER,
             proto::Collective::ALL_TO_ALL, proto::Collective::BROADCAST};
  // 4 KiB to 16 MiB (x4): latency-bound to bandwidth-bound, multiples of any rank count up to 1024.
  // --quick stops at 4 MiB, where the bandwidth term still outweighs a loaded machine's jitter.
  for (int64_t s = 4096; s <= (quick ? int64_t{4} << 20 : int64_t{16} << 20); s *= 4)
    o.sizes_bytes.push_back(s);
  o.iters = quick ? 5 : 10;
  MIMIC_ASSIGN_OR_RETURN(const std::vector<replay::CollectiveSample> samples, replay::SweepCollectives(env, o));
  std::vector<proto::CollectiveParams> out;
  for (proto::Collective::Type type : o.types) {
    std::vector<replay::CollectiveSample> of_type;
    for (const replay::CollectiveSample& s : samples)
      if (s.type == type) of_type.push_back(s);
    Result<replay::AlphaBeta> fit = replay::FitAlphaBeta(of_type, env.world_size);
    if (!fit.ok()) {
      // Too noisy to fit (a shared machine, --quick): the model keeps its assumption for it.
      std::fprintf(stderr, "mimic: calibrate: %s: not fitted: %s\n", eg::CollectiveTypeName(type),
                   fit.status().message().c_str());
      continue;
    }
    const replay::AlphaBeta& ab = *fit;
    std::fprintf(stderr, "mimic: calibrate: %s on %d ranks: alpha %.1f us, busbw %.3f GB/s\n",
                 eg::CollectiveTypeName(type), env.world_size, ab.alpha_us, ab.bus_bytes_per_s / 1e9);
    proto::CollectiveParams& p = out.emplace_back();
    p.set_collective(eg::CollectiveTypeName(type));
    p.set_alpha_us(ab.alpha_us);
    p.set_bus_bytes_per_s(ab.bus_bytes_per_s);
    p.set_ranks(env.world_size);
  }
  return out;
}

}  // namespace

namespace {

Status MakeDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return ec ? Status::Io(dir + ": " + ec.message()) : Status::Ok();
}

}  // namespace

Result<proto::Platform> CalibrateThisHost(const proto::Platform& base) {
  calibrate::CalibrateOptions o;
  o.name = base.name();
  o.threads = static_cast<int>(base.threads());
  o.quick = true;
  o.statistic = "min";  // robust to other work on a shared machine
  std::fprintf(stderr,
               "mimic: %s was calibrated on another host: calibrating this one first (quick)\n",
               base.name().c_str());
  MIMIC_ASSIGN_OR_RETURN(proto::Platform p, calibrate::Calibrate(o, [](const std::string& line) {
                           std::fprintf(stderr, "mimic: calibrate: %s\n", line.c_str());
                         }));
  const std::string cache = HostPlatformCachePath(p.name(), p.threads());
  MIMIC_RETURN_IF_ERROR(MakeDirs(cache.substr(0, cache.find_last_of('/'))));
  MIMIC_RETURN_IF_ERROR(WriteFileAtomic(cache, model::PlatformToJson(p) + "\n"));
  return p;
}

namespace {

// Writes the platform to `output` ('-': stdout) and, with `cache`, as this host's calibration.
int WritePlatform(const proto::Platform& p, const std::string& output, bool cache) {
  if (cache) {
    const std::string path = HostPlatformCachePath(p.name(), p.threads());
    Status st = MakeDirs(path.substr(0, path.find_last_of('/')));
    if (st.ok()) st = WriteFileAtomic(path, model::PlatformToJson(p) + "\n");
    if (!st.ok()) return Fail(st);
    std::fprintf(stderr, "mimic: calibrate: this host's %s kept in %s\n", p.name().c_str(),
                 path.c_str());
  }
  if (!output.empty()) {
    Status st = WriteOutput(output, model::PlatformToJson(p) + "\n");
    if (!st.ok()) return Fail(st);
  }
  return kExitOk;
}

// The description's sentence on the per-issuer T1s, replaced when measured again.
constexpr std::string_view kT1Sentence = " Per-issuer T1 (cpu_overheads.t1_*_us): ";

// --only host_gaps: the base platform with its per-issuer T1s measured on the captures, and
// what they were measured on in its description; no other figure changes.
template <typename Args>
Result<proto::Platform> HostGapsOnly(const Args& args) {
  if (args.options.captures.empty())
    return Status::InvalidInput("--only host_gaps: give the captures to measure on (--workload)");
  if (args.options.base.empty())
    return Status::InvalidInput("--only host_gaps: give the platform to start from (--base)");
  MIMIC_ASSIGN_OR_RETURN(proto::Platform p, model::FindPlatform(args.options.base));
  MIMIC_ASSIGN_OR_RETURN(const std::string how, model::MeasureIssuerT1(args.options.captures, p));
  std::fprintf(stderr, "mimic: calibrate: host gaps: %s\n", how.c_str());
  std::string d = p.description();
  if (const size_t at = d.find(kT1Sentence); at != std::string::npos) d.resize(at);
  if (!d.empty() && d.back() != '.') d += '.';
  p.set_description(d + std::string(kT1Sentence) +
                    "measured by `mimic calibrate --only host_gaps` at " + UtcNowIso8601() + ": " +
                    how + ".");
  MIMIC_RETURN_IF_ERROR(model::CheckPlatform("calibrated platform", p));
  return p;
}

}  // namespace

Runner AddCalibrate(CLI::App& app) {
  struct Args {
    calibrate::CalibrateOptions options;
    std::string output;
    std::vector<std::string> workloads;
    std::vector<proto::Workload> loaded;  // the --workload captures (for their host gaps)
    bool cache = false;
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
                 "Also measure the GEMM and convolution shapes of this trace or workload, and, "
                 "where its Kineto trace is linked, the host time before an op by what issued it "
                 "(cpu_overheads.t1_forward_us, t1_backward_us, t1_optimizer_us) (repeatable)");
  app.add_option("--min-trial-ms", args->options.min_trial_ms,
                 "Each trial repeats its call until it lasts this long; shorter trials with "
                 "--statistic min find the uncontended cost on a loaded machine")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--only", args->options.only,
                 "Measure one part alone into a copy of --base, its other figures kept: index "
                 "(the gathers and scatters of index_ops), conv_transpose (transposed "
                 "convolutions), conv_strided (stride-2 convolutions), values (value_slowdown: the "
                 "ops whose time the values they read "
                 "set), layouts (batch norm and max pooling on channels-last maps, an add and "
                 "ReLU's backward on operands in two layouts, bandwidth kinds "
                 "batch_norm(_backward)_channels_last, pool(_backward)_channels_last, "
                 "mixed_layout and threshold_backward_mixed_layout), sort (aten::sort by size, "
                 "bandwidth kind "
                 "sort), capture "
                 "(what the capture's instrumentation costs the host, "
                 "cpu_overheads.capture_*), cold_dispatch (what a CPU op's dispatch costs once "
                 "its code went cold, cpu_overheads.in_turn and after_traffic), page_faults "
                 "(a minor page fault on this host, cpu_overheads.page_fault_us) or host_gaps (the "
                 "per-issuer T1s on the --workload captures, with the base's capture cost)")
      ->check(CLI::IsMember({"index", "conv_transpose", "conv_strided", "values", "layouts", "sort",
                             "capture", "cold_dispatch", "page_faults", "host_gaps"}));
  app.add_flag("--quick", args->options.quick, "A small sweep (seconds, for tests); less accurate");
  app.add_option("-o,--output", args->output, "Platform JSON to write ('-' for stdout)");
  app.add_flag(
      "--cache", args->cache,
      "Also keep it as this host's calibration, which predict and compare then use in place "
      "of a built-in CPU platform calibrated elsewhere (docs/model.md)");
  return [args]() -> int {
    if (args->output.empty() && !args->cache)
      return Fail(Status::InvalidInput("give -o FILE, --cache, or both"));
    for (const std::string& path : args->workloads) {
      // A trace's Kineto file is not needed for its shapes; a Kineto trace alone has them too.
      // A capture's linked one (its manifest's) tells its host gaps.
      Result<LoadedInput> in = LoadInput(path, "", /*allow_kineto_only=*/true);
      if (!in.ok()) return Fail(in.status());
      args->options.workloads.push_back(model::ShapesOf(in->workload));
      args->loaded.push_back(std::move(in->workload));
    }
    for (size_t i = 0; i < args->loaded.size(); ++i)
      args->options.captures.push_back({args->workloads[i], &args->loaded[i]});
    if (args->options.only == "host_gaps") {
      Result<proto::Platform> p = HostGapsOnly(*args);
      return p.ok() ? WritePlatform(*p, args->output, args->cache) : Fail(p.status());
    }
    // Launched on several ranks: every rank takes part in the collective sweep, then rank 0
    // alone measures the device and writes the platform.
    Result<std::optional<replay::DistEnv>> dist = replay::DistEnvFromEnvironment();
    if (!dist.ok()) return Fail(dist.status());
    std::vector<proto::CollectiveParams> collectives;
    if (*dist && (*dist)->world_size > 1) {
      std::fprintf(stderr, "mimic: calibrate: rank %d of %d: collective sweep\n", (*dist)->rank, (*dist)->world_size);
      Result<std::vector<proto::CollectiveParams>> c = CalibrateCollectives(**dist, args->options.quick);
      if (!c.ok()) return Fail(c.status());
      if ((*dist)->rank != 0) return kExitOk;
      collectives = std::move(*c);
    }
    Result<proto::Platform> p = calibrate::Calibrate(args->options, [](const std::string& line) {
      std::fprintf(stderr, "mimic: calibrate: %s\n", line.c_str());
    });
    if (!p.ok()) return Fail(p.status());
    if (!collectives.empty()) {
      p->clear_collectives();
      for (proto::CollectiveParams& c : collectives) *p->add_collectives() = std::move(c);
      (*p->mutable_sources())["collectives"] =
          "measured by mimic calibrate at " + UtcNowIso8601() + " on " + std::to_string((*dist)->world_size) + " " +
          (*dist)->launcher + " ranks over Gloo (c10d ProcessGroup): each collective at 4 KiB-16 MiB, median of its " +
          "timed runs on rank 0, alpha-beta fitted by least squares with nccl-tests' bus factors";
    }
    return WritePlatform(*p, args->output, args->cache);
  };
}

}  // namespace mimic::cli
