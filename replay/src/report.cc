#include "mimic/replay/report.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include "mimic/base/clock.h"
#include "mimic/base/json_writer.h"
#include "mimic/base/stats.h"

namespace mimic::replay {
namespace {

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}


std::optional<double> Ratio(const std::vector<double>& replay, std::optional<double> original) {
  if (replay.empty() || !original || *original <= 0) return std::nullopt;
  return Median(replay) / *original;
}

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
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
    j.EndObject();

    j.Key("selection").String(r.selection);
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
    j.Key("ratio").Optional(Ratio(r.iteration_ms, original));
    j.Key("original").BeginObject();
    j.Key("source").String(w.original().source());
    j.Key("num_threads").Int(w.original().num_threads());
    j.Key("samples").BeginArray();
    for (double v : w.original().iteration_ms()) j.Double(v);
    j.EndArray();
    j.EndObject();

    j.Key("transformations").BeginArray();
    for (const proto::Transformation& t : w.transformations()) {
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

    j.Key("outputs").BeginObject();
    j.Key("checked").Int(r.outputs_checked);
    j.Key("mismatched").Int(r.outputs_mismatched);
    j.Key("examples").BeginArray();
    for (const std::string& m : r.mismatches) j.String(m);
    j.EndArray();
    j.EndObject();

    j.Key("memory").BeginObject();
    j.Key("preallocated_bytes").Int(r.preallocated_bytes);
    j.Key("preallocated_storages").Int(r.storages_preallocated);
    j.Key("inputs_sha256").String(r.inputs_sha256);
    j.EndObject();
    j.Key("setup_ms").Double(r.setup_ms);

    j.Key("ops").BeginArray();
    for (const OpNameStats& s : r.per_op) {
      j.BeginObject();
      j.Key("name").String(s.name);
      j.Key("calls").Int(s.calls);
      j.Key("replay_ms").Double(s.replay_ms);
      j.Key("original_profiled_ms").Optional(s.original_ms >= 0 ? std::optional<double>(s.original_ms) : std::nullopt);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    return j.str();
  }
};

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
    for (const proto::Transformation& t : w.transformations())
      line("  transformed: " + t.name() + ": " + t.summary());
    if (!r.stop_reason.empty())
      line("  STOPPED after " + std::to_string(r.iteration_ms.size()) + " measured iterations: " + r.stop_reason);
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
      std::snprintf(buf, sizeof(buf), "  %-34s %10.3f %10.3f %10.3f %8s", "original", *original,
                    Percentile(samples, 10), Percentile(samples, 90),
                    Format("%.3f", Median(r.iteration_ms) / *original).c_str());
      line(buf);
      line("  (original: " + w.original().source() + "; ratio = replay median / original median)");
    } else {
      line("  original: unknown (no Kineto trace or capture manifest)");
    }
    line("");
    std::snprintf(buf, sizeof(buf), "  %-44s %6s %12s %14s", "op", "calls", "replay ms", "original* ms");
    line(buf);
    const size_t shown = std::min<size_t>(r.per_op.size(), 15);
    for (size_t i = 0; i < shown; ++i) {
      const OpNameStats& s = r.per_op[i];
      std::snprintf(buf, sizeof(buf), "  %-44.44s %6lld %12.3f %14s", s.name.c_str(),
                    static_cast<long long>(s.calls), s.replay_ms,
                    s.original_ms >= 0 ? Format("%.3f", s.original_ms).c_str() : "-");
      line(buf);
    }
    if (r.per_op.size() > shown) line("  ... " + std::to_string(r.per_op.size() - shown) + " more op names in the JSON report");
    line("  * original per-op times are Kineto CPU spans, measured under the profiler");
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
