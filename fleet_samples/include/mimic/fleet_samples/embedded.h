// The fleet sample compiled into the mimic binary: what `mimic run` replays with no argument.
// Immutable data; thread-safe.
#pragma once

#include <string_view>

namespace mimic::fleet_samples {

struct EmbeddedSample {
  std::string_view name;           // the manifest's sample name
  std::string_view et_name;        // file names as in fleet_samples/
  std::string_view et_bytes;       // gzip bytes as committed
  std::string_view kineto_name;
  std::string_view kineto_bytes;
  std::string_view manifest_json;  // fleet_samples/manifest.json
};

const EmbeddedSample& DefaultSample();

}  // namespace mimic::fleet_samples
