// The reports of a fleet plan: JSON (docs/cli.md, `mimic plan --report`) and one self-contained
// HTML file (inline SVG, no scripts, no network) with allocation over time and the job
// completion time distribution per policy and scenario. Pure functions; thread-safe.
#pragma once

#include <string>

#include "mimic/fleet/plan.h"

namespace mimic::fleet {

struct ReportContext {
  std::string mimic_version;
  std::string date;              // UTC, ISO 8601
  std::string host;
  std::string manifest_sha256;   // of the manifest file as stored
};

std::string PlanJson(const ReportContext& context, const PlanResult& plan);
std::string PlanHtml(const ReportContext& context, const PlanResult& plan);

}  // namespace mimic::fleet
