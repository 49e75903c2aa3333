// mimic inspect TRACE [--kineto K] [--json]
#include <cstdio>
#include <map>
#include <set>

#include "cli.h"
#include "mimic/base/json_writer.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/workload.h"

namespace mimic::cli {
namespace {

struct InspectArgs {
  std::string trace;
  std::string kineto;
  bool json = false;
};

// The first step's replayable ops per thread (the step holds its ops on every thread).
std::map<int64_t, int64_t> StepOpsPerThread(const proto::Workload& w) {
  std::map<int64_t, int64_t> out;
  Result<const proto::Segment*> seg = eg::FindSegment(w, -1, "");
  if (!seg.ok() || !*seg) return out;
  const eg::OpTree tree(w);
  for (int i : eg::ReplayableOps(w, tree, tree.IndexOf((*seg)->op_id()), true))
    ++out[w.ops(i).thread()];
  return out;
}

// The device streams the linked kernels ran on.
int64_t KernelStreams(const proto::Workload& w) {
  std::set<std::pair<int64_t, int64_t>> streams;  // (device, stream)
  for (const proto::Op& op : w.ops())
    for (const proto::Kernel& k : op.kernels()) streams.emplace(k.device(), k.stream());
  return static_cast<int64_t>(streams.size());
}

std::string InspectJson(const proto::Workload& w, const eg::Summary& s) {
  JsonWriter j;
  j.BeginObject();
  j.Key("schema").String(w.provenance().schema());
  j.Key("kineto_only").Bool(eg::IsKinetoOnly(w));
  j.Key("pid").Int(w.provenance().pid());
  j.Key("ops").Int(s.ops);
  j.Key("ops_with_schema").Int(s.ops_with_schema);
  j.Key("replayable_ops").Int(s.replayable_ops);
  j.Key("tensors").Int(s.tensors);
  j.Key("storages").Int(s.storages);
  j.Key("iterations").Int(s.iterations);
  j.Key("labels").Int(s.labels);
  const eg::CollectiveTotals c = eg::CountCollectives(w);
  j.Key("collectives").BeginObject();
  j.Key("issued").Int(c.issued);
  j.Key("bytes").Int(c.bytes);
  j.Key("by_type").BeginObject();
  for (const auto& [type, n] : c.by_type) j.Key(type).BeginObject().Key("count").Int(n.count).Key("bytes").Int(n.bytes).EndObject();
  j.EndObject();
  j.Key("by_group").BeginObject();
  for (const auto& [group, n] : c.by_group) j.Key(group).BeginObject().Key("count").Int(n.count).Key("bytes").Int(n.bytes).EndObject();
  j.EndObject();
  j.EndObject();
  j.Key("threads").Int(s.threads);
  j.Key("per_thread").BeginArray();
  const std::map<int64_t, int64_t> in_step = StepOpsPerThread(w);
  for (const eg::Summary::Thread& t : s.per_thread) {
    j.BeginObject()
        .Key("tid")
        .Int(t.tid)
        .Key("ops")
        .Int(t.ops)
        .Key("replayable_ops")
        .Int(t.replayable_ops);
    j.Key("first_step_replayable_ops")
        .Int(in_step.count(t.tid) ? in_step.at(t.tid) : 0)
        .EndObject();
  }
  j.EndArray();
  j.Key("process_groups").BeginArray();
  for (const proto::ProcessGroup& g : w.provenance().process_groups()) {
    j.BeginObject().Key("name").String(g.name()).Key("desc").String(g.desc()).Key("backend").String(g.backend());
    j.Key("size").Int(g.size()).Key("ranks").BeginArray();
    for (int64_t r : g.ranks()) j.Int(r);
    j.EndArray().EndObject();
  }
  j.EndArray();
  j.Key("rank").Int(w.provenance().rank());
  j.Key("world_size").Int(w.provenance().world_size());
  j.Key("devices").BeginArray();
  for (const auto& d : w.provenance().devices()) j.String(d);
  j.EndArray();
  j.Key("warnings").BeginArray();
  for (const auto& m : w.provenance().warnings()) j.String(m);
  j.EndArray();
  if (w.kineto().present()) {
    const auto& k = w.kineto();
    j.Key("kineto").BeginObject();
    j.Key("link_method").String(k.link_method());
    j.Key("host_ops").Int(k.host_ops());
    j.Key("host_ops_linked").Int(k.host_ops_linked());
    j.Key("kernels").Int(k.kernels());
    j.Key("kernels_linked").Int(k.kernels_linked());
    j.Key("kernels_total").Int(k.kernels_total());
    j.Key("observer_probe_events").Int(k.observer_probe_events());
    j.Key("observer_probe_ms").Double(k.observer_probe_us() / 1000);
    j.Key("streams").Int(KernelStreams(w));
    j.EndObject();
  } else {
    j.Key("kineto").Null();
  }
  j.EndObject();
  return j.str();
}

void PrintText(const std::string& path, const proto::Workload& w, const eg::Summary& s) {
  std::printf("%s\n", path.c_str());
  if (eg::IsKinetoOnly(w))
    std::printf(
        "  schema          %s (pid %lld): a Kineto trace alone, no tensors recorded (inspect, "
        "predict and compare --no-replay read it; replay needs its execution trace)\n",
        w.provenance().schema().c_str(), static_cast<long long>(w.provenance().pid()));
  else
    std::printf("  schema          %s (pid %lld)\n", w.provenance().schema().c_str(),
                static_cast<long long>(w.provenance().pid()));
  // A Kineto trace alone is not replayable: its top-level operators are what predict prices.
  const char* top = eg::IsKinetoOnly(w) ? "top-level operators" : "replayable top-level";
  std::printf("  ops             %lld (%lld with a schema, %lld %s)\n",
              static_cast<long long>(s.ops), static_cast<long long>(s.ops_with_schema),
              static_cast<long long>(s.replayable_ops), top);
  if (eg::IsKinetoOnly(w))
    std::printf("  tensors         %lld argument shapes (Kineto records no tensor identity)\n",
                static_cast<long long>(s.tensors));
  else
    std::printf("  tensors         %lld views over %lld storages\n",
                static_cast<long long>(s.tensors), static_cast<long long>(s.storages));
  std::printf("  iterations      %lld   labels %lld   threads %lld\n",
              static_cast<long long>(s.iterations), static_cast<long long>(s.labels),
              static_cast<long long>(s.threads));
  const std::map<int64_t, int64_t> in_step = StepOpsPerThread(w);
  for (const eg::Summary::Thread& t : s.per_thread)
    std::printf("    thread %-6lld %lld ops, %lld %s, %lld in the first step\n",
                static_cast<long long>(t.tid), static_cast<long long>(t.ops),
                static_cast<long long>(t.replayable_ops), top,
                static_cast<long long>(in_step.count(t.tid) ? in_step.at(t.tid) : 0));
  std::printf("  collectives     %lld   process groups %d\n", static_cast<long long>(s.collectives),
              w.provenance().process_groups_size());
  for (const auto& [type, n] : eg::CountCollectives(w).by_type)
    std::printf("    %-14s %lld, %lld bytes\n", type.c_str(), static_cast<long long>(n.count),
                static_cast<long long>(n.bytes));
  for (const proto::ProcessGroup& g : w.provenance().process_groups())
    std::printf("    group %s (%s, %s): %lld ranks\n", g.name().c_str(), g.desc().c_str(), g.backend().c_str(),
                static_cast<long long>(g.size()));
  for (const auto& m : w.provenance().warnings()) std::printf("  warning         %s\n", m.c_str());
  if (w.kineto().present()) {
    const auto& k = w.kineto();
    std::printf(
        "  kineto          host ops linked %lld/%lld, kernels linked %lld/%lld (%lld in the trace; "
        "by %s) on %lld streams\n",
        static_cast<long long>(k.host_ops_linked()), static_cast<long long>(k.host_ops()),
        static_cast<long long>(k.kernels_linked()), static_cast<long long>(k.kernels()),
        static_cast<long long>(k.kernels_total()), k.link_method().c_str(),
        static_cast<long long>(KernelStreams(w)));
    if (k.observer_probe_events() > 0)
      std::printf(
          "  observer probes %lld device events, %.3f ms (the ET observer's integer ranges; "
          "on no op)\n",
          static_cast<long long>(k.observer_probe_events()), k.observer_probe_us() / 1000);
  }
}

}  // namespace

Runner AddInspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  app.add_option("trace", args->trace,
                 "Execution trace (.json or .json.gz), Kineto trace alone, or .mimic workload")
      ->required();
  app.add_option("--kineto", args->kineto, "Kineto trace captured with it, to link");
  app.add_flag("--json", args->json, "Print JSON instead of text");
  return [args]() {
    Result<proto::Workload> w =
        eg::LoadWorkload(args->trace, {.kineto_path = args->kineto, .allow_kineto_only = true});
    if (!w.ok()) return Fail(w.status());
    const eg::Summary s = eg::Summarize(*w);
    if (args->json) {
      Status st = WriteOutput("-", InspectJson(*w, s));
      if (!st.ok()) return Fail(st);
    } else {
      PrintText(args->trace, *w, s);
    }
    return static_cast<int>(kExitOk);
  };
}

}  // namespace mimic::cli
