// Reader for PyTorch execution traces (schemas 1.0.1 through 1.1.1-chakra.1.0.0), producing the
// normalized workload. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "mimic/base/file.h"
#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::eg {

// Parses an execution trace streamed from `in` (plain or gzip JSON); `path` is only used in
// messages. The JSON is never held whole: nodes are parsed one at a time. On success the
// workload has provenance (schema, pid, process groups), the tensor table, ops sorted by id,
// and iteration/label segments; sources are left for the caller to fill.
// Errors: InvalidInput naming `path` and the byte offset or node for malformed input, and for
// valid JSON that is not an execution trace.
Result<proto::Workload> ParseExecutionTrace(const std::string& path, InputStream& in);
// The same for JSON text already in memory.
Result<proto::Workload> ParseExecutionTrace(const std::string& path, std::string_view json);

// The dtype of a C++ scalar type name as the profiler records it ("float", "c10::Half",
// "long int", ...); DTYPE_UNKNOWN for others.
proto::DType DTypeOfScalarTypeName(std::string_view name);

// Adds a segment for every ProfilerStep#N op (ITERATION) and "## label ##" op (LABEL) of `w`.
void AddTraceSegments(proto::Workload& w);

// The schema strings this reader knows; others are read best-effort with a warning.
bool IsKnownSchema(std::string_view schema);

}  // namespace mimic::eg
