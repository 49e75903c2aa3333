// The compute-bound shapes a workload runs (GEMMs and convolutions), as the op models read
// them from the recorded arguments: what `mimic calibrate --workload` adds to its sweeps so
// that the efficiency table holds those exact shapes. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/workload.pb.h"

namespace mimic::model {

struct GemmShape {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  std::string dtype;  // "fp32", "bf16", ...
  size_t foreign_inputs = 0;  // recorded input tensors before the op's own (not its operands)
  bool operator==(const GemmShape&) const = default;
};

struct ConvShape {
  std::vector<int64_t> input, weight;  // NCHW... and OIHW...
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  bool transposed = false;  // weight (C_in, C_out / groups, ...): conv_transpose*d
  bool backward = false;
  int passes = 1;  // backward: the gradients computed, input and weight (output_mask), 1 or 2
  std::string dtype;
  bool input_grad =
      true;  // backward: grad_input among them (false: a first layer's, weight's alone)
  bool channels_last = false;  // the input as recorded: channels innermost (NHWC, NDHWC)
  bool operator==(const ConvShape&) const = default;
};

// The GEMM an op computes (aten::mm, addmm, bmm, baddbmm, matmul, linear, mv, ...); false when
// the op is not one or its tensors are not recorded.
bool GemmShapeOf(const proto::Workload& w, const proto::Op& op, GemmShape* out);

// The convolution an op computes (aten::conv1d/2d/3d, conv_transpose1d/2d/3d, convolution,
// _convolution, convolution_backward; transposed ones too); false otherwise.
bool ConvShapeOf(const proto::Workload& w, const proto::Op& op, ConvShape* out);

// An embedding-bag lookup: a table of num_weights x dim, `lookups` indices into `bags` bags.
struct EmbeddingShape {
  int64_t num_weights = 0, dim = 0, lookups = 0, bags = 0;
  std::string dtype;
  bool operator==(const EmbeddingShape&) const = default;
};

// Fused attention: query B x H x L x E, key/value B x H x S x E.
struct AttentionShape {
  std::vector<int64_t> query, key, value;
  std::string dtype;
  bool operator==(const AttentionShape&) const = default;
};

// A oneDNN recurrent layer (aten::mkldnn_rnn_layer or its backward: nn.LSTM on the CPU) over
// `steps` steps of `batch` sequences, gates_hidden = gates x hidden (4H for an LSTM). Its input
// is time-major whatever batch_first says: the RNN transposes a batch-first input first.
struct RnnShape {
  int64_t steps = 0, batch = 0, input = 0, hidden = 0, gates_hidden = 0;
  bool backward = false;
  std::string dtype;
  bool operator==(const RnnShape&) const = default;
};

// An index- or scatter-style op (eg::IndexOpOf): `indices` rows of `row_width` elements looked
// up in, or accumulated into, a tensor of `rows` rows.
struct IndexShape {
  std::string kind;  // eg::IndexOp::kind
  int64_t indices = 0, row_width = 0, rows = 0;
  std::string dtype;
  bool operator==(const IndexShape&) const = default;
};

bool EmbeddingShapeOf(const proto::Workload& w, const proto::Op& op, EmbeddingShape* out);
// False when the op is not an index op, its tensors are not recorded, or (index_put_) it does
// not accumulate.
bool IndexShapeOf(const proto::Workload& w, const proto::Op& op, IndexShape* out);
bool RnnShapeOf(const proto::Workload& w, const proto::Op& op, RnnShape* out);
// What the model counts for a layer: 2 x T x B x G*H x (I + H) FLOPs, the backward twice that.
double RnnFlops(const RnnShape& r);
bool AttentionShapeOf(const proto::Workload& w, const proto::Op& op, AttentionShape* out);

// A convolution as the GEMM it amounts to: m = N x output pixels, n = output channels,
// k = input channels per group x kernel pixels (weight dims 0 and 1 x kernel pixels). A
// transposed one as the convolution whose data gradient it is: m = N x input pixels.
struct ImplicitGemm {
  double m = 1, n = 1, k = 1;
};
ImplicitGemm ImplicitGemmOf(const ConvShape& c);
// A 4-D or 5-D tensor whose channels (dim 1) are its innermost dim, as recorded: NHWC memory.
bool IsChannelsLast(const proto::Tensor& t);
// PyTorch's CUDA EmbeddingBag forward (EmbeddingBag_updateOutputKernel_sum_mean and _max,
// ATen's EmbeddingBag.cu) launches 1,024 blocks of 32 x 8 threads whatever the shape: each warp
// sums one bag's 32-column chunk, one looked-up row a step. The steps each warp takes for `bags`
// bags of `dim` columns and `lookups` ids in all, on `sm_count` SMs (0 = unknown: the whole grid
// resident); 0 where there is no bag.
double EmbeddingBagSteps(double bags, double dim, double lookups, int64_t sm_count);
// One spatial dim of a max pooling: the input's and the output's sizes, the window's kernel,
// stride, padding and dilation.
struct PoolDim {
  int64_t size = 0, out = 0, kernel = 0, stride = 0, pad = 0, dilation = 1;
};
// The window visits PyTorch's CUDA max pooling kernels for channels-last maps make along one
// dim (DilatedMaxPool2d.cu): the forward's threads walk each output's window an element a step
// (its clipped extent; the kernel steps one element at a time whatever the dilation), the
// backward's each input element's covering windows, reading each one's index. A map's visits
// are the product over its dims, times its batch and channels. 0 for a window that is none, or
// a dim over 2^20 (no real map: an untrusted trace's, which the walk would take hours over).
double MaxPoolVisits(const PoolDim& d, bool backward);
// How PyTorch's CUDA reduction kernel (ATen's Reduce.cuh, setReduceConfig) lays out a sum of
// `rows` x `cols` contiguous elements over its rows into `cols` outputs (a bias's gradient,
// grad.sum(0)): each thread sums `values_per_thread` inputs of one output, 4 loads in flight at a
// time (vt0); where one block's threads leave too many values each, the rows are split over
// `ctas_per_output` blocks, whose partial sums the last block to finish reads one after another,
// a block's height of them at a time (`serial_partials`; 0 without that global step).
struct ColumnReduceLaunch {
  int64_t threads_per_block = 0;
  int64_t grid_x = 0, ctas_per_output = 1;
  int64_t values_per_thread = 0;
  int64_t serial_partials = 0;
};
// `sm_count`: the GPU's SMs (the split is capped at the blocks the SMs hold at once).
ColumnReduceLaunch ColumnReduceLaunchOf(int64_t rows, int64_t cols, int64_t sm_count);
// The conv_efficiency pass a convolution is measured and priced under: "forward", "backward"
// or "backward_weight" (the weight's gradient alone, as a network's first layer computes it),
// with "transposed_" before it for a transposed one (its kernels differ: oneDNN runs it as a
// backward-data convolution, with its own blocking) and "strided_" for one with a stride above
// 1 (a downsampling layer: on the CPU its backward ran 1.3-1.6x a stride-1 one of the same
// implicit GEMM, docs/model.md).
std::string ConvPassOf(const ConvShape& c);
// That pass without its prefix: "forward", "backward" or "backward_weight".
std::string PlainConvPassOf(const ConvShape& c);

struct WorkloadShapes {
  std::vector<GemmShape> gemms;  // distinct, in first-seen order
  std::vector<ConvShape> convs;
  std::vector<EmbeddingShape> embeddings;
  std::vector<AttentionShape> attentions;
  std::vector<RnnShape> rnns;
  std::vector<IndexShape> indexes;
};
WorkloadShapes ShapesOf(const proto::Workload& w);

}  // namespace mimic::model
