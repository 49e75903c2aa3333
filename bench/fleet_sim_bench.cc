// mimic_fleet_sim_bench: throughput of the fleet cluster simulator (mimic::fleet) on a
// synthetic 100,000-job log shaped like the public cluster logs (/work/shared/REFERENCE.md:
// Helios GPU jobs have a median of 206 s and a mean of 6,652 s, 3.72 GPUs per job; about 30% of
// Philly's jobs fail or are killed).
//
//   mimic_fleet_sim_bench [--jobs N] [--nodes N] [--gpus-per-node G] [--load RHO] [--reps R]
//
// The log is written as CSV and read back with fleet::ReadJobLog (timed separately), then each
// policy (FIFO, SJF; strict and with backfill) is simulated R times. Reported: the median over
// the repetitions of simulated jobs per second (wall time of fleet::Simulate), and the run's
// mean queueing delay and utilization, so that the load the figure was measured at is visible.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "mimic/base/file.h"
#include "mimic/base/stats.h"
#include "mimic/fleet/jobs.h"
#include "mimic/fleet/simulator.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t jobs = 100'000, nodes = 256, gpus_per_node = 8;
  double load = 0.8;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--jobs") jobs = std::atoll(v);
    else if (a == "--nodes") nodes = std::atoll(v);
    else if (a == "--gpus-per-node") gpus_per_node = std::atoll(v);
    else if (a == "--load") load = std::atof(v);
    else if (a == "--reps") reps = std::atoi(v);
    else {
      std::fprintf(stderr, "usage: %s [--jobs N] [--nodes N] [--gpus-per-node G] [--load RHO] [--reps R]\n", argv[0]);
      return 2;
    }
  }

  // Durations: lognormal with Helios' median 206 s and mean 6,652 s (sigma = sqrt(2 ln(mean /
  // median))). GPUs: 1..64 in powers of two, mean about 3.7.
  std::mt19937_64 rng(42), arrival_rng(43);
  const double sigma = std::sqrt(2 * std::log(6652.0 / 206.0));
  std::lognormal_distribution<double> duration(std::log(206.0), sigma);
  std::discrete_distribution<int> gpu_pow({50, 20, 15, 9, 4, 1.5, 0.5});  // 1, 2, 4, ..., 64
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> dur(jobs);
  std::vector<int64_t> gpus(jobs);
  double gpu_seconds = 0;
  for (int64_t i = 0; i < jobs; ++i) {
    dur[i] = std::min(duration(rng), 30.0 * 86400);
    gpus[i] = int64_t{1} << gpu_pow(rng);
    gpu_seconds += dur[i] * static_cast<double>(gpus[i]);
  }
  // Arrival rate for the requested load on this cluster.
  const double total_gpus = static_cast<double>(nodes * gpus_per_node);
  const double rate = load * total_gpus / (gpu_seconds / static_cast<double>(jobs));
  std::exponential_distribution<double> gap(rate);
  std::string csv = "job_id,user,vc,gpu_num,submit_time,duration,state\n";
  double t = 0;
  char line[160];
  for (int64_t i = 0; i < jobs; ++i) {
    t += gap(arrival_rng);
    const double r = u(rng);
    const char* state = r < 0.7 ? "COMPLETED" : r < 0.85 ? "FAILED" : "CANCELLED";
    std::snprintf(line, sizeof(line), "%lld,u%d,vc%d,%lld,%.3f,%.3f,%s\n", static_cast<long long>(i), static_cast<int>(i % 97),
                  static_cast<int>(i % 7), static_cast<long long>(gpus[i]), t, dur[i], state);
    csv += line;
  }
  const std::string path = "/tmp/mimic_fleet_sim_bench." + std::to_string(getpid()) + ".csv";
  if (!mimic::WriteFileAtomic(path, csv).ok()) return 1;
  mimic::proto::FleetManifest m;
  m.add_classes()->set_name("all");
  m.mutable_arrivals()->mutable_job_log()->set_path(path);
  m.mutable_arrivals()->mutable_job_log()->set_default_class("all");
  auto read_start = std::chrono::steady_clock::now();
  auto log = mimic::fleet::ReadJobLog(m);
  const double read_s = Seconds(read_start);
  std::remove(path.c_str());
  if (!log.ok()) {
    std::fprintf(stderr, "%s\n", log.status().message().c_str());
    return 1;
  }
  std::vector<mimic::fleet::SimJob> sim;
  for (const mimic::fleet::Job& j : *log) sim.push_back({j.submit_s, j.duration_s, j.gpus});
  std::printf("%lld jobs (%.2f MB CSV read in %.3f s: %.0f rows/s), cluster %lld x %lld GPUs, offered load %.2f\n\n",
              static_cast<long long>(jobs), csv.size() / 1e6, read_s, jobs / read_s, static_cast<long long>(nodes),
              static_cast<long long>(gpus_per_node), load);
  std::printf("| policy | backfill | median s | median jobs/s | mean queueing (h) | utilization |\n|---|---|---|---|---|---|\n");
  for (const auto policy : {mimic::fleet::Policy::kFifo, mimic::fleet::Policy::kSjf})
    for (const bool backfill : {false, true}) {
      mimic::fleet::SimOptions o;
      o.policy = policy;
      o.backfill = backfill;
      std::vector<double> secs;
      mimic::fleet::SimResult last;
      for (int r = 0; r < reps; ++r) {
        auto start = std::chrono::steady_clock::now();
        auto res = mimic::fleet::Simulate({{nodes, gpus_per_node}}, sim, o);
        secs.push_back(Seconds(start));
        if (!res.ok()) return 1;
        last = std::move(*res);
      }
      double queue = 0;
      for (size_t i = 0; i < sim.size(); ++i) queue += last.start_s[i] - sim[i].submit_s;
      const double med = mimic::Median(secs);
      std::printf("| %s | %s | %.3f | %.0f | %.3f | %.3f |\n", mimic::fleet::PolicyName(policy), backfill ? "yes" : "no", med,
                  static_cast<double>(last.jobs) / med, queue / static_cast<double>(sim.size()) / 3600,
                  last.mean_allocated_gpus / static_cast<double>(last.total_gpus));
    }
  return 0;
}
