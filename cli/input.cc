// Loading what a command works on: trace, workload or bundle.
#include <sys/stat.h>

#include "cli.h"
#include "mimic/base/file.h"
#include "mimic/eg/capture_manifest.h"
#include "mimic/eg/workload.h"
#include "mimic/synth/bundle.h"

namespace mimic::cli {

Result<LoadedInput> LoadInput(const std::string& path, const std::string& kineto_path) {
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
  MIMIC_ASSIGN_OR_RETURN(out.workload, eg::LoadWorkload(path, {.kineto_path = kineto_path}));
  // A trace captured by scripts/capture_fleet_samples.py has its unprofiled step times in the
  // manifest beside it; they are the original run's truth (profiled steps run slower).
  const size_t slash = path.find_last_of('/');
  const std::string manifest = (slash == std::string::npos ? "." : path.substr(0, slash)) + "/manifest.json";
  struct stat st {};
  if (out.workload.transformations_size() == 0 && stat(manifest.c_str(), &st) == 0) {
    MIMIC_ASSIGN_OR_RETURN(const eg::CaptureManifest m, eg::ReadCaptureManifest(manifest));
    if (const eg::CaptureSample* s = m.FindByTrace(path)) eg::ApplyCaptureSample(*s, manifest, out.workload);
  }
  return out;
}

}  // namespace mimic::cli
