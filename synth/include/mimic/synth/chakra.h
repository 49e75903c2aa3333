// Chakra execution traces (MLCommons; the input of ASTRA-sim): export of a workload as one
// rank's `.et` file, and a reader of such files that treats them as untrusted input.
// docs/chakra.md documents the node mapping. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mimic/base/status.h"
#include "proto/chakra.pb.h"
#include "proto/workload.pb.h"

namespace mimic::synth {

// The Chakra schema version written in GlobalMetadata.version.
inline constexpr std::string_view kChakraVersion = "0.0.4";

// A Chakra trace in memory: the metadata record and the nodes, in stream order.
struct ChakraTrace {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

struct ChakraExportOptions {
  // Emit every linked device kernel as its own COMP_NODE (is_cpu_op = false) that depends on
  // the node of the op that launched it; that op's node then stands for its CPU time only.
  // Without it, an op that launched kernels is one GPU node timed by its summed kernel time.
  bool kernel_nodes = false;
  // Name a vendor op's node (cudnn_*, miopen_*, mkldnn_*: eg::PortableOf) after its portable
  // ATen equivalent, the vendor's name kept in the attribute "vendor_name".
  bool portable_names = false;
};

// Converts `workload` into the Chakra trace of its rank: one node per top-level replayable op
// (COMP_NODE), per collective (COMM_COLL_NODE, the top-most collective op of a subtree) and
// per send/recv (COMM_SEND_NODE/COMM_RECV_NODE), in start order, with ids 0, 1, 2, ...; every
// dependency points to an earlier node. REQUIRES: `workload` came from eg::LoadWorkload (its
// indices are checked); indices out of range are ignored, never followed.
ChakraTrace ToChakra(const proto::Workload& workload, const ChakraExportOptions& options = {});

// The file a rank's trace goes to: "<prefix>.<rank>.et".
std::string ChakraPath(const std::string& prefix, int64_t rank);

// The stream bytes of `trace`: [varint32 length][GlobalMetadata], then [varint32 length][Node]
// for each node; uncompressed.
std::string SerializeChakra(const ChakraTrace& trace);

// Writes `trace` to `path` atomically (temporary file + rename), gzip-compressed when `path`
// ends in ".gz". Errors: Io when the file cannot be written, Internal when gzip fails.
Status WriteChakra(const std::string& path, const ChakraTrace& trace);

// Parses a Chakra stream from `bytes`, the file's bytes as stored (gzip is undone, recognized
// by its magic bytes); `name` is only used in messages. Nothing is allocated by a length
// prefix before it has been checked against the bytes that are left.
// Errors: InvalidInput naming `name` and the byte offset (in the decompressed stream) for an
// empty stream, a bad or truncated length prefix, a length that runs past the end, or a
// message that does not parse; InvalidInput from gzip for corrupt or truncated compression;
// Unsupported for a stream of 2 GiB or more.
Result<ChakraTrace> ParseChakra(const std::string& name, std::string_view bytes);
// As ParseChakra, for the file at `path`. Errors: also NotFound / Io from reading the file.
Result<ChakraTrace> ReadChakra(const std::string& path);

// The attribute of `node` named `name`, or nullptr.
const ChakraProtoMsg::AttributeProto* FindAttr(const ChakraProtoMsg::Node& node,
                                               std::string_view name);
// The value of an integer or bool attribute (int32, int64, uint32, uint64, bool), or nullopt
// when `node` has no such attribute or it holds another type. uint64 values above INT64_MAX
// read as nullopt.
std::optional<int64_t> IntAttr(const ChakraProtoMsg::Node& node, std::string_view name);
// The value of a string attribute, or nullopt.
std::optional<std::string> StringAttr(const ChakraProtoMsg::Node& node, std::string_view name);

// Figures that `mimic import-chakra` prints.
struct ChakraSummary {
  struct Comm {
    int64_t count = 0;
    int64_t total_bytes = 0;  // sum of comm_size
    int64_t min_bytes = 0;
    int64_t max_bytes = 0;
  };
  std::string version;
  std::map<std::string, std::string> metadata;  // GlobalMetadata attributes, as text
  int64_t nodes = 0;
  std::map<std::string, int64_t> node_types;  // NodeType name -> count
  int64_t cpu_nodes = 0;                      // COMP_NODEs with is_cpu_op true
  int64_t gpu_nodes = 0;                      // COMP_NODEs with is_cpu_op false
  // Communication by kind: CollectiveCommType names for COMM_COLL_NODEs ("UNKNOWN" when
  // comm_type is missing or out of range), "SEND" and "RECV" for point-to-point nodes.
  std::map<std::string, Comm> comms;
  int64_t ctrl_deps = 0;
  int64_t data_deps = 0;
  int64_t cross_stream_deps = 0;  // data deps between nodes whose `stream` attributes differ
  int64_t dangling_deps = 0;      // to an id no node has
  int64_t forward_deps = 0;       // to a node that comes later in the stream (or itself)
  int64_t duplicate_ids = 0;      // nodes whose id an earlier node already has
  int64_t roots = 0;              // nodes without dependencies
};
ChakraSummary SummarizeChakra(const ChakraTrace& trace);

// "COMP_NODE", "ALL_GATHER", ...; "UNKNOWN" for values outside the enums.
std::string_view NodeTypeName(int type);
std::string_view CommTypeName(int64_t comm_type);

}  // namespace mimic::synth
