// Fleet capacity planning: the step time of every workload class on today's platform and on
// each target, fleet totals per target (GPU-hours, relative throughput, GPUs needed to hold
// today's throughput, cost), and a cluster simulation of the arrivals per target and policy.
// Where step times come from is the caller's (PlanEnvironment): the CLI measures by replay on
// the local device and predicts with the model elsewhere. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/fleet/jobs.h"
#include "mimic/fleet/manifest.h"
#include "mimic/fleet/simulator.h"

namespace mimic::fleet {

struct StepTime {
  double ms = 0;          // one iteration (training step) of the class's sampled job
  std::string source;     // "measured" (replayed on this machine) or "predicted" (model)
  std::string detail;     // how: device, iterations, model
  // Predicted steps: the ranks the class's collectives were priced at (its gpus_per_job, else
  // the trace's own), the time its collectives run in the step (the union of their intervals)
  // and the part of it no compute overlaps. -1: not known (a measured step).
  int64_t ranks = -1;
  double collective_ms = -1;
  double exposed_collective_ms = -1;
};

// What a plan needs from outside the fleet library.
class PlanEnvironment {
 public:
  virtual ~PlanEnvironment() = default;
  // The step time of manifest class `cls` on `platform`. Called once per (class, platform).
  virtual Result<StepTime> StepTimeOf(int cls, const std::string& platform) = 0;
  // Price per GPU-hour of `platform` from its description; 0 when unknown.
  virtual Result<double> PricePerGpuHour(const std::string& platform) = 0;
};

// A PlanEnvironment of fixed figures (tests, what-if studies): step_ms[{class, platform}].
class FixedEnvironment : public PlanEnvironment {
 public:
  std::map<std::pair<int, std::string>, double> step_ms;
  std::map<std::string, double> price;
  Result<StepTime> StepTimeOf(int cls, const std::string& platform) override;
  Result<double> PricePerGpuHour(const std::string& platform) override;
};

struct PlanOptions {
  std::vector<std::string> targets;  // platform names, at least one; one named twice is planned once
  // Progress of long stages: (stage description, fraction done in [0, 1]).
  std::function<void(const std::string&, double)> progress;
};

struct PolicyOutcome {
  std::string policy;           // "fifo" or "sjf"
  SimResult sim;
  double mean_jct_s = 0, p50_jct_s = 0, p99_jct_s = 0;
  double mean_queue_s = 0, p50_queue_s = 0, p99_queue_s = 0;
  std::vector<double> jct_s;    // per simulated job, sorted ascending (the distribution)
  double utilization = 0;       // mean allocated GPUs / cluster GPUs over the makespan
  // Mean allocated GPUs by tenant over the makespan (simulation.enforce_quotas makes the
  // simulator hold each tenant to its quota).
  std::map<std::string, double> mean_gpus_by_tenant;
};

struct Scenario {
  std::string name;             // "today" or the target platform
  bool is_target = false;
  std::vector<Pool> pools;      // the simulated cluster
  std::vector<std::string> pool_types;
  double gpu_hours = 0;         // for all the jobs of the arrivals
  std::vector<double> class_gpu_hours;
  double relative_throughput = 0;  // today's GPU-hours / this scenario's: work per GPU-hour vs today
  double offered_load_gpus = 0;    // gpu_hours / arrival span: GPUs busy on average
  int64_t gpus_needed = 0;         // ceil(offered load / target_utilization): holds today's throughput
  int64_t nodes_needed = 0;        // at the inventory's first pool's GPUs per node
  double price_per_gpu_hour = 0;   // 0: unknown
  std::optional<double> cost;      // gpu_hours * price, when the price is known
  std::optional<double> cost_per_hour_needed;  // gpus_needed * price
  std::vector<PolicyOutcome> outcomes;
};

struct ClassPlan {
  std::string name;
  std::string platform;          // today's (where the trace was captured)
  double job_share = 0;          // of the jobs in the arrivals
  int64_t jobs = 0;
  double mean_iterations = 0;    // over this class's jobs in the arrivals
  std::map<std::string, StepTime> step;  // by platform: today's and each target's
};

struct PlanResult {
  std::string manifest;
  std::string arrivals;          // "poisson" or the job log's path
  int64_t jobs = 0;
  int64_t cpu_only_rows = 0;     // job log rows with gpu_num 0, not simulated
  std::map<std::string, int64_t> jobs_by_state;
  std::map<std::string, double> gpu_hours_by_state;  // today
  double span_hours = 0;         // first to last submission
  double jobs_per_hour = 0;      // today's throughput (jobs / span)
  int64_t inventory_gpus = 0;
  double target_utilization = 1;
  bool backfill = false;
  std::vector<ClassPlan> classes;
  std::vector<Scenario> scenarios;  // "today" first, then the targets in order
  double simulate_seconds = 0;      // wall time of all simulations
  int64_t simulated_jobs = 0;       // over all scenarios and policies
};

// Plans `m` for options.targets. Errors: InvalidInput for no target, a target that a class does
// not allow (naming classes[i].allowed_gpu_types), a class with no allowed pool today, a job
// log that does not parse; whatever the environment returns for a step time or a price.
Result<PlanResult> Plan(const LoadedManifest& m, PlanEnvironment& env, const PlanOptions& options);

}  // namespace mimic::fleet
