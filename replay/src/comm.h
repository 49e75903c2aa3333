// The replay's communicator: the job's process groups, recreated with LibTorch's c10d
// (rendezvous through its TCPStore, collectives through ProcessGroup -> the c10d dispatcher
// ops -> the executor's backend: Gloo on the CPU, NCCL on CUDA), and the fault handling a multi-rank replay needs: every
// wait is bounded by the timeout, and a failure names the ranks that stopped responding.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mimic/base/status.h"
#include "mimic/replay/distributed.h"
#include "mimic/replay/executor.h"
#include "proto/workload.pb.h"

namespace c10d {
class Work;
}

namespace mimic::replay {

// The flat buffers one collective reads and writes on this rank.
struct CollectiveBuffers {
  at::Tensor input;   // in_elems elements
  at::Tensor output;  // out_elems elements; the same tensor as input for in-place collectives
};

// Collectives whose output is their input buffer (all-reduce, broadcast, reduce, send/recv,
// barrier).
bool WritesInPlace(proto::Collective::Type type);

// A collective in flight.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
};

class Communicator {
 public:
  // Rendezvous with the other ranks (rank 0 hosts the store at env.master_addr:master_port)
  // and create the world group and every sub-group `workload` records, in recorded order, on
  // `executor`'s collective backend. `timeout` bounds the rendezvous and every collective.
  // Errors: InvalidInput when the trace's world size differs from the launch's; Internal when
  // the rendezvous or a backend fails.
  static Result<std::unique_ptr<Communicator>> Create(const DistEnv& env, const proto::Workload& workload,
                                                      Executor& executor, std::chrono::milliseconds timeout);
  ~Communicator();

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Issues `c` on `buffers`. Unsupported for a group this rank is not a member of, or a
  // collective the backend lacks or refuses (its exception's first line).
  Result<std::shared_ptr<PendingWork>> Issue(const proto::Collective& c, const CollectiveBuffers& buffers);
  // Waits for `work` at most the timeout. On failure: an error naming this rank, `what` (the
  // collective), the backend's message and the ranks whose heartbeat stopped.
  Status Wait(const std::shared_ptr<PendingWork>& work, const std::string& what);
  // What this rank is doing now, published with its heartbeat ("all_reduce #12 (op 347)").
  void SetProgress(const std::string& what);
  // All ranks of the world, with the timeout; used at the end of a replay.
  Status Barrier(const std::string& what);
  // After a failure: leaves the process groups undestroyed (their threads may be blocked on a
  // dead peer), so that the process can report and exit.
  void Abandon();

 private:
  struct Impl;
  Communicator(const DistEnv& env, std::chrono::milliseconds timeout);
  std::string DiagnosePeers();

  DistEnv env_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mimic::replay
