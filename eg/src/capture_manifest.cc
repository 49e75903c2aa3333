#include "mimic/eg/capture_manifest.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>

#include "mimic/base/file.h"
#include "mimic/eg/workload.h"

namespace mimic::eg {

const CaptureSample* CaptureManifest::Find(std::string_view name) const {
  for (const CaptureSample& s : samples)
    if (s.name == name) return &s;
  return nullptr;
}

const CaptureSample* CaptureManifest::FindByTrace(const std::string& trace_path) const {
  const std::string base = trace_path.substr(trace_path.find_last_of('/') + 1);
  for (const CaptureSample& s : samples)
    if (s.et == base) return &s;
  return nullptr;
}

namespace {

// A sample's "system": the original process's figures per unprofiled step; every key is a
// non-negative number.
Status ParseSystem(const std::string& where, simdjson::dom::object o, proto::SystemMetrics& s) {
  const std::pair<const char*, void (proto::SystemMetrics::*)(double)> doubles[] = {
      {"cpu_user_ms", &proto::SystemMetrics::set_cpu_user_ms},
      {"cpu_sys_ms", &proto::SystemMetrics::set_cpu_sys_ms},
      {"cpu_utilization", &proto::SystemMetrics::set_cpu_utilization},
      {"minor_faults", &proto::SystemMetrics::set_minor_faults},
      {"major_faults", &proto::SystemMetrics::set_major_faults},
      {"voluntary_switches", &proto::SystemMetrics::set_voluntary_switches},
      {"involuntary_switches", &proto::SystemMetrics::set_involuntary_switches}};
  for (const auto& [key, set] : doubles) {
    double v = 0;
    if (o[key].get(v) != simdjson::SUCCESS || v < 0)
      return Status::InvalidInput(where + "." + key + " is missing or not a non-negative number");
    (s.*set)(v);
  }
  int64_t rss = 0;
  if (o["peak_rss_bytes"].get(rss) != simdjson::SUCCESS || rss < 0)
    return Status::InvalidInput(where + ".peak_rss_bytes is missing or not a non-negative integer");
  s.set_peak_rss_bytes(rss);
  s.set_present(true);
  return Status::Ok();
}

// The step times under `key` of `entry` (ms, each > 0) into `out`; none where the key is absent.
Status ParseStepTimes(const std::string& where, simdjson::dom::element entry, const char* key,
                      std::vector<double>& out) {
  simdjson::dom::array times;
  if (entry[key].get(times) != simdjson::SUCCESS) return Status::Ok();
  for (simdjson::dom::element t : times) {
    double ms;
    if (t.get(ms) != simdjson::SUCCESS || ms <= 0)
      return Status::InvalidInput(where + "." + key +
                                  " holds a value that is not a positive number");
    out.push_back(ms);
  }
  return Status::Ok();
}

// {"boundary_us": > 0, the other figures of kCaptureFigures by their figures_field: >= 0 (0 when
// absent), "source": text}.
Status ParseCaptureCost(const std::string& where, simdjson::dom::object o,
                        proto::CaptureCostFigures& out) {
  CaptureCost cost;
  for (const CaptureFigure& figure : kCaptureFigures) {
    simdjson::dom::element v;
    if (o[figure.figures_field].get(v) != simdjson::SUCCESS) continue;
    double x;
    if (v.get(x) != simdjson::SUCCESS || !std::isfinite(x) || x < 0)
      return Status::InvalidInput(where + "." + figure.figures_field + " is not a number >= 0");
    cost.*figure.member = x;
  }
  SetCaptureCostInMessage(cost, &CaptureFigure::figures_field, out);
  if (!(out.boundary_us() > 0))
    return Status::InvalidInput(where + ".boundary_us is missing or not > 0");
  std::string_view source;
  if (o["source"].get(source) == simdjson::SUCCESS) out.set_source(std::string(source));
  return Status::Ok();
}

}  // namespace

Result<CaptureManifest> ParseCaptureManifest(const std::string& path, std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc))
    return Status::InvalidInput(path + ": " + simdjson::error_message(err));
  simdjson::dom::array samples;
  if (doc["samples"].get(samples) != simdjson::SUCCESS)
    return Status::InvalidInput(path + ": no \"samples\" list");
  CaptureManifest m;
  std::string_view s;
  if (doc["default"].get(s) == simdjson::SUCCESS) m.default_sample = std::string(s);
  size_t i = 0;
  for (simdjson::dom::element e : samples) {
    CaptureSample c;
    const std::string where = path + ": samples[" + std::to_string(i++) + "]";
    if (e["name"].get(s) != simdjson::SUCCESS) return Status::InvalidInput(where + ".name is missing");
    c.name = std::string(s);
    if (e["et"].get(s) != simdjson::SUCCESS) return Status::InvalidInput(where + ".et is missing");
    c.et = std::string(s);
    if (e["kineto"].get(s) == simdjson::SUCCESS) c.kineto = std::string(s);
    if (e["host_timeline"].get(s) == simdjson::SUCCESS) c.host_timeline = std::string(s);
    if (e["values"].get(s) == simdjson::SUCCESS) c.values = std::string(s);
    if (e["description"].get(s) == simdjson::SUCCESS) c.description = std::string(s);
    if (e["device"].get(s) == simdjson::SUCCESS) c.device = std::string(s);
    if (e["torch_version"].get(s) == simdjson::SUCCESS) c.torch_version = std::string(s);
    if (e["host"]["cpu"].get(s) == simdjson::SUCCESS) c.host_cpu = std::string(s);
    int64_t n;
    if (e["num_threads"].get(n) == simdjson::SUCCESS) c.num_threads = n;
    if (e["batch_size"].get(n) == simdjson::SUCCESS) c.batch_size = n;
    if (e["rank"].get(n) == simdjson::SUCCESS) c.rank = n;
    if (e["world_size"].get(n) == simdjson::SUCCESS) c.world_size = n;
    if (c.world_size < 0 || c.rank >= std::max<int64_t>(c.world_size, 1) || (c.rank >= 0) != (c.world_size > 0))
      return Status::InvalidInput(where + ": rank and world_size must come together, with 0 <= rank < world_size");
    if (simdjson::dom::array a; e["iteration_ms"].get(a) != simdjson::SUCCESS)
      return Status::InvalidInput(where + ".iteration_ms is missing");
    MIMIC_RETURN_IF_ERROR(ParseStepTimes(where, e, "iteration_ms", c.iteration_ms));
    MIMIC_RETURN_IF_ERROR(ParseStepTimes(where, e, "iteration_ms_after", c.iteration_ms_after));
    if (double f; e["page_faults_per_step"].get(f) == simdjson::SUCCESS) {
      if (f < 0) return Status::InvalidInput(where + ".page_faults_per_step is negative");
      c.page_faults_per_step = f;
    }
    if (simdjson::dom::object sys; e["system"].get(sys) == simdjson::SUCCESS)
      MIMIC_RETURN_IF_ERROR(ParseSystem(where + ".system", sys, c.system));
    if (simdjson::dom::object cost; e["capture_cost"].get(cost) == simdjson::SUCCESS)
      MIMIC_RETURN_IF_ERROR(ParseCaptureCost(where + ".capture_cost", cost, c.capture_cost));
    if (int64_t b; e["step_memory_peak_bytes"].get(b) == simdjson::SUCCESS) {
      if (b < 0) return Status::InvalidInput(where + ".step_memory_peak_bytes is negative");
      c.step_memory_peak_bytes = b;
    }
    m.samples.push_back(std::move(c));
  }
  return m;
}

Result<CaptureManifest> ReadCaptureManifest(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  return ParseCaptureManifest(path, file.bytes.view());
}

void ApplyCaptureSample(const CaptureSample& sample, const std::string& manifest_path,
                        proto::Workload& w) {
  proto::OriginalRun& o = *w.mutable_original();
  o.clear_iteration_ms();
  for (double ms : sample.iteration_ms) o.add_iteration_ms(ms);
  o.clear_iteration_ms_after();
  for (double ms : sample.iteration_ms_after) o.add_iteration_ms_after(ms);
  if (sample.page_faults_per_step >= 0) o.set_page_faults_per_iteration(sample.page_faults_per_step);
  if (sample.system.present()) *o.mutable_system() = sample.system;
  if (sample.step_memory_peak_bytes >= 0) {  // an unprofiled step's, preferred to Kineto's
    o.set_step_memory_peak_bytes(sample.step_memory_peak_bytes);
    o.set_step_memory_source("capture manifest (" + sample.name + ", an unprofiled step)");
  }
  o.set_source("capture manifest " + manifest_path + " (" + sample.name + ": " +
               std::to_string(sample.iteration_ms.size()) + " unprofiled steps)");
  if (sample.capture_cost.boundary_us() > 0) *o.mutable_capture_cost() = sample.capture_cost;
  o.set_num_threads(sample.num_threads);
  o.set_host(sample.host_cpu);
  o.set_device(sample.device);
  if (!sample.torch_version.empty()) w.mutable_provenance()->set_torch_version(sample.torch_version);
  if (sample.world_size > 0) {
    w.mutable_provenance()->set_rank(sample.rank);
    w.mutable_provenance()->set_world_size(sample.world_size);
  }
}

}  // namespace mimic::eg
