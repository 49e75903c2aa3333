// Where this process sits in a multi-rank job, from the environment its launcher set:
//   torchrun (and torch.distributed.launch): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//   Slurm (srun):  SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, and the first host of
//                  SLURM_STEP_NODELIST / SLURM_JOB_NODELIST as the rendezvous address
//   Open MPI (mpirun): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
//   MPICH / Intel MPI (PMI): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
// MASTER_ADDR and MASTER_PORT, when set, override what a launcher implies; without them the
// rendezvous is 127.0.0.1 (every rank on this host) or the first Slurm node, port 29500.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "mimic/base/status.h"
#include "proto/workload.pb.h"

namespace mimic::replay {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher;  // "torchrun", "slurm", "openmpi", "pmi"
};

// Looks a variable up; nullptr when unset. The default reads the process environment.
using EnvLookup = std::function<const char*(const char*)>;

// nullopt when no launcher variable is set (a single-process run). InvalidInput naming the
// variable for a value that is not a number or out of range (rank >= world size, say).
Result<std::optional<DistEnv>> DistEnvFromEnvironment(const EnvLookup& env = nullptr);

// Checks, before anything is set up, that the launch fits the trace: the number of ranks the
// trace recorded (when it says), and, for a trace that records its own rank (Kineto's
// distributedInfo, a capture manifest), that this rank was given it. A workload that synth
// scaled to another world size is every rank's. InvalidInput naming both figures.
Status CheckLaunchMatchesTrace(const DistEnv& env, const proto::Workload& workload);

// The first host of a Slurm node list: "node[03-05,7],gpu1" -> "node03". Empty if malformed.
std::string FirstSlurmHost(const std::string& nodelist);

}  // namespace mimic::replay
