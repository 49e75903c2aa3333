#include "testing.h"

#include <sys/stat.h>

#include <cstdlib>

namespace mimic::testing {

std::string SourceDir() {
  const char* dir = std::getenv("MIMIC_SOURCE_DIR");
  return dir ? dir : MIMIC_SOURCE_DIR_DEFAULT;
}

std::string SharedTraces() {
  const char* dir = std::getenv("MIMIC_TRACES");
  return dir ? dir : SourceDir() + "/../shared/traces";
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

}  // namespace mimic::testing
