// Standalone benchmark executables (`mimic build-benchmark`): a copy of the mimic binary with a
// bundle appended, followed by a trailer [uint64 little-endian bundle size]["MIMICEXE"]. At
// start-up mimic looks for the trailer on its own executable and, when it finds one, runs as
// that benchmark. Stateless; thread-safe.
#pragma once

#include <optional>
#include <string>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::synth {

// Writes `out` (mode 0755, atomically): the executable `runner` (without any bundle it already
// carries) followed by the bundle file `bundle_path`, which must be a valid bundle.
// Errors: those of ReadBundle for the bundle; Io when a file cannot be read or written.
Status BuildStandalone(const std::string& runner, const std::string& bundle_path,
                       const std::string& out);

// The bundle embedded in executable `exe`, or nullopt when it carries none. Errors: the
// trailer is there but the bundle is corrupt (InvalidInput), or `exe` cannot be read (Io).
Result<std::optional<proto::Bundle>> ReadEmbeddedBundle(const std::string& exe);

}  // namespace mimic::synth
