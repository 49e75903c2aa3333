// Portable benchmark bundles (`mimic pack`): one self-contained, checksummed file holding the
// workload, the original run's measurements and provenance, the transformations applied, and
// the seed of all random tensor contents. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::synth {

inline constexpr uint32_t kBundleFormatMajor = 1;
inline constexpr uint32_t kBundleFormatMinor = 0;

// Wraps `workload` into a bundle with `seed`, stamped with this Mimic and the time.
proto::Bundle MakeBundle(proto::Workload workload, uint64_t seed);

// Writes `bundle` to `path` atomically.
Status WriteBundle(const std::string& path, const proto::Bundle& bundle);

// True when `bytes` (a file's first bytes, at least 8) start like a bundle.
bool LooksLikeBundle(std::string_view bytes);

// Reads a bundle. Errors (InvalidInput naming `path` and the position): not a bundle, a bad
// checksum, a protobuf that does not parse, an invalid workload inside; Unsupported: a bundle
// format newer than this Mimic reads.
Result<proto::Bundle> ParseBundle(const std::string& path, std::string_view bytes);
Result<proto::Bundle> ReadBundle(const std::string& path);

}  // namespace mimic::synth
