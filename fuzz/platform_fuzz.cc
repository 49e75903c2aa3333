// libFuzzer entry point for mimic::fuzz::Platform (fuzz/targets.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mimic::fuzz::Platform(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
