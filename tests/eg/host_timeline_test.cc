#include "mimic/eg/host_timeline.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "mimic/eg/workload.h"

namespace mimic::eg {
namespace {

struct Span {
  std::string name;
  double start, duration;
};

// Iteration segments at `steps` (start, duration) holding ops with the host spans `ops`.
proto::Workload Steps(const std::vector<std::pair<double, double>>& steps,
                      const std::vector<Span>& ops) {
  proto::Workload w;
  w.mutable_kineto()->set_present(true);
  for (const auto& [start, duration] : steps) {
    proto::Segment& s = *w.add_segments();
    s.set_kind(proto::Segment::ITERATION), s.set_has_span(true);
    s.set_start_us(start), s.set_duration_us(duration);
  }
  int64_t id = 1;
  for (const Span& span : ops) {
    proto::Op& o = *w.add_ops();
    o.set_id(id++), o.set_name(span.name), o.set_schema(-1);
    o.set_has_cpu_span(true), o.set_cpu_start_us(span.start), o.set_cpu_duration_us(span.duration);
  }
  return w;
}

// One step [100, 200] on the Kineto clock of the linked trace, holding a forward op, an
// optimizer annotation with an op inside, and a last op; the capture's gaps between them are
// 20 us each.
proto::Workload OneStep() {
  return Steps({{100, 100}}, {{"ProfilerStep#4", 100, 100},
                              {"aten::mm", 120, 10},
                              {"Optimizer.step#SGD.step", 150, 30},
                              {"aten::add_", 155, 5},
                              {"aten::sum", 185, 5}});
}

std::string Event(const std::string& cat, const std::string& name, double ts, double dur) {
  return R"({"ph": "X", "cat": ")" + cat + R"(", "name": ")" + name +
         R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) + "}";
}

// A host timeline of three steps, of 40, 60 and 50 us: the 50-us one is the median. Each holds
// the step's ops 4 us apart; the 50-us step also an op the execution trace lacks.
std::string Timeline() {
  std::string events;
  auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",") + e; };
  for (const auto& [step, start, dur] :
       {std::tuple{"ProfilerStep#1", 1000.0, 40.0}, std::tuple{"ProfilerStep#2", 1100.0, 60.0},
        std::tuple{"ProfilerStep#3", 1200.0, 50.0}}) {
    add(Event("user_annotation", step, start, dur));
    add(Event("cpu_op", "aten::mm", start + 4, 10));
    if (dur == 50.0) add(Event("cpu_op", "aten::detach", start + 15, 1));
    add(Event("user_annotation", "Optimizer.step#SGD.step", start + 18, 12));
    add(Event("cpu_op", "aten::add_", start + 20, 5));
    add(Event("cpu_op", "aten::sum", start + 34, 5));
  }
  return R"({"traceEvents": [)" + events + "]}";
}

TEST(HostTimeline, PlacesTheMedianStepsSpansOnEachOpOfTheStep) {
  proto::Workload w = OneStep();
  ASSERT_TRUE(ApplyHostTimeline("t.json", Timeline(), w).ok());
  const proto::HostTimeline& t = w.original().host_timeline();
  EXPECT_EQ(t.source(), "t.json, ProfilerStep#3 (the median of 3 steps)");
  EXPECT_EQ(t.ops_matched(), 4);
  EXPECT_EQ(t.ops(), 4);  // the step's own op is not matched
  EXPECT_FALSE(w.ops(0).has_timeline_start_us());
  const double start[] = {104, 118, 120, 134}, duration[] = {10, 12, 5, 5};
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(w.ops(i + 1).timeline_start_us(), start[i]) << w.ops(i + 1).name();
    EXPECT_DOUBLE_EQ(w.ops(i + 1).timeline_duration_us(), duration[i]);
  }
}

TEST(HostTimeline, TheGapsAreReadFromTheTimelineLessItsOwnCost) {
  proto::Workload w = OneStep();
  const CaptureCost cost{.boundary_us = 1, .timeline_boundary_us = 0.5};
  auto gaps = [&] {
    RecordedHostGaps g(w, w.segments(0).start_us(), cost);
    return std::vector<double>{g.Before(w.ops(1)), g.Before(w.ops(3)), g.Before(w.ops(4))};
  };
  // The capture's trace: 20 us less 2 boundaries (the step's start and the op's), 25 less 3
  // (the annotation's start in the gap), 25 less 3 (its end).
  EXPECT_EQ(gaps(), (std::vector<double>{18, 22, 22}));
  ASSERT_TRUE(ApplyHostTimeline("t.json", Timeline(), w).ok());
  // The timeline: 4 us less 0.5 (the step is no span there); 6 less 1.5 (the detach the step
  // held is no op of the workload, so neither are its boundaries); 9 less 1.5.
  EXPECT_EQ(gaps(), (std::vector<double>{3.5, 4.5, 7.5}));
}

// Kineto costs the autograd engine's events about twice a forward op's (each node's
// evaluate_function span and the node's own, besides the ops they ran): the boundaries of the
// backward's ops on the timeline are taken off at timeline_backward_boundary_us, where it was
// measured, the forward's at timeline_boundary_us.
TEST(HostTimeline, TheBackwardsBoundariesAreTakenOffAtTheirOwnCost) {
  proto::Workload w =
      Steps({{100, 100}}, {{"ProfilerStep#4", 100, 100},
                           {"aten::mm", 110, 10},
                           {"autograd::engine::evaluate_function: MmBackward0", 130, 20},
                           {"aten::mm", 135, 10},
                           {"aten::sum", 170, 5}});
  w.mutable_ops(3)->set_parent(w.ops(2).id());  // the backward's mm, under its node
  // The same spans on the timeline, each op 10 us later.
  for (int i = 1; i < w.ops_size(); ++i) {
    proto::Op& o = *w.mutable_ops(i);
    o.set_timeline_start_us(o.cpu_start_us() + 10), o.set_timeline_duration_us(o.cpu_duration_us());
  }
  w.mutable_original()->mutable_host_timeline()->set_ops_matched(4);
  w.mutable_original()->mutable_host_timeline()->set_ops(4);
  ASSERT_TRUE(HostTimelineUsed(w));
  auto gaps = [&](double backward_us) {
    CaptureCost cost{.boundary_us = 1, .timeline_boundary_us = 0.5};
    cost.timeline_backward_boundary_us = backward_us;
    RecordedHostGaps g(w, 100, cost);
    std::vector<double> out;
    for (int i = 1; i < w.ops_size(); ++i)
      if (w.ops(i).parent() == 0) out.push_back(g.Before(w.ops(i)));
    return out;
  };
  // The first mm: 20 us from the step's start less its own start; the node: 10 less the mm's
  // end and the node's start (a backward boundary); the sum: 20 less the node's end (one too)
  // and its own start. The backward's mm lies inside the node's span, in no gap.
  EXPECT_EQ(gaps(0), (std::vector<double>{19.5, 9, 19}));  // unmeasured: the forward's cost
  EXPECT_EQ(gaps(2), (std::vector<double>{19.5, 7.5, 17.5}));
}

TEST(HostTimeline, AnOpTheTimelineDidNotMatchKeepsTheCapturesGaps) {
  proto::Workload w = OneStep();
  w.mutable_ops(1)->set_name("aten::addmm");  // not in the timeline: its gap, and the next's
  ASSERT_TRUE(ApplyHostTimeline("t.json", Timeline(), w).ok());
  EXPECT_EQ(w.original().host_timeline().ops_matched(), 3);
  EXPECT_EQ(w.original().host_timeline().source(),
            "t.json, ProfilerStep#3 (the median of 3 steps): not used, too few ops matched");
  for (const proto::Op& op : w.ops()) {  // 3 of 4 is under kHostTimelineMinMatched
    EXPECT_FALSE(op.has_timeline_start_us());
    EXPECT_EQ(op.timeline_duration_us(), 0);
  }
  RecordedHostGaps g(w, w.segments(0).start_us(), {.boundary_us = 1, .timeline_boundary_us = 0.5});
  // The trace's gaps, as without a timeline (the timeline's would be 3.5, 4.5 and 7.5).
  EXPECT_EQ((std::vector<double>{g.Before(w.ops(1)), g.Before(w.ops(3)), g.Before(w.ops(4))}),
            (std::vector<double>{18, 22, 22}));
}

// A host timeline of one step [0, `duration`] holding `ops`.
std::string TimelineOf(double duration, const std::vector<Span>& ops) {
  std::string events = Event("user_annotation", "ProfilerStep#1", 0, duration);
  for (const Span& span : ops)
    events += "," + Event("cpu_op", span.name, span.start, span.duration);
  return R"({"traceEvents": [)" + events + "]}";
}

std::vector<double> GapsOf(const proto::Workload& w, double step_start_us) {
  RecordedHostGaps gaps(w, step_start_us, {.boundary_us = 1});
  std::vector<double> out;
  for (const proto::Op& op : w.ops()) out.push_back(gaps.Before(op));
  return out;
}

TEST(HostTimeline, AnOpItDidNotMatchTakesItsGapAndTheNextOnesFromTheTrace) {
  std::vector<Span> traced, timeline;
  for (int i = 0; i < 10; ++i) {
    const std::string name = "aten::op" + std::to_string(i);
    traced.push_back({name, 100.0 * i + 50, 20});
    if (i != 4) timeline.push_back({name, 10.0 * i + 5, 2});  // 9 of 10: used
  }
  proto::Workload w = Steps({{0, 1000}}, traced);
  ASSERT_TRUE(ApplyHostTimeline("t.json", TimelineOf(100, timeline), w).ok());
  ASSERT_TRUE(HostTimelineUsed(w));
  EXPECT_EQ(DescribeHostTimeline(w, 0.25),
            "t.json, ProfilerStep#1 (the median of 1 steps), 9 of 10 ops matched; its gaps less "
            "0.250 us per event boundary");
  // From the step's start, then 8 us between timeline spans, but op4 and op5: 80 us on the
  // trace less its 2 boundaries.
  EXPECT_EQ(GapsOf(w, 0), (std::vector<double>{5, 8, 8, 8, 78, 78, 8, 8, 8, 8}));
}

TEST(HostTimeline, EachStepsFirstOpWaitsFromItsStart) {
  proto::Workload w = Steps(
      {{0, 1000}, {1000, 1000}},
      {{"aten::a", 100, 10}, {"aten::b", 300, 10}, {"aten::a", 1100, 10}, {"aten::b", 1300, 10}});
  ASSERT_TRUE(
      ApplyHostTimeline("t.json", TimelineOf(100, {{"aten::a", 3, 1}, {"aten::b", 10, 1}}), w)
          .ok());
  EXPECT_EQ(w.original().host_timeline().ops_matched(), 4);
  EXPECT_DOUBLE_EQ(w.ops(2).timeline_start_us(), 1003);
  EXPECT_EQ(GapsOf(w, 0), (std::vector<double>{3, 6, 3, 6}));
  // A selection that starts inside a step (replay --label): its first gap from the trace,
  // whose spans start on the same clock as the selection.
  EXPECT_EQ(GapsOf(w, 50), (std::vector<double>{49, 6, 3, 6}));
}

TEST(HostTimeline, ATraceWithoutStepsIsRefusedNamingIt) {
  proto::Workload w = OneStep();
  ASSERT_TRUE(ApplyHostTimeline("t.json", Timeline(), w).ok());  // then one without steps
  const Status s = ApplyHostTimeline(
      "dir/t.json", R"({"traceEvents": [)" + Event("cpu_op", "aten::mm", 1, 1) + "]}", w);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "dir/t.json: no ProfilerStep# span: not a host timeline");
  EXPECT_FALSE(w.original().has_host_timeline());
  for (const proto::Op& op : w.ops()) EXPECT_FALSE(op.has_timeline_start_us());
}

}  // namespace
}  // namespace mimic::eg
