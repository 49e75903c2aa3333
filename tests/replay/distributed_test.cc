// Rank and rendezvous from each launcher's environment; the alpha-beta fit of collective sweeps.
#include "mimic/replay/distributed.h"

#include <map>
#include <optional>
#include <string>

#include "mimic/replay/comm_sweep.h"
#include "testing.h"

namespace mimic::replay {
namespace {

Result<std::optional<DistEnv>> FromEnv(const std::map<std::string, std::string>& vars) {
  return DistEnvFromEnvironment([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(DistEnv, NoLauncherIsASingleProcess) {
  auto d = FromEnv({{"MASTER_ADDR", "10.0.0.1"}});
  ASSERT_THAT(d, IsOk());
  EXPECT_FALSE(d->has_value());
}

TEST(DistEnv, Torchrun) {
  auto d = FromEnv({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "node7"},
                    {"MASTER_PORT", "29400"}});
  ASSERT_THAT(d, IsOk());
  ASSERT_TRUE(d->has_value());
  EXPECT_EQ((*d)->launcher, "torchrun");
  EXPECT_EQ((*d)->rank, 3);
  EXPECT_EQ((*d)->world_size, 8);
  EXPECT_EQ((*d)->local_rank, 1);
  EXPECT_EQ((*d)->master_addr, "node7");
  EXPECT_EQ((*d)->master_port, 29400);
}

TEST(DistEnv, SlurmTakesTheFirstNodeOfTheStep) {
  auto d = FromEnv({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "5"},
                    {"SLURM_STEP_NODELIST", "gpu-a[017-018,020],gpu-b4"}});
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ((*d)->launcher, "slurm");
  EXPECT_EQ((*d)->rank, 5);
  EXPECT_EQ((*d)->world_size, 16);
  EXPECT_EQ((*d)->master_addr, "gpu-a017");
  EXPECT_EQ((*d)->master_port, 29500);
}

TEST(DistEnv, OpenMpiAndPmi) {
  auto ompi = FromEnv({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  ASSERT_THAT(ompi, IsOk());
  EXPECT_EQ((*ompi)->launcher, "openmpi");
  EXPECT_EQ((*ompi)->master_addr, "127.0.0.1");
  auto pmi = FromEnv({{"PMI_RANK", "0"}, {"PMI_SIZE", "4"}, {"MASTER_PORT", "1234"}});
  ASSERT_THAT(pmi, IsOk());
  EXPECT_EQ((*pmi)->launcher, "pmi");
  EXPECT_EQ((*pmi)->world_size, 4);
  EXPECT_EQ((*pmi)->master_port, 1234);
}

TEST(DistEnv, TorchrunInsideSrunWins) {
  auto d = FromEnv({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  ASSERT_THAT(d, IsOk());
  EXPECT_EQ((*d)->launcher, "torchrun");
  EXPECT_EQ((*d)->rank, 2);
}

TEST(DistEnv, BadValuesNameTheVariable) {
  auto rank = FromEnv({{"RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_THAT(rank, StatusIs(StatusCode::kInvalidInput));
  EXPECT_NE(rank.status().message().find("RANK=\"4\""), std::string::npos) << rank.status().message();
  auto port = FromEnv({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "http"}});
  EXPECT_NE(port.status().message().find("MASTER_PORT"), std::string::npos);
  auto nodes = FromEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "gpu[01"}});
  EXPECT_NE(nodes.status().message().find("SLURM_JOB_NODELIST"), std::string::npos);
}

TEST(DistEnv, FirstSlurmHost) {
  EXPECT_EQ(FirstSlurmHost("node1"), "node1");
  EXPECT_EQ(FirstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(FirstSlurmHost("n[3-5]"), "n3");
  EXPECT_EQ(FirstSlurmHost("rack[007,9]-ib,x"), "rack007-ib");
  EXPECT_EQ(FirstSlurmHost("n[]"), "");
}

proto::Workload RecordedOn(int64_t world_size, std::optional<int64_t> rank) {
  proto::Workload w;
  w.mutable_provenance()->set_world_size(world_size);
  if (rank) w.mutable_provenance()->set_rank(*rank);
  return w;
}

DistEnv Launched(int rank, int world_size) {
  DistEnv env;
  env.rank = rank;
  env.world_size = world_size;
  env.launcher = "torchrun";
  return env;
}

// The message of a refusal ("" when the check passes).
std::string Refusal(const DistEnv& env, const proto::Workload& w) {
  const Status st = CheckLaunchMatchesTrace(env, w);
  if (!st.ok()) {
    EXPECT_EQ(st.code(), StatusCode::kInvalidInput);
  }
  return st.message();
}

TEST(CheckLaunchMatchesTrace, WorldSizeMustMatchTheRecordedOne) {
  EXPECT_EQ(Refusal(Launched(0, 2), RecordedOn(2, 0)), "");
  EXPECT_EQ(Refusal(Launched(0, 2), RecordedOn(4, 0)),
            "the trace was recorded on 4 ranks; torchrun launched 2");
  EXPECT_EQ(Refusal(Launched(1, 2), RecordedOn(0, std::nullopt)), "");  // not recorded
}

TEST(CheckLaunchMatchesTrace, ARankMustGetItsOwnTraceWhereTheTraceTells) {
  EXPECT_THAT(Refusal(Launched(0, 2), RecordedOn(2, 1)),
              ::testing::StartsWith("rank 0 was given the trace of rank 1"));
  // An execution trace alone does not record its rank: any rank may replay it.
  EXPECT_EQ(Refusal(Launched(1, 2), RecordedOn(2, std::nullopt)), "");
  // synth --world-size: every rank replays the same scaled workload.
  proto::Workload scaled = RecordedOn(4, 1);
  scaled.add_transformations()->set_name("world_size");
  EXPECT_EQ(Refusal(Launched(3, 4), scaled), "");
}

TEST(FitAlphaBeta, RecoversTheLatencyAndBusBandwidthOfAnAllReduce) {
  // 8 ranks, alpha 25 us, busbw 40 GB/s: t = 25 + S x 2(7/8) / 40e9 s.
  std::vector<CollectiveSample> samples;
  for (int64_t s : {1 << 12, 1 << 16, 1 << 20, 1 << 24})
    samples.push_back({proto::Collective::ALL_REDUCE, s, 25 + s * 1.75 / 40e9 * 1e6});
  auto fit = FitAlphaBeta(samples, 8);
  ASSERT_THAT(fit, IsOk());
  EXPECT_NEAR(fit->alpha_us, 25, 1e-6);
  EXPECT_NEAR(fit->bus_bytes_per_s, 40e9, 1e-3 * 40e9);
}

TEST(FitAlphaBeta, NeedsTwoSizesAndAGrowingTime) {
  EXPECT_THAT(FitAlphaBeta({{proto::Collective::ALL_REDUCE, 1024, 10}}, 2), StatusIs(StatusCode::kInvalidInput));
  EXPECT_THAT(FitAlphaBeta({{proto::Collective::BROADCAST, 1024, 10}, {proto::Collective::BROADCAST, 4096, 5}}, 2),
              StatusIs(StatusCode::kInvalidInput));
}

}  // namespace
}  // namespace mimic::replay
