// Kineto linking on the public paired traces, and refusal of a Kineto trace of another run.
#include "mimic/eg/kineto.h"

#include "mimic/base/file.h"
#include "mimic/eg/workload.h"
#include "testing.h"

namespace mimic::eg {
namespace {

struct Pair {
  const char* et;
  const char* kineto;
};

class KinetoPair : public ::testing::TestWithParam<Pair> {};

TEST_P(KinetoPair, EveryHostOpAndKernelInTheWindowIsLinked) {
  const std::string dir = mimic::testing::SharedTraces() + "/";
  MIMIC_SKIP_UNLESS_EXISTS(dir + GetParam().et);
  auto w = LoadWorkload(dir + GetParam().et, {.kineto_path = dir + GetParam().kineto});
  ASSERT_THAT(w, IsOk());
  const proto::KinetoSummary& k = w->kineto();
  EXPECT_TRUE(k.present());
  EXPECT_GT(k.host_ops(), 0);
  EXPECT_EQ(k.host_ops_linked(), k.host_ops());
  EXPECT_GT(k.kernels(), 0);
  EXPECT_EQ(k.kernels_linked(), k.kernels());
  // The kernels really sit on ops: count them there, with their streams and durations.
  int64_t attached = 0;
  for (const proto::Op& op : w->ops()) {
    for (const proto::Kernel& kernel : op.kernels()) {
      ++attached;
      EXPECT_FALSE(kernel.name().empty());
      EXPECT_GE(kernel.stream(), 0);
      EXPECT_GE(kernel.launch_us(), op.cpu_start_us());
      EXPECT_LE(kernel.launch_us(), op.cpu_start_us() + op.cpu_duration_us());
    }
  }
  EXPECT_EQ(attached, k.kernels_linked());
  EXPECT_EQ(w->provenance().sources_size(), 2);
}

INSTANTIATE_TEST_SUITE_P(
    Traces, KinetoPair,
    ::testing::Values(Pair{"param-linear/linear_et.json.gz", "param-linear/linear_kineto.json.gz"},
                      Pair{"hta-simple-add/simple_add_et.json.gz", "hta-simple-add/simple_add_kineto.json.gz"}));

TEST(Kineto, FleetSamplesLinkByRecordFunctionIdWithStepSpans) {
  const std::string dir = mimic::testing::SourceDir() + "/fleet_samples/";
  auto w = LoadWorkload(dir + "mlp.et.json.gz", {.kineto_path = dir + "mlp.kineto.json.gz"});
  ASSERT_THAT(w, IsOk());
  EXPECT_EQ(w->kineto().link_method(), "record_function_id");
  EXPECT_EQ(w->kineto().host_ops_linked(), w->kineto().host_ops());
  ASSERT_GE(w->segments_size(), 1);
  for (const proto::Segment& s : w->segments()) EXPECT_TRUE(s.has_span()) << s.name();
  EXPECT_EQ(w->original().iteration_ms_size(), w->segments_size());
}

// HTA's multi-stream trace: stream 24 waits on an event recorded on stream 20 (correlation
// 1385), and the host syncs on events and the context.
TEST(Kineto, CudaSyncRecordsKeepWhatWaitsForWhat) {
  const std::string path =
      testing::SharedTraces() + "/hta-event-sync/event_sync_multi_stream_kineto.json.gz";
  auto in = InputStream::Open(path);
  ASSERT_THAT(in, IsOk());
  auto t = ParseKinetoTrace(path, **in);
  ASSERT_THAT(t, IsOk());
  int stream_waits = 0, context_syncs = 0;
  for (const KinetoEvent& e : t->events) {
    if (e.kind != KinetoEvent::Kind::kSync) continue;
    if (e.sync_kind == "Stream Wait Event") {
      ++stream_waits;
      EXPECT_EQ(e.stream, 24);
      EXPECT_EQ(e.wait_on_stream, 20);
      EXPECT_EQ(e.wait_event_correlation, 1385);
    }
    context_syncs += e.sync_kind == "Context Sync";
  }
  EXPECT_EQ(stream_waits, 1);
  EXPECT_EQ(context_syncs, 1);
}

TEST(Kineto, TraceOfAnotherRunIsRefused) {
  const std::string dir = mimic::testing::SharedTraces() + "/";
  MIMIC_SKIP_UNLESS_EXISTS(dir + "param-linear/linear_kineto.json.gz");
  auto w = LoadWorkload(dir + "hta-simple-add/simple_add_et.json.gz",
                        {.kineto_path = dir + "param-linear/linear_kineto.json.gz"});
  EXPECT_THAT(w, StatusIs(StatusCode::kInvalidInput));
  EXPECT_NE(w.status().message().find("linear_kineto.json.gz"), std::string::npos);
  EXPECT_NE(w.status().message().find("another run"), std::string::npos);
}

// What the reader takes from an event whatever the order of its members: the first of a
// repeated key, integers written as doubles (truncated) or beyond int64, timestamps written as
// integers, fallbacks for absent or mistyped members, and events it does not keep.
TEST(Kineto, EventMembersInAnyOrder) {
  const std::string json = R"({"traceEvents": [
    {"args": {"stream": 7, "correlation": 12.9, "External id": 5, "External id": 6,
              "device": "zero"},
     "dur": 3, "ts": 10.5, "tid": 18446744073709551615, "pid": 2.5, "name": "k", "name": "x",
     "ph": "X", "cat": "kernel", "cat": "cpu_op"},
    {"cat": "cuda_sync", "ph": "X", "name": "s", "ts": 1, "dur": 1,
     "args": {"wait_on_cuda_event_record_corr_id": 4, "cuda_sync_kind": "Event Sync",
              "wait_on_stream": 3}},
    {"name": "[memory]", "cat": "cpu_instant_event", "ph": "i", "ts": 2,
     "args": {"Device Type": 1, "Total Allocated": 512}},
    {"cat": "kernel", "ph": "s", "name": "flow"},
    {"ph": "X", "name": "no category"},
    {"cat": "cpu_op", "ph": 1, "name": 5, "ts": "late", "args": [1]}
  ]})";
  auto t = ParseKinetoTrace("members.json", json);
  ASSERT_THAT(t, IsOk());
  ASSERT_EQ(t->events.size(), 3u);
  const KinetoEvent& k = t->events[0];
  EXPECT_EQ(k.kind, KinetoEvent::Kind::kDevice);
  EXPECT_EQ(k.category, "kernel");
  EXPECT_EQ(k.name, "k");
  EXPECT_EQ(k.pid, 2);
  EXPECT_EQ(k.tid, -1);  // 2^64 - 1 as an int64
  EXPECT_EQ(k.ts, 10.5);
  EXPECT_EQ(k.dur, 3);
  EXPECT_EQ(k.stream, 7);
  EXPECT_EQ(k.correlation, 12);
  EXPECT_EQ(k.external_id, 5);
  EXPECT_EQ(k.device, -1);  // not a number
  EXPECT_EQ(k.rf_id, -1);   // absent
  const KinetoEvent& s = t->events[1];
  EXPECT_EQ(s.kind, KinetoEvent::Kind::kSync);
  EXPECT_EQ(s.sync_kind, "Event Sync");
  EXPECT_EQ(s.wait_on_stream, 3);
  EXPECT_EQ(s.wait_event_correlation, 4);
  const KinetoEvent& odd = t->events[2];  // a ph that is not a string is not checked
  EXPECT_EQ(odd.kind, KinetoEvent::Kind::kHostOp);
  EXPECT_EQ(odd.name, "");
  EXPECT_EQ(odd.ts, 0);
  EXPECT_EQ(odd.correlation, -1);  // args not an object
  ASSERT_EQ(t->memory.size(), 1u);
  EXPECT_EQ(t->memory[0].ts, 2);
  EXPECT_EQ(t->memory[0].total_allocated, 512);
  EXPECT_EQ(t->memory[0].device_type, 1);
}

// With inputs, a host op keeps its recorded arguments as one minified array [types, dims,
// strides, concrete], null for the ones it lacks; without shapes recorded, or without the
// option, nothing is kept. Other events never keep any.
TEST(Kineto, HostOpArgumentsAreKeptAsText) {
  const std::string json = R"json({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1,
     "args": {"Input Dims": [[2, 3], [], []], "Call stack": "x.py(1)",
              "Input type": ["float", "Scalar", ""], "Concrete Inputs": ["", "1", ""]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": 2, "dur": 1,
     "args": {"External id": 3}},
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 3, "dur": 1,
     "args": {"Input Dims": [[1]], "Input type": ["float"]}}
  ]})json";
  auto in = InputStream::FromMemory("args.json", json);
  auto t = ParseKinetoTrace("args.json", *in, {.inputs = true});
  ASSERT_THAT(t, IsOk());
  ASSERT_EQ(t->events.size(), 3u);
  EXPECT_EQ(t->events[0].inputs_json, R"([["float","Scalar",""],[[2,3],[],[]],null,["","1",""]])");
  EXPECT_EQ(t->events[1].inputs_json, "");
  EXPECT_EQ(t->events[2].inputs_json, "");
  auto plain = ParseKinetoTrace("args.json", json);
  ASSERT_THAT(plain, IsOk());
  EXPECT_EQ(plain->events[0].inputs_json, "");
}

}  // namespace
}  // namespace mimic::eg
