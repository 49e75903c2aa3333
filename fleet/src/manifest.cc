#include "mimic/fleet/manifest.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <cmath>
#include <set>

#include "mimic/base/file.h"

namespace mimic::fleet {
namespace {

// Collects the first error of protobuf's text parser with its line and column.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (!message_.empty()) return;
    message_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// A failure that names the manifest and the field: "fleet.json: classes[1].trace: ...".
class Checker {
 public:
  explicit Checker(const std::string& path) : path_(path) {}
  Status Bad(const std::string& field, const std::string& what) const {
    return Status::InvalidInput(path_ + ": " + field + ": " + what);
  }
  Status Missing(const std::string& field, const std::string& what) const {
    return Status::NotFound(path_ + ": " + field + ": " + what);
  }

 private:
  const std::string& path_;
};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Resolves `*path` against `dir` (unless absolute) and checks that the file exists.
Status ResolveFile(const Checker& c, const std::string& field, const std::string& dir, std::string* path) {
  if (path->empty()) return c.Bad(field, "is missing");
  if ((*path)[0] != '/' && !dir.empty() && dir != ".") *path = dir + "/" + *path;
  if (!IsFile(*path)) return c.Missing(field, "no such file: " + *path);
  return Status::Ok();
}

Status CheckDistribution(const Checker& c, const std::string& field, const proto::Distribution& d) {
  auto positive = [&](const std::string& name, double v) {
    return std::isfinite(v) && v > 0 ? Status::Ok() : c.Bad(field + "." + name, "must be > 0, got " + Num(v));
  };
  switch (d.kind_case()) {
    case proto::Distribution::kFixed:
      return positive("fixed", d.fixed());
    case proto::Distribution::kExponential:
      return positive("exponential.mean", d.exponential().mean());
    case proto::Distribution::kLognormal:
      MIMIC_RETURN_IF_ERROR(positive("lognormal.median", d.lognormal().median()));
      if (!std::isfinite(d.lognormal().sigma()) || d.lognormal().sigma() < 0)
        return c.Bad(field + ".lognormal.sigma", "must be >= 0, got " + Num(d.lognormal().sigma()));
      return Status::Ok();
    case proto::Distribution::kUniform:
      MIMIC_RETURN_IF_ERROR(positive("uniform.min", d.uniform().min()));
      if (!(d.uniform().max() >= d.uniform().min()))
        return c.Bad(field + ".uniform.max", "must be >= uniform.min, got " + Num(d.uniform().max()));
      return Status::Ok();
    case proto::Distribution::KIND_NOT_SET:
      break;
  }
  return c.Bad(field, "is missing (fixed, exponential, lognormal or uniform)");
}

Status Check(const std::string& path, const std::string& dir, proto::FleetManifest& m) {
  const Checker c(path);
  if (m.format() != 1) return c.Bad("format", "must be 1, got " + std::to_string(m.format()));

  if (m.inventory().empty()) return c.Bad("inventory", "is empty: at least one GPU pool is needed");
  // The simulator keeps a job's allowed pools in a 32-bit mask.
  if (m.inventory_size() > 32) return c.Bad("inventory", "more than 32 pools");
  int64_t largest_pool = 0;
  for (int i = 0; i < m.inventory_size(); ++i) {
    const proto::GpuPool& p = m.inventory(i);
    const std::string f = "inventory[" + std::to_string(i) + "]";
    if (p.gpu_type().empty()) return c.Bad(f + ".gpu_type", "is missing");
    if (p.nodes() <= 0) return c.Bad(f + ".nodes", "must be > 0, got " + std::to_string(p.nodes()));
    if (p.gpus_per_node() <= 0)
      return c.Bad(f + ".gpus_per_node", "must be > 0, got " + std::to_string(p.gpus_per_node()));
    if (p.nodes() > 1'000'000 || p.gpus_per_node() > 1024)
      return c.Bad(f, "more than 1,000,000 nodes or 1,024 GPUs per node");
    largest_pool = std::max(largest_pool, p.nodes() * p.gpus_per_node());
  }

  std::set<std::string> tenants;
  for (int i = 0; i < m.tenants_size(); ++i) {
    const std::string f = "tenants[" + std::to_string(i) + "]";
    if (m.tenants(i).name().empty()) return c.Bad(f + ".name", "is missing");
    if (!tenants.insert(m.tenants(i).name()).second)
      return c.Bad(f + ".name", "duplicate tenant '" + m.tenants(i).name() + "'");
    if (m.tenants(i).quota_gpus() < 0)
      return c.Bad(f + ".quota_gpus", "must be >= 0, got " + std::to_string(m.tenants(i).quota_gpus()));
  }

  const bool poisson = m.arrivals().has_poisson();
  if (m.classes().empty()) return c.Bad("classes", "is empty: at least one workload class is needed");
  std::set<std::string> names;
  int with_job_share = 0, with_hour_share = 0;
  double share_sum = 0;
  for (int i = 0; i < m.classes_size(); ++i) {
    proto::WorkloadClass& k = *m.mutable_classes(i);
    const std::string f = "classes[" + std::to_string(i) + "]";
    if (k.name().empty()) return c.Bad(f + ".name", "is missing");
    if (!names.insert(k.name()).second) return c.Bad(f + ".name", "duplicate class '" + k.name() + "'");
    MIMIC_RETURN_IF_ERROR(ResolveFile(c, f + ".trace", dir, k.mutable_trace()));
    if (!k.kineto().empty()) MIMIC_RETURN_IF_ERROR(ResolveFile(c, f + ".kineto", dir, k.mutable_kineto()));
    if (k.gpus_per_job() <= 0)
      return c.Bad(f + ".gpus_per_job", "must be > 0, got " + std::to_string(k.gpus_per_job()));
    if (k.gpus_per_job() > largest_pool)
      return c.Bad(f + ".gpus_per_job", std::to_string(k.gpus_per_job()) +
                                            " GPUs do not fit the largest pool (" + std::to_string(largest_pool) + ")");
    for (const auto& [name, share] : {std::pair{"job_share", k.job_share()}, {"gpu_hour_share", k.gpu_hour_share()}})
      if (!std::isfinite(share) || share < 0) return c.Bad(f + "." + name, "must be >= 0, got " + Num(share));
    if (k.job_share() > 0 && k.gpu_hour_share() > 0)
      return c.Bad(f, "give job_share or gpu_hour_share, not both");
    with_job_share += k.job_share() > 0;
    with_hour_share += k.gpu_hour_share() > 0;
    share_sum += k.job_share() + k.gpu_hour_share();
    if (poisson || k.has_iterations()) MIMIC_RETURN_IF_ERROR(CheckDistribution(c, f + ".iterations", k.iterations()));
    if (k.platform().empty()) return c.Bad(f + ".platform", "is missing: the platform the trace was captured on");
    for (int j = 0; j < k.allowed_gpu_types_size(); ++j)
      if (k.allowed_gpu_types(j).empty())
        return c.Bad(f + ".allowed_gpu_types[" + std::to_string(j) + "]", "is empty");
    if (!k.tenant().empty() && !tenants.count(k.tenant()))
      return c.Bad(f + ".tenant", "unknown tenant '" + k.tenant() + "'");
  }
  if (with_job_share > 0 && with_hour_share > 0)
    return c.Bad("classes", "mixes job_share and gpu_hour_share: use one for every class");
  if (poisson && share_sum <= 0)
    return c.Bad("classes", "no class has a job_share or gpu_hour_share > 0 (needed for Poisson arrivals)");

  switch (m.arrivals().source_case()) {
    case proto::Arrivals::kPoisson: {
      const proto::PoissonArrivals& p = m.arrivals().poisson();
      if (!std::isfinite(p.jobs_per_hour()) || p.jobs_per_hour() <= 0)
        return c.Bad("arrivals.poisson.jobs_per_hour", "must be > 0, got " + Num(p.jobs_per_hour()));
      // The simulation holds every job in memory (about 200 bytes each).
      if (p.num_jobs() <= 0 || p.num_jobs() > 10'000'000)
        return c.Bad("arrivals.poisson.num_jobs", "must be in 1..10000000, got " + std::to_string(p.num_jobs()));
      break;
    }
    case proto::Arrivals::kJobLog: {
      proto::JobLog& log = *m.mutable_arrivals()->mutable_job_log();
      MIMIC_RETURN_IF_ERROR(ResolveFile(c, "arrivals.job_log.path", dir, log.mutable_path()));
      for (const auto& [key, map] : {std::pair{"class_by_vc", &log.class_by_vc()}, {"class_by_user", &log.class_by_user()}})
        for (const auto& [from, to] : *map)
          if (!names.count(to))
            return c.Bad("arrivals.job_log." + std::string(key) + "[\"" + from + "\"]", "unknown class '" + to + "'");
      if (!log.default_class().empty() && !names.count(log.default_class()))
        return c.Bad("arrivals.job_log.default_class", "unknown class '" + log.default_class() + "'");
      if (!std::isfinite(log.time_unit_s()) || log.time_unit_s() < 0)
        return c.Bad("arrivals.job_log.time_unit_s", "must be > 0, got " + Num(log.time_unit_s()));
      if (log.time_unit_s() == 0) log.set_time_unit_s(1);
      break;
    }
    case proto::Arrivals::SOURCE_NOT_SET:
      return c.Bad("arrivals", "is missing: give poisson or job_log");
  }

  for (int i = 0; i < m.simulation().policies_size(); ++i) {
    const std::string& p = m.simulation().policies(i);
    if (p != "fifo" && p != "sjf")
      return c.Bad("simulation.policies[" + std::to_string(i) + "]", "unknown policy '" + p + "' (fifo, sjf)");
  }
  if (m.simulation().policies().empty()) {
    m.mutable_simulation()->add_policies("fifo");
    m.mutable_simulation()->add_policies("sjf");
  }
  if (m.simulation().timeline_points() < 0 || m.simulation().timeline_points() > 100'000)
    return c.Bad("simulation.timeline_points", "must be in 0..100000, got " + std::to_string(m.simulation().timeline_points()));
  if (m.simulation().timeline_points() == 0) m.mutable_simulation()->set_timeline_points(200);

  if (!std::isfinite(m.target_utilization()) || m.target_utilization() < 0 || m.target_utilization() > 1)
    return c.Bad("target_utilization", "must be in (0, 1], got " + Num(m.target_utilization()));
  if (m.target_utilization() == 0) m.set_target_utilization(1);
  for (const auto& [platform, price] : m.price_per_gpu_hour())
    if (!std::isfinite(price) || price < 0)
      return c.Bad("price_per_gpu_hour[\"" + platform + "\"]", "must be >= 0, got " + Num(price));
  return Status::Ok();
}

}  // namespace

Result<LoadedManifest> ParseManifest(const std::string& path, std::string_view text, const std::string& dir) {
  LoadedManifest out;
  out.path = path;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    auto st = google::protobuf::util::JsonStringToMessage(std::string(text), &out.manifest, options);
    if (!st.ok()) {
      // protobuf appends the text around a syntax error and a caret under it on further lines;
      // errors are one line, with the byte offset found from that snippet when it is unique.
      const std::string full(st.message());
      const size_t nl = full.find('\n');
      std::string where = path;
      if (nl != std::string::npos) {
        const size_t nl2 = full.find('\n', nl + 1);
        const std::string snippet = full.substr(nl + 1, nl2 == std::string::npos ? std::string::npos : nl2 - nl - 1);
        const size_t caret = nl2 == std::string::npos ? std::string::npos : full.find('^', nl2);
        const size_t at = snippet.empty() ? std::string_view::npos : text.find(snippet);
        if (snippet.empty() && full.rfind("Unexpected end of string", 0) == 0)
          where += ":byte " + std::to_string(text.size());
        else if (at != std::string_view::npos && text.find(snippet, at + 1) == std::string_view::npos &&
                 caret != std::string::npos)
          where += ":byte " + std::to_string(at + std::min(caret - nl2 - 1, snippet.size()));
      }
      return Status::InvalidInput(where + ": " + full.substr(0, nl));
    }
  } else {
    google::protobuf::TextFormat::Parser parser;
    FirstError errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(std::string(text), &out.manifest))
      return Status::InvalidInput(path + ": " + (errors.message().empty() ? "not a fleet manifest" : errors.message()));
  }
  MIMIC_RETURN_IF_ERROR(Check(path, dir, out.manifest));
  return out;
}

Result<LoadedManifest> LoadManifest(const std::string& path) {
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  const size_t slash = path.find_last_of('/');
  MIMIC_ASSIGN_OR_RETURN(LoadedManifest m, ParseManifest(path, file.bytes.view(), slash == std::string::npos ? "." : path.substr(0, slash)));
  m.sha256 = file.sha256;
  return m;
}

int64_t InventoryGpus(const proto::FleetManifest& manifest) {
  int64_t n = 0;
  for (const proto::GpuPool& p : manifest.inventory()) n += p.nodes() * p.gpus_per_node();
  return n;
}

}  // namespace mimic::fleet
