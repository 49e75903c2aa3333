#include "mimic/model/platform.h"

#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "builtin_platforms.h"
#include "mimic/base/file.h"
#include "mimic/model/host_gaps.h"

namespace mimic::model {
namespace {

const std::set<std::string_view> kDtypes = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8"};

Status Bad(const std::string& path, const std::string& field, const std::string& what) {
  return Status::InvalidInput(path + ": field " + field + ": " + what);
}

Status CheckNonNegative(const std::string& path, const std::string& field, double v) {
  if (!std::isfinite(v) || v < 0) return Bad(path, field, "must be a finite number >= 0");
  return Status::Ok();
}

// What a cold-dispatch point is measured at: distinct ops in turn, or bytes of traffic.
double ArgumentOf(const proto::InTurnPoint& p) { return p.distinct_ops(); }
double ArgumentOf(const proto::TrafficPoint& p) { return p.bytes(); }

// A cold-dispatch curve (`field`, its argument named `argument`): arguments positive and
// growing, figures finite and >= 0.
template <typename Points>
Status CheckCurve(const std::string& path, const std::string& field, const char* argument,
                  const Points& points) {
  for (int i = 0; i < points.size(); ++i) {
    const std::string f = field + "[" + std::to_string(i) + "]";
    const double x = ArgumentOf(points[i]);
    if (!(x > 0) || !std::isfinite(x)) return Bad(path, f + "." + argument, "must be positive");
    if (i > 0 && x <= ArgumentOf(points[i - 1]))
      return Bad(path, f + "." + argument, "must grow from point to point");
    MIMIC_RETURN_IF_ERROR(CheckNonNegative(path, f + ".extra_us", points[i].extra_us()));
  }
  return Status::Ok();
}

// The figure of a cold-dispatch curve at argument `x`: linear in log2(x) between its points, their
// ends' figure beyond them; 0 with no points.
template <typename Points>
double LogInterpolate(const Points& points, double x) {
  if (points.empty()) return 0;
  if (x <= ArgumentOf(points[0])) return points[0].extra_us();
  for (int i = 1; i < points.size(); ++i) {
    if (x > ArgumentOf(points[i])) continue;
    const double x0 = ArgumentOf(points[i - 1]), x1 = ArgumentOf(points[i]);
    const double f = std::log2(x / x0) / std::log2(x1 / x0);
    return points[i - 1].extra_us() + f * (points[i].extra_us() - points[i - 1].extra_us());
  }
  return points[points.size() - 1].extra_us();
}

Status CheckEfficiency(const std::string& path, const std::string& field,
                       const proto::EfficiencyPoint& e) {
  if (e.m() <= 0 || e.n() <= 0 || e.k() <= 0 || e.batch() < 0 || e.time_us() < 0)
    return Bad(path, field, "shape sizes must be positive");
  if (!(e.efficiency() > 0 && e.efficiency() <= 1.0))
    return Bad(path, field + ".efficiency", "must be in (0, 1]");
  if (!kDtypes.count(e.dtype()))
    return Bad(path, field + ".dtype", "unknown dtype '" + e.dtype() + "'");
  return Status::Ok();
}

}  // namespace

Status CheckPlatform(const std::string& path, const proto::Platform& p) {
  if (p.name().empty()) return Bad(path, "name", "is missing");
  if (p.device_type() != "cuda" && p.device_type() != "cpu")
    return Bad(path, "device_type", "must be \"cuda\" or \"cpu\", not \"" + p.device_type() + "\"");
  for (const auto& [dtype, peak] : p.peak_flops()) {
    if (!kDtypes.count(dtype)) return Bad(path, "peak_flops." + dtype, "unknown dtype");
    MIMIC_RETURN_IF_ERROR(
        CheckNonNegative(path, "peak_flops." + dtype + ".tensor_core", peak.tensor_core()));
    MIMIC_RETURN_IF_ERROR(
        CheckNonNegative(path, "peak_flops." + dtype + ".no_tensor_core", peak.no_tensor_core()));
  }
  if (!(PeakFlops(p, "fp32", false) > 0)) return Bad(path, "peak_flops.fp32", "must be positive");
  if (!(p.memory_bandwidth_bytes_per_s() > 0) || !std::isfinite(p.memory_bandwidth_bytes_per_s()))
    return Bad(path, "memory_bandwidth_bytes_per_s", "must be positive");
  const std::pair<const char*, double> figures[] = {
      {"memory_bytes", p.memory_bytes()},
      {"l2_bytes", p.l2_bytes()},
      {"sm_count", static_cast<double>(p.sm_count())},
      {"base_clock_mhz", p.base_clock_mhz()},
      {"boost_clock_mhz", p.boost_clock_mhz()},
      {"host_device_bytes_per_s", p.host_device_bytes_per_s()},
      {"gpu_gpu_bytes_per_s", p.gpu_gpu_bytes_per_s()},
      {"inter_node_bytes_per_s", p.inter_node_bytes_per_s()},
      {"host_device_copy.h2d_pinned_bytes_per_s", p.host_device_copy().h2d_pinned_bytes_per_s()},
      {"host_device_copy.d2h_pinned_bytes_per_s", p.host_device_copy().d2h_pinned_bytes_per_s()},
      {"host_device_copy.h2d_pageable_bytes_per_s",
       p.host_device_copy().h2d_pageable_bytes_per_s()},
      {"host_device_copy.d2h_pageable_bytes_per_s",
       p.host_device_copy().d2h_pageable_bytes_per_s()},
      {"cpu_overheads.t1_us", p.cpu_overheads().t1_us()},
      {"cpu_overheads.t2_us", p.cpu_overheads().t2_us()},
      {"cpu_overheads.t3_us", p.cpu_overheads().t3_us()},
      {"cpu_overheads.t4_us", p.cpu_overheads().t4_us()},
      {"cpu_overheads.t5_us", p.cpu_overheads().t5_us()},
      {"cpu_overheads.dispatch_us", p.cpu_overheads().dispatch_us()},
      {"cpu_overheads.framework_us", p.cpu_overheads().framework_us()},
      {"cpu_overheads.t1_forward_us", p.cpu_overheads().t1_forward_us()},
      {"cpu_overheads.t1_backward_us", p.cpu_overheads().t1_backward_us()},
      {"cpu_overheads.t1_optimizer_us", p.cpu_overheads().t1_optimizer_us()},
      {"cpu_overheads.page_fault_us", p.cpu_overheads().page_fault_us()},
      {"cpu_overheads.autograd_node_us", p.cpu_overheads().autograd_node_us()},
      {"embedding_bag_step_ns", p.embedding_bag_step_ns()},
      {"batch_norm_channels_last.forward_cycles", p.batch_norm_channels_last().forward_cycles()},
      {"batch_norm_channels_last.backward_cycles", p.batch_norm_channels_last().backward_cycles()},
      {"max_pool_channels_last.forward_cycles", p.max_pool_channels_last().forward_cycles()},
      {"max_pool_channels_last.backward_cycles", p.max_pool_channels_last().backward_cycles()},
      {"price_per_gpu_hour", p.price_per_gpu_hour()},
      {"threads", static_cast<double>(p.threads())},
  };
  for (const auto& [field, v] : figures) MIMIC_RETURN_IF_ERROR(CheckNonNegative(path, field, v));
  const eg::CaptureCost capture = CaptureCostOf(p.cpu_overheads());
  for (const eg::CaptureFigure& figure : eg::kCaptureFigures)
    MIMIC_RETURN_IF_ERROR(CheckNonNegative(
        path, std::string("cpu_overheads.") + figure.platform_field, capture.*figure.member));
  const proto::CpuOverheads& c = p.cpu_overheads();
  MIMIC_RETURN_IF_ERROR(CheckCurve(path, "cpu_overheads.in_turn", "distinct_ops", c.in_turn()));
  MIMIC_RETURN_IF_ERROR(
      CheckCurve(path, "cpu_overheads.in_turn_views", "distinct_ops", c.in_turn_views()));
  MIMIC_RETURN_IF_ERROR(
      CheckCurve(path, "cpu_overheads.after_traffic", "bytes", c.after_traffic()));
  MIMIC_RETURN_IF_ERROR(
      CheckCurve(path, "cpu_overheads.after_traffic_views", "bytes", c.after_traffic_views()));
  for (int i = 0; i < p.value_slowdown_size(); ++i) {
    const proto::ValueSlowdown& v = p.value_slowdown(i);
    const std::string f = "value_slowdown[" + std::to_string(i) + "]";
    if (v.kind().empty()) return Bad(path, f + ".kind", "is missing");
    if (!(v.zeros() > 0) || !(v.subnormals() > 0) || !std::isfinite(v.zeros()) ||
        !std::isfinite(v.subnormals()))
      return Bad(path, f, "zeros and subnormals must be positive");
  }
  for (int i = 0; i < p.gemm_efficiency_size(); ++i)
    MIMIC_RETURN_IF_ERROR(
        CheckEfficiency(path, "gemm_efficiency[" + std::to_string(i) + "]", p.gemm_efficiency(i)));
  for (int i = 0; i < p.conv_efficiency_size(); ++i)
    MIMIC_RETURN_IF_ERROR(
        CheckEfficiency(path, "conv_efficiency[" + std::to_string(i) + "]", p.conv_efficiency(i)));
  for (int i = 0; i < p.attention_efficiency_size(); ++i)
    MIMIC_RETURN_IF_ERROR(CheckEfficiency(path, "attention_efficiency[" + std::to_string(i) + "]",
                                          p.attention_efficiency(i)));
  for (int i = 0; i < p.bandwidth_size(); ++i) {
    const proto::BandwidthPoint& b = p.bandwidth(i);
    const std::string f = "bandwidth[" + std::to_string(i) + "]";
    if (b.kind().empty()) return Bad(path, f + ".kind", "is missing");
    if (!(b.bytes() > 0) || !(b.bytes_per_s() > 0) || !std::isfinite(b.bytes_per_s()))
      return Bad(path, f, "bytes and bytes_per_s must be positive");
  }
  for (int i = 0; i < p.index_ops_size(); ++i) {
    const proto::IndexPoint& x = p.index_ops(i);
    const std::string f = "index_ops[" + std::to_string(i) + "]";
    if (x.kind().empty()) return Bad(path, f + ".kind", "is missing");
    if (x.indices() <= 0 || x.row_width() <= 0 || x.rows() <= 0 || !(x.time_us() > 0) ||
        !std::isfinite(x.time_us()))
      return Bad(path, f, "indices, row_width, rows and time_us must be positive");
  }
  for (int i = 0; i < p.collectives_size(); ++i) {
    const proto::CollectiveParams& c = p.collectives(i);
    const std::string f = "collectives[" + std::to_string(i) + "]";
    if (c.collective().empty()) return Bad(path, f + ".collective", "is missing");
    MIMIC_RETURN_IF_ERROR(CheckNonNegative(path, f + ".alpha_us", c.alpha_us()));
    if (!(c.bus_bytes_per_s() > 0)) return Bad(path, f + ".bus_bytes_per_s", "must be positive");
    if (c.ranks() < 0) return Bad(path, f + ".ranks", "must be >= 0");
  }
  for (const char* field : {"peak_flops", "memory_bandwidth_bytes_per_s"})
    if (!p.sources().count(field))
      return Bad(path, std::string("sources.") + field,
                 "every platform must say where its figures come from");
  return Status::Ok();
}

double ColdDispatchUs(const proto::CpuOverheads& overheads, bool view, int distinct_ops,
                      double bytes) {
  const auto& in_turn =
      view && !overheads.in_turn_views().empty() ? overheads.in_turn_views() : overheads.in_turn();
  const auto& traffic = view && !overheads.after_traffic_views().empty()
                            ? overheads.after_traffic_views()
                            : overheads.after_traffic();
  return std::max(LogInterpolate(in_turn, distinct_ops), LogInterpolate(traffic, bytes));
}

Result<proto::Platform> ParsePlatform(const std::string& name, std::string_view json) {
  proto::Platform p;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &p, options);
  if (!st.ok())
    return Status::InvalidInput(name + ": not a platform: " + std::string(st.message()));
  MIMIC_RETURN_IF_ERROR(CheckPlatform(name, p));
  return p;
}

Result<proto::Platform> LoadPlatform(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(FileContents contents, ReadFile(path));
  return ParsePlatform(path, contents.bytes.view());
}

std::vector<std::string> BuiltinPlatformNames() {
  std::vector<std::string> names;
  for (const BuiltinPlatform& b : BuiltinPlatforms()) names.emplace_back(b.name);
  return names;
}

Result<proto::Platform> FindPlatform(std::string_view name_or_path) {
  for (const BuiltinPlatform& b : BuiltinPlatforms())
    if (b.name == name_or_path)
      return ParsePlatform("builtin:platforms/" + std::string(b.name) + ".json", b.json);
  const std::string path(name_or_path);
  Result<proto::Platform> p = LoadPlatform(path);
  if (!p.ok() && p.status().code() == StatusCode::kNotFound) {
    std::string names;
    for (const std::string& n : BuiltinPlatformNames()) names += (names.empty() ? "" : ", ") + n;
    return Status::NotFound(path + ": no such platform file, and not a built-in platform (" +
                            names + ")");
  }
  return p;
}

std::string PlatformToJson(const proto::Platform& platform) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(platform, &out, options);
  return out;
}

double PeakFlops(const proto::Platform& p, std::string_view dtype, bool tensor_core) {
  auto it = p.peak_flops().find(std::string(dtype));
  if (it == p.peak_flops().end()) {
    if (dtype == "fp32") return 0;
    return PeakFlops(p, "fp32", tensor_core);
  }
  if (tensor_core && it->second.tensor_core() > 0) return it->second.tensor_core();
  if (it->second.no_tensor_core() > 0) return it->second.no_tensor_core();
  return it->second.tensor_core();
}

namespace {

// A GPU by what its deviceProperties say: every token must be among the name's (split at
// non-alphanumerics, upper case), the memory in [min_gb, max_gb) where recorded, and the SM
// count equal where both are known. First match wins, so the more specific rows come first.
struct DeviceRow {
  const char* platform;
  std::initializer_list<std::string_view> tokens;
  double min_gb, max_gb;
  int64_t sms;
};

const DeviceRow kDevices[] = {
    {"v100_16gb", {"V100"}, 0, 24, 80},
    {"v100", {"V100"}, 24, 1e9, 80},
    {"a100_40gb_pcie", {"A100", "PCIE"}, 0, 60, 108},
    {"a100_80gb_pcie", {"A100", "PCIE"}, 60, 1e9, 108},
    // SXM4 modules, including Meta's A100-PG509-200 (40 GB, 108 SMs).
    {"a100_40gb", {"A100"}, 0, 60, 108},
    {"a100_80gb", {"A100"}, 60, 1e9, 108},
    {"rtx_2080_ti", {"2080", "TI"}, 0, 1e9, 68},
    {"t4", {"T4"}, 0, 1e9, 40},
    {"a10g", {"A10G"}, 0, 1e9, 80},
    {"l4", {"L4"}, 0, 1e9, 58},
    {"h100_pcie", {"H100", "PCIE"}, 0, 1e9, 114},
    {"h100_sxm", {"H100"}, 0, 1e9, 132},
    {"h200", {"H200"}, 0, 1e9, 132},
    {"b200", {"B200"}, 0, 1e9, 148},
    // PyTorch on ROCm sees each of the MI250X's two dies (GCDs) as a device of 110 CUs.
    {"mi250x", {"MI250X"}, 0, 1e9, 110},
};

std::set<std::string> NameTokens(std::string_view name) {
  std::set<std::string> tokens;
  std::string cur;
  for (char ch : name) {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      cur += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    } else if (!cur.empty()) {
      tokens.insert(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) tokens.insert(cur);
  return tokens;
}

// Memory in GB: the recorded figure, else a "16GB"-style token of the name, else 0.
double MemoryGb(const DeviceProperties& d, const std::set<std::string>& tokens) {
  if (d.memory_bytes > 0) return d.memory_bytes / 1e9;
  for (const std::string& t : tokens)
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "GB") == 0 &&
        std::isdigit(static_cast<unsigned char>(t[0])))
      return std::atof(t.c_str());
  return 0;
}

}  // namespace

Result<std::string> PlatformForDevice(const DeviceProperties& device) {
  const std::set<std::string> tokens = NameTokens(device.name);
  const double gb = MemoryGb(device, tokens);
  for (const DeviceRow& r : kDevices) {
    bool all = true;
    for (std::string_view t : r.tokens) all &= tokens.count(std::string(t)) > 0;
    if (!all) continue;
    if (gb > 0 && (gb < r.min_gb || gb >= r.max_gb)) continue;
    if (device.sm_count > 0 && r.sms > 0 && device.sm_count != r.sms) continue;
    return std::string(r.platform);
  }
  char what[160];
  std::snprintf(what, sizeof what, " (%.0f GB, %lld SMs)", gb,
                static_cast<long long>(device.sm_count));
  return Status::InvalidInput("no built-in platform for the GPU \"" + device.name + "\"" + what +
                              " that the Kineto trace's deviceProperties describe: give one with "
                              "--platform NAME|FILE.json");
}

}  // namespace mimic::model
