#include "mimic/eg/host_timeline.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "mimic/base/file.h"
#include "mimic/eg/kineto.h"

namespace mimic::eg {
namespace {

// How far ahead in the step's spans an op's name is looked for: ops the execution trace holds
// and Kineto does not (or the other way round), and ties in start order across threads.
constexpr size_t kWindow = 32;

bool IsStep(std::string_view name) { return name.starts_with("ProfilerStep#"); }

bool IsHostSpan(const KinetoEvent& e) {
  return e.kind == KinetoEvent::Kind::kHostOp ||
         (e.kind == KinetoEvent::Kind::kAnnotation && e.category == "user_annotation");
}

// The "ProfilerStep#" span of median duration, and how many there are.
const KinetoEvent* MedianStep(const KinetoTrace& t, size_t* steps) {
  std::vector<const KinetoEvent*> all;
  for (const KinetoEvent& e : t.events)
    if (IsHostSpan(e) && IsStep(e.name)) all.push_back(&e);
  *steps = all.size();
  if (all.empty()) return nullptr;
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->dur < b->dur; });
  return all[(all.size() - 1) / 2];
}

// The host spans inside `step` (half open) but the step's own, in start order (the outer one
// first).
std::vector<const KinetoEvent*> StepSpans(const KinetoTrace& t, const KinetoEvent& step) {
  std::vector<const KinetoEvent*> out;
  for (const KinetoEvent& e : t.events)
    if (IsHostSpan(e) && !IsStep(e.name) && e.ts >= step.ts && e.ts < step.ts + step.dur)
      out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return a->ts != b->ts ? a->ts < b->ts : a->dur > b->dur;
  });
  return out;
}

// The workload's ops with a host span but the steps' own, in the same order.
std::vector<proto::Op*> SpannedOps(proto::Workload& w) {
  std::vector<proto::Op*> out;
  for (proto::Op& o : *w.mutable_ops())
    if (o.has_cpu_span() && !IsStep(o.name())) out.push_back(&o);
  std::stable_sort(out.begin(), out.end(), [](auto* a, auto* b) {
    return a->cpu_start_us() != b->cpu_start_us() ? a->cpu_start_us() < b->cpu_start_us()
                                                  : a->cpu_duration_us() > b->cpu_duration_us();
  });
  return out;
}

// Those of `ops` (SpannedOps) that start inside `s`, half open.
std::vector<proto::Op*> OpsIn(const std::vector<proto::Op*>& ops, const proto::Segment& s) {
  auto at = [&](double us) {
    return std::lower_bound(ops.begin(), ops.end(), us,
                            [](const proto::Op* o, double v) { return o->cpu_start_us() < v; });
  };
  return {at(s.start_us()), at(s.start_us() + s.duration_us())};
}

void ClearTimeline(proto::Workload& w) {
  for (proto::Op& o : *w.mutable_ops()) {
    o.clear_timeline_start_us();
    o.clear_timeline_duration_us();
  }
}

// Gives each op the next span of its name within kWindow of the last one matched, placed at
// `start_us` for the step's start; returns how many ops matched.
int64_t Match(const std::vector<proto::Op*>& ops, const std::vector<const KinetoEvent*>& spans,
              double step_ts, double start_us) {
  int64_t matched = 0;
  size_t next = 0;
  for (proto::Op* op : ops) {
    const size_t end = std::min(spans.size(), next + kWindow);
    for (size_t k = next; k < end; ++k) {
      if (spans[k]->name != op->name()) continue;
      op->set_timeline_start_us(start_us + (spans[k]->ts - step_ts));
      op->set_timeline_duration_us(spans[k]->dur);
      next = k + 1;
      ++matched;
      break;
    }
  }
  return matched;
}

Status Apply(const std::string& path, const KinetoTrace& t, proto::Workload& w) {
  ClearTimeline(w);
  w.mutable_original()->clear_host_timeline();
  size_t steps = 0;
  const KinetoEvent* step = MedianStep(t, &steps);
  if (!step) return Status::InvalidInput(path + ": no ProfilerStep# span: not a host timeline");
  const std::vector<const KinetoEvent*> spans = StepSpans(t, *step);
  const std::vector<proto::Op*> spanned = SpannedOps(w);
  int64_t matched = 0, ops = 0;
  for (const proto::Segment& s : w.segments()) {
    if (s.kind() != proto::Segment::ITERATION || !s.has_span()) continue;
    const std::vector<proto::Op*> in_step = OpsIn(spanned, s);
    ops += static_cast<int64_t>(in_step.size());
    matched += Match(in_step, spans, step->ts, s.start_us());
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

std::string DescribeHostTimeline(const proto::Workload& w) {
  const proto::HostTimeline& h = w.original().host_timeline();
  if (h.ops() == 0) return h.source();  // not read: the source says why
  return h.source() + ", " + std::to_string(h.ops_matched()) + " of " + std::to_string(h.ops()) +
         " ops matched";
}

}  // namespace mimic::eg
