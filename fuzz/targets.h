// The fuzz targets' bodies, one per reader of untrusted input. The libFuzzer entry points
// (fuzz/*_fuzz.cc) and the regression test (tests/eg/fuzz_regressions_test.cc) both call them.
// Each must return normally for any input: errors are Status values, never crashes.
#pragma once

#include <string>
#include <string_view>

namespace mimic::fuzz {

void ExecutionTrace(std::string_view bytes);
void Kineto(std::string_view bytes);
void Workload(std::string_view bytes);
void Manifest(std::string_view bytes);
void Chakra(std::string_view bytes);
void Platform(std::string_view bytes);
void FleetManifest(std::string_view bytes);
void JobLog(std::string_view bytes);

// The body for a target name ("execution_trace", ...), or nullptr.
using Target = void (*)(std::string_view);
Target Find(const std::string& name);

}  // namespace mimic::fuzz
