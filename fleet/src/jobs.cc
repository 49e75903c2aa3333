#include "mimic/fleet/jobs.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <map>
#include <random>

#include "mimic/base/file.h"

namespace mimic::fleet {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits one CSV line into fields (RFC 4180 quotes, no embedded newlines). False on an
// unterminated quote.
bool SplitCsv(std::string_view line, std::vector<std::string>& fields) {
  fields.clear();
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      fields.emplace_back(Trim(cur));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (quoted) return false;
  fields.emplace_back(Trim(cur));
  return true;
}

bool ParseDouble(std::string_view s, double* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(*v);
}

// Seconds since the epoch of "YYYY-MM-DD HH:MM:SS" (or with a 'T'), UTC.
bool ParseDateTime(std::string_view s, double* v) {
  std::tm tm{};
  int y, mo, d, h = 0, mi = 0;
  double sec = 0;
  const std::string str(s);
  char sep = ' ';
  const int n = std::sscanf(str.c_str(), "%4d-%2d-%2d%c%2d:%2d:%lf", &y, &mo, &d, &sep, &h, &mi, &sec);
  if (n != 3 && n != 7) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec >= 61) return false;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  *v = static_cast<double>(timegm(&tm)) + sec;
  return true;
}

bool ParseState(std::string_view s, JobState* state) {
  static const std::map<std::string, JobState> kStates = {
      {"", JobState::kCompleted},          {"completed", JobState::kCompleted},
      {"pass", JobState::kCompleted},      {"passed", JobState::kCompleted},
      {"terminated", JobState::kCompleted}, {"success", JobState::kCompleted},
      {"failed", JobState::kFailed},       {"node_fail", JobState::kFailed},
      {"timeout", JobState::kFailed},      {"out_of_memory", JobState::kFailed},
      {"cancelled", JobState::kCancelled}, {"canceled", JobState::kCancelled},
      {"killed", JobState::kCancelled}};
  auto it = kStates.find(Lower(s));
  if (it == kStates.end()) return false;
  *state = it->second;
  return true;
}

}  // namespace

const char* JobStateName(JobState state) {
  switch (state) {
    case JobState::kCompleted: return "completed";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
  }
  return "?";
}

Result<std::vector<Job>> ReadJobLog(const proto::FleetManifest& manifest, JobLogStats* stats) {
  const std::string& path = manifest.arrivals().job_log().path();
  MIMIC_ASSIGN_OR_RETURN(FileContents file, ReadFile(path));
  return ParseJobLog(manifest, path, file.bytes.view(), stats);
}

Result<std::vector<Job>> ParseJobLog(const proto::FleetManifest& manifest, const std::string& path,
                                     std::string_view text, JobLogStats* stats) {
  const proto::JobLog& log = manifest.arrivals().job_log();
  const double unit = log.time_unit_s() > 0 ? log.time_unit_s() : 1;

  std::map<std::string, int> class_index;
  for (int i = 0; i < manifest.classes_size(); ++i) class_index[manifest.classes(i).name()] = i;
  auto class_of = [&](const std::string& name) {
    auto it = class_index.find(name);
    return it == class_index.end() ? -1 : it->second;
  };
  const int default_class = log.default_class().empty() ? -1 : class_of(log.default_class());

  std::vector<Job> jobs;
  JobLogStats local;
  std::vector<std::string> fields;
  int col_id = -1, col_user = -1, col_vc = -1, col_gpus = -1, col_submit = -1, col_duration = -1,
      col_iterations = -1, col_state = -1, col_class = -1;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    auto where = [&] { return path + ":" + std::to_string(line_no); };  // errors only
    if (Trim(line).empty()) continue;
    if (!SplitCsv(line, fields)) return Status::InvalidInput(where() + ": unterminated quote");
    if (col_gpus < 0 && col_submit < 0 && col_id < 0) {  // the header
      for (int i = 0; i < static_cast<int>(fields.size()); ++i) {
        const std::string h = Lower(fields[i]);
        int* col = h == "job_id" || h == "jobid" ? &col_id
                   : h == "user"                 ? &col_user
                   : h == "vc"                   ? &col_vc
                   : h == "gpu_num"              ? &col_gpus
                   : h == "submit_time"          ? &col_submit
                   : h == "duration"             ? &col_duration
                   : h == "iterations"           ? &col_iterations
                   : h == "state" || h == "status" ? &col_state
                   : h == "class"                ? &col_class
                                                 : nullptr;
        if (col && *col < 0) *col = i;
      }
      for (const auto& [name, col] : {std::pair{"job_id", col_id}, {"gpu_num", col_gpus}, {"submit_time", col_submit}})
        if (col < 0) return Status::InvalidInput(where() + ": header has no " + name + " column");
      if (col_duration < 0 && col_iterations < 0)
        return Status::InvalidInput(where() + ": header has neither a duration nor an iterations column");
      continue;
    }
    auto field = [&](int col) -> std::string_view {
      return col >= 0 && col < static_cast<int>(fields.size()) ? std::string_view(fields[col]) : std::string_view();
    };
    ++local.rows;
    Job job;
    double gpus;
    if (!ParseDouble(field(col_gpus), &gpus) || gpus < 0 || gpus != std::floor(gpus) || gpus > 1e6)
      return Status::InvalidInput(where() + ": gpu_num: not a GPU count: '" + std::string(field(col_gpus)) + "'");
    if (gpus == 0) {
      ++local.cpu_only_rows;
      continue;
    }
    job.gpus = static_cast<int64_t>(gpus);
    if (!ParseDouble(field(col_submit), &job.submit_s) && !ParseDateTime(field(col_submit), &job.submit_s))
      return Status::InvalidInput(where() + ": submit_time: not seconds or a YYYY-MM-DD HH:MM:SS time: '" +
                                  std::string(field(col_submit)) + "'");
    job.submit_s *= unit;
    if (!field(col_iterations).empty()) {
      if (!ParseDouble(field(col_iterations), &job.iterations) || job.iterations < 0)
        return Status::InvalidInput(where() + ": iterations: not a count >= 0: '" + std::string(field(col_iterations)) + "'");
    } else if (!ParseDouble(field(col_duration), &job.duration_s) || job.duration_s < 0) {
      return Status::InvalidInput(where() + ": duration: not seconds >= 0: '" + std::string(field(col_duration)) + "'");
    } else {
      job.duration_s *= unit;
    }
    if (!ParseState(field(col_state), &job.state))
      return Status::InvalidInput(where() + ": state: unknown job state '" + std::string(field(col_state)) + "'");
    job.cls = -1;
    if (!field(col_class).empty()) {
      job.cls = class_of(std::string(field(col_class)));
      if (job.cls < 0) return Status::InvalidInput(where() + ": class: unknown class '" + std::string(field(col_class)) + "'");
    }
    if (job.cls < 0) {
      auto it = log.class_by_vc().find(std::string(field(col_vc)));
      if (it != log.class_by_vc().end()) job.cls = class_of(it->second);
    }
    if (job.cls < 0) {
      auto it = log.class_by_user().find(std::string(field(col_user)));
      if (it != log.class_by_user().end()) job.cls = class_of(it->second);
    }
    if (job.cls < 0) job.cls = default_class;
    if (job.cls < 0)
      return Status::InvalidInput(where() + ": job " + std::string(field(col_id)) + " maps to no class (vc '" +
                                  std::string(field(col_vc)) + "', user '" + std::string(field(col_user)) +
                                  "'; set arrivals.job_log.default_class)");
    jobs.push_back(job);
  }
  if (col_gpus < 0) return Status::InvalidInput(path + ": no header row");
  if (jobs.empty()) return Status::InvalidInput(path + ": no GPU jobs (every row has gpu_num 0, or there are no rows)");
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.submit_s < b.submit_s; });
  const double t0 = jobs.front().submit_s;
  for (Job& j : jobs) j.submit_s -= t0;
  if (stats) *stats = local;
  return jobs;
}

double MeanOf(const proto::Distribution& d) {
  switch (d.kind_case()) {
    case proto::Distribution::kFixed: return d.fixed();
    case proto::Distribution::kExponential: return d.exponential().mean();
    case proto::Distribution::kLognormal:
      return d.lognormal().median() * std::exp(d.lognormal().sigma() * d.lognormal().sigma() / 2);
    case proto::Distribution::kUniform: return (d.uniform().min() + d.uniform().max()) / 2;
    case proto::Distribution::KIND_NOT_SET: break;
  }
  return 0;
}

std::vector<Job> PoissonJobs(const proto::FleetManifest& manifest, const std::vector<double>& job_share) {
  const proto::PoissonArrivals& p = manifest.arrivals().poisson();
  std::mt19937_64 rng(p.seed());
  std::exponential_distribution<double> gap(p.jobs_per_hour() / 3600.0);
  std::discrete_distribution<int> pick(job_share.begin(), job_share.end());
  std::vector<Job> jobs;
  jobs.reserve(p.num_jobs());
  double t = 0;
  for (int64_t i = 0; i < p.num_jobs(); ++i) {
    Job job;
    if (i > 0) t += gap(rng);
    job.submit_s = t;
    job.cls = pick(rng);
    const proto::WorkloadClass& k = manifest.classes(job.cls);
    job.gpus = k.gpus_per_job();
    const proto::Distribution& d = k.iterations();
    switch (d.kind_case()) {
      case proto::Distribution::kFixed: job.iterations = d.fixed(); break;
      case proto::Distribution::kExponential:
        job.iterations = std::exponential_distribution<double>(1 / d.exponential().mean())(rng);
        break;
      case proto::Distribution::kLognormal:
        job.iterations = std::lognormal_distribution<double>(std::log(d.lognormal().median()), d.lognormal().sigma())(rng);
        break;
      case proto::Distribution::kUniform:
        job.iterations = std::uniform_real_distribution<double>(d.uniform().min(), d.uniform().max())(rng);
        break;
      case proto::Distribution::KIND_NOT_SET: job.iterations = 0; break;
    }
    jobs.push_back(job);
  }
  return jobs;
}

}  // namespace mimic::fleet
