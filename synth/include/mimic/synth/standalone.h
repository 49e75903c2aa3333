// Standalone benchmark executables (`mimic build-benchmark`). One file holds three parts:
//
//   [the `mimic` launcher][the `mimic-torch` runner][RUNNER trailer][the bundle][BUNDLE trailer]
//
// where each trailer is [uint64 little-endian size of the part before it][8-byte tag]. The
// launcher needs no LibTorch: at start-up it finds the bundle trailer on its own executable,
// finds LibTorch on the machine it runs on and executes the embedded runner (docs/cli.md), which
// replays the bundle. Nothing in the file points into the build machine's filesystem.
// Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::synth {

// Writes `out` (mode 0755, atomically): `launcher` and `runner` (each without any parts it
// already carries) followed by the bundle file `bundle_path`, which must be a valid bundle.
// Errors: those of ReadBundle for the bundle; Io when a file cannot be read or written.
Status BuildStandalone(const std::string& launcher, const std::string& runner,
                       const std::string& bundle_path, const std::string& out);

// Where a part lies in a standalone executable.
struct EmbeddedPart {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// The embedded runner of standalone executable `exe`, or nullopt when `exe` carries no bundle.
// Errors: a bundle without a runner (InvalidInput); `exe` cannot be read (Io).
Result<std::optional<EmbeddedPart>> FindEmbeddedRunner(const std::string& exe);

// The bundle embedded in executable `exe`, or nullopt when it carries none. Errors: the
// trailer is there but the bundle is corrupt (InvalidInput), or `exe` cannot be read (Io).
Result<std::optional<proto::Bundle>> ReadEmbeddedBundle(const std::string& exe);

}  // namespace mimic::synth
