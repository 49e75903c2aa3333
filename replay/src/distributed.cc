#include "mimic/replay/distributed.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>

namespace mimic::replay {
namespace {

struct Launcher {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
};
// In order of precedence: torchrun's variables win when a launcher nests another (torchrun
// started by srun sets both).
constexpr Launcher kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
};

Result<int> ParseInt(const char* name, const char* value, int lo, int hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi)
    return Status::InvalidInput("environment variable " + std::string(name) + "=\"" + value +
                                "\": expected an integer in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  return static_cast<int>(v);
}

}  // namespace

std::string FirstSlurmHost(const std::string& nodelist) {
  // "prefix[a-b,c,...]suffix,..." or "host1,host2": the first host only.
  std::string_view s = nodelist;
  const size_t bracket = s.find('[');
  const size_t comma = s.find(',');
  if (bracket == std::string_view::npos || (comma != std::string_view::npos && comma < bracket))
    return std::string(s.substr(0, comma));
  const size_t close = s.find(']', bracket);
  if (close == std::string_view::npos) return "";
  std::string_view range = s.substr(bracket + 1, close - bracket - 1);
  range = range.substr(0, range.find_first_of(",-"));  // keeps zero padding: "03"
  if (range.empty()) return "";
  std::string_view rest = s.substr(close + 1);
  rest = rest.substr(0, rest.find(','));
  return std::string(s.substr(0, bracket)) + std::string(range) + std::string(rest);
}

Result<std::optional<DistEnv>> DistEnvFromEnvironment(const EnvLookup& lookup) {
  const EnvLookup env = lookup ? lookup : [](const char* n) -> const char* { return std::getenv(n); };
  for (const Launcher& l : kLaunchers) {
    const char* rank = env(l.rank);
    const char* size = env(l.size);
    if (!rank || !size) continue;
    DistEnv d;
    d.launcher = l.name;
    MIMIC_ASSIGN_OR_RETURN(d.world_size, ParseInt(l.size, size, 1, 1 << 20));
    MIMIC_ASSIGN_OR_RETURN(d.rank, ParseInt(l.rank, rank, 0, d.world_size - 1));
    if (const char* local = env(l.local_rank)) {
      MIMIC_ASSIGN_OR_RETURN(d.local_rank, ParseInt(l.local_rank, local, 0, d.world_size - 1));
    }
    if (d.launcher == "slurm") {
      for (const char* list : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
        if (const char* nodes = env(list)) {
          const std::string host = FirstSlurmHost(nodes);
          if (host.empty())
            return Status::InvalidInput("environment variable " + std::string(list) + "=\"" + nodes +
                                        "\": not a Slurm node list");
          d.master_addr = host;
          break;
        }
      }
    }
    if (const char* addr = env("MASTER_ADDR"); addr && *addr) d.master_addr = addr;
    if (const char* port = env("MASTER_PORT")) {
      MIMIC_ASSIGN_OR_RETURN(d.master_port, ParseInt("MASTER_PORT", port, 1, 65535));
    }
    return std::optional<DistEnv>(std::move(d));
  }
  return std::optional<DistEnv>();
}

Status CheckLaunchMatchesTrace(const DistEnv& env, const proto::Workload& w) {
  const int64_t recorded = w.provenance().world_size();
  if (recorded > 0 && recorded != env.world_size)
    return Status::InvalidInput("the trace was recorded on " + std::to_string(recorded) +
                                " ranks; " + env.launcher + " launched " +
                                std::to_string(env.world_size));
  const bool scaled =
      std::any_of(w.transformations().begin(), w.transformations().end(),
                  [](const proto::Transformation& t) { return t.name() == "world_size"; });
  if (recorded > 1 && !scaled && w.provenance().has_rank() && w.provenance().rank() != env.rank)
    return Status::InvalidInput("rank " + std::to_string(env.rank) +
                                " was given the trace of rank " +
                                std::to_string(w.provenance().rank()) +
                                ": give one trace per rank, in rank order (or --trace-dir)");
  return Status::Ok();
}

}  // namespace mimic::replay
