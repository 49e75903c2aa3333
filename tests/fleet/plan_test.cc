// The fleet manifest's checks (each names its field) and a plan on fixed step times, checked
// against totals computed here from the jobs the plan drew.
#include "mimic/fleet/plan.h"

#include <cmath>

#include "mimic/base/file.h"
#include "mimic/fleet/manifest.h"
#include "testing.h"

namespace mimic::fleet {
namespace {

using ::testing::HasSubstr;

// A manifest in protobuf text with two classes on the fleet-sample traces; `extra` is appended.
std::string ManifestText(const std::string& extra = "") {
  return R"(
format: 1
name: "test fleet"
inventory { gpu_type: "cpu_host" nodes: 4 gpus_per_node: 2 }
tenants { name: "research" quota_gpus: 4 }
classes { name: "mlp" trace: "fleet_samples/mlp.et.json.gz" job_share: 3 gpus_per_job: 1
          iterations { fixed: 1000 } platform: "cpu_host" tenant: "research" }
classes { name: "cnn" trace: "fleet_samples/cnn_bn.et.json.gz" job_share: 1 gpus_per_job: 2
          iterations { exponential { mean: 2000 } } platform: "cpu_host" }
arrivals { poisson { jobs_per_hour: 20 num_jobs: 2000 seed: 3 } }
)" + extra;
}

PlanOptions Targets(std::vector<std::string> targets) {
  PlanOptions options;
  options.targets = std::move(targets);
  return options;
}

Result<LoadedManifest> Parse(const std::string& text) {
  return ParseManifest("fleet.txt", text, mimic::testing::SourceDir());
}

TEST(Manifest, TextAndJsonFormsLoad) {
  auto text = Parse(ManifestText());
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(text->manifest.classes_size(), 2);
  EXPECT_EQ(text->manifest.simulation().policies_size(), 2);  // fifo and sjf by default
  auto json = Parse(R"({"format": 1, "inventory": [{"gpuType": "h200", "nodes": 2, "gpusPerNode": 8}],
    "classes": [{"name": "mlp", "trace": "fleet_samples/mlp.et.json.gz", "jobShare": 1, "gpusPerJob": 8,
                 "iterations": {"lognormal": {"median": 100, "sigma": 1}}, "platform": "cpu_host"}],
    "arrivals": {"poisson": {"jobsPerHour": 1, "numJobs": 10}}})");
  ASSERT_THAT(json, IsOk());
  EXPECT_EQ(json->manifest.inventory(0).gpus_per_node(), 8);
}

struct BadCase {
  const char* name;
  std::string text;
  StatusCode code;
  const char* field;
};

TEST(Manifest, BadManifestsNameTheOffendingField) {
  const std::string base = ManifestText();
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<BadCase> cases = {
      {"negative nodes", replace("nodes: 4", "nodes: -4"), StatusCode::kInvalidInput, "inventory[0].nodes: must be > 0, got -4"},
      {"negative gpus per job", replace("gpus_per_job: 2", "gpus_per_job: -2"), StatusCode::kInvalidInput,
       "classes[1].gpus_per_job: must be > 0, got -2"},
      {"negative share", replace("job_share: 1", "job_share: -1"), StatusCode::kInvalidInput, "classes[1].job_share"},
      {"missing trace", replace("cnn_bn.et.json.gz", "nope.et.json.gz"), StatusCode::kNotFound,
       "classes[1].trace: no such file"},
      {"unknown class in the log mapping",
       replace("arrivals { poisson { jobs_per_hour: 20 num_jobs: 2000 seed: 3 } }",
               "arrivals { job_log { path: \"fleet_samples/manifest.json\" class_by_vc { key: \"vc1\" value: \"gpt\" } } }"),
       StatusCode::kInvalidInput, "arrivals.job_log.class_by_vc[\"vc1\"]: unknown class 'gpt'"},
      {"unknown tenant", replace("tenant: \"research\"", "tenant: \"prod\""), StatusCode::kInvalidInput,
       "classes[0].tenant: unknown tenant 'prod'"},
      {"job larger than the cluster", replace("gpus_per_job: 2", "gpus_per_job: 16"), StatusCode::kInvalidInput,
       "classes[1].gpus_per_job: 16 GPUs do not fit"},
      {"no iterations", replace("iterations { fixed: 1000 }", ""), StatusCode::kInvalidInput, "classes[0].iterations: is missing"},
      {"unknown field", base + "colour: 3\n", StatusCode::kInvalidInput, "fleet.txt: line"},
      {"unknown policy", base + "simulation { policies: \"lifo\" }", StatusCode::kInvalidInput,
       "simulation.policies[0]: unknown policy 'lifo'"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = Parse(c.text);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), c.code);
    EXPECT_THAT(m.status().message(), HasSubstr(c.field));
    EXPECT_THAT(m.status().message(), HasSubstr("fleet.txt: "));
  }
}

TEST(Plan, TotalsFollowTheJobsAndTheStepTimes) {
  auto m = Parse(ManifestText());
  ASSERT_THAT(m, IsOk());
  FixedEnvironment env;
  env.step_ms[{0, "cpu_host"}] = 20;
  env.step_ms[{1, "cpu_host"}] = 40;
  env.step_ms[{0, "h200"}] = 2;
  env.step_ms[{1, "h200"}] = 1;
  env.price["h200"] = 3.5;
  auto plan = Plan(*m, env, Targets({"h200"}));
  ASSERT_THAT(plan, IsOk());
  ASSERT_EQ(plan->scenarios.size(), 2u);
  const Scenario& today = plan->scenarios[0];
  const Scenario& h200 = plan->scenarios[1];
  EXPECT_EQ(plan->jobs, 2000);

  // GPU-hours from the classes' job counts and mean iterations, by hand.
  double today_h = 0, h200_h = 0;
  const double ms_today[] = {20, 40}, ms_h200[] = {2, 1}, gpus[] = {1, 2};
  for (int i = 0; i < 2; ++i) {
    const ClassPlan& k = plan->classes[i];
    today_h += k.jobs * k.mean_iterations * gpus[i] * ms_today[i] / 3.6e6;
    h200_h += k.jobs * k.mean_iterations * gpus[i] * ms_h200[i] / 3.6e6;
  }
  EXPECT_NEAR(today.gpu_hours, today_h, 1e-6 * today_h);
  EXPECT_NEAR(h200.gpu_hours, h200_h, 1e-6 * h200_h);
  EXPECT_NEAR(h200.relative_throughput, today_h / h200_h, 1e-6);
  EXPECT_NEAR(plan->classes[0].mean_iterations, 1000, 1e-9);
  EXPECT_NEAR(plan->classes[0].job_share, 0.75, 0.03);  // drawn at 3:1
  EXPECT_EQ(h200.gpus_needed, static_cast<int64_t>(std::ceil(h200_h / plan->span_hours)));
  ASSERT_TRUE(h200.cost.has_value());
  EXPECT_NEAR(*h200.cost, 3.5 * h200_h, 1e-6);
  EXPECT_EQ(plan->classes[0].step.at("h200").source, "fixed");

  // Every job ran in every simulation; the faster target queues less.
  ASSERT_EQ(today.outcomes.size(), 2u);
  for (const Scenario* s : {&today, &h200})
    for (const PolicyOutcome& o : s->outcomes) {
      EXPECT_EQ(o.sim.jobs, 2000);
      EXPECT_EQ(o.jct_s.size(), 2000u);
      EXPECT_LE(o.utilization, 1.0);
    }
  EXPECT_LT(h200.outcomes[0].mean_jct_s, today.outcomes[0].mean_jct_s);
  EXPECT_GT(today.outcomes[0].mean_gpus_by_tenant.at("research"), 0);
}

TEST(Plan, EnforcedQuotasHoldATenantToItsGpus) {
  // research (mlp, 400 ms steps) offers more than its 1-GPU quota: it uses more without
  // enforcement, and at most 1 with it.
  for (const bool enforce : {false, true}) {
    std::string text = ManifestText(enforce ? "simulation { enforce_quotas: true }" : "");
    text.replace(text.find("quota_gpus: 4"), 13, "quota_gpus: 1");
    auto m = Parse(text);
    ASSERT_THAT(m, IsOk());
    FixedEnvironment env;
    env.step_ms[{0, "cpu_host"}] = 400;
    env.step_ms[{1, "cpu_host"}] = 40;
    auto plan = Plan(*m, env, Targets({"cpu_host"}));
    ASSERT_THAT(plan, IsOk());
    for (const PolicyOutcome& o : plan->scenarios[0].outcomes) {
      EXPECT_EQ(o.sim.jobs, 2000);
      if (enforce) EXPECT_LE(o.mean_gpus_by_tenant.at("research"), 1.0 + 1e-9) << o.policy;
      else EXPECT_GT(o.mean_gpus_by_tenant.at("research"), 1.0) << o.policy;
    }
  }
}

TEST(Plan, TargetsAClassDoesNotAllowAreRefused) {
  auto m = Parse(ManifestText());
  ASSERT_THAT(m, IsOk());
  m->manifest.mutable_classes(1)->add_allowed_gpu_types("cpu_host");
  FixedEnvironment env;
  auto plan = Plan(*m, env, Targets({"h200"}));
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.status().message(), HasSubstr("classes[1].allowed_gpu_types"));
}

TEST(Plan, GpuHourSharesBecomeJobShares) {
  // Equal GPU-hour shares; cnn jobs cost 2 GPUs x 2000 iterations x 40 ms, mlp jobs 1 x 1000 x
  // 20 ms: 8x more GPU-hours each, so mlp jobs are 8x as many.
  std::string text = ManifestText();
  for (const char* from : {"job_share: 3", "job_share: 1"}) text.replace(text.find(from), std::string(from).size(), "gpu_hour_share: 1");
  auto m = Parse(text);
  ASSERT_THAT(m, IsOk());
  FixedEnvironment env;
  env.step_ms[{0, "cpu_host"}] = 20;
  env.step_ms[{1, "cpu_host"}] = 40;
  auto plan = Plan(*m, env, Targets({"cpu_host"}));
  ASSERT_THAT(plan, IsOk());
  EXPECT_NEAR(plan->classes[0].job_share, 8.0 / 9.0, 0.02);
}

}  // namespace
}  // namespace mimic::fleet
