// Collective sweeps: the cost of each collective by size on this job's ranks, measured the way
// nccl-tests does (every rank issues the same collective on buffers of the size, each timed to
// completion), through the same c10d process group a multi-rank replay uses. `mimic calibrate`
// fits the platform's alpha-beta collective parameters to it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/replay/distributed.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

struct SweepOptions {
  std::vector<proto::Collective::Type> types;
  std::vector<int64_t> sizes_bytes;  // nccl-tests' S: the whole array for all-gather and friends
  int warmup = 2;
  int iters = 10;
  int64_t timeout_ms = 300000;
  std::string device = "cpu";  // the executor whose backend is swept (cuda: NCCL)
};

struct CollectiveSample {
  proto::Collective::Type type = proto::Collective::TYPE_UNKNOWN;
  int64_t bytes = 0;     // S
  double time_us = 0;    // the fastest iteration on this rank
};

// Every rank of the job must call it with the same options. Errors: InvalidInput for iters < 1 or a
// size that does not divide among the ranks where it must, Internal when a collective fails (a peer
// died or the timeout passed).
Result<std::vector<CollectiveSample>> SweepCollectives(const DistEnv& env, const SweepOptions& options);

struct AlphaBeta {
  double alpha_us = 0;         // latency
  double bus_bytes_per_s = 0;  // bus bandwidth (nccl-tests' busbw)
};

// Least-squares fit of t = alpha + S x factor(type, ranks) / busbw over the samples of one type.
// Errors: InvalidInput for fewer than two distinct sizes or a non-positive slope.
Result<AlphaBeta> FitAlphaBeta(const std::vector<CollectiveSample>& samples, int64_t ranks);

}  // namespace mimic::replay
