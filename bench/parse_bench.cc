// mimic_parse_bench: throughput and peak memory of the trace readers (mimic::eg).
//
//   mimic_parse_bench FILE [FILE...] [--reps N] [--kind et|kineto|kineto-alone|auto] [--json OUT]
//
// For each FILE (plain or gzip JSON):
//  * Throughput. The file is read and decompressed once, outside the timing (mimic::ReadFile).
//    One untimed warm-up parse, then N timed repetitions of parse + normalize of the in-memory
//    JSON on this thread: eg::ParseExecutionTrace for execution traces (the normalized
//    proto::Workload: ops sorted by id, tensor table, segments), eg::ParseKinetoTrace for Kineto
//    traces (--kind kineto-alone: with the host ops' arguments, then eg::BuildKinetoWorkload, the
//    workload of a Kineto trace alone; its two parts' thread CPU times also go to stderr).
//    Destroying the result is not timed. Reported: median, p10 and p90 of MB/s of decompressed
//    JSON (1 MB = 10^6 bytes) by the wall clock, and the median by this thread's CPU time
//    (CLOCK_THREAD_CPUTIME_ID), which leaves out the time the thread waited for a core on a
//    loaded machine.
//  * Peak memory. The decompressed JSON is written to a temporary plain file; a child process
//    (fork + exec of this binary, so that its heap and its VmHWM start clean) parses two tiny
//    built-in documents (so that the readers' code pages are resident), records VmRSS, streams
//    that file through the reader (mimic::InputStream: the JSON is never held whole) and records
//    VmHWM. Reported: (VmHWM - starting VmRSS) / JSON bytes: the reader's window, the parser's
//    working memory and the finished result. "cold" is the same from before the warm-up (adds
//    ~2-3 MB: code pages, OpenSSL initialization). "retained" is VmRSS just after the parse,
//    with the result still alive.
//  * The floor: in the same run, alternating with the reader's repetitions, simdjson's DOM parse
//    of the whole in-memory document (thread CPU time), the parser that the readers are built
//    on. "reader / floor" is the reader's median CPU time over the floor's: how much the reader
//    adds to simdjson, a figure that depends far less on the machine than MB/s does.
//  * For execution traces, also the end-to-end eg::LoadWorkload(FILE) time (read + gunzip +
//    SHA-256 + parse + normalize + parent-link check), for context; not a target.
//
// Targets (parse-speed issue): >= 500 MB/s on one core; peak memory <= 1.5x the JSON size.
// Output: one markdown table row per file on stdout; --json OUT writes the figures as JSON.

#include <fcntl.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mimic/base/file.h"
#include "mimic/base/json_writer.h"
#include "mimic/base/stats.h"
#include "mimic/eg/execution_trace.h"
#include "mimic/eg/kineto.h"
#include "mimic/eg/workload.h"

namespace {

constexpr double kTargetMBps = 500.0;
constexpr double kTargetMemRatio = 1.5;

enum class Kind { kAuto, kEt, kKineto, kKinetoAlone };

const char* KindName(Kind k) {
  return k == Kind::kKineto ? "kineto" : k == Kind::kKinetoAlone ? "kineto-alone" : "et";
}

// The workload of a Kineto trace alone (what inspect and predict read): the parse with the host
// ops' arguments, then the build.
mimic::Result<mimic::proto::Workload> ParseKinetoAlone(const std::string& path,
                                                       mimic::InputStream& in) {
  MIMIC_ASSIGN_OR_RETURN(mimic::eg::KinetoTrace t,
                         mimic::eg::ParseKinetoTrace(path, in, {.inputs = true}));
  return mimic::eg::BuildKinetoWorkload(path, std::move(t));
}

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// This thread's CPU time in ms.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"), or -1.
long StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::strtol(line.c_str() + n + 1, nullptr, 10);
  return -1;
}

Kind Detect(std::string_view json) {
  // Kineto traces are Chrome trace JSON: a top-level "traceEvents" array. An execution trace
  // never has that key; its ops are under "nodes".
  const std::string_view probe = json.substr(0, std::min<size_t>(json.size(), 1 << 20));
  if (probe.find("\"traceEvents\"") != std::string_view::npos) return Kind::kKineto;
  if (json.find("\"traceEvents\"") != std::string_view::npos &&
      json.find("\"nodes\"") == std::string_view::npos)
    return Kind::kKineto;
  return Kind::kEt;
}

// Parses once; returns the number of ops (ET) or kept events (Kineto), or an error message.
struct ParseOutcome {
  bool ok = false;
  std::string error;
  int64_t items = 0;
};

ParseOutcome ParseOnce(Kind kind, const std::string& path, std::string_view json) {
  ParseOutcome out;
  if (kind == Kind::kEt) {
    auto w = mimic::eg::ParseExecutionTrace(path, json);
    if (!w.ok()) return {false, w.status().ToString(), 0};
    out.items = w->ops_size();
  } else if (kind == Kind::kKinetoAlone) {
    auto in = mimic::InputStream::FromMemory(path, json);
    auto w = ParseKinetoAlone(path, *in);
    if (!w.ok()) return {false, w.status().ToString(), 0};
    out.items = w->ops_size();
  } else {
    auto t = mimic::eg::ParseKinetoTrace(path, json);
    if (!t.ok()) return {false, t.status().ToString(), 0};
    out.items = static_cast<int64_t>(t->events.size());
  }
  out.ok = true;
  return out;
}

struct Timing {
  double wall_ms = 0, cpu_ms = 0;
  double build_cpu_ms = 0;  // kineto-alone: the part of cpu_ms that BuildKinetoWorkload took
};

// Times one parse; the result is destroyed after the clocks stop.
Timing TimedParse(Kind kind, const std::string& path, std::string_view json) {
  Timing t;
  const double cpu0 = ThreadCpuMs();
  const auto t0 = Clock::now();
  bool ok = false;
  if (kind == Kind::kEt) {
    auto w = mimic::eg::ParseExecutionTrace(path, json);
    t.wall_ms = MsSince(t0);
    t.cpu_ms = ThreadCpuMs() - cpu0;
    ok = w.ok();
  } else if (kind == Kind::kKinetoAlone) {  // ParseKinetoAlone, with the build timed apart
    auto in = mimic::InputStream::FromMemory(path, json);
    auto trace = mimic::eg::ParseKinetoTrace(path, *in, {.inputs = true});
    const double cpu1 = ThreadCpuMs();
    if (!trace.ok()) std::exit(1);
    auto w = mimic::eg::BuildKinetoWorkload(path, std::move(*trace));
    t.wall_ms = MsSince(t0);
    t.cpu_ms = ThreadCpuMs() - cpu0;
    t.build_cpu_ms = ThreadCpuMs() - cpu1;
    ok = w.ok();
  } else {
    auto k = mimic::eg::ParseKinetoTrace(path, json);
    t.wall_ms = MsSince(t0);
    t.cpu_ms = ThreadCpuMs() - cpu0;
    ok = k.ok();
  }
  if (!ok) std::exit(1);
  return t;
}

// simdjson's DOM parse of the whole document, in thread CPU ms (the JSON is padded in place).
double FloorCpuMs(simdjson::dom::parser& parser, std::string_view json) {
  const double cpu0 = ThreadCpuMs();
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size(), false).get(doc) != simdjson::SUCCESS) std::exit(1);
  return ThreadCpuMs() - cpu0;
}

// Tiny documents of both kinds, parsed in the child before its starting RSS is taken, so that
// the code pages of the readers, libprotobuf and simdjson are already resident and the figure
// is the memory the input itself costs.
constexpr std::string_view kTinyEt =
    R"J({"schema": "1.1.1-chakra.0.0.4", "pid": 1, "time": "t", "nodes": [{"id": 2, "name": "aten::relu",)J"
    R"J( "ctrl_deps": 1, "inputs": {"values": [[3, 4, 0, 4, 4, "cpu"], [1, 2], 0.5, "<None>"], "shapes":)J"
    R"J( [[2, 2], [[], []], [], []], "types": ["Tensor(float)", "GenericList[Int,Int]", "Double", "None"],)J"
    R"J( "strides": [[2, 1], [[], []], [], []]}, "outputs": {"values": [[5, 6, 0, 4, 4, "cpu"]], "shapes":)J"
    R"J( [[2, 2]], "types": ["Tensor(float)"], "strides": [[2, 1]]}, "attrs": [{"name": "rf_id", "type":)J"
    R"J( "uint64", "value": 7}, {"name": "op_schema", "type": "string", "value": "aten::relu(Tensor self) -> Tensor"}]},)J"
    R"J( {"id": 1, "name": "ProfilerStep#1", "ctrl_deps": 0, "inputs": [], "outputs": [], "attrs": []}]})J";
constexpr std::string_view kTinyKineto =
    R"J({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1,)J"
    R"J( "tid": 1, "ts": 1.5, "dur": 2.0, "args": {"External id": 7, "Record function id": 7}}]})J";

void WarmUpReaders() {
  (void)mimic::Sha256Hex("warm-up");  // ReadFile hashes what it reads; OpenSSL initializes once
  for (std::string_view doc : {kTinyEt, kTinyKineto}) {
    mimic::PaddedBuffer buf(doc.size());
    std::memcpy(buf.mutable_data(), doc.data(), doc.size());
    const mimic::Status st = doc == kTinyEt
                                 ? mimic::eg::ParseExecutionTrace("warm-up", buf.view()).status()
                                 : mimic::eg::ParseKinetoTrace("warm-up", buf.view()).status();
    if (!st.ok()) std::fprintf(stderr, "mimic_parse_bench: warm-up: %s\n", st.ToString().c_str());
  }
}

// The child's side of the memory measurement: prints "cold_kb start_kb hwm_kb end_kb" (cold:
// VmRSS before the warm-up; start: after it).
int MemChild(const std::string& path, Kind kind) {
  const long cold = StatusKb("VmRSS");
  WarmUpReaders();
  const long start = StatusKb("VmRSS");
  // The readers stream the file: the JSON is never held whole.
  auto in = mimic::InputStream::Open(path);
  if (!in.ok()) {
    std::fprintf(stderr, "%s\n", in.status().ToString().c_str());
    return 1;
  }
  long end = -1;
  if (kind == Kind::kEt) {
    auto w = mimic::eg::ParseExecutionTrace(path, **in);
    if (!w.ok()) return 1;
    end = StatusKb("VmRSS");  // reader window + finished workload
  } else if (kind == Kind::kKinetoAlone) {
    auto w = ParseKinetoAlone(path, **in);
    if (!w.ok()) return 1;
    end = StatusKb("VmRSS");  // the finished workload (the trace is freed by the build)
  } else {
    auto t = mimic::eg::ParseKinetoTrace(path, **in);
    if (!t.ok()) return 1;
    end = StatusKb("VmRSS");
  }
  // The kernel's RSS counters are per-thread caches synced every few dozen faults, so at small
  // sizes VmHWM can read a little below the VmRSS taken a moment earlier.
  const long hwm = std::max(StatusKb("VmHWM"), end);
  std::printf("%ld %ld %ld %ld\n", cold, start, hwm, end);
  return 0;
}

struct MemResult {
  long cold_kb = -1, start_kb = -1, hwm_kb = -1, end_kb = -1;
  bool ok() const { return start_kb >= 0 && hwm_kb >= 0; }
};

MemResult MeasureMemory(const char* self, std::string_view json, Kind kind) {
  MemResult r;
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/mimic_parse_bench.XXXXXX";
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) return r;
  size_t done = 0;
  while (done < json.size()) {
    const ssize_t n = write(fd, json.data() + done, json.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done != json.size()) {
    unlink(tmpl.c_str());
    return r;
  }
  int pipefd[2];
  if (pipe(pipefd) != 0) {
    unlink(tmpl.c_str());
    return r;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], STDOUT_FILENO);
    close(pipefd[0]);
    close(pipefd[1]);
    const char* args[] = {self, "--mem-child", tmpl.c_str(), KindName(kind), nullptr};
    execv("/proc/self/exe", const_cast<char* const*>(args));
    _exit(127);
  }
  close(pipefd[1]);
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  unlink(tmpl.c_str());
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    std::sscanf(out.c_str(), "%ld %ld %ld %ld", &r.cold_kb, &r.start_kb, &r.hwm_kb, &r.end_kb);
  return r;
}

struct FileResult {
  std::string path;
  Kind kind = Kind::kEt;
  size_t disk_bytes = 0, json_bytes = 0;
  int64_t items = 0;
  int reps = 0;
  std::vector<double> ms;        // per repetition, wall clock
  std::vector<double> mbps;      // per repetition, wall clock
  std::vector<double> cpu_mbps;  // per repetition, thread CPU time
  std::vector<double> cpu_ms;    // per repetition, thread CPU time
  std::vector<double> floor_ms;  // simdjson's DOM parse, per repetition, thread CPU time
  std::vector<double> build_cpu_ms;  // kineto-alone: BuildKinetoWorkload's part of cpu_ms
  MemResult mem;
  std::optional<double> load_ms;  // median end-to-end LoadWorkload, ET only
  // simdjson's DOM parse of the whole document: MB/s by CPU time, and the reader's CPU time
  // over it (both medians).
  double floor_mbps() const {
    return static_cast<double>(json_bytes) / 1e6 / (mimic::Median(floor_ms) / 1e3);
  }
  double floor_ratio() const { return mimic::Median(cpu_ms) / mimic::Median(floor_ms); }
  double mem_ratio() const {
    return mem.ok() ? (mem.hwm_kb - mem.start_kb) * 1024.0 / static_cast<double>(json_bytes) : -1;
  }
  double cold_ratio() const {
    return mem.ok() ? (mem.hwm_kb - mem.cold_kb) * 1024.0 / static_cast<double>(json_bytes) : -1;
  }
  double end_ratio() const {
    return mem.ok() && mem.end_kb >= 0 ? (mem.end_kb - mem.start_kb) * 1024.0 / static_cast<double>(json_bytes) : -1;
  }
};

std::string Basename(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

int Usage() {
  std::fprintf(
      stderr,
      "usage: mimic_parse_bench FILE [FILE...] [--reps N] [--kind et|kineto|kineto-alone|auto] "
      "[--json OUT]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string_view(argv[1]) == "--mem-child")
    return MemChild(argv[2], std::string_view(argv[3]) == "kineto"         ? Kind::kKineto
                             : std::string_view(argv[3]) == "kineto-alone" ? Kind::kKinetoAlone
                                                                           : Kind::kEt);

  std::vector<std::string> files;
  int reps = 20;
  Kind forced = Kind::kAuto;
  std::string json_out;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) return Usage();
    } else if (a == "--kind" && i + 1 < argc) {
      const std::string_view k = argv[++i];
      if (k == "et") forced = Kind::kEt;
      else if (k == "kineto") forced = Kind::kKineto;
      else if (k == "kineto-alone")
        forced = Kind::kKinetoAlone;
      else if (k == "auto") forced = Kind::kAuto;
      else return Usage();
    } else if (a == "--json" && i + 1 < argc) {
      json_out = argv[++i];
    } else if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return Usage();
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) return Usage();

  std::printf(
      "| file | kind | gz MB | JSON MB | ops/events | median MB/s | p10 MB/s | p90 MB/s | "
      "median ms | CPU MB/s | simdjson DOM CPU MB/s | reader / floor | peak mem / JSON | "
      "(cold) | retained / JSON | LoadWorkload ms | >=%.0f MB/s | <=%.1fx mem |\n",
      kTargetMBps, kTargetMemRatio);
  std::printf(
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
  std::fflush(stdout);

  std::vector<FileResult> results;
  int failures = 0;
  for (const std::string& path : files) {
    FileResult r;
    r.path = path;
    r.reps = reps;
    auto file = mimic::ReadFile(path);
    if (!file.ok()) {
      std::fprintf(stderr, "mimic_parse_bench: %s\n", file.status().ToString().c_str());
      ++failures;
      continue;
    }
    const std::string_view json = file->bytes.view();
    r.disk_bytes = file->disk_size;
    r.json_bytes = json.size();
    r.kind = forced == Kind::kAuto ? Detect(json) : forced;

    // Warm-up (also validates the input and counts what it holds).
    const ParseOutcome first = ParseOnce(r.kind, path, json);
    if (!first.ok) {
      std::fprintf(stderr, "mimic_parse_bench: %s\n", first.error.c_str());
      ++failures;
      continue;
    }
    r.items = first.items;
    simdjson::dom::parser floor_parser;
    FloorCpuMs(floor_parser, json);  // warm-up: allocates the parser's buffers
    for (int i = 0; i < reps; ++i) {
      r.floor_ms.push_back(FloorCpuMs(floor_parser, json));
      const Timing t = TimedParse(r.kind, path, json);
      r.cpu_ms.push_back(t.cpu_ms);
      if (r.kind == Kind::kKinetoAlone) r.build_cpu_ms.push_back(t.build_cpu_ms);
      r.ms.push_back(t.wall_ms);
      r.mbps.push_back(static_cast<double>(r.json_bytes) / 1e6 / (t.wall_ms / 1e3));
      r.cpu_mbps.push_back(static_cast<double>(r.json_bytes) / 1e6 / (t.cpu_ms / 1e3));
    }
    if (r.kind == Kind::kEt) {
      std::vector<double> load;
      for (int i = 0; i < std::min(reps, 5); ++i) {
        const auto t0 = Clock::now();
        auto w = mimic::eg::LoadWorkload(path);
        load.push_back(MsSince(t0));
        if (!w.ok()) break;
      }
      r.load_ms = mimic::Median(load);
    }
    r.mem = MeasureMemory(argv[0], json, r.kind);

    const double med = mimic::Median(r.mbps);
    char load[32] = "-";
    if (r.load_ms) std::snprintf(load, sizeof(load), "%.1f", *r.load_ms);
    std::printf(
        "| %s | %s | %.2f | %.2f | %lld | %.0f | %.0f | %.0f | %.1f | %.0f | %.0f | %.2fx "
        "| %.2fx | %.2fx | %.2fx | %s | %s | %s |\n",
        Basename(path).c_str(), KindName(r.kind), r.disk_bytes / 1e6, r.json_bytes / 1e6,
        static_cast<long long>(r.items), med, mimic::Percentile(r.mbps, 10),
        mimic::Percentile(r.mbps, 90), mimic::Median(r.ms), mimic::Median(r.cpu_mbps),
        r.floor_mbps(), r.floor_ratio(), r.mem_ratio(), r.cold_ratio(), r.end_ratio(), load,
        med >= kTargetMBps ? "yes" : "**no**",
        r.mem.ok() && r.mem_ratio() <= kTargetMemRatio ? "yes" : "**no**");
    if (r.kind == Kind::kKinetoAlone) {
      std::vector<double> parse_ms;
      for (int i = 0; i < reps; ++i) parse_ms.push_back(r.cpu_ms[i] - r.build_cpu_ms[i]);
      std::fprintf(stderr,
                   "%s: parse with arguments %.1f ms, build %.1f ms (thread CPU, medians)\n",
                   Basename(path).c_str(), mimic::Median(parse_ms), mimic::Median(r.build_cpu_ms));
    }
    std::fflush(stdout);
    results.push_back(std::move(r));
  }

  if (!json_out.empty()) {
    mimic::JsonWriter j;
    j.BeginObject();
    j.Key("targets").BeginObject();
    j.Key("min_mb_per_s").Double(kTargetMBps);
    j.Key("max_peak_mem_ratio").Double(kTargetMemRatio);
    j.EndObject();
    j.Key("files").BeginArray();
    for (const FileResult& r : results) {
      j.BeginObject();
      j.Key("path").String(r.path);
      j.Key("kind").String(KindName(r.kind));
      j.Key("disk_bytes").Int(static_cast<int64_t>(r.disk_bytes));
      j.Key("json_bytes").Int(static_cast<int64_t>(r.json_bytes));
      j.Key("items").Int(r.items);
      j.Key("reps").Int(r.reps);
      j.Key("mb_per_s").BeginObject();
      j.Key("median").Double(mimic::Median(r.mbps));
      j.Key("p10").Double(mimic::Percentile(r.mbps, 10));
      j.Key("p90").Double(mimic::Percentile(r.mbps, 90));
      j.Key("median_cpu_time").Double(mimic::Median(r.cpu_mbps));
      j.Key("simdjson_dom_median_cpu_time").Double(r.floor_mbps());
      j.EndObject();
      j.Key("parse_ms").BeginObject();
      j.Key("median").Double(mimic::Median(r.ms));
      j.Key("p10").Double(mimic::Percentile(r.ms, 10));
      j.Key("p90").Double(mimic::Percentile(r.ms, 90));
      j.EndObject();
      j.Key("memory").BeginObject();
      j.Key("cold_rss_kb").Int(r.mem.cold_kb);
      j.Key("start_rss_kb").Int(r.mem.start_kb);
      j.Key("peak_rss_kb").Int(r.mem.hwm_kb);
      j.Key("end_rss_kb").Int(r.mem.end_kb);
      j.Key("peak_ratio").Optional(r.mem.ok() ? std::optional<double>(r.mem_ratio()) : std::nullopt);
      j.Key("peak_ratio_incl_code_pages").Optional(r.mem.ok() ? std::optional<double>(r.cold_ratio()) : std::nullopt);
      j.Key("retained_ratio").Optional(r.mem.ok() ? std::optional<double>(r.end_ratio()) : std::nullopt);
      j.EndObject();
      j.Key("reader_over_simdjson_dom").Double(r.floor_ratio());
      j.Key("load_workload_ms").Optional(r.load_ms);
      j.EndObject();
    }
    j.EndArray();
    j.EndObject();
    std::ofstream out(json_out);
    out << j.str() << "\n";
    if (!out) {
      std::fprintf(stderr, "mimic_parse_bench: cannot write %s\n", json_out.c_str());
      return 1;
    }
  }
  return failures == 0 ? 0 : 1;
}
