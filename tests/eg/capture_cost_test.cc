// What the capture's instrumentation cost the original's host (eg::CaptureCost): the cost at
// each span boundary that the recorded host gaps are taken off by.
#include <string>
#include <utility>

#include "mimic/eg/capture_manifest.h"
#include "mimic/eg/execution_trace.h"
#include "mimic/eg/workload.h"
#include "proto/platform.pb.h"
#include "testing.h"

namespace mimic::eg {
namespace {

// Every tensor among an op's inputs is priced, those inside lists too (a foreach op's, a cat's),
// undefined ones as well: the observer records each. Every other value (a scalar, None, an item
// of a list of ints) has a price of its own.
TEST(CaptureCost, PricesEveryInputTensorAndValueListsIncluded) {
  const std::string json = R"json({"schema": "1.1.1-chakra.0.0.4", "nodes": [
    {"id": 1, "name": "[pytorch|profiler|execution_trace|process]", "ctrl_deps": 0},
    {"id": 2, "name": "aten::_foreach_addcdiv_", "ctrl_deps": 1,
     "inputs": {"values": [[[3, 4, 0, 4, 4, "cpu"], [5, 6, 0, 4, 4, "cpu"]], [[7, 8, 0, 4, 4, "cpu"]],
                           [0, 0, 0, 0, 0, ""], 0.5, [2, 3], "<None>"],
                "shapes": [[[4], [4]], [[4]], [], [], [[], []], []],
                "types": ["GenericList[Tensor(float),Tensor(float)]", "GenericList[Tensor(float)]",
                          "Tensor(nullptr (uninitialized))", "Double", "GenericList[Int,Int]",
                          "None"]}}]})json";
  auto w = ParseExecutionTrace("inline.json", json);
  ASSERT_THAT(w, IsOk());
  ASSERT_EQ(w->ops_size(), 2);
  const CaptureCost per_tensor{0, 1};
  EXPECT_DOUBLE_EQ(per_tensor.BeforeStart(w->ops(1), *w, 0), 4);
  EXPECT_DOUBLE_EQ(per_tensor.BeforeStart(w->ops(0), *w, 0), 0);
  EXPECT_EQ(InputTensorCount(w->ops(1)), 4);
  EXPECT_EQ(InputValueCount(w->ops(1)), 4);  // 0.5, 2, 3 and None
  CaptureCost per_value;
  per_value.input_value_us = 0.25;
  EXPECT_DOUBLE_EQ(per_value.BeforeStart(w->ops(1), *w, 0), 1);
  per_value.input_tensor_us = 1;
  EXPECT_DOUBLE_EQ(per_value.BeforeStart(w->ops(1), *w, 0), 5);
  EXPECT_EQ(per_value.Describe(),
            "0.000 us per event boundary, 1.000 us per input tensor, 0.250 us per other input "
            "value");
}

// Two ops 20 us apart: the first one's end and the second one's start are the boundaries in
// the gap; the second op brings two input tensors (one in a list), one of them an input whose
// range the capture computed (10^6 elements), and 1 MiB of saved integer data.
proto::Workload TwoSpans() {
  proto::Workload w;
  proto::Tensor& t = *w.add_tensors();
  t.set_numel(1000000);
  t.set_itemsize(8);
  t.set_has_range(true);
  w.add_tensors()->set_numel(7);  // an input without a range
  for (auto [id, start] : {std::pair{1, 0.0}, std::pair{2, 30.0}}) {
    proto::Op& op = *w.add_ops();
    op.set_id(id);
    op.set_has_cpu_span(true);
    op.set_cpu_start_us(start);
    op.set_cpu_duration_us(10);
  }
  proto::Op& second = *w.mutable_ops(1);
  second.add_inputs()->set_tensor(0);
  second.add_inputs()->mutable_list()->add_items()->set_tensor(1);
  proto::IntegerData& d = *w.add_integer_data();
  d.set_op_id(2);
  d.set_data(std::string(1 << 20, '\0'));
  return w;
}

TEST(CaptureCost, BoundariesCarryTheInputsRangesAndSavedDataOfTheOpStartingThere) {
  const proto::Workload w = TwoSpans();
  const CaptureCost cost{1, 0.5, 2, 3};
  EXPECT_DOUBLE_EQ(cost.BeforeStart(w.ops(1), w, 1 << 20), 2 * 0.5 + 2 * 1 + 3 * 1);
  EXPECT_DOUBLE_EQ(cost.BeforeStart(w.ops(0), w, 0), 0);
  const SpanBoundaries b(w, cost);  // 0 (1), 10 (1), 30 (1 + 6), 40 (1)
  EXPECT_EQ(b.Count(10, 30), 2);
  EXPECT_DOUBLE_EQ(b.CostUs(10, 30), 1 + 1 + 6);
  EXPECT_DOUBLE_EQ(b.CostUs(0, 40), 1 + 1 + 1 + 6 + 1);
  EXPECT_DOUBLE_EQ(b.CostUs(11, 29), 0);
  RecordedHostGaps gaps(w, -1, cost);
  EXPECT_DOUBLE_EQ(gaps.Before(w.ops(0)), 0);
  EXPECT_DOUBLE_EQ(gaps.Before(w.ops(1)), 20 - 8);
  // Per boundary alone, as before the per-op figures existed.
  RecordedHostGaps plain(w, -1, {1});
  plain.Before(w.ops(0));
  EXPECT_DOUBLE_EQ(plain.Before(w.ops(1)), 20 - 2);
  EXPECT_TRUE(CaptureRecordedIntegerInputs(w));  // 10^6 elements ranged
  EXPECT_FALSE(CaptureRecordedIntegerInputs(proto::Workload()));
  proto::Workload small = w;
  small.mutable_tensors(0)->set_numel(99999);
  EXPECT_TRUE(CaptureRecordedIntegerInputs(small));  // still 1 MiB saved
  small.clear_integer_data();
  EXPECT_FALSE(CaptureRecordedIntegerInputs(small));
  // The ranged input broadcast along a row (a zero stride) takes the broadcast figure instead.
  proto::Workload broadcast = w;
  proto::Tensor& t = *broadcast.mutable_tensors(0);
  t.add_shape(1000), t.add_shape(1000), t.add_strides(1), t.add_strides(0);
  const CaptureCost strided{1, 0.5, 2, 3, 7};
  EXPECT_DOUBLE_EQ(strided.BeforeStart(broadcast.ops(1), broadcast, 0), 2 * 0.5 + 7 * 1);
  EXPECT_DOUBLE_EQ(strided.BeforeStart(w.ops(1), w, 0), 2 * 0.5 + 2 * 1);
  // Ranging an input costs per tensor too, however few its elements: one of the two is ranged.
  CaptureCost per_ranged = strided;
  per_ranged.range_tensor_us = 4;
  EXPECT_DOUBLE_EQ(per_ranged.BeforeStart(w.ops(1), w, 0), 2 * 0.5 + 4 + 2 * 1);
  EXPECT_EQ(cost.Describe(),
            "1.000 us per event boundary, 0.500 us per input tensor, 2.000 us per million "
            "integer elements ranged, 3.000 us per MiB of integer inputs saved");
}

// Every figure has one row in kCaptureFigures, and every copy of the figures (the capture's own,
// a platform's) has a field for each row and no figure without one: a figure added to one place
// and not the others fails here.
TEST(CaptureCost, OneTableNamesEveryFigureInEveryMessage) {
  CaptureCost cost;
  double x = 1;
  for (const CaptureFigure& figure : kCaptureFigures) cost.*figure.member = x++;
  proto::CaptureCostFigures figures;
  SetCaptureCostInMessage(cost, &CaptureFigure::figures_field, figures);
  proto::CpuOverheads platform;
  SetCaptureCostInMessage(cost, &CaptureFigure::platform_field, platform);
  for (const CaptureCost& back : {CaptureCostFromFigures(figures),
                                  CaptureCostFromMessage(platform, &CaptureFigure::platform_field)})
    for (const CaptureFigure& figure : kCaptureFigures)
      EXPECT_EQ(back.*figure.member, cost.*figure.member) << figure.platform_field;
  const auto* d = proto::CaptureCostFigures::descriptor();
  int doubles = 0;
  for (int i = 0; i < d->field_count(); ++i)
    doubles += d->field(i)->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE;
  EXPECT_EQ(doubles, static_cast<int>(kCaptureFigures.size()));
  const auto* o = proto::CpuOverheads::descriptor();
  int capture = 0;
  for (int i = 0; i < o->field_count(); ++i)
    capture += o->field(i)->name().rfind("capture_", 0) == 0;
  EXPECT_EQ(capture, static_cast<int>(kCaptureFigures.size()));
  EXPECT_EQ(cost.Describe().substr(0, 27), "1.000 us per event boundary");
}

// A gap the capture's cost would more than fill is no gap.
TEST(CaptureCost, NeverMakesAGapNegative) {
  const proto::Workload w = TwoSpans();
  RecordedHostGaps gaps(w, -1, {1, 100, 0, 0});  // 2 x 100 us for a 20 us gap
  gaps.Before(w.ops(0));
  EXPECT_DOUBLE_EQ(gaps.Before(w.ops(1)), 0);
}

// A manifest sample with the capture's own figures (scripts/capture_fleet_samples.py measures
// them right after the profiled steps).
std::string ManifestWith(const std::string& capture_cost) {
  return R"({"samples": [{"name": "m", "et": "m.et.json.gz", "iteration_ms": [2.0],
                           "capture_cost": )" +
         capture_cost + "}]}";
}

// The gaps were recorded where and when the capture ran: its own figures are taken off them,
// not the replaying host's.
TEST(CaptureCost, TheCapturesOwnFiguresComeBeforeTheHosts) {
  auto m = ParseCaptureManifest(
      "manifest.json",
      ManifestWith(R"({"boundary_us": 2.5, "input_tensor_us": 0.75, "range_us_per_melem": 2,
                       "range_strided_us_per_melem": 4, "saved_us_per_mb": 3, "input_value_us": 0.2,
                       "range_tensor_us": 2.25,
                       "source": "right after the profiled steps"})"));
  ASSERT_THAT(m, IsOk());
  proto::Workload w = TwoSpans();
  const CaptureCost host{1, 0.5};
  EXPECT_DOUBLE_EQ(CaptureCostFor(w, host).boundary_us, 1);  // no figures of its own yet
  ApplyCaptureSample(m->samples[0], "manifest.json", w);
  const CaptureCost own = CaptureCostFor(w, host);
  EXPECT_DOUBLE_EQ(own.boundary_us, 2.5);
  EXPECT_DOUBLE_EQ(own.input_tensor_us, 0.75);
  EXPECT_DOUBLE_EQ(own.range_us_per_melem, 2);
  EXPECT_DOUBLE_EQ(own.range_strided_us_per_melem, 4);
  EXPECT_DOUBLE_EQ(own.saved_us_per_mb, 3);
  EXPECT_DOUBLE_EQ(own.input_value_us, 0.2);
  EXPECT_DOUBLE_EQ(own.range_tensor_us, 2.25);
  EXPECT_EQ(w.original().capture_cost().source(), "right after the profiled steps");
  // The gap between the two ops (20 us) loses two boundaries and the second op's two tensors,
  // its ranged input and that input's 10^6 elements, and 1 MiB saved, at the capture's figures.
  RecordedHostGaps gaps(w, -1, CaptureCostFor(w, host));
  gaps.Before(w.ops(0));
  EXPECT_DOUBLE_EQ(gaps.Before(w.ops(1)), 20 - (2 * 2.5 + 2 * 0.75 + 2.25 + 2 + 3));
}

TEST(CaptureCost, AManifestsFiguresAreChecked) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"input_tensor_us": 1})", "samples[0].capture_cost.boundary_us"},
      {R"({"boundary_us": 1, "saved_us_per_mb": -2})", "samples[0].capture_cost.saved_us_per_mb"},
      {R"({"boundary_us": 1, "input_tensor_us": "fast"})",
       "samples[0].capture_cost.input_tensor_us"}};
  for (const auto& [figures, named] : bad) {
    auto m = ParseCaptureManifest("manifest.json", ManifestWith(figures));
    ASSERT_FALSE(m.ok()) << figures;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(m.status().message(), ::testing::HasSubstr(named));
  }
}

// The steps timed right after the profiled ones come with the original run, and are checked
// like those before.
TEST(CaptureCost, TheStepsTimedAfterTheProfiledOnesComeWithTheOriginal) {
  auto m = ParseCaptureManifest(
      "manifest.json", R"({"samples": [{"name": "m", "et": "m.et.json.gz", "iteration_ms": [2.0],
                                         "iteration_ms_after": [3.0, 2.5]}]})");
  ASSERT_THAT(m, IsOk());
  proto::Workload w;
  ApplyCaptureSample(m->samples[0], "manifest.json", w);
  ASSERT_EQ(w.original().iteration_ms_after_size(), 2);
  EXPECT_DOUBLE_EQ(w.original().iteration_ms_after(1), 2.5);
  auto bad = ParseCaptureManifest(
      "manifest.json", R"({"samples": [{"name": "m", "et": "m.et.json.gz", "iteration_ms": [2.0],
                                         "iteration_ms_after": [0]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("samples[0].iteration_ms_after"));
}

}  // namespace
}  // namespace mimic::eg
