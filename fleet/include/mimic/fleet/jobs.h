// The jobs a fleet plan simulates: read from a job log in the columns public cluster logs use
// (Philly, Helios, Alibaba PAI, Acme), or drawn as Poisson arrivals from the manifest's mix.
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/fleet/manifest.h"

namespace mimic::fleet {

// How a job ended. Failed and cancelled jobs hold their GPUs until they end, like completed ones.
enum class JobState { kCompleted, kFailed, kCancelled };
const char* JobStateName(JobState state);

struct Job {
  int cls = 0;              // index into manifest.classes
  int64_t gpus = 0;         // > 0
  double submit_s = 0;      // seconds from the first submission
  // Exactly one of these is >= 0: the iterations the job runs, or its duration on today's
  // hardware (the platform its class was captured on), as a log records it.
  double iterations = -1;
  double duration_s = -1;
  JobState state = JobState::kCompleted;
};

struct JobLogStats {
  int64_t rows = 0;
  int64_t cpu_only_rows = 0;  // gpu_num 0: CPU jobs, not simulated
};

// Reads the CSV job log the manifest names (arrivals.job_log). Header row required; columns by
// name, case-insensitive, in any order: job_id, gpu_num, submit_time (seconds, or
// "YYYY-MM-DD HH:MM:SS" UTC), duration or iterations; optional user, vc, state, class. A row's
// class: its `class` value, else class_by_vc[vc], else class_by_user[user], else default_class.
// States: COMPLETED/Pass/Terminated, FAILED/NODE_FAIL/TIMEOUT/Failed, CANCELLED/Killed (case-
// insensitive); empty means completed. Jobs come back sorted by submit time, the first at 0.
// Errors: InvalidInput naming the file, the line and the column ("log.csv:17: gpu_num: ...").
Result<std::vector<Job>> ReadJobLog(const proto::FleetManifest& manifest, JobLogStats* stats = nullptr);

// As ReadJobLog, for CSV text already in memory; `name` is used in messages.
Result<std::vector<Job>> ParseJobLog(const proto::FleetManifest& manifest, const std::string& name,
                                     std::string_view text, JobLogStats* stats = nullptr);

// Draws arrivals.poisson's jobs: exponential gaps at jobs_per_hour, classes by `job_share`
// (one weight per class, not all zero), iterations from each class's distribution, gpus_per_job.
// Deterministic for a given seed.
std::vector<Job> PoissonJobs(const proto::FleetManifest& manifest, const std::vector<double>& job_share);

// The mean of a class's iteration distribution.
double MeanOf(const proto::Distribution& d);

}  // namespace mimic::fleet
