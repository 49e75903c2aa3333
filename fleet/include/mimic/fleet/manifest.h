// The fleet manifest (proto/fleet.proto, docs/fleet.md): loading from protobuf JSON or text and
// the semantic checks that protobuf's parsers cannot make. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "mimic/base/status.h"
#include "proto/fleet.pb.h"

namespace mimic::fleet {

struct LoadedManifest {
  proto::FleetManifest manifest;  // paths (traces, Kineto traces, job log) made absolute or
                                  // relative to the current directory, as the files were found
  std::string path;               // as given
  std::string sha256;             // of the file as stored (LoadManifest; empty from ParseManifest)
};

// Reads and checks the manifest at `path`. JSON when its first non-blank byte is '{', protobuf
// text otherwise; unknown fields are refused. Errors name the file and the offending field,
// e.g. "fleet.json: classes[1].gpus_per_job: must be > 0, got -2": InvalidInput for malformed or
// inconsistent values, NotFound for a trace or job log that does not exist.
Result<LoadedManifest> LoadManifest(const std::string& path);

// The same from text already in memory; relative paths are resolved against `dir`.
Result<LoadedManifest> ParseManifest(const std::string& path, std::string_view text,
                                     const std::string& dir);

// Total GPUs of the inventory.
int64_t InventoryGpus(const proto::FleetManifest& manifest);

}  // namespace mimic::fleet
