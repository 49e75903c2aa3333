#include "mimic/fleet_samples/embedded.h"

extern "C" {
extern const char mimic_embedded_et_begin[], mimic_embedded_et_end[];
extern const char mimic_embedded_kineto_begin[], mimic_embedded_kineto_end[];
extern const char mimic_embedded_manifest_begin[], mimic_embedded_manifest_end[];
}

namespace mimic::fleet_samples {
namespace {
std::string_view Span(const char* begin, const char* end) {
  return std::string_view(begin, static_cast<size_t>(end - begin));
}
}  // namespace

const EmbeddedSample& DefaultSample() {
  static const EmbeddedSample sample{
      MIMIC_EMBED_NAME,
      MIMIC_EMBED_NAME ".et.json.gz",
      Span(mimic_embedded_et_begin, mimic_embedded_et_end),
      MIMIC_EMBED_NAME ".kineto.json.gz",
      Span(mimic_embedded_kineto_begin, mimic_embedded_kineto_end),
      Span(mimic_embedded_manifest_begin, mimic_embedded_manifest_end),
  };
  return sample;
}

}  // namespace mimic::fleet_samples
