// Platforms Mimic predicts for (proto/platform.proto): loading and checking the JSON
// descriptions, and the built-in ones shipped in platforms/ (embedded in the library, so
// they resolve from any working directory). Stateless functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mimic/base/status.h"
#include "proto/platform.pb.h"

namespace mimic::model {

// Reads a platform JSON file: protobuf's JSON parser (unknown fields rejected), then
// CheckPlatform. Errors: NotFound for a missing file, InvalidInput naming the file and the
// field (or the parser's position) for anything malformed.
Result<proto::Platform> LoadPlatform(const std::string& path);

// As LoadPlatform, for JSON text already in memory; `name` is used in messages.
Result<proto::Platform> ParsePlatform(const std::string& name, std::string_view json);

// A built-in platform by name ("h200", "cpu_host", ...), else a platform file by path.
// Errors: NotFound naming the built-ins when it is neither; LoadPlatform's otherwise.
Result<proto::Platform> FindPlatform(std::string_view name_or_path);

// The names of the built-in platforms, in shipping order.
std::vector<std::string> BuiltinPlatformNames();

// Semantic checks beyond the schema: a name, device_type "cuda" or "cpu", positive FP32 peak
// and memory bandwidth, no negative figure, known dtype keys, efficiencies in (0, 1], a source
// for the peak and bandwidth figures. InvalidInput naming `path` and the field otherwise.
Status CheckPlatform(const std::string& path, const proto::Platform& platform);

// The platform as JSON (protobuf's printer, field names as in the .proto).
std::string PlatformToJson(const proto::Platform& platform);

// Peak FLOP/s of `platform` for `dtype` ("fp32", "bf16", ...): the tensor-core figure when
// `tensor_core` and the platform has one, else the vector figure; falls back to fp32 for a
// dtype the platform does not list. 0 when nothing applies.
double PeakFlops(const proto::Platform& platform, std::string_view dtype, bool tensor_core);

// What a dispatcher call of an op costs beyond the same call right after it, with
// `distinct_ops` ops called (itself included) and `bytes` read and written since its op's last
// call: the larger of cpu_overheads.in_turn and after_traffic (their *_views for a `view`, where
// measured), each linear in log2 of its argument between the measured points and the end
// points' figure beyond them; 0 where neither was measured.
double ColdDispatchUs(const proto::CpuOverheads& overheads, bool view, int distinct_ops,
                      double bytes);

// A GPU as a Kineto trace's deviceProperties describe it (0 where a figure is not recorded).
struct DeviceProperties {
  std::string name;         // "Tesla V100-SXM2-16GB", "NVIDIA A100-PG509-200", ...
  double memory_bytes = 0;  // totalGlobalMem
  int64_t sm_count = 0;     // numSms (compute units on AMD)
};

// The built-in platform for `device`, from a table of name tokens, memory size and SM count
// (platform.cc). InvalidInput naming the device and the --platform option when none matches.
Result<std::string> PlatformForDevice(const DeviceProperties& device);

}  // namespace mimic::model
