// A discrete-event simulation of a GPU cluster serving a stream of jobs: gang scheduling (a job
// starts only when all its GPUs are free at once), consolidated placement (a job that fits on
// one node gets one node, best fit; a larger one gets whole free nodes plus the best-fitting
// node for the remainder), FIFO or shortest-job-first order. Non-preemptive: every job, failed
// and cancelled ones included, holds its GPUs for its whole duration. Thread-compatible: one
// Simulate call per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mimic/base/status.h"

namespace mimic::fleet {

struct Pool {
  int64_t nodes = 0;          // > 0
  int64_t gpus_per_node = 0;  // > 0
};

struct SimJob {
  double submit_s = 0;        // REQUIRES: jobs sorted by submit_s
  double duration_s = 0;      // >= 0; known to the scheduler (SJF orders by it)
  int64_t gpus = 0;           // > 0
  uint32_t pool_mask = ~0u;   // pools the job may run on (bit i: pool i); tried in pool order
  int tenant = -1;            // index into SimOptions::tenant_quota; -1: none
};

enum class Policy { kFifo, kSjf };
const char* PolicyName(Policy policy);

struct SimOptions {
  Policy policy = Policy::kFifo;
  // Without backfill the queue's head blocks everyone behind it until it fits. With it, later
  // jobs that fit start while the head waits (no reservation: the head can be delayed); the
  // scan looks at the first kBackfillWindow queued jobs.
  bool backfill = false;
  int timeline_points = 200;
  // GPUs each tenant may hold at once (0: no limit). A tenant at its quota waits without
  // blocking the other tenants: its queued jobs are passed over until its own jobs end. A job
  // larger than its tenant's quota is unplaceable. Empty: no quotas.
  std::vector<int64_t> tenant_quota;
  // Called with the fraction of jobs started, about every 1%.
  std::function<void(double)> progress;
};
inline constexpr int kBackfillWindow = 256;

struct SimResult {
  std::vector<double> start_s;        // per job; NaN for a job no allowed pool can ever hold
  int64_t jobs = 0;                   // simulated (placeable) jobs
  int64_t unplaceable = 0;            // more GPUs than any allowed pool has, or than its tenant's quota
  double makespan_s = 0;              // the last job's end
  int64_t total_gpus = 0;
  // Time-weighted allocated GPUs, averaged over timeline_points equal bins of [0, makespan].
  std::vector<double> timeline_t_s;   // bin starts
  std::vector<double> timeline_gpus;
  double mean_allocated_gpus = 0;     // over [0, makespan]
  int64_t peak_allocated_gpus = 0;
};

// Runs the simulation. Errors: InvalidInput for no pools, more than 32 pools, or a job with
// gpus <= 0, a negative or non-finite duration, or unsorted submit times (naming the job index).
Result<SimResult> Simulate(const std::vector<Pool>& pools, const std::vector<SimJob>& jobs,
                           const SimOptions& options);

}  // namespace mimic::fleet
