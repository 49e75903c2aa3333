// Loading what a command works on: trace, workload or bundle.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "cli.h"
#include "mimic/base/file.h"
#include "mimic/base/host.h"
#include "mimic/eg/capture_manifest.h"
#include "mimic/eg/host_timeline.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/value_profile.h"
#include "mimic/eg/workload.h"
#include "mimic/model/host_gaps.h"
#include "mimic/model/platform.h"
#include "mimic/synth/bundle.h"

namespace mimic::cli {

namespace {

bool SameFile(const std::string& a, const std::string& b) {
  struct stat x {};
  struct stat y {};
  return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev &&
         x.st_ino == y.st_ino;
}

}  // namespace

Result<LoadedInput> LoadInput(const std::string& path, const std::string& kineto_path,
                              bool allow_kineto_only) {
  LoadedInput out;
  std::string head;
  {
    MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, InputStream::Open(path));
    MIMIC_ASSIGN_OR_RETURN(head, ReadHead(*in, 16));
  }
  if (synth::LooksLikeBundle(head)) {
    MIMIC_ASSIGN_OR_RETURN(proto::Bundle bundle, synth::ReadBundle(path));
    out.workload = std::move(*bundle.mutable_workload());
    out.has_seed = true;
    out.seed = bundle.seed();
    return out;
  }
  // A trace captured by scripts/capture_*_samples.py has a manifest beside it: the Kineto trace
  // captured with it (linked unless --kineto names another) and the unprofiled step times,
  // the original run's truth (profiled steps run slower).
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string manifest = dir + "/manifest.json";
  struct stat st {};
  std::optional<eg::CaptureManifest> m;
  const eg::CaptureSample* sample = nullptr;
  if (stat(manifest.c_str(), &st) == 0) {
    MIMIC_ASSIGN_OR_RETURN(m, eg::ReadCaptureManifest(manifest));
    sample = m->FindByTrace(path);
  }
  std::string kineto = kineto_path;
  if (kineto.empty() && sample && !sample->kineto.empty() &&
      stat((dir + "/" + sample->kineto).c_str(), &st) == 0)
    kineto = dir + "/" + sample->kineto;
  MIMIC_ASSIGN_OR_RETURN(
      out.workload,
      eg::LoadWorkload(path, {.kineto_path = kineto, .allow_kineto_only = allow_kineto_only}));
  out.kineto_path = kineto;
  if (sample && out.workload.transformations_size() == 0) {
    eg::ApplyCaptureSample(*sample, manifest, out.workload);
    proto::Workload& w = out.workload;
    // The capture's files beside the trace. One that cannot be applied leaves the trace's own
    // figures, and its source says why. The timeline is placed on the steps of the Kineto trace
    // captured with it (the manifest's, linked by default or named by --kineto).
    if (!sample->host_timeline.empty() && !kineto.empty() &&
        SameFile(kineto, dir + "/" + sample->kineto))
      if (Status s = eg::ApplyHostTimeline(dir + "/" + sample->host_timeline, w); !s.ok())
        w.mutable_original()->mutable_host_timeline()->set_source("not used: " + s.message());
    if (!sample->values.empty())
      if (Status s = eg::ApplyValueProfile(dir + "/" + sample->values, w); !s.ok())
        w.mutable_original()->mutable_values()->set_source("not used: " + s.message());
  }
  return out;
}

namespace {

// What the trace's kernel names say of its GPU (eg::KernelArchitecture): " (its newest kernels
// were built for sm_80, Ampere: ...)", or nothing.
std::string ArchitectureHint(const proto::Workload& w) {
  int newest = 0;
  for (const proto::Op& op : w.ops())
    for (const proto::Kernel& k : op.kernels())
      newest = std::max(newest, eg::KernelArchitecture(k.name()));
  if (newest == 0) return "";
  const char* family = newest >= 100  ? "Blackwell"
                       : newest >= 90 ? "Hopper"
                       : newest >= 80 ? "Ampere"
                       : newest >= 75 ? "Turing"
                       : newest >= 70 ? "Volta"
                                      : "older";
  return " (its newest kernels were built for sm_" + std::to_string(newest) + ", " + family +
         ": the GPU is of that generation or a newer one)";
}

}  // namespace

Result<std::string> ChoosePlatform(const std::string& given, const LoadedInput& in,
                                   const std::string& input, const std::string& fallback,
                                   std::string* chosen_by) {
  if (!given.empty()) {
    *chosen_by = "--platform";
    return given;
  }
  // The Kineto trace's deviceProperties, kept in the workload when it was read (a .mimic
  // workload converted from a trace keeps them too).
  const std::string kineto = in.kineto_path.empty() ? input : in.kineto_path;
  const auto& gpus = in.workload.provenance().gpus();
  if (!gpus.empty()) {
    const proto::GpuProperties& d = gpus[0];
    Result<std::string> name = model::PlatformForDevice({d.name(), d.memory_bytes(), d.sm_count()});
    if (!name.ok()) return name.status().WithContext(kineto);
    *chosen_by = "deviceProperties of " + kineto + ": " + d.name();
    return name;
  }
  if (fallback.empty() || in.workload.kineto().kernels_linked() > 0)
    return Status::InvalidInput(kineto +
                                ": the trace records no GPU (deviceProperties) to predict for: "
                                "give one with --platform NAME|FILE.json" +
                                ArchitectureHint(in.workload));
  *chosen_by = "default for the replay device";
  return fallback;
}

}  // namespace mimic::cli

namespace mimic::cli {

std::string HostCalibrationKey(int64_t threads) {
  return CpuModel() + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " cpus, " +
         std::to_string(threads) + " threads";
}

std::string HostPlatformCachePath(const std::string& name, int64_t threads) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string root =
      xdg && *xdg ? xdg : std::string(home && *home ? home : "/tmp") + "/.cache";
  std::string key = HostCalibrationKey(threads);
  for (char& ch : key)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return root + "/mimic/platforms/" + name + "@" + key + ".json";
}

namespace {

// The host key a CPU platform was calibrated for: what its calibrated_on holds in "(...)".
std::string CalibratedHost(const proto::Platform& p) {
  const std::string& on = p.calibrated_on();
  const size_t open = on.find('('), close = on.rfind(')');
  return open == std::string::npos ? on : on.substr(open + 1, close - open - 1);
}

}  // namespace

proto::Platform ForThisHost(proto::Platform p, std::vector<std::string>& notes,
                            bool* needs_calibration) {
  if (needs_calibration) *needs_calibration = false;
  if (p.device_type() != "cpu" || p.calibrated_on().empty()) return p;
  const std::string theirs = CalibratedHost(p);
  const std::string ours = HostCalibrationKey(p.threads());
  if (theirs == ours) return p;
  const std::string cache = HostPlatformCachePath(p.name(), p.threads());
  if (Result<proto::Platform> cached = model::LoadPlatform(cache); cached.ok()) {
    notes.push_back("platform " + p.name() + ": this host's calibration (" + cache + ", " +
                    cached->calibrated_at() + "), not the built-in one of " + theirs);
    return *cached;
  }
  if (needs_calibration) *needs_calibration = true;
  notes.push_back("platform " + p.name() + " was calibrated on " + theirs + "; this host is " +
                  ours +
                  ": the prediction is for that machine, not this one (`mimic calibrate --cache` "
                  "calibrates this "
                  "host once for every later prediction)");
  return p;
}

namespace {

// --host-gaps modelled (and auto without a Kineto trace): the platform's per-issuer T1s, the
// figures the model uses without a trace. Ones already given are kept.
void UseIssuerT1Of(const proto::Platform& p, replay::ReplayOptions& o) {
  if (!o.modelled_t1_source.empty() || !model::HasIssuerT1(p.cpu_overheads())) return;
  for (int i = 0; i < eg::kIssuers; ++i)
    o.modelled_t1_us[i] = model::IssuerT1(p.cpu_overheads(), static_cast<eg::Issuer>(i));
  auto it = p.sources().find(model::kIssuerT1Source);
  o.modelled_t1_source = "platform " + p.name() + " (cpu_overheads.t1_<issuer>_us" +
                         (it == p.sources().end() ? ")" : ": " + it->second + ")");
}

}  // namespace

void UseHostGapFiguresOf(const proto::Platform& p, replay::ReplayOptions& o) {
  UseIssuerT1Of(p, o);
  if (o.capture_cost.boundary_us >= 0 || o.host_gaps == replay::HostGaps::kNone ||
      o.device != "cpu" || p.device_type() != "cpu" || p.cpu_overheads().capture_cost_us() <= 0)
    return;
  if (CalibratedHost(p) != HostCalibrationKey(p.threads())) return;  // another host's
  o.capture_cost = model::CaptureCostOf(p.cpu_overheads());
  o.capture_cost_source =
      "platform " + p.name() + " calibrated on this host at " + p.calibrated_at();
}

void UseCaptureTimeCost(const proto::Workload& w, replay::ReplayOptions& o) {
  const proto::CaptureCostFigures& f = w.original().capture_cost();
  if (o.capture_cost.boundary_us >= 0 || o.host_gaps == replay::HostGaps::kNone ||
      !(f.boundary_us() > 0))
    return;
  o.capture_cost = eg::CaptureCostFromFigures(f);
  o.capture_cost_source =
      "measured at capture time" + (f.source().empty() ? "" : " (" + f.source() + ")");
}

void UseHostCaptureCost(replay::ReplayOptions& o) {
  Result<proto::Platform> builtin = model::FindPlatform("cpu_host");
  if (!builtin.ok()) return;
  if (Result<proto::Platform> cached =
          model::LoadPlatform(HostPlatformCachePath(builtin->name(), builtin->threads()));
      cached.ok())
    UseHostGapFiguresOf(*cached, o);
  UseHostGapFiguresOf(*builtin, o);
}

}  // namespace mimic::cli
