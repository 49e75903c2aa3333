#include "mimic/replay/comm_sweep.h"

#include <ATen/ops/ones.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "comm.h"
#include "mimic/base/stats.h"
#include "mimic/eg/collective.h"
#include "mimic/replay/executor.h"

namespace mimic::replay {

Result<std::vector<CollectiveSample>> SweepCollectives(const DistEnv& env, const SweepOptions& options) {
  if (options.iters < 1) return Status::InvalidInput("collective sweep: iters must be at least 1");
  proto::Workload world;  // no recorded groups: the world group only
  world.mutable_provenance()->set_world_size(env.world_size);
  MIMIC_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, CreateExecutor(options.device));
  MIMIC_ASSIGN_OR_RETURN(
      std::unique_ptr<Communicator> comm,
      Communicator::Create(env, world, *executor, std::chrono::milliseconds(options.timeout_ms)));
  const auto on_device = at::TensorOptions().device(executor->device());
  const int64_t n = env.world_size;
  std::vector<CollectiveSample> out;
  for (proto::Collective::Type type : options.types) {
    for (int64_t bytes : options.sizes_bytes) {
      // Float buffers; S is the whole array for the gathering and scattering collectives.
      const int64_t elems = std::max<int64_t>(bytes / 4, 1);
      proto::Collective c;
      c.set_type(type);
      c.set_dtype(proto::FLOAT32);
      c.set_itemsize(4);
      c.set_group_size(n);
      c.set_in_elems(elems);
      c.set_out_elems(elems);
      const bool gathers = type == proto::Collective::ALL_GATHER;
      const bool scatters = type == proto::Collective::REDUCE_SCATTER;
      if ((gathers || scatters || type == proto::Collective::ALL_TO_ALL) && elems % n != 0)
        return Status::InvalidInput("collective sweep: " + std::to_string(bytes) + " bytes do not divide among " +
                                    std::to_string(n) + " ranks");
      if (gathers) c.set_in_elems(elems / n);
      if (scatters) c.set_out_elems(elems / n);
      CollectiveBuffers b;
      b.input = at::ones({c.in_elems()}, on_device);
      b.output = WritesInPlace(type) ? b.input : at::ones({c.out_elems()}, on_device);
      const std::string what = std::string(eg::CollectiveTypeName(type)) + " of " + std::to_string(bytes) + " bytes";
      comm->SetProgress("sweep: " + what);
      std::vector<double> times;
      for (int it = 0; it < options.warmup + options.iters; ++it) {
        const auto t0 = std::chrono::steady_clock::now();
        Result<std::shared_ptr<PendingWork>> work = comm->Issue(c, b);
        if (!work.ok()) {
          comm->Abandon();
          return Status::Internal("collective sweep: " + what + ": " + work.status().message());
        }
        if (Status st = comm->Wait(*work, what); !st.ok()) {
          comm->Abandon();
          return st;
        }
        executor->Synchronize();  // a GPU backend's wait only orders the current stream
        if (it >= options.warmup)
          times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
      }
      // The fastest iteration: other work on a shared machine, or a peer that arrived late,
      // only ever adds to a collective's time.
      out.push_back({type, bytes, *std::min_element(times.begin(), times.end())});
    }
  }
  MIMIC_RETURN_IF_ERROR(comm->Barrier("the sweep's final barrier"));
  return out;
}

Result<AlphaBeta> FitAlphaBeta(const std::vector<CollectiveSample>& samples, int64_t ranks) {
  // t = alpha + x / busbw with x = S x factor: ordinary least squares in (x, t).
  std::vector<double> x, t;
  std::vector<int64_t> sizes;
  for (const CollectiveSample& s : samples) {
    x.push_back(static_cast<double>(s.bytes) * eg::BusBandwidthFactor(s.type, ranks));
    t.push_back(s.time_us);
    sizes.push_back(s.bytes);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.size() < 2) return Status::InvalidInput("an alpha-beta fit needs at least two sizes");
  const Line fit = FitLine(x, t);  // us per byte
  if (!(fit.slope > 0)) {
    std::string seen;
    for (const CollectiveSample& s : samples)
      seen += (seen.empty() ? "" : ", ") + std::to_string(s.bytes) + " B in " +
              std::to_string(std::lround(s.time_us)) + " us";
    return Status::InvalidInput("the collective's time does not grow with its size (" + seen + ")");
  }
  AlphaBeta ab;
  ab.alpha_us = std::max(0.0, fit.intercept);
  ab.bus_bytes_per_s = 1e6 / fit.slope;
  return ab;
}

}  // namespace mimic::replay
