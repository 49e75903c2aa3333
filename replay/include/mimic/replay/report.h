// Replay reports: one Reporter interface fed the context and the result, with console and JSON
// implementations (google/benchmark's reporter.h pattern). Stateless; thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "mimic/replay/replayer.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

struct ReportContext {
  std::string host;
  std::string cpu;
  std::string device;
  std::string torch_version;
  std::string mimic_version;
  std::string input_path;
  std::string input_sha256;
  std::string date;  // ISO 8601, UTC
};

// Fills the context from this machine and `workload`'s provenance.
ReportContext MakeContext(const proto::Workload& workload, const std::string& input_path,
                          const std::string& device);

// The original run's median iteration time, when the workload knows it.
std::optional<double> OriginalMedianMs(const proto::Workload& workload);
// How far the original's median unprofiled step moved from before its profiled steps to right
// after them (after / before - 1), when the capture timed both: the machine's own drift during
// the capture, a bound on how closely a ratio to that original can be read.
std::optional<double> OriginalDrift(const proto::Workload& workload);

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string Render(const ReportContext& context, const proto::Workload& workload,
                             const ReplayResult& result) const = 0;
};

// "console" or "json"; nullptr for another name.
std::unique_ptr<Reporter> CreateReporter(const std::string& name);

}  // namespace mimic::replay
