// The cluster simulator against queueing theory (M/D/1 Pollaczek-Khinchine, M/M/c Erlang C) on
// synthetic job logs read through the CSV reader, and its scheduling rules on small cases.
#include "mimic/fleet/simulator.h"

#include <cmath>
#include <cstdio>
#include <random>

#include "mimic/base/file.h"
#include "mimic/fleet/jobs.h"
#include "mimic/fleet/manifest.h"
#include "testing.h"

namespace mimic::fleet {
namespace {

// Writes a job log CSV of Poisson arrivals (rate per hour) whose durations come from `duration`
// and returns the jobs as ReadJobLog reads them back.
template <typename DurationFn>
std::vector<Job> SyntheticLog(const std::string& name, int64_t n, double jobs_per_hour, DurationFn duration,
                              uint64_t seed) {
  // Separate streams for arrivals and durations, so that the two stay independent.
  std::mt19937_64 rng(seed), duration_rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::exponential_distribution<double> gap(jobs_per_hour / 3600.0);
  std::string csv = "job_id,user,vc,gpu_num,submit_time,duration,state\n";
  double t = 0;
  char line[160];
  for (int64_t i = 0; i < n; ++i) {
    t += gap(rng);
    std::snprintf(line, sizeof(line), "j%lld,u%lld,vc%lld,1,%.4f,%.4f,COMPLETED\n", static_cast<long long>(i),
                  static_cast<long long>(i % 7), static_cast<long long>(i % 3), t, duration(duration_rng));
    csv += line;
  }
  const std::string path = ::testing::TempDir() + name + ".csv";
  EXPECT_TRUE(WriteFileAtomic(path, csv).ok());
  proto::FleetManifest m;
  m.add_classes()->set_name("only");
  m.mutable_arrivals()->mutable_job_log()->set_path(path);
  m.mutable_arrivals()->mutable_job_log()->set_default_class("only");
  auto jobs = ReadJobLog(m);
  EXPECT_THAT(jobs, IsOk());
  EXPECT_EQ(static_cast<int64_t>(jobs->size()), n);
  return *jobs;
}

SimOptions Options(Policy policy, bool backfill = false, int timeline_points = 200) {
  SimOptions options;
  options.policy = policy;
  options.backfill = backfill;
  options.timeline_points = timeline_points;
  return options;
}

std::vector<SimJob> ToSim(const std::vector<Job>& jobs) {
  std::vector<SimJob> out;
  for (const Job& j : jobs) out.push_back({j.submit_s, j.duration_s, j.gpus});
  return out;
}

double MeanQueueing(const std::vector<SimJob>& jobs, const SimResult& r) {
  double sum = 0;
  for (size_t i = 0; i < jobs.size(); ++i) sum += r.start_s[i] - jobs[i].submit_s;
  return sum / static_cast<double>(jobs.size());
}

TEST(Simulator, MD1MeanQueueingDelayMatchesPollaczekKhinchine) {
  // One GPU, deterministic 1 h jobs, Poisson arrivals at 0.7 per hour: rho = 0.7 and the mean
  // wait is rho * D / (2 (1 - rho)) = 1.1667 h.
  const double rho = 0.7, d = 3600;
  const auto jobs = ToSim(SyntheticLog("md1", 500'000, rho, [&](std::mt19937_64&) { return d; }, 7));
  auto r = Simulate({{1, 1}}, jobs, Options(Policy::kFifo));
  ASSERT_THAT(r, IsOk());
  const double expected = rho * d / (2 * (1 - rho));
  const double measured = MeanQueueing(jobs, *r);
  // The figure docs/benchmarks.md quotes: run this test binary to see it.
  std::printf("M/D/1 mean queueing delay: %.0f s, Pollaczek-Khinchine %.0f s (%+.1f %%)\n", measured, expected,
              100 * (measured / expected - 1));
  EXPECT_NEAR(measured, expected, 0.03 * expected);
  EXPECT_EQ(r->jobs, 500'000);
  EXPECT_NEAR(r->mean_allocated_gpus, rho, 0.02);
}

TEST(Simulator, MMcMeanQueueingDelayMatchesErlangC) {
  // Four GPUs on one node, exponential jobs of mean 1 h, arrivals at 2.8 per hour (rho = 0.7).
  const int c = 4;
  const double lambda = 2.8, mu = 1.0;
  std::exponential_distribution<double> service(mu / 3600.0);
  const auto jobs = ToSim(SyntheticLog("mmc", 500'000, lambda, [&](std::mt19937_64& rng) { return service(rng); }, 11));
  auto r = Simulate({{1, c}}, jobs, Options(Policy::kFifo));
  ASSERT_THAT(r, IsOk());
  const double a = lambda / mu;
  double sum = 0, term = 1;
  for (int k = 0; k < c; ++k) {
    if (k > 0) term *= a / k;
    sum += term;
  }
  const double last = term * a / c * c / (c - a);  // a^c / c! * c / (c - a)
  const double erlang_c = last / (sum + last);
  const double expected_h = erlang_c / (c * mu - lambda);
  const double measured_h = MeanQueueing(jobs, *r) / 3600;
  std::printf("M/M/4 mean queueing delay: %.4f h, Erlang C %.4f h (%+.1f %%)\n", measured_h, expected_h,
              100 * (measured_h / expected_h - 1));
  EXPECT_NEAR(measured_h, expected_h, 0.03 * expected_h);
}

TEST(Simulator, GangJobsWaitForConsolidatedGpus) {
  // Two nodes of 4 GPUs. Two 3-GPU jobs leave one GPU free on each node: a 2-GPU job must wait
  // for a node although 2 GPUs are free in total.
  std::vector<SimJob> jobs = {{0, 10, 3}, {0, 20, 3}, {0, 5, 2}, {1, 5, 8}};
  auto r = Simulate({{2, 4}}, jobs, Options(Policy::kFifo));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->start_s[0], 0);
  EXPECT_EQ(r->start_s[1], 0);
  EXPECT_EQ(r->start_s[2], 10);  // when the first 3-GPU job frees its node
  EXPECT_EQ(r->start_s[3], 20);  // both nodes whole again
  EXPECT_EQ(r->peak_allocated_gpus, 8);
  EXPECT_EQ(r->makespan_s, 25);
}

TEST(Simulator, JobsLargerThanEveryAllowedPoolAreCountedNotRun) {
  std::vector<SimJob> jobs = {{0, 10, 16}, {0, 10, 2}};
  jobs[1].pool_mask = 0b10;  // only the second pool, which is too small
  auto r = Simulate({{1, 8}, {1, 1}}, jobs, {});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->unplaceable, 2);
  EXPECT_TRUE(std::isnan(r->start_s[0]));
}

TEST(Simulator, ShortestJobFirstOvertakesALongerQueuedJob) {
  std::vector<SimJob> jobs = {{0, 5, 1}, {1, 10, 1}, {2, 1, 1}};
  auto fifo = Simulate({{1, 1}}, jobs, Options(Policy::kFifo));
  auto sjf = Simulate({{1, 1}}, jobs, Options(Policy::kSjf));
  ASSERT_THAT(fifo, IsOk());
  ASSERT_THAT(sjf, IsOk());
  EXPECT_EQ(fifo->start_s[1], 5);
  EXPECT_EQ(fifo->start_s[2], 15);
  EXPECT_EQ(sjf->start_s[2], 5);
  EXPECT_EQ(sjf->start_s[1], 6);
}

TEST(Simulator, BackfillStartsSmallJobsBehindABlockedHead) {
  std::vector<SimJob> jobs = {{0, 10, 1}, {1, 10, 2}, {2, 1, 1}};
  auto strict = Simulate({{1, 2}}, jobs, Options(Policy::kFifo));
  auto backfill = Simulate({{1, 2}}, jobs, Options(Policy::kFifo, true));
  ASSERT_THAT(strict, IsOk());
  ASSERT_THAT(backfill, IsOk());
  EXPECT_EQ(strict->start_s[2], 20);
  EXPECT_EQ(backfill->start_s[2], 2);
  EXPECT_EQ(backfill->start_s[1], 10);
}

TEST(Simulator, ATenantAtItsQuotaWaitsWithoutBlockingTheOthers) {
  // One node of 4 GPUs. Tenant 0 (quota 2) submits three 1-GPU jobs at once; tenant 1 one job
  // a second later. Tenant 0's third job waits for its own first job although GPUs are free;
  // tenant 1's job starts at once behind it. A 3-GPU job of tenant 0 can never run.
  std::vector<SimJob> jobs = {{0, 10, 1}, {0, 10, 1}, {0, 10, 1}, {1, 5, 1}, {2, 1, 3}};
  for (int i : {0, 1, 2, 4}) jobs[i].tenant = 0;
  jobs[3].tenant = 1;
  SimOptions options = Options(Policy::kFifo);
  options.tenant_quota = {2, 0};
  auto r = Simulate({{1, 4}}, jobs, options);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->start_s[2], 10);
  EXPECT_EQ(r->start_s[3], 1);
  EXPECT_EQ(r->unplaceable, 1);
  EXPECT_TRUE(std::isnan(r->start_s[4]));
  auto free = Simulate({{1, 4}}, jobs, Options(Policy::kFifo));
  ASSERT_THAT(free, IsOk());
  EXPECT_EQ(free->start_s[2], 0);
}

TEST(Simulator, FailedAndCancelledJobsHoldTheirGpusUntilTheyEnd) {
  const std::string path = ::testing::TempDir() + "states.csv";
  ASSERT_TRUE(WriteFileAtomic(path,
                              "job_id,user,vc,gpu_num,submit_time,duration,state\n"
                              "a,u,v,4,0,100,FAILED\n"
                              "b,u,v,4,10,50,CANCELLED\n"
                              "c,u,v,4,20,30,COMPLETED\n"
                              "cpu,u,v,0,20,30,COMPLETED\n")
                  .ok());
  proto::FleetManifest m;
  m.add_classes()->set_name("k");
  m.mutable_arrivals()->mutable_job_log()->set_path(path);
  m.mutable_arrivals()->mutable_job_log()->set_default_class("k");
  JobLogStats stats;
  auto jobs = ReadJobLog(m, &stats);
  ASSERT_THAT(jobs, IsOk());
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ(stats.cpu_only_rows, 1);
  EXPECT_EQ((*jobs)[0].state, JobState::kFailed);
  EXPECT_EQ((*jobs)[1].state, JobState::kCancelled);
  auto r = Simulate({{1, 4}}, ToSim(*jobs), {});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->start_s[1], 100);
  EXPECT_EQ(r->start_s[2], 150);
  EXPECT_EQ(r->makespan_s, 180);
}

TEST(Simulator, AllocationTimelineIntegratesToTheGpuHours) {
  std::vector<SimJob> jobs = {{0, 100, 2}, {50, 100, 1}, {300, 100, 4}};
  auto r = Simulate({{1, 4}}, jobs, Options(Policy::kFifo, false, 40));
  ASSERT_THAT(r, IsOk());
  double area = 0;
  for (double g : r->timeline_gpus) area += g * r->makespan_s / 40;
  EXPECT_NEAR(area, 2 * 100 + 1 * 100 + 4 * 100, 1e-6);
  EXPECT_NEAR(r->mean_allocated_gpus, 700.0 / 400.0, 1e-9);
}

}  // namespace
}  // namespace mimic::fleet
