#include "mimic/synth/bundle.h"

#include <ctime>

#include "mimic/base/clock.h"
#include "mimic/base/file.h"
#include "mimic/base/framed.h"
#include "mimic/base/host.h"
#include "mimic/eg/workload.h"

namespace mimic::synth {
namespace {

constexpr std::string_view kMagic = "MIMICBN\n";


}  // namespace

proto::Bundle MakeBundle(proto::Workload workload, uint64_t seed) {
  proto::Bundle b;
  b.mutable_format()->set_major(kBundleFormatMajor);
  b.mutable_format()->set_minor(kBundleFormatMinor);
  *b.mutable_workload() = std::move(workload);
  b.set_seed(seed);
  b.set_created_at(UtcNowIso8601());
  b.set_created_by(std::string("mimic ") + MIMIC_VERSION + " on " + HostName());
  return b;
}

Status WriteBundle(const std::string& path, const proto::Bundle& bundle) {
  std::string payload;
  if (!bundle.SerializeToString(&payload)) return Status::Internal("cannot serialize the bundle");
  return WriteFileAtomic(path, Frame(kMagic, payload));
}

bool LooksLikeBundle(std::string_view bytes) { return HasMagic(bytes, kMagic); }

Result<proto::Bundle> ParseBundle(const std::string& path, std::string_view bytes) {
  MIMIC_ASSIGN_OR_RETURN(const std::string_view payload, Unframe(path, kMagic, bytes));
  proto::Bundle b;
  if (!b.ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    return Status::InvalidInput(path + ":byte " + std::to_string(bytes.size() - payload.size()) +
                                ": corrupt bundle (protobuf does not parse)");
  if (b.format().major() > kBundleFormatMajor)
    return Status::Unsupported(path + ": bundle format " + std::to_string(b.format().major()) + "." +
                               std::to_string(b.format().minor()) + " is newer than this Mimic reads (" +
                               std::to_string(kBundleFormatMajor) + ".x)");
  MIMIC_RETURN_IF_ERROR(eg::CheckWorkload(path, b.workload()));
  eg::UpgradeWorkload(*b.mutable_workload());
  return b;
}

Result<proto::Bundle> ReadBundle(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  return ParseBundle(path, file.bytes.view());
}

}  // namespace mimic::synth
