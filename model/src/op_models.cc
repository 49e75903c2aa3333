// The op-class table: one record per class with the function that counts its FLOPs and
// bytes and prices them (nccl-tests' testColl / ggml's op_flops pattern). docs/model.md
// describes each model and where its constants come from.
#include "op_models.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "mimic/eg/collective.h"
#include "mimic/eg/op_class.h"
#include "mimic/eg/schema_args.h"
#include "mimic/eg/workload.h"
#include "mimic/model/platform.h"
#include "mimic/model/shapes.h"

namespace mimic::model {
namespace {

using eg::OpClass;

std::string_view BaseName(std::string_view name) {
  const size_t ns = name.find("::");
  const size_t dot = name.find('.', ns == std::string_view::npos ? 0 : ns + 2);
  return name.substr(0, dot);
}

const proto::Tensor* TensorOf(const proto::Workload& w, const proto::Value& v) {
  if (v.kind_case() != proto::Value::kTensor) return nullptr;
  if (v.tensor() < 0 || v.tensor() >= w.tensors_size()) return nullptr;
  return &w.tensors(v.tensor());
}

void CollectTensors(const proto::Workload& w, const proto::Value& v, std::vector<const proto::Tensor*>& out) {
  if (const proto::Tensor* t = TensorOf(w, v)) {
    out.push_back(t);
  } else if (v.kind_case() == proto::Value::kList) {
    for (const proto::Value& item : v.list().items()) CollectTensors(w, item, out);
  }
}

double Prod(const proto::Tensor* t, int from, int to) {
  double p = 1;
  for (int i = std::max(from, 0); i < std::min(to, t->shape_size()); ++i) p *= static_cast<double>(t->shape(i));
  return p;
}

// An operator's name without its overload: "aten::add.Tensor" -> "aten::add".
std::string_view OperatorOf(std::string_view name) {
  const size_t ns = name.find("::");
  return name.substr(0, name.find('.', ns == std::string_view::npos ? 0 : ns + 2));
}

// The schema `op`'s inputs follow: the workload's, where the op has one ("" for none: a Kineto
// trace alone). A vendor op LeafCost rewrote as its portable equivalent keeps the vendor's
// schema index: its inputs follow the equivalent's schema.
std::string SchemaOf(const proto::Workload& w, const proto::Op& op) {
  if (op.schema() < 0 || op.schema() >= w.schemas_size()) return "";
  const std::string& schema = w.schemas(op.schema());
  if (OperatorOf(std::string_view(schema).substr(0, schema.find('('))) == OperatorOf(op.name()))
    return schema;
  for (const eg::PortableEquivalent& e : eg::PortableEquivalents())
    if (e.portable == op.name()) return std::string(e.schema);
  return schema;
}

// The recorded value of `op`'s argument `name`, found by its schema; nullptr where the op has no
// schema or the trace did not record that argument.
const proto::Value* ArgNamed(const proto::Workload& w, const proto::Op& op, std::string_view name) {
  const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(SchemaOf(w, op));
  for (size_t i = 0; i < args.size() && i < static_cast<size_t>(op.inputs_size()); ++i)
    if (args[i].name == name) return &op.inputs(static_cast<int>(i));
  return nullptr;
}

// Whether input `pos` of `op` is a recorded `true` (false where absent or of another kind).
bool BoolArg(const proto::Op& op, int pos) {
  return pos >= 0 && pos < op.inputs_size() &&
         op.inputs(pos).kind_case() == proto::Value::kBoolValue && op.inputs(pos).bool_value();
}

// Input `pos` of `op` as a list of ints (one int recorded alone: a list of it; empty where
// absent or of another kind).
std::vector<int64_t> IntList(const proto::Op& op, int i) {
  std::vector<int64_t> out;
  if (i >= op.inputs_size()) return out;
  const proto::Value& v = op.inputs(i);
  if (v.kind_case() == proto::Value::kList)
    for (const proto::Value& item : v.list().items())
      if (item.kind_case() == proto::Value::kIntValue) out.push_back(item.int_value());
  if (v.kind_case() == proto::Value::kIntValue) out.push_back(v.int_value());
  return out;
}

int64_t Dim(const proto::Tensor* t, int i) {
  if (i < 0) i += t->shape_size();
  return (i >= 0 && i < t->shape_size()) ? t->shape(i) : 1;
}

// Bytes of every tensor an op reads (`a`) and writes (`b`): an in-place op's tensor counts once
// read and once written; a tensor passed twice (addcmul_(g, g)) is read once.
double TouchedBytes(const std::vector<const proto::Tensor*>& a, const std::vector<const proto::Tensor*>& b) {
  double sum = 0;
  for (std::vector<const proto::Tensor*> list : {a, b}) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    for (const proto::Tensor* t : list) sum += Bytes(t);
  }
  return sum;
}

bool IsGpu(const proto::Platform& p) { return p.device_type() == "cuda"; }

// The cycles a GPU's SMs run together in a microsecond at its boost clock; 0 where the platform
// does not say (a CPU, or a GPU without `sm_count` or `boost_clock_mhz`).
double SmCyclesPerUs(const proto::Platform& p) {
  if (!IsGpu(p) || p.sm_count() <= 0 || !(p.boost_clock_mhz() > 0)) return 0;
  return static_cast<double>(p.sm_count()) * p.boost_clock_mhz();
}

// Time for `flops` at `eff` of peak, bounded below by the bytes at memory bandwidth (roofline);
// `*memory_bound` says whether the bytes set it.
double RooflineUs(const proto::Platform& p, double flops, double bytes, double peak, double eff,
                  bool* memory_bound) {
  const double compute = peak > 0 ? flops / (peak * std::max(eff, 1e-3)) : 0;
  const double memory = bytes / EffectiveBandwidth(p, "copy", bytes);
  *memory_bound = memory > compute;
  return std::max(compute, memory) * 1e6;
}

bool UsesTensorCores(std::string_view dtype) { return dtype != "fp32" && dtype != "fp64"; }

// a / b rounded up, for a >= 0 and b > 0, without overflowing near INT64_MAX.
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// Raises `cost` to `us` where that is longer: `limiter` then sets its time.
void AtLeast(OpCost& cost, double us, const char* limiter) {
  if (us > cost.compute_us) cost.compute_us = us, cost.bound = limiter;
}

struct Ctx {
  const proto::Workload& w;
  const proto::Op& op;
  const proto::Platform& p;
  std::string_view name;  // base name
  std::vector<const proto::Tensor*> in, out;
  const OpEvidence& e;  // cold share of the inputs, recorded copy, TBE partner
};

// Extra time a compute-bound op spends bringing its cold operands from DRAM (HBM): its
// efficiencies were measured with operands in cache, so the cold share of its input bytes
// pays the difference between cold and hot copy bandwidth at that size.
double ColdOperandsUs(const Ctx& c) {
  if (c.e.cold_fraction <= 0) return 0;
  double in = 0;
  for (const proto::Tensor* t : c.in) in += Bytes(t);
  if (in <= 0) return 0;
  const double slowdown = ColdSlowdown(c.p, "copy", in);
  return c.e.cold_fraction * in / EffectiveBandwidth(c.p, "copy", in) * (slowdown - 1) * 1e6;
}

// A compute-bound op of `flops` whose efficiency `table` holds by GEMM shape (m, n, k), run as
// one kernel per entry of `pass_bytes`, each an equal share of the FLOPs moving those bytes:
// each kernel on the roofline at that efficiency (over `slowdown`), plus the op's cold operands.
OpCost ComputeBoundInPasses(const Ctx& c, const char* model, double flops,
                            const std::vector<double>& pass_bytes,
                            const google::protobuf::RepeatedPtrField<proto::EfficiencyPoint>& table,
                            double m, double n, double k, std::string_view dtype,
                            std::string_view pass, double slowdown = 1,
                            std::string_view layout = "") {
  OpCost cost;
  cost.model = model;
  cost.flops = flops;
  const double eff = ShapeEfficiency(c.p, table, m, n, k, dtype, pass, layout) / slowdown;
  const double peak = PeakFlops(c.p, dtype, UsesTensorCores(dtype));
  const double share = flops / static_cast<double>(std::max<size_t>(pass_bytes.size(), 1));
  const double cold_us = ColdOperandsUs(c);
  double memory_us = cold_us;  // of the passes the bytes set, and the cold operands'
  for (const double bytes : pass_bytes) {
    cost.bytes += bytes;
    bool memory_bound = false;
    const double us = RooflineUs(c.p, share, bytes, peak, eff, &memory_bound);
    cost.compute_us += us;
    memory_us += memory_bound ? us : 0;
  }
  cost.compute_us += cold_us;
  cost.bound = 2 * memory_us > cost.compute_us ? bound::kBytes : bound::kFlops;
  return cost;
}

// The same, run as one kernel moving the op's tensors once.
OpCost ComputeBound(const Ctx& c, const char* model, double flops,
                    const google::protobuf::RepeatedPtrField<proto::EfficiencyPoint>& table,
                    double m, double n, double k, std::string_view dtype, std::string_view pass,
                    double slowdown = 1, std::string_view layout = "") {
  return ComputeBoundInPasses(c, model, flops, {TouchedBytes(c.in, c.out)}, table, m, n, k, dtype,
                              pass, slowdown, layout);
}

bool HasKind(const proto::Platform& p, std::string_view kind);
OpCost BandwidthModel(const Ctx& c, std::string_view kind, double bytes);

bool IsRnnLayer(std::string_view base_name) {
  return base_name == "aten::mkldnn_rnn_layer" || base_name == "aten::mkldnn_rnn_layer_backward";
}

// A layer at the platform's measured efficiency for its shape (rnn_efficiency), else as the
// GEMMs it runs at theirs: the input-to-hidden GEMM of every step at once, one hidden-to-hidden
// GEMM per step, and the gates at the measured bandwidth of sigmoid (else unary) per step. The
// backward computes the data and the weight gradients of both GEMMs and goes through the gates
// again: twice the forward.
OpCost RnnLayerModel(const Ctx& c, const RnnShape& r) {
  const double steps = static_cast<double>(r.steps), batch = static_cast<double>(r.batch),
               gates_hidden = static_cast<double>(r.gates_hidden),
               input = static_cast<double>(r.input), hidden = static_cast<double>(r.hidden);
  const double peak = PeakFlops(c.p, r.dtype, UsesTensorCores(r.dtype));
  const double passes = r.backward ? 2 : 1;
  OpCost cost;
  cost.model = "rnn";
  cost.bound = bound::kFlops;
  cost.flops = RnnFlops(r);
  cost.bytes = TouchedBytes(c.in, c.out);
  if (peak <= 0) return cost;
  if (c.p.rnn_efficiency_size() > 0) {
    const double eff =
        ShapeEfficiency(c.p, c.p.rnn_efficiency(), steps * batch, gates_hidden, input + hidden,
                        r.dtype, r.backward ? "backward" : "forward");
    cost.compute_us = cost.flops / (peak * std::max(eff, 1e-3)) * 1e6;
    return cost;
  }
  auto gemm_us = [&](double m, double n, double k) {
    const double eff = ShapeEfficiency(c.p, c.p.gemm_efficiency(), m, n, k, r.dtype, "");
    return 2 * m * n * k / (peak * std::max(eff, 1e-3)) * 1e6;
  };
  const double step_gate_bytes =
      2 * batch * gates_hidden * (c.in.empty() ? 4 : c.in[0]->itemsize());
  const std::string_view gate_kind = HasKind(c.p, "sigmoid") ? "sigmoid" : "unary";
  cost.compute_us =
      passes *
      (gemm_us(steps * batch, gates_hidden, input) + steps * gemm_us(batch, gates_hidden, hidden) +
       steps * step_gate_bytes / EffectiveBandwidth(c.p, gate_kind, step_gate_bytes) * 1e6);
  return cost;
}

// The elements between one row of a matrix operand and the next: the stride of whichever of its
// last two dims is not the contiguous one. 0 for a vector, or a matrix with neither dim
// contiguous (ATen copies it before the GEMM).
int64_t LeadingDimension(const proto::Tensor& t) {
  const int r = t.shape_size();
  if (r < 2 || t.shape(r - 2) == 1 || t.shape(r - 1) == 1) return 0;
  const bool strided = t.strides_size() == r;
  const int64_t row = strided ? t.strides(r - 2) : t.shape(r - 1),
                col = strided ? t.strides(r - 1) : 1;
  return col == 1 ? row : row == 1 ? col : 0;
}

// The elements of `dtype` in a 16-byte unit: what cuBLAS's and cuDNN's fast tensor-core kernels
// load at a time of a leading dimension or a channel count.
int64_t ElementsPer16Bytes(std::string_view dtype) {
  return dtype == "fp8" || dtype == "int8" ? 16 : dtype == "fp16" || dtype == "bf16" ? 8 : 4;
}

bool Whole16ByteUnits(int64_t elements, std::string_view dtype) {
  return elements % ElementsPer16Bytes(dtype) == 0;
}

// A tensor-core GEMM whose matrices cannot all be read 16 bytes at a time. cuBLAS's fast
// kernels need every leading dimension to be a multiple of 16 bytes (cuBLAS documentation,
// "Tensor Core Usage"); for any other, it falls back to kernels that load one element at a
// time: GPT-2's head, a vocabulary of 50,257, ran cutlass_75_tensorop_bf16_s1688gemm_*_align1
// on the H200 (fleet_samples/h200/gpt2).
bool MisalignedForTensorCores(const Ctx& c, std::string_view dtype) {
  if (!IsGpu(c.p) || !UsesTensorCores(dtype)) return false;
  for (const auto* list : {&c.in, &c.out})
    for (const proto::Tensor* t : *list)
      if (!Whole16ByteUnits(LeadingDimension(*t), dtype)) return true;
  return false;
}

// How much longer a convolution on channels padded to 16-byte units takes than an aligned one of
// its shape: Netflix measured an LM head whose vocabulary size was not a multiple of 64 falling
// back from cuBLAS's kernel to CUTLASS's and taking 3x as long ("Scaling LLM Post-Training at
// Netflix", 2026-02); taken for cuDNN's padded convolutions, whose kernels are not timed in any
// public trace at hand.
constexpr double kMisalignedGemmSlowdown = 3;

// A misaligned tensor-core GEMM's fallback kernel (CUTLASS's `*_align1`, one element a load) is
// bound by its loads, not its MMAs: its tiles' operand bytes at a rate per SM cycle. Fitted on
// the public A100 trace (hta-gpu-kineto/sampled_rank0, an A100 by its kernels' names: its 142
// TF32 align1 kernels, 9.5 bytes a cycle over all, 0.9-20 per kernel) and held out on the
// H200's GPT-2 head (bf16, 6 kernels: 8.0): bench/misaligned_gemm_rate.py, docs/model.md.
constexpr double kMisalignedLoadBytesPerSmCycle = 9.5;

// A fallback kernel's tile edge along a dimension of `size` >= 1: 64 or 128, whichever pads it
// less (128 on a tie: the larger tile loads less per output).
int64_t MisalignedTileEdge(int64_t size) {
  const int64_t pad64 = (64 - size % 64) % 64, pad128 = (128 - size % 128) % 128;
  return pad64 < pad128 ? 64 : 128;
}

// The fallback kernel's time: each output tile reads its rows of A and its columns of B
// through all of K.
double MisalignedGemmLoadsUs(const proto::Platform& p, const GemmShape& g, std::string_view dtype) {
  const double cycles_per_us = SmCyclesPerUs(p);
  if (!(cycles_per_us > 0)) return 0;
  const int64_t m = std::max<int64_t>(g.m, 1), n = std::max<int64_t>(g.n, 1);
  const int64_t tm = MisalignedTileEdge(m), tn = MisalignedTileEdge(n);
  const double tiles = static_cast<double>(std::max<int64_t>(g.batch, 1)) *
                       static_cast<double>(CeilDiv(m, tm)) * static_cast<double>(CeilDiv(n, tn));
  const double bytes = tiles * static_cast<double>(tm + tn) *
                       static_cast<double>(std::max<int64_t>(g.k, 0)) * 16 /
                       static_cast<double>(ElementsPer16Bytes(dtype));
  return bytes / (kMisalignedLoadBytesPerSmCycle * cycles_per_us);
}

// The precision an op of `dtype` multiplies in on a datasheet GPU (its efficiency `table` holds
// no measured point): fp32 operands in TF32 on tensor cores where the platform has them and the
// job allowed it. PyTorch's defaults allow it for cuDNN's convolutions
// (torch.backends.cudnn.allow_tf32) and not for matmuls (torch.backends.cuda.matmul.allow_tf32,
// off since 1.12); the kernels the op recorded show what the job set (OpEvidence::tf32_kernels).
// A calibrated table was measured under calibrate's own defaults and keeps the op's dtype.
std::string_view MathDtype(
    const Ctx& c, std::string_view dtype, bool convolution,
    const google::protobuf::RepeatedPtrField<proto::EfficiencyPoint>& table) {
  if (dtype != "fp32" || !IsGpu(c.p) || !table.empty() || !c.p.peak_flops().contains("tf32"))
    return dtype;
  return convolution || c.e.tf32_kernels ? "tf32" : dtype;
}

// A GEMM-shaped op: batch x (m x k) . (k x n).
OpCost GemmModel(const Ctx& c) {
  if (RnnShape r; RnnShapeOf(c.w, c.op, &r)) return RnnLayerModel(c, r);
  GemmShape g;
  if (!GemmShapeOf(c.w, c.op, &g)) return OpCost{"gemm"};
  const double batch = static_cast<double>(g.batch), m = static_cast<double>(g.m), n = static_cast<double>(g.n),
               k = static_cast<double>(g.k);
  const std::string_view dtype = MathDtype(c, g.dtype, false, c.p.gemm_efficiency());
  Ctx operands = c;
  operands.in.erase(operands.in.begin(),
                    operands.in.begin() + static_cast<std::ptrdiff_t>(g.foreign_inputs));
  // The bytes it moves: its operands and output as recorded; a Kineto trace alone records no
  // outputs, and a GEMM's is batch x m x n elements of its operands' dtype.
  double bytes = TouchedBytes(operands.in, operands.out);
  if (operands.out.empty() && !operands.in.empty())
    bytes += batch * m * n * static_cast<double>(operands.in.back()->itemsize());
  OpCost cost = ComputeBoundInPasses(operands, "gemm", 2 * batch * m * n * k, {bytes},
                                     c.p.gemm_efficiency(), batch * m, n, k, dtype, "");
  if (MisalignedForTensorCores(operands, dtype))
    AtLeast(cost, MisalignedGemmLoadsUs(c.p, g, dtype), bound::kMisalignedLoads);
  return cost;
}

// A tensor-core convolution whose channels cannot be read 16 bytes at a time: cuDNN's
// tensor-core kernels run on NHWC tiles, their GEMM's K the input channels of each filter tap
// and N the output channels, under the same alignment as a GEMM's leading dimension above (a
// first layer's 3 colour channels: 6 bytes a pixel in bf16). Grouped convolutions are left
// out: their kernels are not GEMMs on tensor cores.
bool MisalignedConvChannels(const Ctx& c, const ConvShape& cs, std::string_view dtype) {
  if (!IsGpu(c.p) || !UsesTensorCores(dtype) || cs.groups != 1) return false;
  if (cs.input.size() < 2 || cs.weight.size() < 2) return false;
  const int64_t out_channels = cs.transposed ? cs.weight[1] : cs.weight[0];
  return !Whole16ByteUnits(cs.input[1], dtype) || !Whole16ByteUnits(out_channels, dtype);
}

// A misaligned convolution as cuDNN runs it: its channels padded up to whole 16-byte units
// (the H200 ResNet-50 captures' first layer, 3 colour channels, ran nhwcAddPaddingKernel, then
// its bf16 fprop and wgrad kernels on 8 channels); the implicit GEMM of the padded shape.
ConvShape PaddedChannels(ConvShape cs, std::string_view dtype) {
  const int64_t unit = ElementsPer16Bytes(dtype);
  auto pad = [&](int64_t& channels) {
    if (channels > 0) channels = CeilDiv(channels, unit) * unit;
  };
  pad(cs.input[1]);
  pad(cs.weight[0]);
  pad(cs.weight[1]);
  return cs;
}

// The pass that pads a misaligned convolution's input channels: the input read, its padded copy
// written. 0 where the input's channels are whole units.
double ChannelPaddingUs(const Ctx& c, const ConvShape& cs, std::string_view dtype) {
  if (c.in.empty() || Whole16ByteUnits(cs.input[1], dtype)) return 0;
  const proto::Tensor* x = c.in[cs.backward && c.in.size() >= 2 ? 1 : 0];
  const double read = Bytes(x), padded = PaddedChannels(cs, dtype).input[1];
  return BandwidthModel(c, "copy", read * (1 + padded / static_cast<double>(cs.input[1])))
      .compute_us;
}

// The bytes each kernel of a convolution moves. A backward computing both gradients on a GPU
// priced from its datasheet runs each in a kernel of its own, and each reads grad_output: the
// data gradient (cuDNN's dgrad, or cuBLAS's GEMM for a 1x1 layer) with the weight, writing
// grad_input; the weight gradient (wgrad) with the input, writing grad_weight. The H200
// ResNet-50's 1x1 layers of 64 channels (batch 128) ran their two at 3.9-4.0 TB/s, 65 us each
// against 134.9 us for the op. Else (a forward, one gradient, or a platform whose measured
// points timed the whole op) one kernel moving the op's tensors once.
std::vector<double> ConvPassBytes(const Ctx& c, const ConvShape& cs) {
  const bool split = cs.backward && cs.passes == 2 && IsGpu(c.p) && c.p.conv_efficiency().empty();
  if (!split || c.in.size() < 3 || c.out.size() < 2) return {TouchedBytes(c.in, c.out)};
  const double grad_output = Bytes(c.in[0]), input = Bytes(c.in[1]), weight = Bytes(c.in[2]);
  return {grad_output + weight + Bytes(c.out[0]), grad_output + input + Bytes(c.out[1])};
}

// A convolution's backward on a GPU priced from its datasheet, as the two implicit GEMMs its
// kernels compute (ConvPassBytes: one kernel each): the data gradient, m = N x input pixels,
// n = input channels, k = output channels x kernel pixels (cuDNN's dgrad, cuBLAS's GEMM for a
// 1x1 layer); the weight gradient, m = output channels, n = input channels x kernel pixels,
// k = N x output pixels (wgrad: a small output over a deep K, which the tile estimate splits
// over the SMs). Each at its own shape's efficiency and bytes.
OpCost BackwardGemms(const Ctx& c, const ConvShape& cs, const std::vector<double>& pass_bytes,
                     std::string_view dtype, std::string_view layout) {
  const ImplicitGemm fwd = ImplicitGemmOf(cs);
  double in_pixels = 1, kernel = 1;
  for (size_t i = 2; i < cs.input.size(); ++i)
    in_pixels *= static_cast<double>(std::max<int64_t>(cs.input[i], 1));
  for (size_t i = 2; i < cs.weight.size(); ++i) kernel *= static_cast<double>(cs.weight[i]);
  const double batch = static_cast<double>(cs.input[0]);
  const ImplicitGemm dgrad{batch * in_pixels, static_cast<double>(cs.weight[1]), fwd.n * kernel};
  const ImplicitGemm wgrad{fwd.n, fwd.k, fwd.m};
  OpCost cost;
  for (int i = 0; i < 2; ++i) {
    const ImplicitGemm& g = i == 0 ? dgrad : wgrad;
    const OpCost pass =
        ComputeBoundInPasses(c, "conv", 2 * fwd.m * fwd.n * fwd.k, {pass_bytes[i]},
                             c.p.conv_efficiency(), g.m, g.n, g.k, dtype, "backward", 1, layout);
    cost.flops += pass.flops, cost.bytes += pass.bytes, cost.compute_us += pass.compute_us;
    if (i == 0 || std::string_view(pass.bound) == bound::kFlops) cost.bound = pass.bound;
  }
  cost.model = "conv";
  return cost;
}

// Convolutions as implicit GEMMs: m = N x output pixels, n = output channels, k = input
// channels per group x kernel pixels. The backward does one such GEMM per gradient it computes.
OpCost ConvModel(const Ctx& c) {
  ConvShape cs;
  if (!ConvShapeOf(c.w, c.op, &cs)) return OpCost{"conv"};
  const ImplicitGemm g = ImplicitGemmOf(cs);
  const auto& table = c.p.conv_efficiency();
  const std::string_view dtype = MathDtype(c, cs.dtype, true, table);
  // A transposed or strided convolution at the points measured as such on its dtype, else at
  // the plain pass's (a first layer's weight gradient at its own where measured).
  auto measured = [&](std::string_view pass, bool of_dtype) {
    return std::any_of(table.begin(), table.end(), [&](const proto::EfficiencyPoint& e) {
      return e.pass() == pass && (!of_dtype || e.dtype() == dtype);
    });
  };
  std::string pass = ConvPassOf(cs);
  if (pass != PlainConvPassOf(cs) && !measured(pass, true)) pass = PlainConvPassOf(cs);
  if (!measured(pass, false)) pass = cs.backward ? "backward" : "forward";
  const std::vector<double> pass_bytes = ConvPassBytes(c, cs);
  const std::string_view layout = cs.channels_last ? "channels_last" : "";
  if (pass_bytes.size() == 2 && cs.groups == 1 && !cs.transposed &&
      !MisalignedConvChannels(c, cs, dtype))
    return BackwardGemms(c, cs, pass_bytes, dtype, layout);
  if (!MisalignedConvChannels(c, cs, dtype))
    return ComputeBoundInPasses(c, "conv", 2 * g.m * g.n * g.k * cs.passes, pass_bytes, table, g.m,
                                g.n, g.k, dtype, pass, 1, layout);
  const ImplicitGemm padded = ImplicitGemmOf(PaddedChannels(cs, dtype));
  OpCost cost = ComputeBoundInPasses(c, "conv", 2 * padded.m * padded.n * padded.k * cs.passes,
                                     pass_bytes, table, padded.m, padded.n, padded.k, dtype, pass,
                                     kMisalignedGemmSlowdown, layout);
  cost.flops = 2 * g.m * g.n * g.k * cs.passes;  // the op's own, not the padding's
  cost.compute_us += ChannelPaddingUs(c, cs, dtype);
  return cost;
}

// The share of an L x S attention's scores a mask leaves: query i sees keys 0 .. i + `offset`
// (PyTorch's is_causal aligns the mask top-left, offset 0; a bottom-right one has S - L).
double CausalShare(int64_t l, int64_t s, int64_t offset) {
  if (l <= 0 || s <= 0) return 1;
  // Row i keeps clamp(i + 1 + offset, 0, s) scores: sum that over x = 1 + offset .. l + offset.
  const int64_t lo = 1 + offset, hi = l + offset;
  double kept = 0;
  if (const int64_t a = std::max<int64_t>(lo, 1), b = std::min(hi, s); a <= b)
    kept += (static_cast<double>(a) + static_cast<double>(b)) * static_cast<double>(b - a + 1) / 2;
  if (const int64_t a = std::max(lo, s + 1); a <= hi)
    kept += static_cast<double>(hi - a + 1) * static_cast<double>(s);
  return kept / (static_cast<double>(l) * static_cast<double>(s));
}

// The share of an L x S attention's scores ATen's CPU flash kernel computes under a causal mask
// (FlashAttentionKernel.cpp, forward and backward): queries in blocks of 256 (L >= 768), 64 (L
// >= 192) or 32, each block's keys up to its last query in whole blocks of 512 keys (the last
// cut at S), the masked ones filled after. Up to 512 keys a causal op computes every score.
double CpuCausalShare(int64_t l, int64_t s) {
  if (l <= 0 || s <= 0) return 1;
  const int64_t query_block = l >= 768 ? 256 : l >= 192 ? 64 : 32, key_block = 512;
  double computed = 0;
  for (int64_t m = 0; m < l; m += query_block) {
    const int64_t rows = std::min(query_block, l - m);
    computed +=
        static_cast<double>(rows) *
        static_cast<double>(std::min(s, CeilDiv(std::min(m + rows, s), key_block) * key_block));
  }
  return computed / (static_cast<double>(l) * static_cast<double>(s));
}

// The share of its scores an attention op computes, by its schema's arguments: with
// `is_causal` (SDPA and its flash, efficient and cuDNN kernels, forward and backward) the
// top-left triangle, with the efficient kernels' `custom_mask_type` (1 top-left, 2
// bottom-right) theirs; else all of them (an explicit mask skips nothing). A GPU's flash
// kernels skip the tiles above the diagonal and compute those on it whole, a little more than
// this share (with 128 x 128 tiles, 12 % more at L = S = 1,024); ATen's CPU kernel computes
// whole blocks of 512 keys (CpuCausalShare).
double ComputedScoreShare(const Ctx& c, int64_t l, int64_t s) {
  if (const proto::Value* v = ArgNamed(c.w, c.op, "is_causal");
      v && v->kind_case() == proto::Value::kBoolValue && v->bool_value())
    return IsGpu(c.p) ? CausalShare(l, s, 0) : CpuCausalShare(l, s);
  if (const proto::Value* v = ArgNamed(c.w, c.op, "custom_mask_type");
      v && v->kind_case() == proto::Value::kIntValue &&
      (v->int_value() == 1 || v->int_value() == 2))
    return CausalShare(l, s, v->int_value() == 2 ? s - l : 0);
  return 1;
}

// The softmax's exponentials of a fused attention on a GPU priced from its datasheet: one a
// score computed (the backward recomputes P: as many again), on the SMs' special-function units
// at `sfu_ops_per_sm_cycle`, after the tile's first GEMM and before its second (not beside
// them). 0 where the platform measured the kernel (attention_efficiency: its times hold them)
// or has no such figure.
double SoftmaxExpUs(const Ctx& c, double scores) {
  if (c.p.attention_efficiency_size() > 0) return 0;
  const double per_us = SmCyclesPerUs(c.p) * c.p.sfu_ops_per_sm_cycle();
  return per_us > 0 ? scores / per_us : 0;
}

// A flash attention backward's two passes over memory around its main kernel on a GPU (FA2's
// algorithm; cuDNN's kernels, and the efficient ones, alike): D = rowsum(dO * O) before it (dO
// and O, of one shape, read; D written in fp32), and after it the query gradient, which the main
// kernel accumulates in fp32, converted to the inputs' 16-bit dtype. Each at the bytes it moves.
double FlashBackwardPassesUs(const Ctx& c, const proto::Tensor& grad_out, const proto::Tensor& q) {
  const double rows = Prod(&q, 0, q.shape_size() - 1);  // B x H x L
  double us = BandwidthModel(c, "reduction", 2 * Bytes(&grad_out) + 4 * rows).compute_us;
  if (q.itemsize() == 2)
    us += BandwidthModel(c, "copy", 4 * static_cast<double>(q.numel()) + Bytes(&q)).compute_us;
  return us;
}

// Fused attention: Q.K^T and P.V, 4 x B x H x L x S x E FLOPs (the backward about 2.5x) over the
// scores its mask leaves, then (on a datasheet GPU) the softmax's exponentials; on a GPU the
// backward's passes around its kernel.
OpCost AttentionModel(const Ctx& c) {
  if (c.in.size() < 3) return OpCost{"attention"};
  const proto::Tensor* q = c.in[0];
  const proto::Tensor* k = c.in[1];
  const bool backward = c.name.find("backward") != std::string_view::npos;
  const proto::Tensor* qq = backward && c.in.size() >= 4 ? c.in[1] : q;
  const proto::Tensor* kk = backward && c.in.size() >= 4 ? c.in[2] : k;
  const double bh = Prod(qq, 0, qq->shape_size() - 2);
  const double l = static_cast<double>(Dim(qq, -2)), s = static_cast<double>(Dim(kk, -2));
  const double e = static_cast<double>(Dim(qq, -1));
  const double scores = bh * l * s * ComputedScoreShare(c, Dim(qq, -2), Dim(kk, -2));
  // The fused kernel's own table where calibrated (its backward at the forward's efficiency),
  // else the GEMM table.
  const auto& table = c.p.attention_efficiency_size() > 0 ? c.p.attention_efficiency() : c.p.gemm_efficiency();
  OpCost cost = ComputeBound(c, "attention", 4 * scores * e * (backward ? 2.5 : 1.0), table, bh * l,
                             s, e, DtypeKey(qq->dtype()), "");
  cost.compute_us += SoftmaxExpUs(c, scores);
  if (backward && IsGpu(c.p)) cost.compute_us += FlashBackwardPassesUs(c, *c.in[0], *qq);
  return cost;
}

// The dtype of an op's floating-point tensors where they all share one ("fp32" where mixed,
// or none is): the bandwidth points it is priced from.
std::string_view TrafficDtype(const Ctx& c) {
  std::string_view dtype;
  for (const auto* list : {&c.in, &c.out})
    for (const proto::Tensor* t : *list) {
      const proto::DType d = t->dtype();
      if (!eg::IsFloatingDType(d)) continue;
      if (!dtype.empty() && DtypeKey(d) != dtype) return "fp32";
      dtype = DtypeKey(d);
    }
  return dtype.empty() ? "fp32" : dtype;
}

// The share of an op's floating-point bytes in half precision (bf16, fp16).
double HalfPrecisionShare(const Ctx& c) {
  double half = 0, all = 0;
  for (const auto* list : {&c.in, &c.out})
    for (const proto::Tensor* t : *list) {
      const proto::DType d = t->dtype();
      if (!eg::IsFloatingDType(d)) continue;
      all += Bytes(t);
      if (d == proto::FLOAT16 || d == proto::BFLOAT16) half += Bytes(t);
    }
  return all > 0 ? half / all : 0;
}

// How many elements ATen's unrolled elementwise kernel gets through per second on GPU `p`:
// it loads and stores an element at a time (for operands whose dtypes it converts), too few
// bytes in flight per SM to keep a fast memory busy (Little's law), so its time follows the
// elements, not the bytes. Per SM, from the H200's largest bf16 -> fp32 cast
// (fleet_samples/h200/gpt2: 411.7 M elements in 1,169 us, 2.67 G a second on each of 132 SMs;
// its fp32 -> bf16 twice as fast through the vectorized kernel). The same capture's 6.3 M-element
// casts run at 2.63 G and its mixed-dtype adds at 2.08 G (docs/benchmarks.md). An A100 then
// gets through 288 G elements a second, more than its memory lets a cast move: its unrolled
// casts take about the vectorized ones' time (1.13x at 64 M elements, PyTorch PR #195542).
double UnrolledElementsPerS(const proto::Platform& p) {
  constexpr double kPerSm = 2.67e9;
  return kPerSm * static_cast<double>(std::max<int64_t>(p.sm_count(), 1));
}

// `cost` of an op that runs in ATen's unrolled elementwise kernel on a GPU: no faster than that
// kernel gets through the elements of its largest operand, what the kernel iterates over.
OpCost AtUnrolledRate(const Ctx& c, OpCost cost) {
  if (!IsGpu(c.p) || c.e.unrolled_kernels != 1) return cost;
  double elements = 0;
  for (const auto* list : {&c.in, &c.out})
    for (const proto::Tensor* t : *list)
      elements = std::max(elements, static_cast<double>(t->numel()));
  AtLeast(cost, elements / UnrolledElementsPerS(c.p) * 1e6, bound::kUnrolledElements);
  return cost;
}

// Memory-bound ops: bytes read and written over the effective bandwidth at that size, the
// cold share of the inputs slowed down as measured. Embedding kinds are measured on their own
// working sets and keep their figure. A CPU converts half precision to fp32 to compute, so an
// element costs about what an fp32 one does: priced at fp32's points (those of a kind the
// platform measured on no half-precision tensors: batch norm, pooling, reductions), its
// half-precision tensors count at fp32's width.
OpCost BandwidthModel(const Ctx& c, std::string_view kind, double bytes) {
  OpCost cost;
  cost.model = "bandwidth";
  cost.bound = bound::kBytes;
  cost.bytes = bytes;
  std::string_view dtype = TrafficDtype(c);
  double priced = bytes;
  if (!IsGpu(c.p) && (dtype == "fp32" || !HasBandwidthPoints(c.p, kind, dtype))) {
    priced = bytes * (1 + HalfPrecisionShare(c));
    dtype = "fp32";
  }
  cost.compute_us = priced > 0 ? priced / EffectiveBandwidth(c.p, kind, priced, dtype) * 1e6 : 0;
  if (c.e.cold_fraction > 0 && kind != "gather" && kind != "embedding_backward")
    cost.compute_us *= 1 + c.e.cold_fraction * (ColdSlowdown(c.p, kind, priced) - 1);
  return cost;
}

// The rate a host<->device copy runs at on `p`: the platform's figure for its direction and
// host memory (pinned where unknown), else the link's.
double HostDeviceRate(const proto::Platform& p, const eg::DeviceCopy& copy) {
  const proto::HostDeviceCopy& h = p.host_device_copy();
  const bool pageable = copy.host == eg::HostMemory::kPageable;
  const double rate = copy.route == eg::CopyRoute::kHostToDevice
                          ? (pageable ? h.h2d_pageable_bytes_per_s() : h.h2d_pinned_bytes_per_s())
                          : (pageable ? h.d2h_pageable_bytes_per_s() : h.d2h_pinned_bytes_per_s());
  return rate > 0 ? rate : p.host_device_bytes_per_s();
}

// The shape of one fbgemm TBE lookup, from its forward op's arguments (positions of fbgemm_gpu's
// split_embedding_codegen_lookup_*_function: 1 dev_weights, 2 uvm_weights, 5 weights_offsets
// [T], 6 D_offsets [T+1], 7 total_D, 11 indices [L], 12 offsets [T*B+1], 13 pooling_mode, 14
// indice_weights [L] or None; the optimizer's state tensors after 16) and the output width
// total_D: recorded as a concrete value, else the backward's gradient [B, total_D].
struct TbeShape {
  double tables = 0, batch = 0, lookups = 0;
  double dim = 0;           // average row width: total_D / T
  double weight_bytes = 0;  // every table's rows
  double itemsize = 4;      // of the weights
  double index_bytes = 0;   // indices, offsets and per-sample weights
  double state_bytes = 0;   // the optimizer's state (momentum) tensors
  bool pooled = true;       // pooling_mode sum or mean (2: none, one row out per lookup)
  bool weighted = false;    // per-sample weights given
  bool uvm = false;         // the tables live in host memory (UVM), read over the host link
};

const proto::Tensor* InputTensor(const Ctx& c, const proto::Op& op, int i) {
  return i < op.inputs_size() ? TensorOf(c.w, op.inputs(i)) : nullptr;
}

bool TbeShapeOf(const Ctx& c, const proto::Op& fwd, const proto::Op* bwd, TbeShape* out) {
  const proto::Tensor* dev = InputTensor(c, fwd, 1);
  const proto::Tensor* uvm = InputTensor(c, fwd, 2);
  const proto::Tensor* woff = InputTensor(c, fwd, 5);
  const proto::Tensor* doff = InputTensor(c, fwd, 6);
  const proto::Tensor* indices = InputTensor(c, fwd, 11);
  const proto::Tensor* offsets = InputTensor(c, fwd, 12);
  if (!dev || !woff || !doff || !indices || !offsets || woff->numel() <= 0 ||
      doff->numel() != woff->numel() + 1 || offsets->numel() < 1 ||
      (offsets->numel() - 1) % woff->numel() != 0)
    return false;
  TbeShape t;
  t.tables = static_cast<double>(woff->numel());
  t.batch = static_cast<double>(offsets->numel() - 1) / t.tables;
  t.lookups = static_cast<double>(indices->numel());
  t.uvm = dev->numel() == 0 && uvm && uvm->numel() > 0;
  const proto::Tensor* weights = t.uvm ? uvm : dev;
  t.weight_bytes = Bytes(weights);
  t.itemsize = static_cast<double>(std::max<int64_t>(weights->itemsize(), 1));
  double total_d = 0;
  if (fwd.inputs_size() > 7 && fwd.inputs(7).kind_case() == proto::Value::kIntValue)
    total_d = static_cast<double>(fwd.inputs(7).int_value());
  const proto::Tensor* grad = bwd ? InputTensor(c, *bwd, 0) : nullptr;
  if (total_d <= 0 && grad && grad->shape_size() == 2 && grad->shape(0) == t.batch)
    total_d = static_cast<double>(grad->shape(1));
  if (total_d <= 0 || t.batch <= 0) return false;
  t.dim = total_d / t.tables;
  t.index_bytes = Bytes(indices) + Bytes(offsets);
  if (const proto::Tensor* iw = InputTensor(c, fwd, 14); iw && iw->numel() == indices->numel())
    t.weighted = true, t.index_bytes += Bytes(iw);
  t.pooled = !(fwd.inputs_size() > 13 && fwd.inputs(13).kind_case() == proto::Value::kIntValue &&
               fwd.inputs(13).int_value() == 2);
  for (int i = 17; i < fwd.inputs_size(); ++i)
    if (const proto::Tensor* s = InputTensor(c, fwd, i);
        s && s->numel() > 0 &&
        (s->dtype() == proto::FLOAT32 || s->dtype() == proto::FLOAT16 ||
         s->dtype() == proto::BFLOAT16))
      t.state_bytes += Bytes(s);
  *out = t;
  return true;
}

// The rate rows are gathered at: from the tables, whose working set is one table at a time
// (the kernels walk the tables in order); over the host link for tables in host memory (UVM).
double GatherRate(const Ctx& c, const TbeShape& t, double gathered) {
  if (t.uvm) return HostDeviceRate(c.p, {eg::CopyRoute::kHostToDevice, eg::HostMemory::kPinned});
  const double working_set = std::min(t.weight_bytes, gathered) / std::max(t.tables, 1.0);
  return EffectiveBandwidth(c.p, "gather", std::max(working_set, 1.0));
}

// fbgemm's TBE lookup by its access pattern. Forward: each lookup gathers one row (dim x
// itemsize bytes) and the indices, offsets and per-sample weights are read once; the output,
// fp32, is [B, total_D] pooled (one row per lookup unpooled). Backward (its autograd node, which
// also applies the optimizer): the lookups are sorted by row (linearize into 8-byte keys, then
// a radix sort of the keys with 4-byte positions: a histogram pass over the keys, then one pass
// per 8 of the ceil(log2 rows) key bits, each reading and writing keys and positions), each lookup
// reads its bag's gradient row (fp32; with per-sample weights also its weight row, for their
// gradient), and every row touched is read and written once with its share of the optimizer's
// state.
OpCost TbeModel(const Ctx& c) {
  const eg::TbeOp kind = eg::TbeOf(c.op.name());
  const bool backward = kind.pass == eg::TbePass::kBackward;
  const proto::Op* fwd = backward ? c.e.tbe_partner : &c.op;
  const proto::Op* bwd = backward ? &c.op : c.e.tbe_partner;
  TbeShape t;
  if (!fwd || !TbeShapeOf(c, *fwd, bwd, &t)) {
    OpCost cost = BandwidthModel(c, "gather", TouchedBytes(c.in, c.out));
    cost.model = "embedding";
    cost.unmodelled = !fwd ? "TBE backward without its forward" : "TBE without its shape";
    return cost;
  }
  const double gathered = t.lookups * t.dim * t.itemsize;
  OpCost cost;
  cost.model = "embedding";
  if (!backward) {
    const double out = (t.pooled ? t.batch * t.tables : t.lookups) * t.dim * 4;
    cost.bytes = gathered + t.index_bytes + out;
    cost.compute_us =
        (gathered / GatherRate(c, t, gathered) +
         (t.index_bytes + out) / EffectiveBandwidth(c.p, "copy", t.index_bytes + out)) *
        1e6;
    return cost;
  }
  const double rows = std::max(t.weight_bytes / (t.dim * t.itemsize), 1.0);
  const double passes = std::ceil(std::max(std::log2(rows), 1.0) / 8);
  const double sort = t.lookups * (8 + 8 + 4 + passes * 2 * (8 + 4)) + t.index_bytes;
  const double grads = t.lookups * t.dim * 4 + (t.weighted ? gathered : 0);
  const double touched = std::min(1.0, t.lookups / rows);
  const double update = 2 * touched * (t.weight_bytes + t.state_bytes);
  cost.bytes = sort + grads + update;
  cost.compute_us = (sort / EffectiveBandwidth(c.p, "copy", sort) +
                     grads / EffectiveBandwidth(c.p, "gather", grads) +
                     update / GatherRate(c, t, t.weight_bytes)) *
                    1e6;
  return cost;
}

// Whether `t` is laid out row-major without gaps (as assumed where no strides were recorded).
bool IsContiguous(const proto::Tensor* t) {
  if (t->strides_size() == 0) return true;
  if (t->strides_size() != t->shape_size()) return false;
  int64_t expected = 1;
  for (int i = t->shape_size() - 1; i >= 0; --i) {
    if (t->shape(i) != 1 && t->strides(i) != expected) return false;
    expected *= t->shape(i);
  }
  return true;
}

// SM cycles (at the boost clock) an SM takes to start each block of a kernel: a kernel of many
// small blocks that each do little runs at the rate its blocks start, not at its bytes'. The
// fewest any kernel of the H200 GPT-2 and ResNet-50 captures took (147: a bf16 fill of 100,352
// blocks; 147-160 over the fills and non-vectorized elementwise kernels that come closest);
// held out on the DLRM capture's row gathers, 154 (bench/block_start_rate.py). One GH100's
// figure, taken for every GPU.
constexpr double kBlockStartCycles = 147;

// The least time a GPU kernel of `blocks` blocks takes: its SMs start them a wave at a time.
double BlockStartsUs(const proto::Platform& p, double blocks) {
  if (!(SmCyclesPerUs(p) > 0) || !(blocks > 0)) return 0;
  return std::ceil(blocks / static_cast<double>(p.sm_count())) * kBlockStartCycles /
         p.boost_clock_mhz();
}

// A backward that returns its gradient as a sparse tensor (IndexOp::sparse_arg) accumulates
// nothing into a table. embedding's takes the gradient's rows as the values: a reshape, a view
// of a contiguous gradient (no kernel) and a copy of another. An embedding bag's gathers them
// per lookup (grad.index_select(0, offset2bag)): on a GPU, ATen's vectorized_gather_kernel, a
// block per looked-up row. The caller counts its children's dispatches.
OpCost SparseGradientModel(const Ctx& c) {
  const proto::Tensor* grad = c.in[0];
  OpCost cost;
  if (c.name != "aten::embedding_backward") {
    const double lookups = c.in.size() >= 2 ? static_cast<double>(c.in[1]->numel()) : 0;
    const double rows = lookups * static_cast<double>(Dim(grad, -1) * grad->itemsize());
    cost = BandwidthModel(c, "gather", 2 * rows + (c.in.size() >= 2 ? Bytes(c.in[1]) : 0));
    AtLeast(cost, BlockStartsUs(c.p, lookups), bound::kBlockStarts);
  } else if (IsContiguous(grad)) {
    cost.launches = false;
    cost.model = "view";
    return cost;
  } else {
    cost = BandwidthModel(c, "copy", 2 * Bytes(grad));
  }
  cost.model = "embedding";
  return cost;
}

// The time of one dependent global load with the grid busy on a GPU (`embedding_bag_step_ns`,
// in us): what the kernels below that wait on their loads take a step. 0 where the platform has
// none (a CPU, or a GPU without the figure): those ops keep their bytes' time.
double DependentStepUs(const proto::Platform& p) {
  return IsGpu(p) && p.embedding_bag_step_ns() > 0 ? p.embedding_bag_step_ns() * 1e-3 : 0;
}

// How long PyTorch's CUDA EmbeddingBag forward takes by its steps rather than its bytes: each
// step waits on two dependent loads (the id, then its row), and with a few thousand bags every
// warp runs at once, so the kernel lasts as many steps as a warp takes (EmbeddingBagSteps), each
// about a memory latency however few bytes it moves. 0 where the platform has no step time, or
// the table fits in L2 (the step time is taken on a table far larger).
double EmbeddingBagStepsUs(const Ctx& c, double lookups) {
  const double step_us = DependentStepUs(c.p);
  if (!(step_us > 0) || c.in.size() < 3) return 0;
  const proto::Tensor* table = c.in[0];
  if (Bytes(table) <= c.p.l2_bytes()) return 0;
  // The offsets hold one entry per bag, and one more with include_last_offset (argument 7).
  const double bags = static_cast<double>(c.in[2]->numel()) - (BoolArg(c.op, 7) ? 1 : 0);
  return EmbeddingBagSteps(bags, static_cast<double>(Dim(table, -1)), lookups, c.p.sm_count()) *
         step_us;
}

// An index op of shape `s` where the platform measured its kind (calibrate's index sweep), its
// cold share of the inputs at the slow-down measured on tensors out of cache; -1 where the
// platform has no such points.
double MeasuredIndexUs(const Ctx& c, const IndexShape& s) {
  const double us = IndexOpUs(c.p, s);
  if (us < 0 || !(c.e.cold_fraction > 0)) return us;
  return us * (1 + c.e.cold_fraction * (IndexColdSlowdown(c.p, s) - 1));
}

// Coalescing a sparse tensor (aten::_coalesce; the trace records no storage for it, only the
// values and indices its children took: OpEvidence::sparse_rows): ATen's CPU kernel sorts the
// nonzeros' flattened int64 indices, then adds each value row into its index's row of the
// result, an index_add of the nonzeros into at most as many rows. At the platform's measured
// sort and index_add where it has both; else the values read and written and the keys.
OpCost CoalesceModel(const Ctx& c) {
  const double nnz = static_cast<double>(c.e.sparse_rows), key_bytes = 3 * 8 * nnz;
  OpCost cost = BandwidthModel(c, "gather", 2 * c.e.sparse_values_bytes + key_bytes);
  cost.model = "embedding";
  if (c.e.sparse_rows <= 0 || !HasKind(c.p, "sort")) return cost;
  const IndexShape rows{"index_add_", c.e.sparse_rows, c.e.sparse_row_width, c.e.sparse_rows,
                        "fp32"};
  const double add_us = MeasuredIndexUs(c, rows);
  if (add_us < 0) return cost;
  cost.model = "index";
  cost.compute_us = BandwidthModel(c, "sort", key_bytes).compute_us + add_us;
  return cost;
}

// A scatter into `self` in place (scatter_add, index_add, index_put; self first, the source last,
// the indices between): the source and its indices read once, and the elements of self they
// land on read and written, never more than self holds. Whatever self's size, only those move.
OpCost ScatterModel(const Ctx& c) {
  const proto::Tensor* self = c.in.front();
  const proto::Tensor* source = c.in.back();
  double index_bytes = 0;
  for (size_t i = 1; i + 1 < c.in.size(); ++i) index_bytes += Bytes(c.in[i]);
  const double landed =
      std::min(Bytes(self), static_cast<double>(std::max<int64_t>(source->numel(), 0)) *
                                static_cast<double>(std::max<int64_t>(self->itemsize(), 1)));
  OpCost cost = BandwidthModel(c, "binary", Bytes(source) + index_bytes + 2 * landed);
  cost.model = "embedding";
  return cost;
}

// Embedding lookups: the rows gathered (from cache when the table's touched rows fit), the
// output, the indices; backward: the dense gradient written plus the scattered rows.
OpCost EmbeddingModel(const Ctx& c) {
  if (eg::TbeOf(c.op.name()).pass != eg::TbePass::kNone) return TbeModel(c);
  if (c.name == "aten::_coalesce") return CoalesceModel(c);
  if (IndexShape s; IndexShapeOf(c.w, c.op, &s)) {
    if (const double us = MeasuredIndexUs(c, s); us >= 0) {
      OpCost cost;
      cost.model = "index";
      cost.bound = bound::kMeasured;
      cost.bytes = TouchedBytes(c.in, c.out);
      cost.compute_us = us;
      return cost;
    }
  }
  if (c.in.empty()) return BandwidthModel(c, "gather", TouchedBytes(c.in, c.out));
  const bool backward = c.name.find("backward") != std::string_view::npos;
  const bool scatter = c.name.find("scatter") != std::string_view::npos || c.name.find("index_add") != std::string_view::npos ||
                       c.name.find("index_put") != std::string_view::npos;
  double out_bytes = 0;
  for (const proto::Tensor* t : c.out) out_bytes += Bytes(t);
  if (c.name == "aten::embedding_bag" || c.name == "aten::_embedding_bag" ||
      c.name == "aten::_embedding_bag_forward_only" || c.name == "aten::embedding") {
    const proto::Tensor* table = c.in[0];
    const double row_bytes = static_cast<double>(Dim(table, -1)) * static_cast<double>(table->itemsize());
    const double lookups = c.in.size() >= 2 ? static_cast<double>(c.in[1]->numel()) : 0;
    const double gathered = lookups * row_bytes;
    double index_bytes = 0;
    for (size_t i = 1; i < c.in.size(); ++i) index_bytes += Bytes(c.in[i]);
    const double working_set = std::min(Bytes(table), gathered);
    OpCost cost;
    cost.model = "embedding";
    cost.bytes = gathered + index_bytes + (c.out.empty() ? 0 : Bytes(c.out[0]));
    cost.compute_us = cost.bytes / EffectiveBandwidth(c.p, "gather", std::max(working_set, 1.0)) * 1e6;
    cost.bound = bound::kBytes;
    if (c.name != "aten::embedding")
      AtLeast(cost, EmbeddingBagStepsUs(c, lookups), bound::kDependentLoads);
    return cost;
  }
  if (const eg::IndexOp* r = eg::IndexOpOf(c.op.name()); r && BoolArg(c.op, r->sparse_arg))
    return SparseGradientModel(c);
  if (scatter && c.in.size() >= 2) return ScatterModel(c);
  if (backward) {
    // grad rows scattered into the output; the output is written once whole.
    const proto::Tensor* grad = c.in[0];
    bool calibrated = false;
    for (const proto::BandwidthPoint& b : c.p.bandwidth()) calibrated |= b.kind() == "embedding_backward";
    // The calibrated backward is embedding_bag's (sort + accumulate); other backwards scatter.
    const bool bag_backward = c.name == "aten::_embedding_bag_backward" || c.name == "aten::_embedding_bag_dense_backward";
    OpCost cost = BandwidthModel(c, bag_backward && calibrated ? "embedding_backward" : "binary", out_bytes + 2 * Bytes(grad));
    cost.model = "embedding";
    return cost;
  }
  OpCost cost = BandwidthModel(c, "gather", 2 * out_bytes + (c.in.size() >= 2 ? Bytes(c.in.back()) : 0));
  cost.model = "embedding";
  return cost;
}

// Bytes a normalization reads a second time, as PyTorch's kernels do it (where the platform has
// no measured point of its own kind, which would include them): training batch norm computes
// the statistics in one pass over the input and normalizes in a second
// (batch_norm_collect_statistics, then batch_norm_elemt); the backwards of batch and layer
// norm reduce over grad_output and input (the weight and bias gradients) before computing
// grad_input from both again. The `training` flag is input 5 of every batch-norm forward schema.
double SecondPassBytes(const Ctx& c) {
  const bool batch = c.name.find("batch_norm") != std::string_view::npos;
  const bool layer = c.name.find("layer_norm") != std::string_view::npos;
  if ((!batch && !layer) || c.in.empty()) return 0;
  if (c.name.find("backward") != std::string_view::npos) return Bytes(c.in[0]) + (c.in.size() >= 2 ? Bytes(c.in[1]) : 0);
  const bool training = BoolArg(c.op, 5);
  return batch && training ? Bytes(c.in[0]) : 0;
}

bool IsBackward(const Ctx& c) { return c.name.find("backward") != std::string_view::npos; }

// The feature map a batch norm or a pooling reads: the forward's first tensor, the backward's
// second (after grad_output); null where not recorded.
const proto::Tensor* MapInput(const Ctx& c) {
  const size_t i = IsBackward(c) ? 1 : 0;
  return i < c.in.size() ? c.in[i] : nullptr;
}

// Whether PyTorch's CUDA batch norm takes its channels-last kernels for input `t`
// (batch_norm_use_channels_last_kernels): NHWC or NDHWC memory, or a contiguous tensor whose
// channels are innermost (BatchNorm1d's [N, C]).
bool BatchNormChannelsLast(const proto::Tensor& t) {
  if (IsChannelsLast(t)) return true;
  const int r = t.shape_size();
  if (r < 2 || t.strides_size() != r || t.strides(1) != 1) return false;
  int64_t dense = 1;
  for (int i = r - 1; i >= 0; dense *= t.shape(i--))
    if (t.shape(i) != 1 && t.strides(i) != dense) return false;
  return true;
}

// PyTorch's channels-last batch norm on a GPU, by the cycles its kernels spend per element
// (Platform.batch_norm_channels_last): each thread of the fixed 2-D grid walks its channel
// down the rows one element at a time, a Welford update (with a division) a step in the
// forward's statistics, so the kernels run below the memory's rate (docs/model.md). ATen's
// own kernels only (OpEvidence::native_batch_norm; cuDNN's are priced by their bytes), in
// training: a forward (statistics, then normalize) or a backward (reduce, then grad input).
double ChannelsLastBatchNormUs(const Ctx& c) {
  const proto::KernelCycles& bn = c.p.batch_norm_channels_last();
  const bool backward = IsBackward(c);
  const double cycles = backward ? bn.backward_cycles() : bn.forward_cycles();
  const double cycles_per_us = SmCyclesPerUs(c.p);
  if (!c.e.native_batch_norm || !(cycles > 0) || !(cycles_per_us > 0)) return 0;
  // The training flag: argument 7 of the backwards, 5 of the forwards (3 of the
  // _native_batch_norm_legit overload without running statistics).
  const int training_arg = backward ? 7 : c.op.inputs_size() == 6 ? 3 : 5;
  const proto::Tensor* input = MapInput(c);
  if (!input || !BoolArg(c.op, training_arg) || !BatchNormChannelsLast(*input)) return 0;
  return static_cast<double>(input->numel()) * cycles / cycles_per_us;
}

// A batch norm's or a pooling's kind (batch_norm, batch_norm_backward, pool, pool_backward), on
// a channels-last input (NHWC, NDHWC) its "_channels_last" twin where the platform measured it:
// a CPU runs other kernels for that layout (batch norm faster or slower by size, max pooling's
// forward 10-15x as fast as on NCHW maps: docs/model.md).
std::string_view LayoutKind(const Ctx& c, std::string_view kind) {
  static constexpr std::pair<std::string_view, std::string_view> kTwins[] = {
      {"batch_norm", "batch_norm_channels_last"},
      {"batch_norm_backward", "batch_norm_backward_channels_last"},
      {"pool", "pool_channels_last"},
      {"pool_backward", "pool_backward_channels_last"}};
  const proto::Tensor* input = MapInput(c);
  if (!input || !IsChannelsLast(*input)) return kind;
  for (const auto& [plain, last] : kTwins)
    if (plain == kind && HasKind(c.p, last)) return last;
  return kind;
}

// The visits of a max_pool2d, max_pool2d_with_indices or its backward on a channels-last input;
// 0 where the op is none of them, its input is not channels-last or its window not recorded.
// Arguments (after grad_output in the backward): input, kernel_size, stride, padding, dilation.
double ChannelsLastMaxPoolVisits(const Ctx& c, bool backward) {
  if (c.name != "aten::max_pool2d" && c.name != "aten::max_pool2d_with_indices" &&
      c.name != "aten::max_pool2d_with_indices_backward")
    return 0;
  const proto::Tensor* input = MapInput(c);  // in[1] in the backward, after grad_output
  if (!input || input->shape_size() != 4 || !IsChannelsLast(*input)) return 0;
  const proto::Tensor* output = backward ? c.in[0] : c.out.empty() ? nullptr : c.out[0];
  if (!output || output->shape_size() != 4) return 0;
  const int first = backward ? 2 : 1;
  const std::vector<int64_t> k = IntList(c.op, first), s = IntList(c.op, first + 1),
                             p = IntList(c.op, first + 2), d = IntList(c.op, first + 3);
  auto at = [](const std::vector<int64_t>& v, int i, int64_t fallback) {
    return v.empty() ? fallback : v[std::min<size_t>(i, v.size() - 1)];
  };
  double visits = static_cast<double>(input->shape(0)) * static_cast<double>(input->shape(1));
  for (int i = 0; i < 2; ++i) {
    const PoolDim dim{input->shape(2 + i),   output->shape(2 + i), at(k, i, 0),
                      at(s, i, at(k, i, 0)), at(p, i, 0),          at(d, i, 1)};
    visits *= MaxPoolVisits(dim, backward);
  }
  return visits;
}

// PyTorch's CUDA max pooling on a channels-last map by the SM cycles its kernels take a window
// visit (Platform.max_pool_channels_last): its threads walk the windows an element a step, far
// below the memory's rate (the H200 ResNet-50's first pooling ran at a fifth of its bytes'
// time). The backward first zeroes grad_input, a fill at its bytes. 0 where the platform has
// no figure or the op is not such a pooling.
double ChannelsLastMaxPoolUs(const Ctx& c) {
  const bool backward = IsBackward(c);
  const proto::KernelCycles& pool = c.p.max_pool_channels_last();
  const double cycles = backward ? pool.backward_cycles() : pool.forward_cycles();
  const double cycles_per_us = SmCyclesPerUs(c.p);
  if (!(cycles > 0) || !(cycles_per_us > 0)) return 0;
  const double visits = ChannelsLastMaxPoolVisits(c, backward);
  if (!(visits > 0)) return 0;
  const double fill_us =
      backward && !c.out.empty() ? BandwidthModel(c, "fill", Bytes(c.out[0])).compute_us : 0;
  return visits * cycles / cycles_per_us + fill_us;
}

// The bytes of the int64 index of each maximum that ATen's CUDA max_pool1d/2d/3d write without
// returning them: on a GPU they run max_poolNd_with_indices and return its values alone.
double UnreturnedIndexBytes(const Ctx& c) {
  if (!IsGpu(c.p) || c.out.empty()) return 0;
  if (c.name != "aten::max_pool1d" && c.name != "aten::max_pool2d" && c.name != "aten::max_pool3d")
    return 0;
  return static_cast<double>(c.out[0]->numel()) * 8;
}

// A sum or mean of a contiguous tensor over its leading dims into its trailing ones (a bias's
// gradient) on a GPU, at the launch ATen gives it (ColumnReduceLaunchOf): each thread waits out
// its values' loads 4 at a time, however few bytes the op moves; where the rows are split over
// blocks, each block writes its partial sums, fences them and counts itself in on a semaphore,
// and the last one reads them back a block's height at a time. A load is a dependent step with
// the grid busy (`embedding_bag_step_ns`), a partial sum, just written and read from L2, half
// of one (assumed). `bandwidth_us` is the op's time by its bytes; the result is at least that
// plus the partial sums' steps. 0 where the op is not such a reduction or the platform has no
// step time.
double ColumnReduceUs(const Ctx& c, double bandwidth_us) {
  const double step_us = DependentStepUs(c.p);
  if (!(step_us > 0) || (c.name != "aten::sum" && c.name != "aten::mean")) return 0;
  if (c.in.empty() || c.out.empty() || !IsContiguous(c.in[0])) return 0;
  const proto::Tensor& in = *c.in[0];
  const int64_t cols = c.out[0]->numel();
  double trailing = 1;  // the input's trailing dims, as far as the output's elements
  for (int i = in.shape_size() - 1; i >= 0 && trailing < static_cast<double>(cols); --i)
    trailing *= static_cast<double>(in.shape(i));
  if (cols < 2 || trailing != static_cast<double>(cols) || in.numel() <= cols ||
      in.numel() % cols != 0)
    return 0;
  const ColumnReduceLaunch l = ColumnReduceLaunchOf(in.numel() / cols, cols, c.p.sm_count());
  const double load_rounds = std::ceil(static_cast<double>(l.values_per_thread) / 4);
  const double partial_steps =
      l.serial_partials > 0 ? static_cast<double>(l.serial_partials) + 2 : 0;
  return std::max(bandwidth_us, load_rounds * step_us) + partial_steps * step_us / 2;
}

// A layer norm's backward on a GPU, as PyTorch's CUDA kernels run it (ATen's
// layer_norm_kernel.cu): grad_input in one kernel, a block a row, at the bytes it moves (dY, X
// and the row statistics read, dX written); then dgamma and dbeta in another, whose grid has a
// block of 32 x 32 threads for each 32 columns (where the rows are 65,536 or fewer, or the
// columns fill half the SMs; else ATen splits the rows, not modelled here). Each block walks
// all the rows 256 at a time, a dependent step each (`embedding_bag_step_ns`), however few
// SMs the grid fills: GPT-2's 768 columns on the H200 fill 24 of 132 SMs, and its 8,192 rows
// take 32 steps (42.3 us recorded, 13 us by bytes). Prices `cost` so where it applies.
void LayerNormBackward(const Ctx& c, OpCost& cost) {
  const double step_us = DependentStepUs(c.p);
  if (!(step_us > 0) || c.name != "aten::native_layer_norm_backward" || c.in.size() < 5 ||
      c.out.empty())
    return;
  const proto::Tensor *dy = c.in[0], *x = c.in[1], *weight = c.in[4];
  const int64_t cols = weight->numel();
  if (cols < 1 || x->numel() % cols != 0) return;
  const int64_t rows = x->numel() / cols;
  if (rows > 65536 && CeilDiv(cols, 32) < c.p.sm_count() / 2) return;
  const double stats = Bytes(c.in[2]) + Bytes(c.in[3]);
  const double grad_input_us =
      BandwidthModel(c, "norm", Bytes(dy) + Bytes(x) + stats + Bytes(c.out[0])).compute_us;
  const double gamma_beta_bytes_us =
      BandwidthModel(c, "norm", Bytes(dy) + Bytes(x) + stats).compute_us;
  const double gamma_beta_steps_us = std::ceil(static_cast<double>(rows) / 256) * step_us;
  cost.compute_us = grad_input_us + std::max(gamma_beta_bytes_us, gamma_beta_steps_us);
  cost.bound = gamma_beta_steps_us > gamma_beta_bytes_us ? bound::kDependentLoads : bound::kBytes;
}

OpCost ReductionNormModel(const Ctx& c) {
  // Pooling and training-mode batch norm make several passes or gather windows: kinds of
  // their own where calibrated (EffectiveBandwidth falls back to "binary" otherwise).
  std::string_view kind = "reduction";
  if (const std::string_view math = MathKindOf(c.name); !math.empty() && HasKind(c.p, math))
    kind = math;
  else if (c.name.find("softmax") != std::string_view::npos)
    kind = "softmax";
  // Adaptive average pooling to a small output (a global average) is a mean over each map.
  else if (c.name.find("adaptive_avg_pool") != std::string_view::npos && c.name.find("backward") == std::string_view::npos) kind = "reduction";
  else if (c.name.find("pool") != std::string_view::npos)
    kind = LayoutKind(c, IsBackward(c) ? "pool_backward" : "pool");
  else if (c.name.find("batch_norm") != std::string_view::npos)
    kind = LayoutKind(c, IsBackward(c) ? "batch_norm_backward" : "batch_norm");
  else if (c.name.find("norm") != std::string_view::npos) kind = "norm";
  OpCost cost = BandwidthModel(c, kind,
                               TouchedBytes(c.in, c.out) + UnreturnedIndexBytes(c) +
                                   (HasKind(c.p, kind) ? 0 : SecondPassBytes(c)));
  AtLeast(cost, ChannelsLastBatchNormUs(c), bound::kSmCycles);
  AtLeast(cost, ChannelsLastMaxPoolUs(c), bound::kSmCycles);
  // ATen's kernels that wait on their loads, where the op is one.
  AtLeast(cost, ColumnReduceUs(c, cost.compute_us), bound::kDependentLoads);
  LayerNormBackward(c, cost);
  return cost;
}

// Elementwise ops that generate random numbers cost far more per byte than arithmetic.
const std::string_view kRandomOps[] = {"aten::dropout", "aten::native_dropout", "aten::bernoulli_", "aten::bernoulli",
                                       "aten::feature_dropout", "aten::uniform_", "aten::normal_", "aten::rand",
                                       "aten::randn", "aten::rand_like", "aten::randn_like"};

bool HasKind(const proto::Platform& p, std::string_view kind) {
  for (const proto::BandwidthPoint& b : p.bandwidth())
    if (b.kind() == kind) return true;
  return false;
}

// A sparse tensor has no storage of its own: the trace records its dense shape, no elements and
// no bytes.
bool IsSparse(const proto::Tensor* t) {
  if (!t || t->numel() != 0 || t->itemsize() != 0 || t->shape_size() == 0) return false;
  for (int64_t d : t->shape())
    if (d <= 0) return false;
  return true;
}

// The dims of `t` from its largest stride to its smallest (the order memory walks them in),
// dims of one element left out; empty where the strides were not recorded or a dim is
// broadcast (stride 0, which TensorIterator walks as a scalar).
std::vector<int> DimOrder(const proto::Tensor& t) {
  const int r = t.shape_size();
  if (r < 2 || t.strides_size() != r) return {};
  std::vector<int> dims;
  for (int i = 0; i < r; ++i) {
    if (t.shape(i) == 1) continue;
    if (t.strides(i) == 0) return {};
    dims.push_back(i);
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [&](int a, int b) { return t.strides(a) > t.strides(b); });
  return dims;
}

// Whether an elementwise op's tensors of one shape lie in memory in different dim orders (a
// channels-last activation and a contiguous gradient, a transposed view and a plain tensor):
// TensorIterator cannot walk them as one flat array, and a CPU's loop then reads one of them
// with a stride, element by element.
bool MixedLayouts(const Ctx& c) {
  std::map<std::vector<int64_t>, std::vector<int>> order;  // by shape, the first tensor's
  for (const auto* list : {&c.in, &c.out})
    for (const proto::Tensor* t : *list) {
      std::vector<int> dims = DimOrder(*t);
      if (dims.empty()) continue;
      const auto [it, first] =
          order.emplace(std::vector<int64_t>(t->shape().begin(), t->shape().end()), dims);
      if (!first && it->second != dims) return true;
    }
  return false;
}

// PyTorch's CUDA index_add over many indices (indexFuncLargeIndex, ATen's Indexing.cu) launches
// at most 8 blocks of 128 threads an SM; each thread loops over the elements a grid's width
// apart, and each pass reads the element's index and source, then adds it into the
// destination: a dependent step. The passes each thread makes for `elements` added on
// `sm_count` SMs (the H200 DLRM capture's sparse SGD updates, 42,000 rows of 128 floats:
// grid 1,056, block 128, 41 passes).
double IndexAddPasses(double elements, int64_t sm_count) {
  if (elements <= 0 || sm_count <= 0) return 0;
  const double block = std::min(elements, 128.0);
  const double blocks = std::min(std::ceil(elements / 128), 8.0 * static_cast<double>(sm_count));
  return std::ceil(elements / (blocks * block));
}

// An elementwise op with a sparse operand runs on the rows the sparse tensor holds: its
// values read, and as many bytes of the dense tensor read and written. Adding one into a dense
// tensor (SGD's and SparseAdam's updates of an embedding table from its sparse gradient) runs
// ATen's own loop over the rows, measured as index kind sparse_add_; multiplying a dense tensor
// by one (sparse_mask's core) gathers those rows of the dense tensor, an index op, then
// multiplies. At the platform's measured kinds where it has them: on the build VM both take
// about 7x the time a copy of their values does (bench/op_costs.py, sparse).
OpCost SparseOperandModel(const Ctx& c) {
  OpCost cost = BandwidthModel(c, "binary", 3 * c.e.sparse_values_bytes);
  const auto dense = std::find_if(c.in.begin(), c.in.end(), [](const proto::Tensor* t) {
    return !IsSparse(t) && t->shape_size() >= 1;
  });
  const bool add = c.name == "aten::add" || c.name == "aten::add_" || c.name == "aten::sub" ||
                   c.name == "aten::sub_";
  const bool mul = c.name == "aten::mul" || c.name == "aten::mul_";
  if (dense == c.in.end() || c.e.sparse_rows <= 0 || (!add && !mul)) return cost;
  // On a GPU, adding the rows into the dense tensor is ATen's index_add kernel: at least its
  // passes, each a dependent step with the grid busy (embedding_bag_step_ns).
  if (const double step_us = DependentStepUs(c.p); add && step_us > 0) {
    const double elements =
        static_cast<double>(c.e.sparse_rows) * static_cast<double>(c.e.sparse_row_width);
    AtLeast(cost, IndexAddPasses(elements, c.p.sm_count()) * step_us, bound::kDependentLoads);
    return cost;
  }
  const IndexShape rows{add ? "sparse_add_" : "index", c.e.sparse_rows, c.e.sparse_row_width,
                        (*dense)->shape(0), std::string(DtypeKey((*dense)->dtype()))};
  const double us = MeasuredIndexUs(c, rows);
  if (us < 0) return cost;
  // An add into another dense tensor than its operand copies the operand there first.
  const bool copies = add && !c.out.empty() && c.out[0] != *dense && !IsSparse(c.out[0]);
  cost.model = "index";
  cost.bound = bound::kMeasured;
  cost.compute_us = us + (mul ? cost.compute_us : 0) +
                    (copies ? BandwidthModel(c, "copy", 2 * Bytes(*dense)).compute_us : 0);
  return cost;
}

OpCost ElementwiseModel(const Ctx& c) {
  // A sparse operand (SGD's update of an embedding table from its sparse gradient) touches only
  // the rows it holds: its values read, and as many bytes of the dense tensor read and written.
  if (c.e.sparse_values_bytes > 0 && std::any_of(c.in.begin(), c.in.end(), IsSparse))
    return SparseOperandModel(c);
  for (std::string_view r : kRandomOps)
    if (r == c.name) return BandwidthModel(c, "dropout", TouchedBytes(c.in, c.out));
  // Math the vector units spend longer on than the bytes take to move: a kind of its own where
  // the platform measured it (sqrt is 4x and tanh 26x relu's time on the CPU host).
  const std::string_view math = MathKindOf(c.name);
  if (!math.empty() && HasKind(c.p, math)) return BandwidthModel(c, math, TouchedBytes(c.in, c.out));
  // Operands in different layouts: at the rate measured so, where the platform did (ReLU's
  // backward, whose CPU loop on two layouts runs several times slower again than an add's,
  // its own).
  if (HasKind(c.p, "mixed_layout") && MixedLayouts(c)) {
    const bool relu =
        c.name == "aten::threshold_backward" && HasKind(c.p, "threshold_backward_mixed_layout");
    return BandwidthModel(c, relu ? "threshold_backward_mixed_layout" : "mixed_layout",
                          TouchedBytes(c.in, c.out));
  }
  return AtUnrolledRate(
      c, BandwidthModel(c, c.in.size() >= 2 ? "binary" : "unary", TouchedBytes(c.in, c.out)));
}

bool OnGpu(const proto::Tensor* t) { return t && t->device().rfind("cuda", 0) == 0; }

// Whether a copy's host memory was pinned, where the trace does not say (an execution trace
// records no pinned-ness): a `non_blocking` copy is taken to come from pinned memory, the only
// case where PyTorch makes it asynchronous; any other copy from pageable memory.
eg::HostMemory HostMemoryOf(const Ctx& c) {
  const proto::Value* v = ArgNamed(c.w, c.op, "non_blocking");
  return v && v->kind_case() == proto::Value::kBoolValue && v->bool_value()
             ? eg::HostMemory::kPinned
             : eg::HostMemory::kPageable;
}

// Which way a copy goes: the recorded device work's memcpy event where the trace has one (a
// fact of the trace), else the source and destination tensors' devices where an execution trace
// recorded them (copy_ writes its first input from its second; the other copies write their
// output from their first input), else within the device.
eg::DeviceCopy CopyOf(const Ctx& c) {
  if (c.e.recorded_copy.route != eg::CopyRoute::kNone) return c.e.recorded_copy;
  eg::DeviceCopy copy{eg::CopyRoute::kDeviceToDevice, eg::HostMemory::kUnknown};
  if (eg::IsKinetoOnly(c.w) || c.in.empty()) return copy;  // no tensor devices recorded
  const bool copy_ = c.name == "aten::copy_";
  const proto::Tensor* src = copy_ ? (c.in.size() >= 2 ? c.in[1] : nullptr) : c.in[0];
  const proto::Tensor* dst = copy_ ? c.in[0] : (c.out.empty() ? nullptr : c.out[0]);
  if (!src || !dst || src->device().empty() || dst->device().empty()) return copy;
  if (OnGpu(src) != OnGpu(dst)) {
    copy.route = OnGpu(dst) ? eg::CopyRoute::kHostToDevice : eg::CopyRoute::kDeviceToHost;
    copy.host = HostMemoryOf(c);
  } else if (OnGpu(src) && src->device() != dst->device()) {
    copy.route = eg::CopyRoute::kPeer;
  }
  return copy;
}

// A copy on the device that converts floating-point dtypes (autocast's casts; an fp32 gradient
// from a bf16 one): its source read and its destination written, each at its own width, at copy
// bandwidth. ATen converts fp32 to bf16 or fp16 in a vectorized kernel and any other pair in its
// unrolled one (UnrolledElementsPerS), which the kernels the op recorded confirm where the trace
// has them (OpEvidence::unrolled_kernels). Empty for a copy that keeps its dtype.
std::optional<OpCost> DeviceCastCost(const Ctx& c) {
  const bool copy_ = c.name == "aten::copy_";
  const proto::Tensor* src =
      copy_ ? (c.in.size() >= 2 ? c.in[1] : nullptr) : (c.in.empty() ? nullptr : c.in[0]);
  const proto::Tensor* dst = copy_ ? c.in[0] : (c.out.empty() ? nullptr : c.out[0]);
  if (!src || !dst || !eg::IsFloatingDType(src->dtype()) || !eg::IsFloatingDType(dst->dtype()) ||
      src->dtype() == dst->dtype())
    return std::nullopt;
  OpEvidence e = c.e;
  if (e.unrolled_kernels < 0) {
    const bool down = src->dtype() == proto::FLOAT32 &&
                      (dst->dtype() == proto::BFLOAT16 || dst->dtype() == proto::FLOAT16);
    e.unrolled_kernels = down ? 0 : 1;
  }
  const Ctx cast{c.w, c.op, c.p, c.name, c.in, c.out, e};
  OpCost cost = AtUnrolledRate(cast, BandwidthModel(cast, "copy", Bytes(src) + Bytes(dst)));
  cost.model = "memcpy";
  return cost;
}

// Copies by route: within the device, read and written at copy bandwidth; host<->device over
// the link at the platform's rate for the direction and host memory; between GPUs over NVLink
// (else the host link).
OpCost MemcpyModel(const Ctx& c) {
  double out_bytes = 0;
  for (const proto::Tensor* t : c.out) out_bytes += Bytes(t);
  if (c.name == "aten::copy_" && c.in.size() >= 2) out_bytes = Bytes(c.in[1]);
  if (c.name == "aten::_local_scalar_dense" || c.name == "aten::item") out_bytes = 8;
  const eg::DeviceCopy copy = IsGpu(c.p) ? CopyOf(c) : eg::DeviceCopy{};
  if (IsGpu(c.p) && copy.route == eg::CopyRoute::kDeviceToDevice)
    if (const std::optional<OpCost> cast = DeviceCastCost(c)) return *cast;
  OpCost cost = BandwidthModel(c, "copy", 2 * out_bytes);
  cost.model = "memcpy";
  if (!IsGpu(c.p)) return cost;
  double rate = 0;
  if (copy.route == eg::CopyRoute::kHostToDevice || copy.route == eg::CopyRoute::kDeviceToHost)
    rate = HostDeviceRate(c.p, copy);
  else if (copy.route == eg::CopyRoute::kPeer)
    rate =
        c.p.gpu_gpu_bytes_per_s() > 0 ? c.p.gpu_gpu_bytes_per_s() : c.p.host_device_bytes_per_s();
  if (rate > 0) cost.bytes = out_bytes, cost.compute_us = out_bytes / rate * 1e6;
  return cost;
}

// Views and metadata ops: no data moves, only the dispatch.
const std::string_view kViewOps[] = {
    "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::t",
    "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::as_strided",
    "aten::unsqueeze", "aten::squeeze", "aten::select", "aten::slice", "aten::narrow",
    "aten::detach", "aten::detach_", "aten::alias", "aten::empty", "aten::empty_like",
    "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided", "aten::resize_",
    "aten::set_", "aten::lift_fresh", "aten::split", "aten::split_with_sizes", "aten::chunk",
    "aten::unbind", "aten::flatten", "aten::unflatten", "aten::view_as", "aten::numpy_T",
    "aten::result_type", "aten::is_nonzero", "aten::size", "aten::stride", "aten::contiguous",
    "aten::_has_compatible_shallow_copy_type", "aten::to", "aten::type_as", "aten::matrix_H",
    "aten::unfold", "aten::diagonal", "aten::movedim", "aten::swapaxes", "aten::mT",
    // A sparse tensor's members, as aliases (its values and indices have no storage of the
    // sparse tensor's own to alias in the trace).
    "aten::_values", "aten::_indices", "aten::values", "aten::indices", "aten::crow_indices",
    "aten::col_indices", "aten::ccol_indices", "aten::row_indices"};

// True when every output shares storage with an input and the op is not in place (a
// trailing '_'): a view, whatever its name.
bool AliasesInputs(std::string_view name, const std::vector<const proto::Tensor*>& in,
                   const std::vector<const proto::Tensor*>& out) {
  if (out.empty() || name.empty() || name.back() == '_') return false;
  for (const proto::Tensor* o : out) {
    bool shared = false;
    for (const proto::Tensor* i : in)
      shared |= i->storage_id() == o->storage_id() && o->storage_id() != 0;
    if (!shared) return false;
  }
  return true;
}

bool IsView(std::string_view name, const std::vector<const proto::Tensor*>& in,
            const std::vector<const proto::Tensor*>& out) {
  // "detach" without a namespace: the autograd-level twin under aten::detach.
  for (std::string_view v : kViewOps)
    if (v == name || v.substr(6) == name) return true;
  return AliasesInputs(name, in, out);
}

OpCost OtherModel(const Ctx& c) {
  if (IsView(c.name, c.in, c.out)) {
    OpCost cost;
    cost.model = "view";
    cost.launches = false;
    return cost;
  }
  const std::string_view math = MathKindOf(c.name);  // in-place twins of the elementwise math
  return BandwidthModel(c, !math.empty() && HasKind(c.p, math) ? math : "unary", TouchedBytes(c.in, c.out));
}

struct ClassModel {
  OpClass op_class;
  OpCost (*fn)(const Ctx&);
};

// One record per class. Collectives are priced by CollectiveCost, not here.
const ClassModel kModels[] = {
    {OpClass::kGemm, GemmModel},
    {OpClass::kConv, ConvModel},
    {OpClass::kAttention, AttentionModel},
    {OpClass::kEmbedding, EmbeddingModel},
    {OpClass::kReductionNorm, ReductionNormModel},
    {OpClass::kElementwise, ElementwiseModel},
    {OpClass::kMemcpy, MemcpyModel},
    {OpClass::kOther, OtherModel},
};


}  // namespace

std::vector<const proto::Tensor*> Tensors(const proto::Workload& w,
                                          const google::protobuf::RepeatedPtrField<proto::Value>& values) {
  std::vector<const proto::Tensor*> out;
  for (const proto::Value& v : values) CollectTensors(w, v, out);
  return out;
}

// The tensors of the arguments `op`'s schema marks as written in place (`Tensor(a!)`,
// `Tensor(a!)[]`): what an op that returns nothing (`-> ()`: the in-place _foreach_ ops, the
// fused optimizers) writes. Empty without a schema.
std::vector<const proto::Tensor*> MutatedArguments(const proto::Workload& w, const proto::Op& op) {
  std::vector<const proto::Tensor*> out;
  const std::vector<eg::SchemaArg> args = eg::ParseSchemaArgs(SchemaOf(w, op));
  for (size_t i = 0; i < args.size() && i < static_cast<size_t>(op.inputs_size()); ++i)
    if (args[i].mutated) CollectTensors(w, op.inputs(static_cast<int>(i)), out);
  return out;
}

std::vector<const proto::Tensor*> OutputsOf(const proto::Workload& w, const proto::Op& op,
                                            const std::vector<const proto::Tensor*>& in) {
  std::vector<const proto::Tensor*> out = Tensors(w, op.outputs());
  if (out.empty() && !in.empty()) out = MutatedArguments(w, op);
  if (!out.empty() || in.empty() || !eg::IsKinetoOnly(w)) return out;
  const std::string_view name = BaseName(op.name());
  if (name == "aten::cat" || name == "aten::stack") return in;
  const OpClass cls = eg::ClassOf(op.name());
  const bool same_size = cls == OpClass::kElementwise ||
                         (cls == OpClass::kMemcpy && name != "aten::copy_") ||
                         name.find("softmax") != std::string_view::npos ||
                         name.find("layer_norm") != std::string_view::npos ||
                         name.find("batch_norm") != std::string_view::npos ||
                         name.find("group_norm") != std::string_view::npos ||
                         name.find("rms_norm") != std::string_view::npos;
  if (!same_size) return out;
  if (!name.empty() && name.back() == '_') return {in.front()};  // in place: written back
  return {*std::max_element(
      in.begin(), in.end(),
      [](const proto::Tensor* a, const proto::Tensor* b) { return Bytes(a) < Bytes(b); })};
}

double Bytes(const proto::Tensor* t) {
  return t ? static_cast<double>(std::max<int64_t>(t->numel(), 0)) * static_cast<double>(std::max<int64_t>(t->itemsize(), 1)) : 0;
}

std::string_view MathKindOf(std::string_view op) {
  struct MathOp {
    std::string_view op, kind;
  };
  // The backwards that evaluate the same function price as it; tanh's and sigmoid's reuse
  // the forward's output and are plain arithmetic (binary). Binary cross-entropy's CPU
  // kernels are scalar loops, measured as such.
  // clang-format off
  static constexpr MathOp kMathOps[] = {
      {"aten::sqrt", "sqrt"},       {"aten::sqrt_", "sqrt"},       {"aten::_foreach_sqrt", "sqrt"},
      {"aten::_foreach_sqrt_", "sqrt"}, {"aten::rsqrt", "rsqrt"},  {"aten::rsqrt_", "rsqrt"},
      {"aten::exp", "exp"},         {"aten::exp_", "exp"},         {"aten::_foreach_exp", "exp"},
      {"aten::log", "log"},         {"aten::log_", "log"},         {"aten::_foreach_log", "log"},
      {"aten::tanh", "tanh"},       {"aten::tanh_", "tanh"},       {"aten::sigmoid", "sigmoid"},
      {"aten::sigmoid_", "sigmoid"}, {"aten::gelu", "gelu"},       {"aten::gelu_", "gelu"},
      {"aten::gelu_backward", "gelu"}, {"aten::silu", "silu"},     {"aten::silu_", "silu"},
      {"aten::silu_backward", "silu"},      {"aten::sort", "sort"},
      {"aten::binary_cross_entropy", "binary_cross_entropy"},
      {"aten::binary_cross_entropy_backward", "binary_cross_entropy_backward"}};
  // clang-format on
  op = op.substr(0, op.find('.', op.find("::") == std::string_view::npos ? 0 : op.find("::") + 2));
  for (const MathOp& m : kMathOps)
    if (m.op == op) return m.kind;
  return {};
}

std::string_view DtypeKey(proto::DType d) {
  switch (d) {
    case proto::FLOAT64: return "fp64";
    case proto::FLOAT16: return "fp16";
    case proto::BFLOAT16: return "bf16";
    case proto::FLOAT8_E4M3FN:
    case proto::FLOAT8_E5M2: return "fp8";
    case proto::INT8:
    case proto::UINT8: return "int8";
    default: return "fp32";
  }
}

namespace {

// Linear interpolation in log-log between points (log bytes, log bytes/s), clamped at the ends.
double Interpolate(std::vector<std::pair<double, double>> pts, double bytes) {
  std::sort(pts.begin(), pts.end());  // calibrate adds the workloads' own points in their order
  const double x = std::log(std::max(bytes, 1.0));
  if (x <= pts.front().first) return std::exp(pts.front().second);
  if (x >= pts.back().first) return std::exp(pts.back().second);
  for (size_t i = 1; i < pts.size(); ++i) {
    if (x <= pts[i].first) {
      const double span = pts[i].first - pts[i - 1].first;
      const double t = span > 0 ? (x - pts[i - 1].first) / span : 0;
      return std::exp(pts[i - 1].second + t * (pts[i].second - pts[i - 1].second));
    }
  }
  return std::exp(pts.back().second);
}

// The points of `kind` ("": any) measured on tensors of `dtype` ("fp32": BandwidthPoint's "").
std::vector<std::pair<double, double>> Points(const proto::Platform& p, std::string_view kind,
                                              bool cold, std::string_view dtype = "fp32") {
  std::vector<std::pair<double, double>> pts;
  for (const proto::BandwidthPoint& b : p.bandwidth()) {
    const std::string_view of =
        b.dtype().empty() ? std::string_view("fp32") : std::string_view(b.dtype());
    if (b.cold() == cold && of == dtype && (kind.empty() || b.kind() == kind))
      pts.emplace_back(std::log(b.bytes()), std::log(b.bytes_per_s()));
  }
  return pts;
}

}  // namespace

double EffectiveBandwidth(const proto::Platform& p, std::string_view kind, double bytes,
                          std::string_view dtype) {
  std::vector<std::pair<double, double>> pts;
  if (dtype != "fp32") pts = Points(p, kind, /*cold=*/false, dtype);
  for (std::string_view k : {kind, std::string_view("binary"), std::string_view("")})
    if (!pts.empty() || !(pts = Points(p, k, /*cold=*/false)).empty()) break;
  if (pts.empty()) return p.memory_bandwidth_bytes_per_s() * (IsGpu(p) ? 0.8 : 0.5);
  return Interpolate(std::move(pts), bytes);
}

bool HasBandwidthPoints(const proto::Platform& p, std::string_view kind, std::string_view dtype) {
  return !Points(p, kind, /*cold=*/false, dtype).empty();
}

double ColdSlowdown(const proto::Platform& p, std::string_view kind, double bytes) {
  for (std::string_view k : {kind, std::string_view("binary")}) {
    std::vector<std::pair<double, double>> cold = Points(p, k, /*cold=*/true);
    if (cold.empty()) continue;
    const double smallest = std::min_element(cold.begin(), cold.end())->first;
    if (std::log(std::max(bytes, 1.0)) < smallest) return 1;
    return std::max(1.0, Interpolate(Points(p, k, /*cold=*/false), bytes) / Interpolate(std::move(cold), bytes));
  }
  return 1;
}

double ShapeEfficiency(const proto::Platform& p,
                       const google::protobuf::RepeatedPtrField<proto::EfficiencyPoint>& table,
                       double m, double n, double k, std::string_view dtype, std::string_view pass,
                       std::string_view layout) {
  m = std::max(m, 1.0), n = std::max(n, 1.0), k = std::max(k, 1.0);
  struct Near {
    double d2, eff;
  };
  std::vector<Near> near;
  auto pass_of = [](const proto::EfficiencyPoint& e) { return e.pass().empty() ? std::string_view("forward") : std::string_view(e.pass()); };
  const std::string_view want_pass = pass.empty() ? "forward" : pass;
  // The points of the op's dtype, pass and layout; else of its dtype and pass in any layout;
  // else of its dtype (or fp32's); else any.
  for (int attempt = 0; attempt < 4 && near.empty(); ++attempt) {
    for (const proto::EfficiencyPoint& e : table) {
      if (attempt <= 1 && (e.dtype() != dtype || pass_of(e) != want_pass)) continue;
      if (attempt == 0 && e.layout() != layout) continue;
      if (attempt == 2 && e.dtype() != dtype && e.dtype() != "fp32") continue;
      const double dm = std::log2(m) - std::log2(static_cast<double>(e.m()) * std::max<int64_t>(e.batch(), 1));
      const double dn = std::log2(n) - std::log2(static_cast<double>(e.n()));
      const double dk = std::log2(k) - std::log2(static_cast<double>(e.k()));
      near.push_back({dm * dm + dn * dn + dk * dk, e.efficiency()});
    }
  }
  if (!near.empty()) {
    std::sort(near.begin(), near.end(), [](const Near& a, const Near& b) { return a.d2 < b.d2; });
    if (near[0].d2 < 1e-9) return near[0].eff;
    double wsum = 0, esum = 0;
    for (size_t i = 0; i < std::min<size_t>(near.size(), 4); ++i) {
      const double wgt = 1.0 / near[i].d2;
      wsum += wgt;
      esum += wgt * near[i].eff;
    }
    return esum / wsum;
  }
  if (!IsGpu(p)) return 0.5;
  // Datasheet GPU: output tiles spread over the SMs in waves; a partial last wave idles SMs
  // (wave quantization), the last row and column of tiles compute whole tiles of which only
  // part is the output's (tile quantization: NVIDIA's "Matrix Multiplication Background"
  // guide), and short K cannot hide the pipeline fill. Like cuBLAS's heuristics, take the tile
  // size that does best: big tiles run closer to peak, small ones fill more SMs and waste less.
  // Too few tiles to fill the SMs and a deep K: the K loop may be split over several blocks
  // (split-K), each slice at least kMinSliceK deep, whose fp32 partial tiles are written and
  // read back once more to be summed. The efficiency returned counts that traffic.
  struct Tile {
    double m, n, eff;
  };
  constexpr Tile kTiles[] = {{256, 128, 0.80}, {128, 128, 0.75}, {128, 64, 0.68}, {64, 64, 0.60}};
  constexpr double kMinSliceK = 256;
  constexpr double kMinTileEdge = 64;
  const double sms = static_cast<double>(std::max<int64_t>(p.sm_count(), 1));
  const double ideal_s = 2 * m * n * k / PeakFlops(p, dtype, UsesTensorCores(dtype));
  double best_s = std::numeric_limits<double>::infinity();
  // The share of `tiles_d` tiles of `edge` along a dim of `d` that is the output's. A dim
  // narrower than the smallest tile runs kernels sized for it (cuBLAS's skinny and GEMV
  // kernels): no tile is wasted along it.
  auto fill = [](double d, double tiles_d, double edge) {
    return d < kMinTileEdge ? 1.0 : d / (tiles_d * edge);
  };
  for (const Tile& t : kTiles) {
    const double rows = std::ceil(m / t.m), cols = std::ceil(n / t.n), tiles = rows * cols;
    const double filled = fill(m, rows, t.m) * fill(n, cols, t.n);
    const double most =
        std::max(1.0, std::min(std::floor(sms / tiles), std::floor(k / kMinSliceK)));
    for (double splits = 1; splits <= most; ++splits) {
      const double blocks = tiles * splits, slice_k = k / splits;
      const double eff =
          t.eff * filled * (blocks / (std::ceil(blocks / sms) * sms)) * (slice_k / (slice_k + 64));
      const double partials = 2 * splits * m * n * 4;  // fp32, written and read back
      const double reduce_s = splits > 1 ? partials / EffectiveBandwidth(p, "binary", partials) : 0;
      best_s = std::min(best_s, ideal_s / eff + reduce_s);
    }
  }
  return ideal_s / best_s;
}

namespace {

// Why no model sees an op's work, or nullptr when one does: compiled code (the trace does not
// say what its kernels compute), an op of no known class from outside ATen (a custom or
// extension op, an autograd node's C++ backward), or an op whose tensor arguments the trace did
// not record (a Kineto trace without record_shapes, or an unrecorded tensor list).
const char* UnmodelledReason(const Ctx& c, OpClass cls) {
  if (eg::IsCompiledCode(c.op)) return "compiled code";
  if (c.in.empty() && c.out.empty()) return "no shapes recorded";
  const std::string_view name = c.op.name();
  const bool aten = name.substr(0, 6) == "aten::" || name.substr(0, 6) == "prim::";
  if (cls == OpClass::kOther && !aten) return "op without a model";
  return nullptr;
}

}  // namespace

int ForeachCalls(const proto::Op& op) {
  if (op.name().rfind("aten::_foreach_", 0) != 0) return 0;
  int n = 0;
  for (const proto::Value& v : op.inputs())
    if (v.kind_case() == proto::Value::kList) n = std::max(n, v.list().items_size());
  return n;
}

namespace {

// Call `i` of a _foreach_ op: each of its list arguments and outputs cut to its i-th item, with
// the values the capture recorded in item i of its first list (tensor i) as its first input's.
proto::Op ForeachCall(const proto::Op& op, int i) {
  proto::Op call = op;
  for (auto* values : {call.mutable_inputs(), call.mutable_outputs()})
    for (proto::Value& v : *values)
      if (v.kind_case() == proto::Value::kList && i < v.list().items_size()) {
        proto::Value item = v.list().items(i);
        v = std::move(item);
      }
  call.clear_input_values();
  for (const proto::InputValues& v : op.input_values())
    if (v.input() == i) (*call.add_input_values() = v).set_input(0);
  return call;
}

// How much longer `op` takes on `p` for the values the capture's profile recorded in its first
// input than on a uniform fill: 1 + each share times its measured slow-down less one
// (value_slowdown of its eg::ValueDependentKind); 1 where nothing was recorded or measured.
double ValueSlowdownOf(const proto::Op& op, const proto::Platform& p) {
  const std::string_view kind = eg::ValueDependentKind(op.name());
  if (kind.empty()) return 1;
  for (const proto::InputValues& v : op.input_values()) {
    if (v.input() != 0) continue;
    for (const proto::ValueSlowdown& s : p.value_slowdown())
      if (s.kind() == kind)
        return 1 + v.zeros() * (s.zeros() - 1) + v.subnormals() * (s.subnormals() - 1);
  }
  return 1;
}

}  // namespace

OpCost LeafCost(const proto::Workload& w, const proto::Op& op, const proto::Platform& p,
                const OpEvidence& e) {
  // A vendor op (cuDNN, MIOpen, oneDNN) costs what its portable equivalent does.
  if (const eg::PortableEquivalent* v = eg::PortableOf(op.name())) {
    proto::Op portable = op;
    if (eg::RewriteAsPortable(*v, &portable)) return LeafCost(w, portable, p, e);
  }
  // On the CPU a _foreach_ op calls its op once per position of its lists (ATen has no fused
  // CPU kernels): each call priced at its own tensors' size.
  if (const int n = ForeachCalls(op); !IsGpu(p) && n > 1) {
    OpCost cost;
    double longest = 0;  // the call whose limiter is the op's
    for (int i = 0; i < n; ++i) {
      const OpCost one = LeafCost(w, ForeachCall(op, i), p, e);
      cost.model = one.model, cost.unmodelled = one.unmodelled, cost.launches = one.launches;
      cost.flops += one.flops, cost.bytes += one.bytes, cost.compute_us += one.compute_us;
      if (i == 0 || one.compute_us > longest) cost.bound = one.bound, longest = one.compute_us;
    }
    return cost;
  }
  std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  std::vector<const proto::Tensor*> out = OutputsOf(w, op, in);
  if (const int k = eg::ShapeOnlyInput(op.name()); k >= 0 && k < op.inputs_size())
    if (const proto::Tensor* t = TensorOf(w, op.inputs(k))) {
      if (out.empty()) out.push_back(t);  // a Kineto trace alone records no outputs
      in.erase(std::remove(in.begin(), in.end(), t), in.end());
    }
  Ctx c{w, op, p, BaseName(op.name()), std::move(in), std::move(out), e};
  const OpClass cls = eg::ClassOf(op.name());
  OpCost cost;
  for (const ClassModel& m : kModels)
    if (m.op_class == cls) {
      cost = m.fn(c);
      break;
    }
  if (cost.compute_us == 0 && cost.launches && std::string_view(cost.model) != "view")
    cost = BandwidthModel(c, "unary", TouchedBytes(c.in, c.out));
  if (cost.launches && !cost.unmodelled) cost.unmodelled = UnmodelledReason(c, cls);
  if (!IsGpu(p)) cost.compute_us *= ValueSlowdownOf(op, p);
  // An op that launches several kernels (an indexing op's bounds checks and copies back, a
  // reduction's memset) takes at least the shortest kernel's time for each (docs/model.md).
  if (IsGpu(p) && cost.launches)
    AtLeast(cost, std::max(1, e.recorded_launches) * p.min_kernel_us(), bound::kMinKernel);
  // The models that price an op by its bytes alone (copies, gathers, the TBE's passes) or
  // through a calibrated time say so above; any other, by what it counted.
  if (*cost.bound == '\0' && cost.compute_us > 0)
    cost.bound = cost.flops > 0 ? bound::kFlops : bound::kBytes;
  return cost;
}

bool IsViewOp(const proto::Workload& w, const proto::Op& op) {
  if (eg::ClassOf(op.name()) != OpClass::kOther) return false;
  const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  return IsView(BaseName(op.name()), in, OutputsOf(w, op, in));
}

std::map<int, int> PairTbeOps(const proto::Workload& w, const std::vector<int>& ops) {
  std::map<int, int> partner;
  std::vector<int> open;  // forwards not paired yet, in start order
  for (int i : ops) {
    const eg::TbeOp kind = eg::TbeOf(w.ops(i).name());
    if (kind.pass == eg::TbePass::kForward) open.push_back(i);
    if (kind.pass != eg::TbePass::kBackward) continue;
    // The gradient's rows are the forward's batch: B = (offsets - 1) / T.
    const std::vector<const proto::Tensor*> grad = Tensors(w, w.ops(i).inputs());
    auto batch_of = [&](const proto::Op& f) -> int64_t {
      if (f.inputs_size() <= 12) return -1;
      const proto::Tensor* woff = TensorOf(w, f.inputs(5));
      const proto::Tensor* off = TensorOf(w, f.inputs(12));
      return woff && off && woff->numel() > 0 ? (off->numel() - 1) / woff->numel() : -1;
    };
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      const proto::Op& f = w.ops(*it);
      if (eg::TbeOf(f.name()).optimizer != kind.optimizer) continue;
      if (!grad.empty() && grad[0]->shape_size() == 2 && batch_of(f) >= 0 &&
          batch_of(f) != grad[0]->shape(0))
        continue;
      partner[i] = *it, partner[*it] = i;
      open.erase(std::next(it).base());
      break;
    }
  }
  return partner;
}

OpCost CollectiveCost(const proto::Op& op, const proto::Platform& p, int64_t ranks) {
  OpCost cost;
  cost.model = "collective";
  cost.bound = bound::kBytes;
  // What eg read from the trace (eg/collective.h): the type and nccl-tests' size S.
  const proto::Collective& c = op.collective();
  const std::string coll = eg::CollectiveTypeName(c.type());
  const double s = static_cast<double>(eg::CollectiveBytes(c));
  cost.bytes = s;
  double alpha_us = IsGpu(p) ? 10.0 : 20.0;
  double bus = 0;
  const proto::CollectiveParams* best = nullptr;
  for (const proto::CollectiveParams& cp : p.collectives())
    if (cp.collective() == coll && (!best || std::llabs(cp.ranks() - ranks) < std::llabs(best->ranks() - ranks))) best = &cp;
  if (best) {
    alpha_us = best->alpha_us();
    bus = best->bus_bytes_per_s();
  } else {
    const double link = ranks > 8 && p.inter_node_bytes_per_s() > 0 ? p.inter_node_bytes_per_s() : p.gpu_gpu_bytes_per_s();
    bus = link > 0 ? 0.8 * link : 0.5 * p.memory_bandwidth_bytes_per_s();
  }
  const double factor = c.type() == proto::Collective::BARRIER ? 0 : eg::BusBandwidthFactor(c.type(), ranks);
  cost.compute_us = alpha_us + (ranks > 1 ? s * factor / bus * 1e6 : 0);
  return cost;
}

namespace {

int64_t IntAt(const proto::Op& op, int i, int64_t fallback) {
  return i < op.inputs_size() && op.inputs(i).kind_case() == proto::Value::kIntValue ? op.inputs(i).int_value() : fallback;
}

std::vector<int64_t> Shape(const proto::Tensor* t) { return {t->shape().begin(), t->shape().end()}; }

// A product of recorded sizes as an int64, 0 when it does not fit (then no shape is read).
int64_t ToInt(double v) { return v >= 1 && v < 9e18 ? static_cast<int64_t>(v) : 0; }

}  // namespace

namespace {

// The precision an op computed in: its operand's, or its first output's where that is a
// narrower float. Autocast casts inside the op: the trace records aten::linear's and
// aten::conv2d's fp32 operands and their bf16 result, and the kernel ran in bf16.
std::string ComputeDtype(const proto::Workload& w, const proto::Op& op,
                         const proto::Tensor* operand) {
  const std::vector<const proto::Tensor*> out = Tensors(w, op.outputs());
  const auto is_float = [](proto::DType d) {
    return d == proto::FLOAT32 || d == proto::FLOAT16 || d == proto::BFLOAT16 ||
           d == proto::FLOAT8_E4M3FN || d == proto::FLOAT8_E5M2;
  };
  if (!out.empty() && is_float(out[0]->dtype()) && is_float(operand->dtype()) &&
      out[0]->itemsize() > 0 && out[0]->itemsize() < operand->itemsize())
    return std::string(DtypeKey(out[0]->dtype()));
  return std::string(DtypeKey(operand->dtype()));
}

// Where aten::linear's (input, weight) pair starts among its recorded input tensors: the
// weight is [n, k], k the input's last dimension. A trace may record more tensors than the
// schema's three (hta's sampled_rank0 records other tensors before them: [[2048, 160, 606],
// [2048, 3906], [2048, 3906], [2048, 512], [3906, 512], [3906]]); then the last pair that fits.
size_t LinearOperands(const std::vector<const proto::Tensor*>& in) {
  auto fits = [&](size_t i) {
    const proto::Tensor* x = in[i];
    const proto::Tensor* wt = in[i + 1];
    return x->shape_size() >= 1 && wt->shape_size() == 2 && Dim(x, -1) == wt->shape(1);
  };
  if (in.size() <= 3 || fits(0)) return 0;
  for (size_t i = in.size() - 2; i > 0; --i)
    if (fits(i)) return i;
  return 0;
}

}  // namespace

bool GemmShapeOf(const proto::Workload& w, const proto::Op& op, GemmShape* out) {
  const std::string_view name = BaseName(op.name());
  if (eg::ClassOf(op.name()) != OpClass::kGemm || name == "aten::einsum" || IsRnnLayer(name))
    return false;
  const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  const bool has_bias = name == "aten::addmm" || name == "aten::baddbmm" || name == "aten::addmv" ||
                        name == "aten::_addmm_activation";
  const size_t foreign = name == "aten::linear" ? LinearOperands(in) : 0;
  const size_t a_i = has_bias ? 1 : foreign;
  if (in.size() < a_i + 2) return false;
  const proto::Tensor* a = in[a_i];
  const proto::Tensor* b = in[a_i + 1];
  if (a->shape_size() == 0 || b->shape_size() == 0) return false;
  GemmShape g;
  if (name == "aten::linear") {
    g.k = Dim(a, -1);
    g.m = ToInt(Prod(a, 0, a->shape_size() - 1));
    g.n = Dim(b, 0);
  } else if (a->shape_size() >= 3 || (name == "aten::matmul" && b->shape_size() >= 3)) {
    if (b->shape_size() <= 2) {  // (..., m, k) . (k, n): one big GEMM
      g.m = ToInt(Prod(a, 0, a->shape_size() - 1));
    } else {
      g.batch = ToInt(std::max(Prod(a, 0, a->shape_size() - 2), Prod(b, 0, b->shape_size() - 2)));
      g.m = a->shape_size() >= 2 ? Dim(a, -2) : 1;
    }
    g.k = Dim(a, -1);
    g.n = b->shape_size() >= 2 ? Dim(b, -1) : 1;
  } else {
    g.m = a->shape_size() >= 2 ? Dim(a, 0) : 1;
    g.k = Dim(a, -1);
    g.n = b->shape_size() >= 2 ? Dim(b, -1) : 1;
  }
  g.dtype = ComputeDtype(w, op, a);
  g.foreign_inputs = foreign;
  if (g.batch <= 0 || g.m <= 0 || g.n <= 0 || g.k <= 0) return false;
  *out = g;
  return true;
}

bool IsChannelsLast(const proto::Tensor& t) {
  const int r = t.shape_size();
  if ((r != 4 && r != 5) || t.strides_size() != r || t.shape(1) <= 1) return false;
  return t.strides(1) == 1 && t.strides(r - 1) == t.shape(1);
}

bool ConvShapeOf(const proto::Workload& w, const proto::Op& op, ConvShape* out) {
  const std::string_view name = BaseName(op.name());
  const bool backward = name == "aten::convolution_backward";
  const bool transpose_op = name == "aten::conv_transpose1d" || name == "aten::conv_transpose2d" ||
                            name == "aten::conv_transpose3d";
  // Argument positions of stride, padding, dilation, groups and the transposed flag (-1: none)
  // in each schema.
  int s = 3, p = 4, d = 5, g = 8, t = 6;
  if (name == "aten::conv1d" || name == "aten::conv2d" || name == "aten::conv3d")
    g = 6, t = -1;
  else if (transpose_op)
    g = 6, d = 7, t = -1;
  else if (backward)
    s = 4, p = 5, d = 6, g = 9, t = 7;
  else if (name != "aten::convolution" && name != "aten::_convolution") return false;
  const bool transposed = transpose_op || (t >= 0 && t < op.inputs_size() &&
                                           op.inputs(t).kind_case() == proto::Value::kBoolValue &&
                                           op.inputs(t).bool_value());
  const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  if (in.size() < (backward ? 3u : 2u)) return false;
  const proto::Tensor* x = backward ? in[1] : in[0];
  const proto::Tensor* wt = backward ? in[2] : in[1];
  if (wt->shape_size() < 3 || x->shape_size() != wt->shape_size()) return false;
  ConvShape c;
  c.input = Shape(x), c.weight = Shape(wt);
  const size_t spatial = c.weight.size() - 2;
  c.stride = IntList(op, s), c.padding = IntList(op, p), c.dilation = IntList(op, d);
  c.groups = IntAt(op, g, 1);
  auto fill = [&](std::vector<int64_t>& v, int64_t dflt) {
    if (v.size() == 1) v.assign(spatial, v[0]);
    if (v.size() != spatial) v.assign(spatial, dflt);
  };
  fill(c.stride, 1), fill(c.padding, 0), fill(c.dilation, 1);
  for (size_t i = 0; i < spatial; ++i)
    if (c.stride[i] <= 0 || c.padding[i] < 0 || c.dilation[i] <= 0) return false;
  // A transposed convolution's weight is (C_in, C_out / groups, ...): its groups are the recorded
  // ones.
  if (transposed)
    c.groups = std::max<int64_t>(c.groups, 1);
  else if (c.groups <= 0 || c.input[1] != c.weight[1] * c.groups)
    c.groups = std::max<int64_t>(1, c.input[1] / std::max<int64_t>(c.weight[1], 1));
  c.transposed = transposed;
  c.backward = backward;
  if (backward) {
    // output_mask, the last bool list: grad_input, grad_weight, grad_bias.
    c.passes = 2;
    const proto::Value& last = op.inputs(op.inputs_size() - 1);
    if (last.kind_case() == proto::Value::kList && last.list().items_size() >= 2) {
      c.input_grad = last.list().items(0).bool_value();
      c.passes = (c.input_grad ? 1 : 0) + (last.list().items(1).bool_value() ? 1 : 0);
    }
    if (c.passes == 0) return false;
  }
  c.dtype = ComputeDtype(w, op, x);
  c.channels_last = IsChannelsLast(*x);
  *out = c;
  return true;
}

double MaxPoolVisits(const PoolDim& d, bool backward) {
  constexpr int64_t kLargestDim = int64_t{1} << 20;  // no real map; an untrusted trace's
  if (d.kernel < 1 || d.stride < 1 || d.pad < 0 || d.dilation < 1 || d.size > kLargestDim ||
      d.out > kLargestDim || d.kernel > kLargestDim || d.stride > kLargestDim ||
      d.pad > kLargestDim || d.dilation > kLargestDim)
    return 0;
  const int64_t span = (d.kernel - 1) * d.dilation + 1;
  double total = 0;
  if (!backward) {
    for (int64_t o = 0; o < d.out; ++o) {  // max_pool_forward_nhwc's clipped window
      int64_t start = o * d.stride - d.pad;
      const int64_t end = std::min(start + span, d.size);
      while (start < 0) start += d.dilation;
      total += static_cast<double>(std::max<int64_t>(end - start, 0));
    }
    return total;
  }
  for (int64_t i = 0; i < d.size; ++i) {  // max_pool_backward_nhwc's p_start and p_end
    const int64_t start = i + d.pad < span ? 0 : (i + d.pad - span) / d.stride + 1;
    const int64_t end = std::min((i + d.pad) / d.stride + 1, d.out);
    total += static_cast<double>(std::max<int64_t>(end - start, 0));
  }
  return total;
}

double EmbeddingBagSteps(double bags, double dim, double lookups, int64_t sm_count) {
  constexpr double kGridWarps = 1024 * 8;  // the launch's blocks x warps per block
  constexpr double kWarpsPerSm = 64;       // resident warps per SM: Volta, Ampere, Hopper
  const double chunks_per_bag = std::ceil(dim / 32);
  double warps = std::min(bags * chunks_per_bag, kGridWarps);
  if (sm_count > 0) warps = std::min(warps, kWarpsPerSm * static_cast<double>(sm_count));
  return warps >= 1 ? lookups * chunks_per_bag / warps : 0;
}

namespace {

// ATen's block dimension from a dim of `n`: its last_pow2 (the largest power of two not above
// n, 1 below 2) where n is below `cap`, else `cap` (a power of two).
int64_t Pow2Below(int64_t n, int64_t cap) {
  if (n >= cap) return cap;
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

ColumnReduceLaunch ColumnReduceLaunchOf(int64_t rows, int64_t cols, int64_t sm_count) {
  ColumnReduceLaunch l;
  if (rows < 1 || cols < 1) return l;
  // Each thread writes `vec` adjacent outputs (output_vec_size); a block holds 512 / vec threads,
  // its width over the outputs, its height over the rows.
  const int64_t vec = cols % 4 == 0 ? 4 : cols % 2 == 0 ? 2 : 1;
  const int64_t max_threads = 512 / vec, dim0 = cols / vec;
  auto pow2 = [&](int64_t n) { return Pow2Below(n, max_threads); };
  int64_t width = std::min<int64_t>(pow2(dim0), 32);
  const int64_t height = std::min(pow2(rows), max_threads / width);
  width = std::min(pow2(dim0), max_threads / height);
  l.threads_per_block = width * height;
  // The block's rows share one output's inputs where that leaves each thread 16 or more (else
  // each row of threads takes outputs of its own).
  int64_t values = rows, outputs_per_block = width;
  const bool split_rows = values >= height * 16 || values >= 256;
  if (split_rows)
    values = CeilDiv(values, height);
  else
    outputs_per_block *= height;
  l.grid_x = CeilDiv(dim0, outputs_per_block);
  // Still 256 or more a thread, and few outputs: the rows split over blocks, 16 values a thread,
  // at most as many blocks as the SMs hold at once (2,048 threads an SM).
  if (split_rows && values >= 256 && cols <= 4096) {
    int64_t ctas = CeilDiv(values, 16);
    if (sm_count > 0)
      ctas = std::min(ctas, CeilDiv(sm_count * (2048 / l.threads_per_block), l.grid_x));
    l.ctas_per_output = std::clamp<int64_t>(ctas, 1, 65535);
    values = CeilDiv(values, l.ctas_per_output);
    if (l.ctas_per_output > 1) l.serial_partials = CeilDiv(l.ctas_per_output, height);
  }
  l.values_per_thread = values;
  return l;
}

ImplicitGemm ImplicitGemmOf(const ConvShape& c) {
  ImplicitGemm g;
  double out_pixels = 1, in_pixels = 1, kernel = 1;
  for (size_t i = 0; i + 2 < c.weight.size(); ++i) {
    const int64_t eff_k = c.dilation[i] * (c.weight[i + 2] - 1) + 1;
    const int64_t o = (c.input[i + 2] + 2 * c.padding[i] - eff_k) / c.stride[i] + 1;
    out_pixels *= static_cast<double>(std::max<int64_t>(o, 1));
    in_pixels *= static_cast<double>(std::max<int64_t>(c.input[i + 2], 1));
    kernel *= static_cast<double>(c.weight[i + 2]);
  }
  // A transposed convolution scatters every input pixel through the kernel: the GEMM of the
  // convolution whose data gradient it is, one row per input pixel.
  g.m = static_cast<double>(c.input[0]) * (c.transposed ? in_pixels : out_pixels);
  g.n = static_cast<double>(c.weight[0]);
  g.k = static_cast<double>(c.weight[1]) * kernel;
  return g;
}

std::string PlainConvPassOf(const ConvShape& c) {
  return !c.backward ? "forward" : c.input_grad ? "backward" : "backward_weight";
}

std::string ConvPassOf(const ConvShape& c) {
  const bool strided =
      std::any_of(c.stride.begin(), c.stride.end(), [](int64_t s) { return s > 1; });
  return (c.transposed ? "transposed_" : strided ? "strided_" : "") + PlainConvPassOf(c);
}

bool EmbeddingShapeOf(const proto::Workload& w, const proto::Op& op, EmbeddingShape* out) {
  const std::string_view name = BaseName(op.name());
  if (name != "aten::embedding_bag" && name != "aten::_embedding_bag" && name != "aten::_embedding_bag_forward_only")
    return false;
  const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  if (in.size() < 3 || in[0]->shape_size() != 2 || in[1]->shape_size() != 1 || in[2]->shape_size() != 1) return false;
  EmbeddingShape e;
  e.num_weights = in[0]->shape(0), e.dim = in[0]->shape(1);
  e.lookups = in[1]->shape(0), e.bags = in[2]->shape(0);
  e.dtype = std::string(DtypeKey(in[0]->dtype()));
  if (e.num_weights <= 0 || e.dim <= 0 || e.lookups <= 0 || e.bags <= 0) return false;
  *out = e;
  return true;
}

namespace {

// Where `x` falls among the sorted distinct `values`: the two values around it and its
// fraction between them in log space. Below the smallest, the smallest (small ops cost their
// fixed part); above the largest, the last two, extrapolated.
struct Bracket {
  double lo, hi, t;
};
Bracket BracketOf(const std::vector<double>& values, double x) {
  if (values.size() == 1 || x <= values.front()) return {values.front(), values.front(), 0};
  size_t i = 1;
  while (i + 1 < values.size() && values[i] < x) ++i;
  const double lo = values[i - 1], hi = values[i];
  return {lo, hi, std::log(x / lo) / std::log(hi / lo)};
}

}  // namespace

namespace {

using IndexGrid = std::map<std::array<double, 3>, double>;  // (L, D, R) -> value

// The index_ops points of `kind`, hot or cold, by (L, D, R): their times.
IndexGrid IndexTimes(const proto::Platform& p, std::string_view kind, bool cold) {
  IndexGrid time;
  for (const proto::IndexPoint& pt : p.index_ops())
    if (pt.kind() == kind && pt.cold() == cold)
      time[{static_cast<double>(pt.indices()), static_cast<double>(pt.row_width()),
            static_cast<double>(pt.rows())}] = pt.time_us();
  return time;
}

// `grid`'s value at `x`: trilinear in log value over log L, log D, log R (`extrapolate`: past
// the grid's last values along the last two, else held at the edge); where the grid has no full
// cell around `x`, the nearest point's, times `scale(x, nearest)`.
double LogTrilinear(const IndexGrid& grid, const std::array<double, 3>& x, bool extrapolate,
                    double (*scale)(const std::array<double, 3>&, const std::array<double, 3>&)) {
  if (auto it = grid.find(x); it != grid.end()) return it->second;
  Bracket b[3];
  for (int a = 0; a < 3; ++a) {
    std::vector<double> axis;
    for (const auto& [key, v] : grid) axis.push_back(key[a]);
    std::sort(axis.begin(), axis.end());
    axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
    b[a] = BracketOf(axis, x[a]);
    if (!extrapolate) b[a].t = std::clamp(b[a].t, 0.0, 1.0);
  }
  double log_v = 0;
  for (int corner = 0; corner < 8; ++corner) {
    std::array<double, 3> key;
    double weight = 1;
    for (int a = 0; a < 3; ++a) {
      const bool high = (corner >> a) & 1;
      key[a] = high ? b[a].hi : b[a].lo;
      weight *= high ? b[a].t : 1 - b[a].t;
    }
    if (weight == 0) continue;
    auto it = grid.find(key);
    if (it == grid.end()) {  // not a full grid around x (extra points only)
      auto nearest = grid.begin();
      double best = 1e300;
      for (auto t = grid.begin(); t != grid.end(); ++t) {
        double d2 = 0;
        for (int a = 0; a < 3; ++a) d2 += std::pow(std::log2(x[a] / t->first[a]), 2);
        if (d2 < best) best = d2, nearest = t;
      }
      return nearest->second * scale(x, nearest->first);
    }
    log_v += weight * std::log(it->second);
  }
  return std::exp(log_v);
}

// The elements an index op moves, (L + R) x D, at `x` over at `k`.
double ElementsMoved(const std::array<double, 3>& x, const std::array<double, 3>& k) {
  return ((x[0] + x[2]) * x[1]) / ((k[0] + k[2]) * k[1]);
}
double Unscaled(const std::array<double, 3>&, const std::array<double, 3>&) { return 1; }

std::array<double, 3> GridKey(const IndexShape& s) {
  return {static_cast<double>(s.indices), static_cast<double>(s.row_width),
          static_cast<double>(s.rows)};
}

// The kind `kind` is priced at on `p`: itself, or for an in-place kind ("index_add_") the
// platform did not measure, its out-of-place twin, whose time holds a copy of the tensor more
// (platforms calibrated before the in-place kinds were).
std::string_view MeasuredIndexKind(const proto::Platform& p, std::string_view kind) {
  if (!kind.ends_with('_')) return kind;
  for (const proto::IndexPoint& pt : p.index_ops())
    if (pt.kind() == kind) return kind;
  return kind.substr(0, kind.size() - 1);
}

}  // namespace

double IndexOpUs(const proto::Platform& p, const IndexShape& s) {
  const IndexGrid time = IndexTimes(p, MeasuredIndexKind(p, s.kind), /*cold=*/false);
  return time.empty() ? -1 : LogTrilinear(time, GridKey(s), /*extrapolate=*/true, ElementsMoved);
}

double IndexColdSlowdown(const proto::Platform& p, const IndexShape& s) {
  const std::string_view kind = MeasuredIndexKind(p, s.kind);
  const IndexGrid hot = IndexTimes(p, kind, false), cold = IndexTimes(p, kind, true);
  IndexGrid ratio;  // cold over hot where both were measured
  for (const auto& [key, us] : cold)
    if (auto it = hot.find(key); it != hot.end() && it->second > 0)
      ratio[key] = std::max(1.0, us / it->second);
  return ratio.empty()
             ? 1
             : std::max(1.0, LogTrilinear(ratio, GridKey(s), /*extrapolate=*/false, Unscaled));
}

namespace {

// The tensor an index op's argument `v` holds: the tensor, or a list's first (aten::index's
// indices).
const proto::Tensor* FirstTensorOf(const proto::Workload& w, const proto::Value& v) {
  if (const proto::Tensor* t = TensorOf(w, v)) return t;
  if (v.kind_case() != proto::Value::kList) return nullptr;
  for (const proto::Value& item : v.list().items())
    if (const proto::Tensor* t = TensorOf(w, item)) return t;
  return nullptr;
}

}  // namespace

bool IndexShapeOf(const proto::Workload& w, const proto::Op& op, IndexShape* out) {
  const eg::IndexOp* r = eg::IndexOpOf(op.name());
  if (r == nullptr || r->index >= op.inputs_size() || r->table >= op.inputs_size()) return false;
  if (r->accumulate_arg >= 0 && !BoolArg(op, r->accumulate_arg)) return false;
  if (BoolArg(op, r->sparse_arg)) return false;
  const proto::Tensor* table = r->table >= 0
                                   ? TensorOf(w, op.inputs(r->table))
                                   : (op.outputs_size() > 0 ? TensorOf(w, op.outputs(0)) : nullptr);
  const proto::Tensor* index = FirstTensorOf(w, op.inputs(r->index));
  if (table == nullptr || index == nullptr || table->shape_size() < 1 || index->shape_size() < 1)
    return false;
  IndexShape s;
  s.kind = std::string(r->kind);
  s.rows = table->shape(0);
  const double index_elems = Prod(index, 0, index->shape_size());
  s.indices = r->per_element ? index->shape(0) : static_cast<int64_t>(index_elems);
  s.row_width = r->per_element
                    ? static_cast<int64_t>(index_elems / std::max<int64_t>(index->shape(0), 1))
                    : static_cast<int64_t>(Prod(table, 1, table->shape_size()));
  s.dtype = std::string(DtypeKey(table->dtype()));
  if (s.rows <= 0 || s.indices <= 0 || s.row_width <= 0) return false;
  *out = s;
  return true;
}

bool AttentionShapeOf(const proto::Workload& w, const proto::Op& op, AttentionShape* out) {
  if (eg::ClassOf(op.name()) != OpClass::kAttention || op.name().find("backward") != std::string::npos) return false;
  const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  if (in.size() < 3 || in[0]->shape_size() != 4 || in[1]->shape_size() != 4 || in[2]->shape_size() != 4) return false;
  AttentionShape a;
  a.query = Shape(in[0]), a.key = Shape(in[1]), a.value = Shape(in[2]);
  a.dtype = std::string(DtypeKey(in[0]->dtype()));
  *out = a;
  return true;
}

double RnnFlops(const RnnShape& r) {
  return (r.backward ? 2.0 : 1.0) * 2.0 * static_cast<double>(r.steps) * static_cast<double>(r.batch) *
         static_cast<double>(r.gates_hidden) * static_cast<double>(r.input + r.hidden);
}

bool RnnShapeOf(const proto::Workload& w, const proto::Op& op, RnnShape* out) {
  const std::string_view name = BaseName(op.name());
  if (!IsRnnLayer(name)) return false;
  // (input, weight_ih, weight_hh, ...): input steps x batch x features.
  const std::vector<const proto::Tensor*> in = Tensors(w, op.inputs());
  if (in.size() < 3 || in[0]->shape_size() != 3 || in[1]->shape_size() != 2 ||
      in[2]->shape_size() != 2)
    return false;
  RnnShape r;
  r.steps = Dim(in[0], 0), r.batch = Dim(in[0], 1), r.input = Dim(in[0], 2);
  r.gates_hidden = Dim(in[1], 0), r.hidden = Dim(in[2], 1);
  r.backward = name == "aten::mkldnn_rnn_layer_backward";
  r.dtype = std::string(DtypeKey(in[0]->dtype()));
  if (r.steps <= 0 || r.batch <= 0 || r.input <= 0 || r.gates_hidden <= 0 || r.hidden <= 0)
    return false;
  *out = r;
  return true;
}

WorkloadShapes ShapesOf(const proto::Workload& w) {
  WorkloadShapes out;
  for (const proto::Op& op : w.ops()) {
    EmbeddingShape e;
    if (EmbeddingShapeOf(w, op, &e) && std::find(out.embeddings.begin(), out.embeddings.end(), e) == out.embeddings.end())
      out.embeddings.push_back(e);
    AttentionShape a;
    if (AttentionShapeOf(w, op, &a) && std::find(out.attentions.begin(), out.attentions.end(), a) == out.attentions.end())
      out.attentions.push_back(a);
    std::vector<GemmShape> gemms(1);
    if (!GemmShapeOf(w, op, &gemms[0])) gemms.clear();
    if (RnnShape r; RnnShapeOf(w, op, &r)) {
      if (std::find(out.rnns.begin(), out.rnns.end(), r) == out.rnns.end()) out.rnns.push_back(r);
      // And the GEMMs it runs, for platforms priced without an RNN table: input-to-hidden and
      // one step's hidden-to-hidden.
      gemms = {{1, r.steps * r.batch, r.gates_hidden, r.input, r.dtype},
               {1, r.batch, r.gates_hidden, r.hidden, r.dtype}};
    }
    for (const GemmShape& g : gemms)
      if (std::find(out.gemms.begin(), out.gemms.end(), g) == out.gemms.end())
        out.gemms.push_back(g);
    ConvShape c;
    if (ConvShapeOf(w, op, &c) && std::find(out.convs.begin(), out.convs.end(), c) == out.convs.end()) out.convs.push_back(c);
    IndexShape x;
    if (IndexShapeOf(w, op, &x) &&
        std::find(out.indexes.begin(), out.indexes.end(), x) == out.indexes.end())
      out.indexes.push_back(x);
  }
  return out;
}

}  // namespace mimic::model
