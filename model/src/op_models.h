// Per-op time models, chosen by operator class from a table (op_models.cc): what one leaf
// op (an op with no children in the trace) costs on a platform. Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mimic/eg/op_class.h"
#include "mimic/model/shapes.h"
#include "proto/platform.pb.h"
#include "proto/workload.pb.h"

namespace mimic::model {

// What set an op's compute time, its limiter (OpCost::bound; `mimic predict --json`'s "bound"):
//   flops            its FLOPs at the efficiency of its shape (measured, or the wave estimate)
//   bytes            its bytes at the bandwidth of its kind (a link's, for a collective)
//   measured         a measured time of its kind and shape (calibrate's index sweeps)
//   misaligned_loads a misaligned tensor-core GEMM's fallback kernel, its tiles' element loads
//   block_starts     a kernel of many small blocks, as fast as its SMs start them
//   dependent_loads  a kernel whose threads wait out their loads one step after another
//   unrolled_elements ATen's unrolled elementwise kernel, an element at a time
//   sm_cycles        SM cycles per element (channels-last batch norm's Welford loop)
//   min_kernel       the shortest a kernel runs, times the kernels it launched
//   delay            synth's stand-in for a substituted op: the time it was given
namespace bound {
inline constexpr const char* kFlops = "flops";
inline constexpr const char* kBytes = "bytes";
inline constexpr const char* kMeasured = "measured";
inline constexpr const char* kMisalignedLoads = "misaligned_loads";
inline constexpr const char* kBlockStarts = "block_starts";
inline constexpr const char* kDependentLoads = "dependent_loads";
inline constexpr const char* kUnrolledElements = "unrolled_elements";
inline constexpr const char* kSmCycles = "sm_cycles";
inline constexpr const char* kMinKernel = "min_kernel";
inline constexpr const char* kDelay = "delay";
}  // namespace bound

struct OpCost {
  const char* model = "none";  // the table record that priced it
  double flops = 0;
  double bytes = 0;
  double compute_us = 0;       // kernel (device) or CPU compute time, overheads excluded
  const char* bound = "";      // what set compute_us (namespace bound); "" for none
  bool launches = true;        // false for views and metadata ops: no kernel, no compute
  // Why no model sees the op's work, when none does ("compiled code", "op without a model",
  // "no shapes recorded"): then compute_us is only a floor (its bytes at memory bandwidth).
  const char* unmodelled = nullptr;
};

// What the trace tells about an op beyond its own arguments.
struct OpEvidence {
  double cold_fraction = 0;  // share of its input bytes not in cache (CacheModel, predict.cc)
  // The copy its recorded device work made (a memcpy event at or under it); route kNone when
  // the trace recorded none.
  eg::DeviceCopy recorded_copy;
  // A TBE op's other pass (PairTbeOps): the backward's forward, or the forward's backward.
  const proto::Op* tbe_partner = nullptr;
  // The bytes of the nonzero values of the sparse tensors it reads, where it reads one (the
  // `aten::_values` its recorded children took); 0 otherwise.
  double sparse_values_bytes = 0;
  // The rows (nonzeros of its sparse dims) and elements per row of the largest of those values.
  int64_t sparse_rows = 0, sparse_row_width = 0;
  // A GEMM or convolution kernel it (or an op under it) launched multiplied fp32 operands in
  // TF32 on tensor cores (eg::IsTf32Kernel): the job allowed TF32 for it.
  bool tf32_kernels = false;
  // It is (or an op under it is) ATen's own batch norm (aten::native_batch_norm and its
  // backward, aten::_native_batch_norm_legit), not cuDNN's: its kernels are Normalization.cuh's.
  bool native_batch_norm = false;
  // The device activities (kernels, copies, memsets) it and the ops under it launched in the
  // trace: on a GPU each takes at least the platform's min_kernel_us. 0 where none was recorded.
  int recorded_launches = 0;
  // Of ATen's elementwise kernels it (or an op under it) launched: 1 where one was the unrolled
  // kernel (`unrolled_elementwise_kernel`: an element at a time, for operands whose dtypes the
  // kernel converts), 0 where all were vectorized ones, -1 where the trace recorded neither.
  int unrolled_kernels = -1;
};

// The tensors among `values` (lists included), and the bytes of one (0 for null).
std::vector<const proto::Tensor*> Tensors(const proto::Workload& w,
                                          const google::protobuf::RepeatedPtrField<proto::Value>& values);
double Bytes(const proto::Tensor* t);

// The tensors `op` wrote, as recorded. A Kineto trace alone records no outputs: there, an
// elementwise, copy (not copy_, which the models read from its source), softmax or normalization
// op writes one tensor the size of its largest input (an in-place op: its first input again),
// cat and stack all their inputs; other classes stay without (`in`: the op's input tensors).
std::vector<const proto::Tensor*> OutputsOf(const proto::Workload& w, const proto::Op& op,
                                            const std::vector<const proto::Tensor*>& in);

// The cost of `op` as a leaf on `p`. Never fails: an op whose arguments the model cannot read
// is priced by the bytes of the tensors it touches (and marked `unmodelled` where no model sees
// its work). Memory-bound ops pay the platform's measured cold-input slow-down on the cold share
// of their inputs (`e.cold_fraction`).
OpCost LeafCost(const proto::Workload& w, const proto::Op& op, const proto::Platform& p,
                const OpEvidence& e = {});

// How many calls of its op a _foreach_ op makes on the CPU: one per position of its lists (ATen
// has no fused CPU kernels); 0 for any other op. LeafCost prices a CPU _foreach_ op call by call.
int ForeachCalls(const proto::Op& op);

// Whether the model prices `op` as a view or metadata op (no data moves, only the dispatch).
bool IsViewOp(const proto::Workload& w, const proto::Op& op);

// Pairs fbgemm's TBE backward nodes with their forward ops among `ops` (indices into w.ops(),
// in start order), by optimizer: the autograd engine runs the ready node created last first,
// so each backward takes the latest unpaired forward before it. Returns both directions.
std::map<int, int> PairTbeOps(const proto::Workload& w, const std::vector<int>& ops);

// Collective cost by alpha-beta with the nccl-tests bus factor (docs/model.md), for an op that
// carries a collective (eg::IsCommunication). `ranks` is the group size. Sets `bytes` to the
// message size S.
OpCost CollectiveCost(const proto::Op& op, const proto::Platform& p, int64_t ranks);

// Effective bandwidth of memory-bound kind `kind` at `bytes` per call on `p`: interpolated in
// log(bytes) between the calibrated points of that kind on tensors of `dtype` where measured,
// else of that kind in fp32, else binary's, else of any kind, else a fraction of the datasheet
// memory bandwidth.
double EffectiveBandwidth(const proto::Platform& p, std::string_view kind, double bytes,
                          std::string_view dtype = "fp32");

// Whether `p` measured kind `kind` in cache on tensors of `dtype` ("fp32", "bf16", ...).
bool HasBandwidthPoints(const proto::Platform& p, std::string_view kind, std::string_view dtype);

// How many times longer kind `kind` takes at `bytes` per call when its inputs come from DRAM
// (HBM) instead of cache: hot / cold bandwidth of that kind's measured cold points (else of
// "binary"), interpolated like EffectiveBandwidth. 1 below the smallest cold point, or when
// the platform has none.
double ColdSlowdown(const proto::Platform& p, std::string_view kind, double bytes);

// Efficiency (fraction of peak) of a GEMM-shaped computation from the calibrated points
// (inverse-distance weighting over the nearest shapes in log space), else a wave- and
// tile-quantization estimate for GPUs. `table` is gemm_efficiency or conv_efficiency.
double ShapeEfficiency(const proto::Platform& p,
                       const google::protobuf::RepeatedPtrField<proto::EfficiencyPoint>& table,
                       double m, double n, double k, std::string_view dtype, std::string_view pass,
                       std::string_view layout = "");

// Microseconds an index op of shape `s` takes on `p`, from the platform's index_ops points of
// its kind: an exact match as is; else trilinear interpolation of log time in (log L, log D,
// log R) on the sweep's grid (below the grid the smallest value's time, above it extrapolated
// along the last two values); where the grid has no full cell around the shape, the nearest
// point scaled by the elements moved, (L + R) x D. -1 when the platform has no point of the
// kind.
double IndexOpUs(const proto::Platform& p, const IndexShape& s);

// How much slower an index op of shape `s` runs when its tensors are out of cache: the cold
// over the hot time of the points measured both ways (IndexPoint.cold), trilinear in log over
// their grid and held at its edges; at least 1, and 1 where the platform measured none.
double IndexColdSlowdown(const proto::Platform& p, const IndexShape& s);

// The bandwidth kind `mimic calibrate` measures for a math-heavy elementwise op or loss
// ("sqrt", "exp", "tanh", "gelu", "binary_cross_entropy", ...), or "" for ops priced as plain
// traffic.
std::string_view MathKindOf(std::string_view op);

// "fp32", "bf16", ... for a workload dtype.
std::string_view DtypeKey(proto::DType d);

}  // namespace mimic::model
