#include "mimic/replay/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <tuple>

#include "mimic/base/clock.h"
#include "mimic/base/host.h"
#include "mimic/base/json_writer.h"
#include "mimic/base/stats.h"
#include "mimic/eg/collective.h"
#include "mimic/eg/host_timeline.h"
#include "mimic/eg/value_profile.h"

namespace mimic::replay {
namespace {

// Whether the recorded host gaps alone take longer than the original's whole unprofiled step:
// then they hold the capture's own cost (an execution-trace record serialized, integer inputs
// written), which the unprofiled step never paid.
bool GapsExceedOriginalStep(const ReplayResult& r, const proto::Workload& w) {
  const std::optional<double> original = OriginalMedianMs(w);
  return r.host_gaps.mode == HostGaps::kRecorded && original && r.host_gaps.ms > *original;
}

std::optional<double> Ratio(const std::vector<double>& replay, std::optional<double> original) {
  if (replay.empty() || !original || *original <= 0) return std::nullopt;
  return Median(replay) / *original;
}

// nccl-tests' view of the collectives: one row per (type, size, dtype, group), with the median
// time of its calls, algbw = S / t and busbw = algbw x the type's factor.
struct CommRow {
  std::string type;
  std::string dtype;
  std::string group;
  int64_t group_size = 0;
  int64_t bytes = 0;
  int64_t elements = 0;
  int64_t calls = 0;  // per iteration
  std::vector<double> replay_us;
  std::vector<double> original_us;
  double time_us() const { return replay_us.empty() ? -1 : Median(replay_us); }
  double algbw() const { return time_us() > 0 ? bytes / time_us() / 1e3 : -1; }  // GB/s
  double busbw(proto::Collective::Type t) const {
    return algbw() >= 0 ? algbw() * eg::BusBandwidthFactor(t, group_size) : -1;
  }
  proto::Collective::Type type_enum = proto::Collective::TYPE_UNKNOWN;
};

std::vector<CommRow> CommRows(const CommResult& comm) {
  std::map<std::tuple<std::string, int64_t, int, std::string>, CommRow> rows;
  for (const CollectiveRun& run : comm.collectives) {
    const proto::Collective& c = run.collective;
    CommRow& row = rows[{eg::CollectiveTypeName(c.type()), eg::CollectiveBytes(c), c.dtype(), c.process_group()}];
    row.type = eg::CollectiveTypeName(c.type());
    row.type_enum = c.type();
    row.dtype = proto::DType_Name(c.dtype());
    row.group = c.process_group();
    row.group_size = c.group_size();
    row.bytes = eg::CollectiveBytes(c);
    row.elements = std::max(c.in_elems(), c.out_elems());
    ++row.calls;
    row.replay_us.insert(row.replay_us.end(), run.replay_us.begin(), run.replay_us.end());
    if (c.original_us() >= 0) row.original_us.push_back(c.original_us());
  }
  std::vector<CommRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

// Per iteration: each row's median time x its calls, summed (-1 when a row has no sample).
struct CommTotals {
  double time_us = 0;
  double original_us = 0;
  int64_t bytes = 0;
};
CommTotals Totals(const std::vector<CommRow>& rows) {
  CommTotals t;
  for (const CommRow& row : rows) {
    t.bytes += row.bytes * row.calls;
    if (t.time_us >= 0) t.time_us = row.time_us() >= 0 ? t.time_us + row.time_us() * row.calls : -1;
    if (t.original_us >= 0)
      t.original_us = row.original_us.empty() ? -1 : t.original_us + Median(row.original_us) * row.calls;
  }
  if (rows.empty()) t.time_us = t.original_us = -1;
  return t;
}

void WriteTotals(JsonWriter& j, const eg::CollectiveTotals& t) {
  j.Key("issued").Int(t.issued);
  j.Key("bytes").Int(t.bytes);
  j.Key("by_type").BeginObject();
  for (const auto& [type, n] : t.by_type) j.Key(type).BeginObject().Key("count").Int(n.count).Key("bytes").Int(n.bytes).EndObject();
  j.EndObject();
}

std::optional<double> NonNegative(double v) { return v >= 0 ? std::optional<double>(v) : std::nullopt; }

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// The executor's side of a replay: its lanes, device figures and profile.
// The most the replay's allocator held during a measured iteration above what it held when
// the first one began.
int64_t StepPeakBytes(const ReplayResult& r) {
  return std::max<int64_t>(0, r.memory.peak_allocated_bytes - r.allocated_at_start_bytes);
}

// Why the replay's time cannot be set against the original's as if comparable: a compute- or
// comm-only replay, or an original measured on another CPU model, with other intra-op threads or
// another torch. Empty when comparable.
std::vector<std::string> NotComparable(const proto::Workload& w, const ReportContext& c,
                                       const ReplayResult& r) {
  std::vector<std::string> why;
  if (r.mode != ReplayMode::kFull)
    why.push_back(std::string("a ") + ReplayModeName(r.mode) + "-only replay");
  const proto::OriginalRun& o = w.original();
  if (!o.host().empty() && o.host() != c.cpu)
    why.push_back("the original ran on " + o.host() + ", this replay on " + c.cpu);
  if (o.num_threads() > 0 && o.num_threads() != r.num_threads)
    why.push_back("the original used " + std::to_string(o.num_threads()) +
                  " intra-op threads, this replay " + std::to_string(r.num_threads));
  const std::string& torch = w.provenance().torch_version();
  if (!torch.empty() &&
      torch.substr(0, torch.find('+')) != c.torch_version.substr(0, c.torch_version.find('+')))
    why.push_back("the original ran torch " + torch + ", this replay " + c.torch_version);
  if (r.executor == "cpu" && !o.device().empty() && o.device() != "cpu")
    why.push_back("the original ran on " + o.device() + ", this replay on the CPU");
  return why;
}

// One side's system figures per step, or null when not recorded.
void WriteSystem(JsonWriter& j, const proto::SystemMetrics& s) {
  if (!s.present()) {
    j.Null();
    return;
  }
  j.BeginObject();
  j.Key("cpu_user_ms").Double(s.cpu_user_ms());
  j.Key("cpu_sys_ms").Double(s.cpu_sys_ms());
  j.Key("cpu_utilization").Double(s.cpu_utilization());
  j.Key("peak_rss_bytes").Int(s.peak_rss_bytes());
  j.Key("minor_faults").Double(s.minor_faults());
  j.Key("major_faults").Double(s.major_faults());
  j.Key("voluntary_switches").Double(s.voluntary_switches());
  j.Key("involuntary_switches").Double(s.involuntary_switches());
  j.EndObject();
}

std::string SystemLine(const proto::SystemMetrics& s) {
  return Format("%.2f", s.cpu_utilization()) + " cores busy (" + Format("%.2f", s.cpu_user_ms()) +
         " ms user, " + Format("%.2f", s.cpu_sys_ms()) + " ms sys), " +
         Format("%.0f", s.minor_faults()) + " faults, " +
         Format("%.0f", s.voluntary_switches() + s.involuntary_switches()) +
         " context switches per step, peak RSS " + Format("%.0f", s.peak_rss_bytes() / 1048576.0) +
         " MiB";
}

void WriteExecutor(JsonWriter& j, const ReplayResult& r) {
  j.Key("executor").BeginObject();
  j.Key("type").String(r.executor);
  j.Key("per_op_timed").Bool(r.per_op_timed);
  j.Key("cross_lane_waits").Int(r.cross_lane_waits);
  j.Key("lanes").BeginArray();
  for (const LaneStats& l : r.lanes) {
    j.BeginObject();
    j.Key("lane").Int(l.lane);
    j.Key("original_stream");
    if (l.original_stream >= 0)
      j.Int(l.original_stream);
    else
      j.Null();
    j.Key("ops").Int(l.ops);
    j.Key("busy_ms").Optional(NonNegative(l.busy_ms));
    j.EndObject();
  }
  j.EndArray();
  const DeviceMetrics& m = r.device_metrics;
  j.Key("device_metrics").BeginObject();
  j.Key("source").String(m.source);
  j.Key("samples").Int(m.samples);
  j.Key("sm_utilization_pct_mean").Optional(NonNegative(m.sm_utilization_pct_mean));
  j.Key("sm_utilization_pct_max").Optional(NonNegative(m.sm_utilization_pct_max));
  j.Key("memory_used_mib_max").Optional(NonNegative(m.memory_used_mib_max));
  j.Key("power_w_mean").Optional(NonNegative(m.power_w_mean));
  j.Key("power_w_max").Optional(NonNegative(m.power_w_max));
  j.Key("sm_clock_mhz_mean").Optional(NonNegative(m.sm_clock_mhz_mean));
  j.EndObject();
  j.Key("profile").StringOrNull(r.profile_path);
  j.EndObject();
}

class JsonReporter final : public Reporter {
 public:
  std::string Render(const ReportContext& c, const proto::Workload& w, const ReplayResult& r) const override {
    JsonWriter j;
    j.BeginObject();
    j.Key("context").BeginObject();
    j.Key("host").String(c.host);
    j.Key("cpu").String(c.cpu);
    j.Key("device").String(c.device);
    j.Key("torch_version").String(c.torch_version);
    j.Key("mimic_version").String(c.mimic_version);
    j.Key("input").String(c.input_path);
    j.Key("input_sha256").String(c.input_sha256);
    j.Key("date").String(c.date);
    j.Key("num_threads").Int(r.num_threads);
    j.Key("fp32_matmul").String(r.fp32_matmul);
    j.EndObject();

    j.Key("selection").String(r.selection);
    j.Key("mode").String(ReplayModeName(r.mode));
    j.Key("rank").Int(r.comm.rank);
    j.Key("world_size").Int(r.comm.world_size);
    j.Key("completed").Bool(r.stop_reason.empty());
    j.Key("stop_reason").String(r.stop_reason);
    j.Key("iteration_ms").BeginObject();
    if (r.iteration_ms.empty()) {
      j.Key("median").Null().Key("p10").Null().Key("p90").Null();
    } else {
      j.Key("median").Double(Median(r.iteration_ms));
      j.Key("p10").Double(Percentile(r.iteration_ms, 10));
      j.Key("p90").Double(Percentile(r.iteration_ms, 90));
    }
    j.Key("samples").BeginArray();
    for (double v : r.iteration_ms) j.Double(v);
    j.EndArray();
    j.EndObject();

    const std::optional<double> original = OriginalMedianMs(w);
    j.Key("original_iteration_ms").Optional(original);
    // Only where both ran the same way on the same kind of machine.
    const std::vector<std::string> not_comparable = NotComparable(w, c, r);
    j.Key("ratio").Optional(not_comparable.empty() ? Ratio(r.iteration_ms, original)
                                                   : std::nullopt);
    j.Key("comparable").Bool(not_comparable.empty());
    j.Key("not_comparable_because").BeginArray();
    for (const std::string& s : not_comparable) j.String(s);
    j.EndArray();
    j.Key("original").BeginObject();
    j.Key("source").String(w.original().source());
    j.Key("num_threads").Int(w.original().num_threads());
    j.Key("page_faults_per_iteration")
        .Optional(w.original().has_page_faults_per_iteration() ? std::optional<double>(w.original().page_faults_per_iteration())
                                                               : std::nullopt);
    j.Key("samples").BeginArray();
    for (double v : w.original().iteration_ms()) j.Double(v);
    j.EndArray();
    j.Key("samples_after").BeginArray();
    for (double v : w.original().iteration_ms_after()) j.Double(v);
    j.EndArray();
    j.Key("drift").Optional(OriginalDrift(w));
    j.EndObject();

    j.Key("transformations").BeginArray();
    std::vector<const proto::Transformation*> all;
    for (const proto::Transformation& t : w.transformations()) all.push_back(&t);
    for (const proto::Transformation& t : r.transformations) all.push_back(&t);
    for (const proto::Transformation* tp : all) {
      const proto::Transformation& t = *tp;
      j.BeginObject();
      j.Key("name").String(t.name());
      j.Key("params").BeginObject();
      for (const auto& [k, v] : t.params()) j.Key(k).String(v);
      j.EndObject();
      j.Key("summary").String(t.summary());
      j.EndObject();
    }
    j.EndArray();

    j.Key("coverage").BeginObject();
    j.Key("total").Int(r.total_ops);
    j.Key("replayed").Int(r.replayed_ops);
    j.Key("skipped").Int(r.total_ops - r.replayed_ops);
    j.Key("skipped_by_reason").BeginObject();
    for (const auto& [reason, n] : r.skipped_by_reason) j.Key(reason).Int(n);
    j.EndObject();
    j.Key("skipped_ops").BeginArray();
    for (const SkippedOp& s : r.skipped) {
      j.BeginObject();
      j.Key("id").Int(s.op_id);
      j.Key("name").String(s.name);
      j.Key("reason").String(s.reason);
      j.Key("detail").String(s.detail);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    j.Key("autograd").BeginObject();
    j.Key("parameters").Int(r.parameters);
    j.EndObject();

    j.Key("outputs").BeginObject();
    j.Key("checked").Int(r.outputs_checked);
    j.Key("mismatched").Int(r.outputs_mismatched);
    j.Key("examples").BeginArray();
    for (const std::string& m : r.mismatches) j.String(m);
    j.EndArray();
    j.Key("stand_ins").Int(r.outputs_stand_ins);
    j.Key("stand_in_examples").BeginArray();
    for (const std::string& m : r.stand_ins) j.String(m);
    j.EndArray();
    j.EndObject();

    j.Key("memory").BeginObject();
    j.Key("preallocated_bytes").Int(r.preallocated_bytes);
    j.Key("preallocated_storages").Int(r.storages_preallocated);
    j.Key("inputs_sha256").String(r.inputs_sha256);
    j.Key("integer_inputs").BeginObject();
    j.Key("leaves").Int(r.integer_inputs.leaves);
    j.Key("recorded").Int(r.integer_inputs.recorded);
    j.Key("rejected").BeginArray();
    for (const std::string& why : r.integer_inputs.rejected) j.String(why);
    j.EndArray();
    j.EndObject();
    j.Key("input_values").BeginObject();
    j.Key("profile");
    if (w.original().has_values())
      j.String(eg::DescribeValueProfile(w));
    else
      j.Null();
    j.Key("inputs").Int(r.value_fills.inputs);
    j.Key("leaves").Int(r.value_fills.leaves);
    j.EndObject();
    j.Key("heap").String(r.heap);
    j.Key("page_faults_per_iteration");
    if (r.page_faults_per_iteration >= 0) j.Double(r.page_faults_per_iteration);
    else j.Null();
    j.Key("peak_allocated_bytes").Int(r.memory.peak_allocated_bytes);
    j.Key("reserved_bytes");
    if (r.memory.reserved_bytes >= 0)
      j.Int(r.memory.reserved_bytes);
    else
      j.Null();
    j.Key("allocations").Int(r.memory.allocations);
    j.Key("estimated_peak_bytes").Int(r.estimated_peak_bytes);
    // The step's own memory, both sides: the most held above what was held when it began.
    j.Key("step_peak_bytes").Int(StepPeakBytes(r));
    j.Key("original_step_peak_bytes");
    if (w.original().has_step_memory_peak_bytes())
      j.Int(w.original().step_memory_peak_bytes());
    else
      j.Null();
    j.Key("original_step_peak_source").String(w.original().step_memory_source());
    j.EndObject();
    j.Key("system").BeginObject();
    j.Key("replay");
    WriteSystem(j, r.system);
    j.Key("original");
    WriteSystem(j, w.original().system());
    j.EndObject();
    j.Key("host_gaps").BeginObject();
    j.Key("mode").String(HostGapsName(r.host_gaps.mode));
    for (const eg::CaptureFigure& figure : eg::kCaptureFigures)
      j.Key(figure.platform_field).Double(r.host_gaps.capture_cost.*figure.member);
    j.Key("capture_cost_from").String(r.host_gaps.capture_cost_from);
    j.Key("timeline");
    if (const proto::HostTimeline& t = w.original().host_timeline();
        w.original().has_host_timeline() && r.host_gaps.mode == HostGaps::kRecorded) {
      j.BeginObject();
      j.Key("source").String(t.source());
      j.Key("ops_matched").Int(t.ops_matched());
      j.Key("ops").Int(t.ops());
      j.EndObject();
    } else {
      j.Null();
    }
    j.Key("modelled_t1_us").BeginObject();
    if (r.host_gaps.mode == HostGaps::kModelled)
      for (int i = 0; i < eg::kIssuers; ++i)
        j.Key(eg::IssuerName(static_cast<eg::Issuer>(i))).Double(r.host_gaps.modelled_t1_us[i]);
    j.EndObject();
    j.Key("modelled_from").String(r.host_gaps.modelled_from);
    j.Key("gaps").Int(r.host_gaps.gaps);
    j.Key("ms_per_iteration").Double(r.host_gaps.ms);
    j.Key("own_work_ms_per_iteration").Double(r.host_gaps.own_ms);
    j.Key("exceed_original_step").Bool(GapsExceedOriginalStep(r, w));
    j.EndObject();
    j.Key("setup_ms").Double(r.setup_ms);
    WriteExecutor(j, r);

    j.Key("collectives").BeginObject();
    j.Key("backend").String(r.comm.backend);
    WriteTotals(j, r.comm.issued);
    j.Key("expected").BeginObject();
    WriteTotals(j, r.comm.expected);
    j.EndObject();
    const std::vector<CommRow> rows = CommRows(r.comm);
    j.Key("per_size").BeginArray();
    for (const CommRow& row : rows) {
      j.BeginObject();
      j.Key("type").String(row.type);
      j.Key("size_bytes").Int(row.bytes);
      j.Key("elements").Int(row.elements);
      j.Key("dtype").String(row.dtype);
      j.Key("group").String(row.group);
      j.Key("group_size").Int(row.group_size);
      j.Key("calls").Int(row.calls);
      j.Key("samples").Int(static_cast<int64_t>(row.replay_us.size()));
      j.Key("time_us").Optional(NonNegative(row.time_us()));
      j.Key("algbw_gbps").Optional(NonNegative(row.algbw()));
      j.Key("busbw_gbps").Optional(NonNegative(row.busbw(row.type_enum)));
      j.Key("original_us").Optional(row.original_us.empty() ? std::nullopt : std::optional<double>(Median(row.original_us)));
      j.EndObject();
    }
    j.EndArray();
    const CommTotals totals = Totals(rows);
    j.Key("totals").BeginObject();
    j.Key("time_us").Optional(totals.time_us >= 0 ? std::optional<double>(totals.time_us) : std::nullopt);
    j.Key("original_us").Optional(totals.original_us >= 0 ? std::optional<double>(totals.original_us) : std::nullopt);
    j.Key("bytes").Int(totals.bytes);
    j.EndObject();
    j.EndObject();

    j.Key("ops").BeginArray();
    for (const OpNameStats& s : r.per_op) {
      j.BeginObject();
      j.Key("name").String(s.name);
      j.Key("calls").Int(s.calls);
      j.Key("replay_ms").Optional(NonNegative(s.replay_ms));
      j.Key("original_profiled_ms").Optional(NonNegative(s.original_ms));
      j.Key("original_timeline_ms").Optional(NonNegative(s.timeline_ms));
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    return j.str();
  }
};

// The console's per-op table: the op names that took the most replay time, beside the
// original's host spans under the whole capture and, where the capture recorded one, on its host
// timeline.
std::string PerOpTable(const ReplayResult& r) {
  const bool timeline = std::any_of(r.per_op.begin(), r.per_op.end(),
                                    [](const OpNameStats& s) { return s.timeline_ms >= 0; });
  auto ms = [](double v) { return v >= 0 ? Format("%.3f", v) : std::string("-"); };
  std::string out;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "  %-44s %6s %12s %14s%s\n", "op", "calls", "replay ms",
                "original* ms", timeline ? "     timeline** ms" : "");
  out += buf;
  const size_t shown = std::min<size_t>(r.per_op.size(), 15);
  for (size_t i = 0; i < shown; ++i) {
    const OpNameStats& s = r.per_op[i];
    std::snprintf(buf, sizeof(buf), "  %-44.44s %6lld %12s %14s", s.name.c_str(),
                  static_cast<long long>(s.calls), ms(s.replay_ms).c_str(),
                  ms(s.original_ms).c_str());
    out += buf;
    if (timeline) {
      std::snprintf(buf, sizeof(buf), " %17s", ms(s.timeline_ms).c_str());
      out += buf;
    }
    out += "\n";
  }
  if (r.per_op.size() > shown)
    out += "  ... " + std::to_string(r.per_op.size() - shown) +
           " more op names in the JSON report\n";
  out += "  * original per-op times are Kineto CPU spans, measured under the profiler\n";
  if (timeline)
    out +=
        "  ** the same on the capture's host timeline (Kineto alone, host activity only), less "
        "its cost at the events inside each span\n";
  return out;
}

class ConsoleReporter final : public Reporter {
 public:
  std::string Render(const ReportContext& c, const proto::Workload& w, const ReplayResult& r) const override {
    std::string out;
    auto line = [&out](const std::string& s) { out += s + "\n"; };
    line("Mimic " + c.mimic_version + " replay of " + c.input_path);
    line("  device " + r.device + ", torch " + c.torch_version + ", host " + c.host + " (" + c.cpu + ")");
    line("  selection " + r.selection + ": " + std::to_string(r.replayed_ops) + "/" +
         std::to_string(r.total_ops) + " ops replayed");
    for (const auto& [reason, n] : r.skipped_by_reason)
      line("  skipped " + std::to_string(n) + " (" + reason + ")");
    if (r.fp32_matmul == "tf32") line("  fp32 matmuls in TF32, as the original's GEMM kernels ran");
    for (const proto::Transformation& t : w.transformations())
      line("  transformed: " + t.name() + ": " + t.summary());
    for (const proto::Transformation& t : r.transformations)
      line("  transformed: " + t.name() + ": " + t.summary());
    if (!r.stop_reason.empty())
      line("  STOPPED after " + std::to_string(r.iteration_ms.size()) + " measured iterations: " + r.stop_reason);
    if (r.lanes.size() > 1) {
      std::string streams;
      for (const LaneStats& l : r.lanes)
        streams += (streams.empty() ? "" : ", ") +
                   (l.original_stream >= 0 ? std::to_string(l.original_stream) : "-");
      line("  lanes " + std::to_string(r.lanes.size()) + " (the original's streams " + streams +
           "), " + std::to_string(r.cross_lane_waits) + " cross-lane waits per iteration");
    }
    if (r.system.present()) line("  system   replay:   " + SystemLine(r.system));
    if (w.original().system().present())
      line("           original: " + SystemLine(w.original().system()));
    if (r.host_gaps.mode == HostGaps::kModelled)
      line("  host gaps modelled: " + std::to_string(r.host_gaps.gaps) + " totalling " +
           Format("%.3f", r.host_gaps.ms) + " ms per iteration (T1 forward " +
           Format("%.2f", r.host_gaps.modelled_t1_us[0]) + " us, backward " +
           Format("%.2f", r.host_gaps.modelled_t1_us[1]) + " us, optimizer " +
           Format("%.2f", r.host_gaps.modelled_t1_us[2]) + " us from " +
           // "platform NAME"; what they were measured on is in the JSON's modelled_from
           r.host_gaps.modelled_from.substr(0, r.host_gaps.modelled_from.find(" (")) + ")");
    if (r.host_gaps.mode == HostGaps::kRecorded)
      line("  host gaps as recorded: " + std::to_string(r.host_gaps.gaps) + " totalling " +
           Format("%.3f", r.host_gaps.ms) + " ms per iteration, " +
           Format("%.3f", r.host_gaps.own_ms) +
           " ms of it filled by the replay's own work (the capture's " +
           r.host_gaps.capture_cost.Describe() + " taken off, " + r.host_gaps.capture_cost_from +
           ")");
    if (r.host_gaps.mode == HostGaps::kRecorded && w.original().has_host_timeline())
      line("  host timeline: " +
           eg::DescribeHostTimeline(w, r.host_gaps.capture_cost.timeline_boundary_us));
    if (w.original().has_values())
      line("  input values: " + eg::DescribeValueProfile(w) + "; " +
           std::to_string(r.value_fills.leaves) +
           " prepared tensors filled with their zeros and subnormals");
    if (GapsExceedOriginalStep(r, w))
      line(
          "  warning: the recorded host gaps alone take longer than the original's whole "
          "unprofiled step: they hold the capture's own cost (docs/replay.md, Host gaps); "
          "--host-gaps none may be closer");
    if (r.memory.peak_allocated_bytes >= (1 << 20))
      line("  memory peak " + Format("%.1f", r.memory.peak_allocated_bytes / 1048576.0) +
           " MiB allocated by tensors (" + Format("%.1f", r.estimated_peak_bytes / 1048576.0) +
           " MiB by the trace's recorded sizes); the step's own " +
           Format("%.1f", StepPeakBytes(r) / 1048576.0) + " MiB" +
           (w.original().has_step_memory_peak_bytes()
                ? ", the original's " +
                      Format("%.1f", w.original().step_memory_peak_bytes() / 1048576.0) + " MiB (" +
                      w.original().step_memory_source() + ")"
                : std::string()));
    if (r.device_metrics.samples > 0)
      line("  device " + Format("%.0f", r.device_metrics.sm_utilization_pct_mean) + "% SM busy, " +
           Format("%.0f", r.device_metrics.power_w_mean) + " W, " +
           Format("%.0f", r.device_metrics.sm_clock_mhz_mean) + " MHz SM clock, " +
           Format("%.0f", r.device_metrics.memory_used_mib_max) + " MiB used at most (NVML, " +
           std::to_string(r.device_metrics.samples) + " samples)");
    if (!r.profile_path.empty())
      line("  profile " + r.profile_path + " (Kineto; opens in Perfetto)");
    line("");
    if (r.iteration_ms.empty()) return out;
    char buf[256];
    std::snprintf(buf, sizeof(buf), "  %-34s %10s %10s %10s %8s", "", "median ms", "p10 ms", "p90 ms", "ratio");
    line(buf);
    std::snprintf(buf, sizeof(buf), "  %-34s %10.3f %10.3f %10.3f %8s", "replay", Median(r.iteration_ms),
                  Percentile(r.iteration_ms, 10), Percentile(r.iteration_ms, 90), "");
    line(buf);
    const std::optional<double> original = OriginalMedianMs(w);
    if (original) {
      const auto& s = w.original().iteration_ms();
      const std::vector<double> samples(s.begin(), s.end());
      const std::vector<std::string> not_comparable = NotComparable(w, c, r);
      std::snprintf(buf, sizeof(buf), "  %-34s %10.3f %10.3f %10.3f %8s", "original", *original,
                    Percentile(samples, 10), Percentile(samples, 90),
                    not_comparable.empty()
                        ? Format("%.3f", Median(r.iteration_ms) / *original).c_str()
                        : "-");
      line(buf);
      line("  (original: " + w.original().source() + "; ratio = replay median / original median)");
      if (const std::optional<double> drift = OriginalDrift(w); drift && std::abs(*drift) >= 0.1)
        line("  unsteady original: its unprofiled step's median moved " +
             Format("%+.0f", *drift * 100) +
             "% from before its profiled steps to right after them; this machine's speed changed "
             "during the capture, and a ratio cannot be read closer than that");
      for (const std::string& why : not_comparable) line("  no ratio: " + why);
      if (!not_comparable.empty())
        line("  (scripts/run.sh captures a fresh original on this machine and replays it)");
    } else {
      line("  original: unknown (no Kineto trace or capture manifest)");
    }
    line("");
    out += PerOpTable(r);
    if (!r.comm.collectives.empty()) {
      line("");
      line("  collectives on rank " + std::to_string(r.comm.rank) + " of " + std::to_string(r.comm.world_size) + " (" +
           r.comm.backend + ", " + ReplayModeName(r.mode) + " mode): " + std::to_string(r.comm.issued.issued) +
           " issued per iteration, " + std::to_string(r.comm.issued.bytes) + " bytes; the trace holds " +
           std::to_string(r.comm.expected.issued) + ", " + std::to_string(r.comm.expected.bytes) + " bytes");
      std::snprintf(buf, sizeof(buf), "  %-15s %12s %10s %9s %5s %5s %10s %9s %9s %10s", "collective", "size(B)",
                    "count", "type", "group", "calls", "time(us)", "algbw", "busbw", "orig(us)");
      line(buf);
      std::snprintf(buf, sizeof(buf), "  %-15s %12s %10s %9s %5s %5s %10s %9s %9s %10s", "", "", "(elements)", "", "",
                    "", "(median)", "(GB/s)", "(GB/s)", "(median)");
      line(buf);
      for (const CommRow& row : CommRows(r.comm)) {
        const std::string dtype = row.dtype.substr(0, 9);
        std::snprintf(buf, sizeof(buf), "  %-15s %12lld %10lld %9s %5s %5lld %10s %9s %9s %10s", row.type.c_str(),
                      static_cast<long long>(row.bytes), static_cast<long long>(row.elements), dtype.c_str(),
                      row.group.c_str(), static_cast<long long>(row.calls),
                      row.time_us() >= 0 ? Format("%.1f", row.time_us()).c_str() : "-",
                      row.algbw() >= 0 ? Format("%.3f", row.algbw()).c_str() : "-",
                      row.busbw(row.type_enum) >= 0 ? Format("%.3f", row.busbw(row.type_enum)).c_str() : "-",
                      row.original_us.empty() ? "-" : Format("%.1f", Median(row.original_us)).c_str());
        line(buf);
      }
      const CommTotals totals = Totals(CommRows(r.comm));
      std::snprintf(buf, sizeof(buf), "  %-15s %12lld %10s %9s %5s %5s %10s %9s %9s %10s", "total/iteration",
                    static_cast<long long>(totals.bytes), "", "", "", "",
                    totals.time_us >= 0 ? Format("%.1f", totals.time_us).c_str() : "-", "", "",
                    totals.original_us >= 0 ? Format("%.1f", totals.original_us).c_str() : "-");
      line(buf);
      line("  (orig: the original job's time for the collective, from its backend's span in the Kineto trace)");
    }
    if (r.outputs_mismatched > 0)
      line("  warning: " + std::to_string(r.outputs_mismatched) + " of " + std::to_string(r.outputs_checked) +
           " outputs differ from the recorded shape or dtype");
    return out;
  }
};

}  // namespace

std::optional<double> OriginalMedianMs(const proto::Workload& w) {
  const auto& s = w.original().iteration_ms();
  if (s.empty()) return std::nullopt;
  return Median(std::vector<double>(s.begin(), s.end()));
}

std::optional<double> OriginalDrift(const proto::Workload& w) {
  const auto& after = w.original().iteration_ms_after();
  const std::optional<double> before = OriginalMedianMs(w);
  if (after.empty() || !before || *before <= 0) return std::nullopt;
  return Median(std::vector<double>(after.begin(), after.end())) / *before - 1;
}

ReportContext MakeContext(const proto::Workload& w, const std::string& input_path, const std::string& device) {
  ReportContext c;
  c.host = HostName();
  c.cpu = CpuModel();
  c.device = device;
  c.torch_version = TorchVersion();
  c.mimic_version = MIMIC_VERSION;
  c.input_path = input_path;
  for (const proto::SourceFile& s : w.provenance().sources())
    if (s.role() == "execution_trace") c.input_sha256 = s.sha256();
  c.date = UtcNowIso8601();
  return c;
}

std::unique_ptr<Reporter> CreateReporter(const std::string& name) {
  if (name == "json") return std::make_unique<JsonReporter>();
  if (name == "console") return std::make_unique<ConsoleReporter>();
  return nullptr;
}

}  // namespace mimic::replay
