#include "mimic/eg/host_timeline.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "kineto_internal.h"
#include "mimic/base/file.h"
#include "mimic/eg/kineto.h"

namespace mimic::eg {
namespace {

bool IsStep(std::string_view name) { return name.starts_with("ProfilerStep#"); }

// The "ProfilerStep#" span of median duration, and how many there are.
const KinetoEvent* MedianStep(const KinetoTrace& t, size_t* steps) {
  std::vector<const KinetoEvent*> all;
  for (const KinetoEvent& e : t.events)
    if (kineto::IsHostSpan(e) && IsStep(e.name)) all.push_back(&e);
  *steps = all.size();
  if (all.empty()) return nullptr;
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->dur < b->dur; });
  return all[(all.size() - 1) / 2];
}

// The host spans inside `step` (half open) but the step's own, parents first.
std::vector<const KinetoEvent*> StepSpans(const KinetoTrace& t, const KinetoEvent& step) {
  std::vector<const KinetoEvent*> out;
  for (const KinetoEvent& e : t.events)
    if (kineto::IsHostSpan(e) && !IsStep(e.name) && e.ts >= step.ts && e.ts < step.ts + step.dur)
      out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), kineto::OuterFirst);
  return out;
}

// The indexes of the workload's ops with a host span but the steps' own, parents first.
std::vector<int> SpannedOps(const proto::Workload& w) {
  std::vector<int> out;
  for (int i = 0; i < w.ops_size(); ++i)
    if (w.ops(i).has_cpu_span() && !IsStep(w.ops(i).name())) out.push_back(i);
  std::stable_sort(out.begin(), out.end(), [&w](int a, int b) {
    const proto::Op &x = w.ops(a), &y = w.ops(b);
    return x.cpu_start_us() != y.cpu_start_us() ? x.cpu_start_us() < y.cpu_start_us()
                                                : x.cpu_duration_us() > y.cpu_duration_us();
  });
  return out;
}

// Those of `ops` (SpannedOps) that start inside `s`, half open.
std::vector<int> OpsIn(const proto::Workload& w, const std::vector<int>& ops,
                       const proto::Segment& s) {
  auto at = [&](double us) {
    return std::lower_bound(ops.begin(), ops.end(), us,
                            [&w](int i, double v) { return w.ops(i).cpu_start_us() < v; });
  };
  return {at(s.start_us()), at(s.start_us() + s.duration_us())};
}

// Gives the ops `in_step` that the step's `spans` match (kineto::AlignFrom) their span there,
// placed at `start_us` for the step's start `step_ts`; returns how many matched.
int64_t Place(proto::Workload& w, const std::vector<int>& in_step,
              const std::vector<const KinetoEvent*>& spans, double step_ts, double start_us) {
  std::vector<std::pair<int, const KinetoEvent*>> pairs;
  kineto::AlignFrom(w, in_step, spans, 0, in_step.size(), &pairs);
  for (const auto& [i, span] : pairs) {
    w.mutable_ops(i)->set_timeline_start_us(start_us + (span->ts - step_ts));
    w.mutable_ops(i)->set_timeline_duration_us(span->dur);
  }
  return static_cast<int64_t>(pairs.size());
}

void ClearTimeline(proto::Workload& w) {
  for (proto::Op& o : *w.mutable_ops()) {
    o.clear_timeline_start_us();
    o.clear_timeline_duration_us();
  }
}

Status Apply(const std::string& path, const KinetoTrace& t, proto::Workload& w) {
  ClearTimeline(w);
  w.mutable_original()->clear_host_timeline();
  size_t steps = 0;
  const KinetoEvent* step = MedianStep(t, &steps);
  if (!step) return Status::InvalidInput(path + ": no ProfilerStep# span: not a host timeline");
  const std::vector<const KinetoEvent*> spans = StepSpans(t, *step);
  const std::vector<int> spanned = SpannedOps(w);
  int64_t matched = 0, ops = 0;
  for (const proto::Segment& s : w.segments()) {
    if (s.kind() != proto::Segment::ITERATION || !s.has_span()) continue;
    const std::vector<int> in_step = OpsIn(w, spanned, s);
    ops += static_cast<int64_t>(in_step.size());
    matched += Place(w, in_step, spans, step->ts, s.start_us());
  }
  if (ops == 0)
    return Status::InvalidInput(path + ": the workload has no step with host spans to place it on");
  proto::HostTimeline& h = *w.mutable_original()->mutable_host_timeline();
  h.set_ops_matched(matched);
  h.set_ops(ops);
  h.set_source(path.substr(path.find_last_of('/') + 1) + ", " + step->name + " (the median of " +
               std::to_string(steps) + " steps)");
  if (!HostTimelineUsed(w)) {
    ClearTimeline(w);
    h.set_source(h.source() + ": not used, too few ops matched");
  }
  return Status::Ok();
}

}  // namespace

Status ApplyHostTimeline(const std::string& path, std::string_view json, proto::Workload& w) {
  MIMIC_ASSIGN_OR_RETURN(const KinetoTrace t, ParseKinetoTrace(path, json));
  return Apply(path, t, w);
}

Status ApplyHostTimeline(const std::string& path, proto::Workload& w) {
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<InputStream> in, InputStream::Open(path));
  MIMIC_ASSIGN_OR_RETURN(const KinetoTrace t, ParseKinetoTrace(path, *in));
  return Apply(path, t, w);
}

std::string DescribeHostTimeline(const proto::Workload& w, double boundary_us) {
  const proto::HostTimeline& h = w.original().host_timeline();
  if (h.ops() == 0) return h.source();  // not read: the source says why
  std::string out = h.source() + ", " + std::to_string(h.ops_matched()) + " of " +
                    std::to_string(h.ops()) + " ops matched";
  if (!HostTimelineUsed(w)) return out;
  char us[32];
  std::snprintf(us, sizeof(us), "%.3f", boundary_us);
  return out + "; its gaps less " + us + " us per event boundary";
}

}  // namespace mimic::eg
