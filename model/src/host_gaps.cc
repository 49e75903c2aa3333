#include "mimic/model/host_gaps.h"

#include <cstdio>

#include "mimic/base/stats.h"

namespace mimic::model {

double IssuerT1(const proto::CpuOverheads& c, eg::Issuer issuer) {
  double t1 = 0;
  switch (issuer) {
    case eg::Issuer::kForward:
      t1 = c.t1_forward_us();
      break;
    case eg::Issuer::kBackward:
      t1 = c.t1_backward_us();
      break;
    case eg::Issuer::kOptimizer:
      t1 = c.t1_optimizer_us();
      break;
  }
  return t1 > 0 ? t1 : c.t1_us();
}

eg::CaptureCost CaptureCostOf(const proto::CpuOverheads& c) {
  return eg::CaptureCostFromMessage(c, &eg::CaptureFigure::platform_field);
}

void SetCaptureCost(const eg::CaptureCost& cost, proto::CpuOverheads& c) {
  eg::SetCaptureCostInMessage(cost, &eg::CaptureFigure::platform_field, c);
}

bool HasIssuerT1(const proto::CpuOverheads& c) {
  return c.t1_forward_us() > 0 || c.t1_backward_us() > 0 || c.t1_optimizer_us() > 0;
}

namespace {

void SetIssuerT1(proto::CpuOverheads& c, eg::Issuer issuer, double us) {
  if (issuer == eg::Issuer::kForward) c.set_t1_forward_us(us);
  if (issuer == eg::Issuer::kBackward) c.set_t1_backward_us(us);
  if (issuer == eg::Issuer::kOptimizer) c.set_t1_optimizer_us(us);
}

}  // namespace

Result<std::string> MeasureIssuerT1(const std::vector<GapCapture>& captures, proto::Platform& p) {
  const eg::CaptureCost capture_cost = CaptureCostOf(p.cpu_overheads());
  if (capture_cost.boundary_us <= 0)
    return Status::InvalidInput(p.name() +
                                ": no cpu_overheads.capture_cost_us to take off the recorded "
                                "gaps (calibrate it first, or calibrate in full)");
  std::vector<double> pooled[eg::kIssuers];
  std::string on, skipped;
  for (const GapCapture& c : captures) {
    Result<eg::GapsByIssuer> g =
        eg::RecordedGapsByIssuer(*c.workload, eg::CaptureCostFor(*c.workload, capture_cost));
    if (!g.ok()) {
      skipped += (skipped.empty() ? "" : ", ") + c.name + " (" + g.status().message() + ")";
      continue;
    }
    on += (on.empty() ? "" : ", ") + c.name;
    for (int i = 0; i < eg::kIssuers; ++i)
      pooled[i].insert(pooled[i].end(), g->us[i].begin(), g->us[i].end());
  }
  if (on.empty())
    return Status::InvalidInput(
        "no --workload capture has a Kineto trace linked to measure host gaps on" +
        (skipped.empty() ? std::string() : ": " + skipped));
  std::string figures;
  for (int i = 0; i < eg::kIssuers; ++i) {
    const auto issuer = static_cast<eg::Issuer>(i);
    const double us = pooled[i].empty() ? 0 : Median(pooled[i]);
    SetIssuerT1(*p.mutable_cpu_overheads(), issuer, us);
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%s %.2f us (%zu gaps)", figures.empty() ? "" : ", ",
                  eg::IssuerName(issuer), us, pooled[i].size());
    figures += buf;
  }
  std::string how =
      "t1_forward_us, t1_backward_us, t1_optimizer_us = the median recorded host gap before a "
      "top-level op of the first step by issuer (replay --host-gaps recorded's rule, " +
      capture_cost.Describe() + " taken off, or the capture's own figures where its manifest " +
      "recorded them), pooled over the Kineto-linked captures " + on + ": " + figures;
  if (!skipped.empty()) how += "; not measured on " + skipped;
  (*p.mutable_sources())[kIssuerT1Source] = how;
  return how;
}

}  // namespace mimic::model
