#include "mimic/fleet/plan.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "mimic/base/stats.h"

namespace mimic::fleet {
namespace {

bool Allows(const proto::WorkloadClass& k, const std::string& type) {
  return k.allowed_gpu_types().empty() ||
         std::find(k.allowed_gpu_types().begin(), k.allowed_gpu_types().end(), type) !=
             k.allowed_gpu_types().end();
}

// Percentile of already sorted values; 0 for none.
double SortedPercentile(const std::vector<double>& sorted, double p) {
  return sorted.empty() ? 0 : PercentileOfSorted(sorted, p);
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

Result<StepTime> FixedEnvironment::StepTimeOf(int cls, const std::string& platform) {
  auto it = step_ms.find({cls, platform});
  if (it == step_ms.end())
    return Status::NotFound("no step time for class #" + std::to_string(cls) + " on " + platform);
  return StepTime{it->second, "fixed", "given"};
}

Result<double> FixedEnvironment::PricePerGpuHour(const std::string& platform) {
  auto it = price.find(platform);
  return it == price.end() ? 0.0 : it->second;
}

namespace {

// The price of a GPU-hour on `platform`: the manifest's, else its platform file's (0: unknown).
Result<double> PriceOf(const proto::FleetManifest& m, PlanEnvironment& env,
                       const std::string& platform) {
  auto it = m.price_per_gpu_hour().find(platform);
  if (it != m.price_per_gpu_hour().end()) return it->second;
  return env.PricePerGpuHour(platform);
}

// A scenario's cost where every platform it runs on has a price: a target's at its price, today's
// at each class's platform's price (its price_per_gpu_hour then the GPU-hour-weighted mean).
Status PriceScenario(const proto::FleetManifest& m, PlanEnvironment& env, Scenario& s) {
  double cost = 0;
  if (s.is_target) {
    MIMIC_ASSIGN_OR_RETURN(s.price_per_gpu_hour, PriceOf(m, env, s.name));
    cost = s.gpu_hours * s.price_per_gpu_hour;
  } else {
    for (size_t c = 0; c < s.class_gpu_hours.size(); ++c) {
      if (s.class_gpu_hours[c] <= 0) continue;
      MIMIC_ASSIGN_OR_RETURN(const double price,
                             PriceOf(m, env, m.classes(static_cast<int>(c)).platform()));
      if (price <= 0) return Status::Ok();  // one unknown price: no cost
      cost += s.class_gpu_hours[c] * price;
    }
    s.price_per_gpu_hour = s.gpu_hours > 0 ? cost / s.gpu_hours : 0;
  }
  if (s.price_per_gpu_hour > 0) {
    s.cost = cost;
    s.cost_per_hour_needed = static_cast<double>(s.gpus_needed) * s.price_per_gpu_hour;
  }
  return Status::Ok();
}

}  // namespace

Result<PlanResult> Plan(const LoadedManifest& loaded, PlanEnvironment& env,
                        const PlanOptions& options) {
  const proto::FleetManifest& m = loaded.manifest;
  const std::string& path = loaded.path;
  if (options.targets.empty())
    return Status::InvalidInput("plan: give at least one --target platform");
  std::vector<std::string> targets;  // a target named twice is planned once
  for (const std::string& t : options.targets)
    if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
  for (const std::string& t : targets)
    for (int i = 0; i < m.classes_size(); ++i)
      if (!Allows(m.classes(i), t))
        return Status::InvalidInput(path + ": classes[" + std::to_string(i) +
                                    "].allowed_gpu_types: class '" + m.classes(i).name() +
                                    "' may not run on target '" + t + "'");
  const int num_classes = m.classes_size();

  PlanResult out;
  out.manifest = path;
  out.inventory_gpus = InventoryGpus(m);
  out.target_utilization = m.target_utilization();
  out.backfill = m.simulation().backfill();

  // Today's cluster: the inventory, each class on the pools it allows.
  Scenario today;
  today.name = "today";
  std::vector<uint32_t> today_mask(num_classes, 0);
  for (int p = 0; p < m.inventory_size(); ++p) {
    today.pools.push_back({m.inventory(p).nodes(), m.inventory(p).gpus_per_node()});
    today.pool_types.push_back(m.inventory(p).gpu_type());
    for (int i = 0; i < num_classes; ++i)
      if (Allows(m.classes(i), m.inventory(p).gpu_type())) today_mask[i] |= 1u << p;
  }
  for (int i = 0; i < num_classes; ++i)
    if (today_mask[i] == 0)
      return Status::InvalidInput(path + ": classes[" + std::to_string(i) +
                                  "].allowed_gpu_types: no inventory pool has an allowed GPU type");

  // Step times: today's platform and every target, each (class, platform) once.
  out.classes.resize(num_classes);
  const size_t total_steps = static_cast<size_t>(num_classes) * (1 + targets.size());
  size_t done_steps = 0;
  for (int i = 0; i < num_classes; ++i) {
    ClassPlan& c = out.classes[i];
    c.name = m.classes(i).name();
    c.platform = m.classes(i).platform();
    std::vector<std::string> platforms = {c.platform};
    platforms.insert(platforms.end(), targets.begin(), targets.end());
    for (const std::string& p : platforms) {
      if (options.progress)
        options.progress("step times", static_cast<double>(done_steps) / total_steps);
      ++done_steps;
      if (c.step.count(p)) continue;
      MIMIC_ASSIGN_OR_RETURN(StepTime st, env.StepTimeOf(i, p));
      if (!std::isfinite(st.ms) || st.ms <= 0)
        return Status::Internal("step time of class '" + c.name + "' on " + p + " is not positive");
      c.step[p] = st;
    }
  }
  if (options.progress) options.progress("step times", 1.0);
  auto step_s = [&](int cls, const std::string& platform) {
    return out.classes[cls].step.at(platform).ms / 1000.0;
  };

  // The arrivals.
  std::vector<Job> jobs;
  if (m.arrivals().has_poisson()) {
    out.arrivals = "poisson";
    std::vector<double> share(num_classes);
    for (int i = 0; i < num_classes; ++i) {
      const proto::WorkloadClass& k = m.classes(i);
      // A share of GPU-hours becomes a share of jobs through each class's GPU-hours per job.
      share[i] = k.job_share() > 0
                     ? k.job_share()
                     : k.gpu_hour_share() /
                           (k.gpus_per_job() * MeanOf(k.iterations()) * step_s(i, k.platform()));
    }
    jobs = PoissonJobs(m, share);
  } else {
    out.arrivals = m.arrivals().job_log().path();
    JobLogStats stats;
    MIMIC_ASSIGN_OR_RETURN(jobs, ReadJobLog(m, &stats));
    out.cpu_only_rows = stats.cpu_only_rows;
  }
  out.jobs = static_cast<int64_t>(jobs.size());
  out.span_hours = jobs.empty() ? 0 : jobs.back().submit_s / 3600.0;
  out.jobs_per_hour = out.span_hours > 0 ? static_cast<double>(out.jobs) / out.span_hours : 0;

  // Iterations of every job: a log's duration on today's hardware over today's step time.
  std::vector<double> iterations(jobs.size());
  std::vector<double> class_iter_sum(num_classes, 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    iterations[j] = job.iterations >= 0
                        ? job.iterations
                        : job.duration_s / step_s(job.cls, m.classes(job.cls).platform());
    ++out.classes[job.cls].jobs;
    class_iter_sum[job.cls] += iterations[j];
    ++out.jobs_by_state[JobStateName(job.state)];
    out.gpu_hours_by_state[JobStateName(job.state)] +=
        job.gpus * iterations[j] * step_s(job.cls, m.classes(job.cls).platform()) / 3600.0;
  }
  for (int i = 0; i < num_classes; ++i) {
    ClassPlan& c = out.classes[i];
    c.job_share = out.jobs ? static_cast<double>(c.jobs) / static_cast<double>(out.jobs) : 0;
    c.mean_iterations = c.jobs ? class_iter_sum[i] / static_cast<double>(c.jobs) : 0;
  }

  std::vector<Scenario> scenarios = {today};
  for (const std::string& t : targets) {
    Scenario s;
    s.name = t;
    s.is_target = true;
    s.pools = today.pools;  // like for like: the same nodes, every GPU of type t
    s.pool_types.assign(today.pools.size(), t);
    scenarios.push_back(std::move(s));
  }

  // Tenants by class, for quotas and the per-tenant allocation.
  std::vector<int> class_tenant(num_classes, -1);
  std::vector<int64_t> quotas;
  for (int t = 0; t < m.tenants_size(); ++t) quotas.push_back(m.tenants(t).quota_gpus());
  for (int i = 0; i < num_classes; ++i)
    for (int t = 0; t < m.tenants_size(); ++t)
      if (m.tenants(t).name() == m.classes(i).tenant()) class_tenant[i] = t;

  const auto sim_start = std::chrono::steady_clock::now();
  for (Scenario& s : scenarios) {
    std::vector<SimJob> sim_jobs(jobs.size());
    s.class_gpu_hours.assign(num_classes, 0);
    for (size_t j = 0; j < jobs.size(); ++j) {
      const Job& job = jobs[j];
      const std::string& platform = s.is_target ? s.name : m.classes(job.cls).platform();
      SimJob& sj = sim_jobs[j];
      sj.submit_s = job.submit_s;
      sj.gpus = job.gpus;
      sj.duration_s = iterations[j] * step_s(job.cls, platform);
      sj.pool_mask = s.is_target ? ~0u : today_mask[job.cls];
      sj.tenant = class_tenant[job.cls];
      const double h = job.gpus * sj.duration_s / 3600.0;
      s.gpu_hours += h;
      s.class_gpu_hours[job.cls] += h;
    }
    s.offered_load_gpus = out.span_hours > 0 ? s.gpu_hours / out.span_hours : 0;
    s.gpus_needed =
        static_cast<int64_t>(std::ceil(s.offered_load_gpus / m.target_utilization() - 1e-9));
    const int64_t per_node = m.inventory(0).gpus_per_node();
    s.nodes_needed = (s.gpus_needed + per_node - 1) / per_node;
    MIMIC_RETURN_IF_ERROR(PriceScenario(m, env, s));

    for (const std::string& policy_name : m.simulation().policies()) {
      SimOptions so;
      so.policy = policy_name == "sjf" ? Policy::kSjf : Policy::kFifo;
      so.backfill = m.simulation().backfill();
      so.timeline_points = static_cast<int>(m.simulation().timeline_points());
      if (m.simulation().enforce_quotas()) so.tenant_quota = quotas;
      const std::string stage = "simulating " + policy_name + " on " + s.name;
      if (options.progress) so.progress = [&](double f) { options.progress(stage, f); };
      MIMIC_ASSIGN_OR_RETURN(SimResult r, Simulate(s.pools, sim_jobs, so));
      PolicyOutcome o;
      o.policy = policy_name;
      std::vector<double> queue;
      queue.reserve(jobs.size());
      o.jct_s.reserve(jobs.size());
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (std::isnan(r.start_s[j])) continue;
        const double q = r.start_s[j] - sim_jobs[j].submit_s;
        queue.push_back(q);
        o.jct_s.push_back(q + sim_jobs[j].duration_s);
        const std::string& tenant = m.classes(jobs[j].cls).tenant();
        if (!tenant.empty() && r.makespan_s > 0)
          o.mean_gpus_by_tenant[tenant] +=
              static_cast<double>(sim_jobs[j].gpus) * sim_jobs[j].duration_s / r.makespan_s;
      }
      std::sort(queue.begin(), queue.end());
      std::sort(o.jct_s.begin(), o.jct_s.end());
      o.mean_queue_s = Mean(queue);
      o.p50_queue_s = SortedPercentile(queue, 50);
      o.p99_queue_s = SortedPercentile(queue, 99);
      o.mean_jct_s = Mean(o.jct_s);
      o.p50_jct_s = SortedPercentile(o.jct_s, 50);
      o.p99_jct_s = SortedPercentile(o.jct_s, 99);
      o.utilization =
          r.total_gpus > 0 ? r.mean_allocated_gpus / static_cast<double>(r.total_gpus) : 0;
      o.sim = std::move(r);
      out.simulated_jobs += o.sim.jobs;
      s.outcomes.push_back(std::move(o));
    }
  }
  out.simulate_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sim_start).count();
  for (Scenario& s : scenarios)
    s.relative_throughput = s.gpu_hours > 0 ? scenarios[0].gpu_hours / s.gpu_hours : 0;
  out.scenarios = std::move(scenarios);
  return out;
}

}  // namespace mimic::fleet
