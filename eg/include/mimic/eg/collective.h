// Communication in a workload: which ops are collectives, what each one moves and on which
// process group, read from every form an execution trace records it in:
//   - c10d::allreduce_, c10d::allgather_, ... (the dispatcher ops torch.distributed calls);
//   - record_param_comms, with positional arguments (schema 1.0.2: pg id; 1.0.3+: (pg_name,
//     pg_desc)) and, from schema 1.1.0, attrs (collective_name, in_msg_nelems, pg_name, ...);
//   - _c10d_functional::all_reduce, ... and their wait_tensor (traced/compiled programs);
//   - the backends' own spans, nccl:all_reduce and gloo:all_reduce: the time the communication
//     took, and the communication itself only where nothing above issued it.
// Pure functions of the workload; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "proto/workload.pb.h"

namespace mimic::eg {

// The collective a name spells, ignoring namespace, underscores and case:
// "c10d::_allgather_base_", "all_gather", "nccl:all_reduce", "recv_any_source_", "wait".
// TYPE_UNKNOWN for anything else.
proto::Collective::Type CollectiveTypeOfName(std::string_view name);

// Short lower-case name: "all_reduce", "all_gather", "reduce_scatter", "all_to_all", ...
const char* CollectiveTypeName(proto::Collective::Type type);

// Sets Op.collective on the top-most op of every communication and on every op that waits for
// one, and pairs asynchronous collectives with their waits. Kineto spans (when linked) give
// Collective.original_us. Idempotent.
void AnnotateCollectives(proto::Workload& workload);

// True for ops that carry a collective of a communicating type (not WAIT).
inline bool IsCommunication(const proto::Op& op) {
  return op.has_collective() && op.collective().type() != proto::Collective::TYPE_UNKNOWN &&
         op.collective().type() != proto::Collective::WAIT;
}

// Size S of nccl-tests for a collective, in bytes: the whole array for all-gather,
// reduce-scatter and all-to-all (the larger of this rank's input and output), the buffer for
// the others.
int64_t CollectiveBytes(const proto::Collective& c);

// nccl-tests' bus-bandwidth factor for `type` on `n` ranks (../shared/REFERENCE.md §5):
// 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 otherwise.
double BusBandwidthFactor(proto::Collective::Type type, int64_t n);

struct CollectiveCount {
  int64_t count = 0;
  int64_t bytes = 0;  // CollectiveBytes summed
};
struct CollectiveTotals {
  int64_t issued = 0;
  int64_t bytes = 0;
  std::map<std::string, CollectiveCount> by_type;  // by CollectiveTypeName
  std::map<std::string, CollectiveCount> by_group;  // by process group name
};
// Counts one issued collective into `totals`.
void AddCollective(CollectiveTotals& totals, const proto::Collective& c);
// The communications (IsCommunication) among the ops at `indices` into workload.ops().
CollectiveTotals CountCollectives(const proto::Workload& workload, const std::vector<int>& indices);
// ... among all ops.
CollectiveTotals CountCollectives(const proto::Workload& workload);

}  // namespace mimic::eg
