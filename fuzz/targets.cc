#include "targets.h"

#include "mimic/base/file.h"
#include "mimic/eg/capture_manifest.h"
#include "mimic/eg/host_timeline.h"
#include "mimic/eg/kineto.h"
#include "mimic/eg/value_profile.h"
#include "mimic/eg/workload.h"
#include "mimic/fleet/jobs.h"
#include "mimic/fleet/manifest.h"
#include "mimic/model/platform.h"
#include "mimic/model/predict.h"
#include "mimic/synth/bundle.h"
#include "mimic/synth/chakra.h"

namespace mimic::fuzz {
namespace {

// A small execution trace for Kineto inputs to link against.
constexpr std::string_view kEt =
    R"J({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "nodes": [)J"
    R"J({"id": 2, "name": "ProfilerStep#1", "ctrl_deps": 1, "attrs": [{"name": "rf_id", "type": "uint64", "value": 1}]},)J"
    R"J({"id": 3, "name": "aten::mm", "ctrl_deps": 2, "attrs": [{"name": "rf_id", "type": "uint64", "value": 2},)J"
    R"J({"name": "op_schema", "type": "string", "value": "aten::mm(Tensor self, Tensor mat2) -> Tensor"}]}]})J";

// Its Kineto trace: the step and the op, with their host spans.
constexpr std::string_view kKineto =
    R"J({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1,)J"
    R"J( "tid": 1, "ts": 0, "dur": 100, "args": {"Record function id": 1}},)J"
    R"J({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5,)J"
    R"J( "args": {"Record function id": 2}}]})J";

// `bytes` as the capture's host timeline of the linked pair above, its gaps then read.
void HostTimeline(std::string_view bytes) {
  static const Result<proto::Workload> linked =
      eg::LoadWorkloadFromMemory("fuzz_et.json", kEt, "fuzz_kineto.json", kKineto);
  if (!linked.ok()) return;
  proto::Workload w = linked.value();
  if (!eg::ApplyHostTimeline("fuzz_timeline.json", bytes, w).ok()) return;
  eg::RecordedHostGaps gaps(w, 0, {.boundary_us = 1, .timeline_boundary_us = 0.5});
  for (const proto::Op& op : w.ops())
    if (op.has_cpu_span()) (void)gaps.Before(op);
}

}  // namespace

void ExecutionTrace(std::string_view bytes) {
  auto w = eg::LoadWorkloadFromMemory("fuzz.json", bytes, "", "");
  if (w.ok()) (void)eg::Summarize(*w);
}

// Linked to an execution trace, alone (the arguments kept, then the workload built), and as a
// host timeline.
void Kineto(std::string_view bytes) {
  (void)eg::LoadWorkloadFromMemory("fuzz_et.json", kEt, "fuzz_kineto.json", bytes);
  auto in = InputStream::FromMemory("fuzz_kineto.json", bytes);
  auto trace = eg::ParseKinetoTrace("fuzz_kineto.json", *in, {.inputs = true});
  if (trace.ok()) (void)eg::BuildKinetoWorkload("fuzz_kineto.json", std::move(*trace));
  HostTimeline(bytes);
}

// Inputs are tried as they are and framed with a valid header, so that the fuzzer reaches the
// protobuf parse and the index validation behind the checksum.
// Also the bundle reader, which frames a workload the same way and checks it the same way.
void Workload(std::string_view bytes) {
  (void)eg::ParseWorkloadFile("fuzz.mimic", bytes);
  (void)synth::ParseBundle("fuzz.bundle", "MIMICBN\n" + Sha256Hex(bytes) + "\n" + std::string(bytes));
  const std::string framed = "MIMICWL\n" + Sha256Hex(bytes) + "\n" + std::string(bytes);
  auto w = eg::ParseWorkloadFile("fuzz.mimic", framed);
  if (!w.ok()) return;
  const eg::OpTree tree(*w);
  (void)eg::ReplayableOps(*w, tree, -1, true);
  (void)eg::Summarize(*w);
}

// The capture's files beside its trace: the manifest, and the same bytes as a value profile
// placed on the small execution trace above.
void Manifest(std::string_view bytes) {
  (void)eg::ParseCaptureManifest("fuzz_manifest.json", bytes);
  static const Result<proto::Workload> et = eg::LoadWorkloadFromMemory("fuzz_et.json", kEt, "", "");
  if (!et.ok()) return;
  proto::Workload w = et.value();
  if (eg::ApplyValueProfile("fuzz_values.json", bytes, w).ok()) (void)eg::DescribeValueProfile(w);
}

// A trace that parses is summarized and written back, as import-chakra and a re-export would.
void Chakra(std::string_view bytes) {
  auto trace = synth::ParseChakra("fuzz.et", bytes);
  if (!trace.ok()) return;
  (void)synth::SummarizeChakra(*trace);
  (void)synth::SerializeChakra(*trace);
}

// A platform that parses and passes its checks prices a small workload and prints back.
void Platform(std::string_view bytes) {
  auto platform = model::ParsePlatform("fuzz_platform.json", bytes);
  if (!platform.ok()) return;
  (void)model::PlatformToJson(*platform);
  static const proto::Workload* w = [] {
    auto loaded = eg::LoadWorkloadFromMemory("fuzz_et.json", kEt, "", "");
    return new proto::Workload(loaded.ok() ? *loaded : proto::Workload());
  }();
  (void)model::Predict(*w, *platform);
}

// Relative paths resolve against a folder that does not exist, so that nothing is read.
void FleetManifest(std::string_view bytes) { (void)fleet::ParseManifest("fuzz_fleet.json", bytes, "/nonexistent"); }

// A job log of two classes, mapped by vc and user as well as by a class column.
void JobLog(std::string_view bytes) {
  proto::FleetManifest m;
  m.add_classes()->set_name("a");
  m.add_classes()->set_name("b");
  proto::JobLog& log = *m.mutable_arrivals()->mutable_job_log();
  (*log.mutable_class_by_vc())["vc1"] = "a";
  (*log.mutable_class_by_user())["u1"] = "b";
  auto jobs = fleet::ParseJobLog(m, "fuzz_log.csv", bytes);
  if (!jobs.ok()) {
    log.set_default_class("b");
    (void)fleet::ParseJobLog(m, "fuzz_log.csv", bytes);
  }
}

Target Find(const std::string& name) {
  if (name == "execution_trace") return ExecutionTrace;
  if (name == "kineto") return Kineto;
  if (name == "workload") return Workload;
  if (name == "manifest") return Manifest;
  if (name == "chakra") return Chakra;
  if (name == "platform") return Platform;
  if (name == "fleet_manifest") return FleetManifest;
  if (name == "job_log") return JobLog;
  return nullptr;
}

}  // namespace mimic::fuzz
