// Helpers shared by Mimic's tests: where the sources and the shared traces are, and gtest
// matchers for Status/Result.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "mimic/base/status.h"

namespace mimic::testing {

// The repository root (the tests run from it).
std::string SourceDir();
// Where the public sample traces live: $MIMIC_TRACES, else ../shared/traces beside the
// repository.
std::string SharedTraces();
// Skips the calling test when `path` does not exist.
bool Exists(const std::string& path);

}  // namespace mimic::testing

#define MIMIC_SKIP_UNLESS_EXISTS(path) \
  if (!::mimic::testing::Exists(path)) GTEST_SKIP() << "missing " << (path)

MATCHER(IsOk, "is OK") {
  const auto status = arg.status();
  if (!status.ok()) *result_listener << status.ToString();
  return status.ok();
}

MATCHER_P(StatusIs, code, "has status code") {
  const auto status = arg.status();
  *result_listener << status.ToString();
  return status.code() == code;
}
