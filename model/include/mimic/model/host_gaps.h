// T1 without a Kineto trace: the platform's host time before a top-level op by what issued it
// (eg::Issuer), measured by `mimic calibrate --workload` on Kineto-linked captures with the rule
// replay --host-gaps recorded follows (eg::RecordedGapsByIssuer). One source for the model's T1
// and replay --host-gaps modelled (docs/model.md, docs/replay.md). Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/eg/workload.h"
#include "proto/platform.pb.h"
#include "proto/workload.pb.h"

namespace mimic::model {

// The sources key under which a platform says what its per-issuer T1s were measured on.
inline constexpr const char* kIssuerT1Source = "cpu_overheads.t1_by_issuer";

// cpu_overheads.t1_<issuer>_us where the platform has it, else the single t1_us.
double IssuerT1(const proto::CpuOverheads& c, eg::Issuer issuer);

// The capture's cost as the platform measured it (capture_cost_us and the per-record figures).
eg::CaptureCost CaptureCostOf(const proto::CpuOverheads& c);
// The reverse: `cost` into c's capture_* fields.
void SetCaptureCost(const eg::CaptureCost& cost, proto::CpuOverheads& c);

// True when any per-issuer T1 was measured.
bool HasIssuerT1(const proto::CpuOverheads& c);

// One Kineto-linked capture to measure on.
struct GapCapture {
  std::string name;  // for messages and the platform's sources
  const proto::Workload* workload = nullptr;
};

// Sets p.cpu_overheads().t1_<issuer>_us to the median of the captures' recorded host gaps before
// that issuer's top-level ops, pooled over the captures, with p's capture cost (CaptureCostOf)
// taken off; an issuer no capture has keeps 0. Says in sources[kIssuerT1Source] what it was
// measured on and returns that text. Captures without a Kineto trace are named there and skipped.
// Errors: InvalidInput when none has a Kineto trace or p has no capture_cost_us.
Result<std::string> MeasureIssuerT1(const std::vector<GapCapture>& captures, proto::Platform& p);

}  // namespace mimic::model
