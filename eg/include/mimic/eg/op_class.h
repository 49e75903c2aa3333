// Operator classes (GEMM, convolution, attention, ...), by table: one record per class with
// the operator names that belong to it. Used to filter workloads and to report per class.
// Immutable data; thread-safe.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "proto/workload.pb.h"

namespace mimic::eg {

enum class OpClass {
  kGemm,
  kConv,
  kAttention,
  kEmbedding,
  kReductionNorm,
  kMemcpy,
  kCollective,
  kElementwise,
  kOther,
};

// The class of an operator by its name ("aten::addmm" -> kGemm). A vendor op with a portable
// equivalent (PortableOf) is of its equivalent's class.
OpClass ClassOf(std::string_view op_name);
// Whether an operator's outputs have shapes that depend on its inputs' values (nonzero,
// masked_select, unique, bincount, repeat_interleave by a tensor, one-argument where): on other
// values it makes other shapes, which the ops recorded after it cannot take.
bool HasDataDependentShape(std::string_view op_name);
// Where an operator needs an input's values to lie, where that is not everywhere: sqrt and log
// are defined on non-negative inputs, binary cross entropy on probabilities and targets in
// [0, 1]. Fed values outside, they compute NaNs (which some CPUs produce far more slowly: sqrt of
// negatives 9x on this project's AMD host) or refuse; in a real job these inputs (Adam's
// exp_avg_sq, variances, probabilities, targets) are in the domain, and a replay fills them so.
enum class ValueDomain : uint8_t { kNonNegative, kUnitInterval };
struct InputDomain {
  int arg;  // the argument's position in the op's inputs
  ValueDomain domain;
};
// The inputs of `op_name` that need a domain; empty for most operators.
std::span<const InputDomain> InputDomainsOf(std::string_view op_name);
// Whether an operator's output keeps the sign its inputs have (sums, products, views, copies,
// sparse masks): where the output must be non-negative, so must the inputs. pow, exp, abs, ...
// make their own sign and are not among them.
bool KeepsSign(std::string_view op_name);
// The input an operator reads only for its shape, or only writes, or -1: nll_loss_backward's
// `self` (its gradient is written in that shape, zeros but at the targets), zeros_like's and
// new_zeros' `self`, the tensor fill_ and zero_ overwrite. Its bytes are written, not read.
int ShapeOnlyInput(std::string_view op_name);
// Whether an operator is a composite that every backend runs as the same ops, and whose
// intermediates its own arguments do not show: cross_entropy_loss runs log_softmax, which
// writes a tensor the size of its input, then nll_loss. The ops recorded under it say what it
// costs; its inputs and its scalar output do not.
bool DecomposesEverywhere(std::string_view op_name);
// Whether an operator's time on a CPU depends on the values it reads, not only on their number:
// sqrt, pow, log, exp, division and their foreach forms run several times slower on zeros or
// subnormals. A replay fills the state it prepares for one with the shares of zeros and
// subnormals the capture's value profile saw (Op.input_values).
bool TimeDependsOnValues(std::string_view op_name);
// The op such an operator computes, by which its time's dependence on values is measured
// (calibrate's value_slowdown): its name without the namespace, _foreach_ or a trailing '_'
// ("aten::_foreach_sqrt_" -> "sqrt"); "" for an operator whose time does not depend on them.
std::string_view ValueDependentKind(std::string_view op_name);
// Whether an operator changes its input view's own metadata (shape, strides, storage:
// resize_, set_, transpose_, ...), so that a view shared by other uses must not reach it.
bool ChangesViewMetadata(std::string_view op_name);
// "gemm", "conv", "attention", "embedding", "reduction_norm", "memcpy", "collective",
// "elementwise", "other".
std::string_view OpClassName(OpClass c);
// The class named `name`; false when there is none.
bool ParseOpClass(std::string_view name, OpClass* out);

// fbgemm's table-batched embedding (TBE) lookups, which run their own kernels: the forward op
// (`fbgemm::split_embedding_codegen_lookup_<optimizer>_function`) and the backward its C++
// autograd node runs (`torch::autograd::CppNode<SplitLookupFunction_<optimizer>_Op>`, which
// also applies the optimizer). Both are of class embedding.
enum class TbePass { kNone, kForward, kBackward };
struct TbeOp {
  TbePass pass = TbePass::kNone;
  std::string_view optimizer;  // "rowwise_adagrad", "sgd", ... (a view into the name)
};
// What `op_name` is among the TBE ops; pass kNone for any other op.
TbeOp TbeOf(std::string_view op_name);

// Index- and scatter-style ops, which read or accumulate rows chosen by an index tensor: the
// kind `mimic calibrate` measures each as (Platform.index_ops) and where its tensors are. The
// model reads L (rows looked up or accumulated), D (elements per row) and R (rows of the table
// read or of the tensor written) from them: R = the table's first dimension; D = the table's
// other dimensions (per_element: the index's); L = the index's elements (per_element: its
// first dimension). Kinds: "index_select" (index_select, embedding), "index" (advanced
// indexing), "gather", "scatter_add", "index_add" (out of place: a copy of the tensor, then the
// accumulation), "scatter_add_", "index_add_" (in place), "index_put_accumulate",
// "embedding_dense_backward" (embedding_backward too), "embedding_bag_backward". Calibrate
// measures one more kind that no op here is: "sparse_add_", a dense tensor plus a sparse one
// of L rows (the model's price for add_ with a sparse operand).
struct IndexOp {
  std::string_view op;  // base name, "aten::index_select"
  std::string_view kind;
  int table;                 // the input holding the rows; -1: the first output
  int index;                 // the input holding the indices (a tensor, or a list's first)
  bool per_element = false;  // gather/scatter: the index has the shape of the rows moved
  int accumulate_arg = -1;   // a bool input that must be true for this kind (index_put_)
  // A bool input that, where true, makes a backward return its gradient as a sparse tensor
  // (embedding's `sparse=True`): the gradient's rows and the indices become its values and
  // indices, and nothing is accumulated into a table. The op is then not of this kind.
  int sparse_arg = -1;
};
// The record of `op_name` (overload ignored); nullptr for any other op. Where accumulate_arg
// or sparse_arg is set, whether the op is of that kind depends on the argument (the caller
// reads it).
const IndexOp* IndexOpOf(std::string_view op_name);

// A host<->device or device copy, as the profiler names its device event (CUPTI: "Memcpy HtoD
// (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)", "Memcpy DtoD (Device -> Device)",
// "Memcpy PtoP (Device -> Device)"; roctracer: "CopyHostToDevice", ...). The route and the
// kind of host memory are facts of the recorded trace.
enum class CopyRoute { kNone, kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeer };
enum class HostMemory { kUnknown, kPinned, kPageable };
struct DeviceCopy {
  CopyRoute route = CopyRoute::kNone;
  HostMemory host = HostMemory::kUnknown;
};
// The copy a device event named `event_name` made; route kNone when it is not a copy.
DeviceCopy DeviceCopyOf(std::string_view event_name);
// Whether a device event named `event_name` is a collective library's kernel (NCCL's
// "ncclDevKernel_AllReduce_...", "ncclKernel_..."; RCCL's): communication, wherever it was
// launched from.
bool IsCommunicationKernel(std::string_view event_name);
// Whether a device kernel named `event_name` multiplies fp32 operands on tensor cores in TF32:
// cuBLAS's and cuDNN's "..._tf32f32_..." kernels, CUTLASS's single-precision "s1688" ones
// ("cutlass_80_tensorop_s1688gemm_*"). The half-precision kernels that share the "s1688" tile
// ("cutlass_75_tensorop_bf16_s1688gemm_bf16_*") are not.
bool IsTf32Kernel(std::string_view event_name);
// Whether any device kernel `op` launched itself is a TF32 one (IsTf32Kernel).
bool LaunchedTf32Kernel(const proto::Op& op);
// The GPU architecture a device kernel's name says it was built for, as sm_XY's XY ("sm80_*",
// "nvjet_sm90_*", "cutlass_80_*", "cutlass3x_sm90_*"; 70 for "volta_*", 75 "turing_*", 80
// "ampere_*"); 0 when it names none. A GPU also runs kernels built for older ones (the H200
// samples run cutlass_75_* beside sm90_* kernels), so a trace's newest bounds its GPU from below.
int KernelArchitecture(std::string_view event_name);

// A device-specific ("vendor") operator and the portable ATen operator that computes the same
// from the same tensors: cuDNN, MIOpen and oneDNN kernels, pinned-memory copies. One record per
// vendor op, read by replay (rewritten before planning where the target lacks a kernel for
// it), by the model (priced as its equivalent) and by synth (--portable, Chakra names).
struct PortableEquivalent {
  std::string_view vendor;    // "aten::cudnn_batch_norm"
  std::string_view portable;  // "aten::native_batch_norm"
  std::string_view schema;    // the portable op's schema, as an ET records one
  // Per argument of the portable schema, where its value comes from: "3" the vendor op's input
  // 3; "none", "true", "false"; "int:N" the integer N; "zeros:K" a list of as many zeros as
  // input K holds items; "true*N" a list of N trues; "list:A,B,..." the inputs A, B, ... as a
  // list.
  std::initializer_list<std::string_view> args;
  std::initializer_list<int> outputs;  // the vendor outputs the portable op produces, in order
  bool on_cpu = false;                 // the vendor op has a kernel there: left alone
  bool on_cuda = false;
};

// Every record, for tests and listings.
std::span<const PortableEquivalent> PortableEquivalents();
// The record of a vendor op (overload and all: "aten::cudnn_convolution.default"); nullptr for
// any other op.
const PortableEquivalent* PortableOf(std::string_view op_name);
// Whether output `output` of `op_name` has a shape each device's kernel chooses for itself:
// embedding_bag's offset2bag, bag_size and max_indices are empty from one device's kernel and
// full from another's, for the same inputs. A replay on another device does not compare them.
bool OutputShapeIsTheDevices(std::string_view op_name, int output);
// The target a device string names: "cuda" for "cuda" and "cuda:N", "cpu" for anything else.
std::string_view TargetOf(std::string_view device);
// Whether the vendor op has a kernel on `target` ("cpu", "cuda").
bool VendorOpRunsOn(const PortableEquivalent& e, std::string_view target);
// Rewrites `op` as its portable equivalent `e` computes it: name, inputs and outputs mapped
// (the schema index is the caller's). Constants take `w`'s type strings when `w` is given.
// False when the op's recorded inputs do not fit the record (too few); `op` is then unchanged.
bool RewriteAsPortable(const PortableEquivalent& e, proto::Op* op, proto::Workload* w = nullptr);

// What MakePortable did: vendor op name -> ops rewritten.
using PortableRewrites = std::map<std::string, int64_t>;
// Rewrites every op of `w` that has a portable equivalent and no kernel on `target` ("cpu",
// "cuda"), adding the portable schemas to w. Ops whose inputs do not fit are left as they are.
PortableRewrites MakePortable(proto::Workload* w, std::string_view target);
// Whether MakePortable would rewrite any op of `w` (no copy needed when not).
bool NeedsPortable(const proto::Workload& w, std::string_view target);
// The transformation record of `rewrites` ("portable", params vendor -> portable and count).
proto::Transformation PortableTransformation(const PortableRewrites& rewrites,
                                             std::string_view target);

}  // namespace mimic::eg
