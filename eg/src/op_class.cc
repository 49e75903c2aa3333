#include "mimic/eg/op_class.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>
#include <vector>

namespace mimic::eg {
namespace {

struct ClassRecord {
  OpClass op_class;
  std::string_view name;
  // Base names (namespace::name, no overload) that belong to the class.
  std::initializer_list<std::string_view> ops;
};

// First match wins; unlisted aten ops are elementwise if they are pointwise math, else other.
// oneDNN's recurrent layers (nn.LSTM and nn.GRU on the CPU) are gemm: their time is GEMMs.
// A table: runs of names a line, as they read.
// clang-format off
const ClassRecord kClasses[] = {
    {OpClass::kGemm, "gemm",
     {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
      "aten::addmv", "aten::mv", "aten::dot", "aten::_addmm_activation", "aten::einsum",
      "aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward"}},
    {OpClass::kConv, "conv",
     {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
      "aten::convolution_backward", "aten::mkldnn_convolution", "aten::cudnn_convolution",
      "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
      "aten::_convolution_double_backward"}},
    {OpClass::kAttention, "attention",
     {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
      "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
      "aten::_scaled_dot_product_flash_attention_for_cpu",
      "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
      "aten::_scaled_dot_product_flash_attention_backward",
      "aten::_scaled_dot_product_efficient_attention_backward", "aten::_flash_attention_forward",
      "aten::_flash_attention_backward", "aten::_efficient_attention_forward",
      "aten::_efficient_attention_backward"}},
    {OpClass::kEmbedding, "embedding",
     {"aten::embedding", "aten::embedding_bag", "aten::_embedding_bag",
      "aten::_embedding_bag_forward_only", "aten::embedding_backward",
      "aten::embedding_dense_backward", "aten::_embedding_bag_backward",
      "aten::_embedding_bag_dense_backward", "aten::_embedding_bag_sparse_backward",
      "aten::index_select", "aten::gather", "aten::scatter_add", "aten::scatter_add_",
      "aten::index_add_", "aten::index_add", "aten::index_put_", "aten::index_put",
      "aten::_index_put_impl_", "aten::index", "aten::_coalesce"}},
    {OpClass::kReductionNorm, "reduction_norm",
     {"aten::sum", "aten::mean", "aten::max", "aten::min", "aten::amax", "aten::amin",
      "aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax",
      "aten::_softmax_backward_data", "aten::_log_softmax_backward_data", "aten::layer_norm",
      "aten::native_layer_norm", "aten::native_layer_norm_backward", "aten::batch_norm",
      "aten::native_batch_norm", "aten::native_batch_norm_backward", "aten::_batch_norm_impl_index",
      "aten::_batch_norm_impl_index_backward", "aten::group_norm", "aten::native_group_norm",
      "aten::native_group_norm_backward", "aten::rms_norm", "aten::_fused_rms_norm", "aten::norm",
      "aten::linalg_vector_norm", "aten::var", "aten::std", "aten::var_mean", "aten::cumsum",
      "aten::nll_loss", "aten::nll_loss_forward", "aten::nll_loss_backward", "aten::nll_loss_nd",
      "aten::cross_entropy_loss", "aten::max_pool2d", "aten::max_pool2d_with_indices",
      "aten::max_pool2d_with_indices_backward", "aten::avg_pool2d", "aten::avg_pool2d_backward",
      "aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d",
      "aten::_adaptive_avg_pool2d_backward", "aten::binary_cross_entropy",
      "aten::binary_cross_entropy_backward", "aten::binary_cross_entropy_with_logits",
      "aten::mse_loss", "aten::argmax", "aten::topk", "aten::sort", "aten::_foreach_norm"}},
    {OpClass::kMemcpy, "memcpy",
     {"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous",
      "aten::cat", "aten::stack", "aten::_local_scalar_dense", "aten::item"}},
};
// clang-format on

// Positions are those of the schemas in LibTorch's native_functions.yaml.
const IndexOp kIndexOps[] = {
    {"aten::index_select", "index_select", 0, 2},
    {"aten::embedding", "index_select", 0, 1},  // the CPU kernel is weight.index_select(0, ...)
    {"aten::index", "index", 0, 1},
    {"aten::gather", "gather", 0, 2, true},
    {"aten::scatter_add", "scatter_add", 0, 2, true},
    {"aten::scatter_add_", "scatter_add_", 0, 2, true},
    {"aten::index_add", "index_add", 0, 2},
    {"aten::index_add_", "index_add_", 0, 2},
    {"aten::index_put_", "index_put_accumulate", 0, 1, false, 3},
    {"aten::index_put", "index_put_accumulate", 0, 1, false, 3},
    {"aten::_index_put_impl_", "index_put_accumulate", 0, 1, false, 3},
    {"aten::embedding_backward", "embedding_dense_backward", -1, 1, false, -1, 5},
    {"aten::embedding_dense_backward", "embedding_dense_backward", -1, 1},
    {"aten::_embedding_bag_backward", "embedding_bag_backward", -1, 1, false, -1, 9},
    {"aten::_embedding_bag_dense_backward", "embedding_bag_backward", -1, 1},
};

// Pointwise math that is elementwise whatever its name says in detail.
constexpr std::array<std::string_view, 48> kElementwise = {
    "aten::add", "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_", "aten::div",
    "aten::div_", "aten::relu", "aten::relu_", "aten::gelu", "aten::gelu_backward",
    "aten::threshold_backward", "aten::sigmoid", "aten::sigmoid_backward", "aten::tanh",
    "aten::tanh_backward", "aten::silu", "aten::silu_backward", "aten::exp", "aten::log",
    "aten::sqrt", "aten::rsqrt", "aten::pow", "aten::neg", "aten::abs", "aten::clamp",
    "aten::clamp_min", "aten::where", "aten::masked_fill", "aten::masked_fill_", "aten::fill_",
    "aten::zero_", "aten::dropout", "aten::native_dropout", "aten::native_dropout_backward",
    "aten::bernoulli_", "aten::addcmul_", "aten::addcdiv_", "aten::lerp_", "aten::uniform_",
    "aten::normal_", "aten::_foreach_add_", "aten::_foreach_mul_", "aten::_foreach_addcmul_",
    "aten::_foreach_addcdiv_", "aten::_foreach_lerp_", "aten::_foreach_sqrt"};

// cuDNN and MIOpen kernels run on NVIDIA and AMD GPUs only, oneDNN's convolution on CPUs only;
// pinning host memory needs a CUDA driver. Argument positions are those of the schemas in
// LibTorch's native_functions.yaml.
constexpr std::string_view kNativeBatchNorm =
    "aten::native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)";
constexpr std::string_view kNativeBatchNormBackward =
    "aten::native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor? "
    "running_mean, Tensor? running_var, Tensor? save_mean, Tensor? save_invstd, bool train, "
    "float eps, bool[3] output_mask) -> (Tensor, Tensor, Tensor)";
constexpr std::string_view kConvolution =
    "aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] "
    "padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> "
    "Tensor";
constexpr std::string_view kGridSampler =
    "aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
    "bool align_corners) -> Tensor";
constexpr std::string_view kGridSamplerBackward =
    "aten::grid_sampler_2d_backward(Tensor grad_output, Tensor input, Tensor grid, int "
    "interpolation_mode, int padding_mode, bool align_corners, bool[2] output_mask) -> (Tensor, "
    "Tensor)";
constexpr std::string_view kClone =
    "aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor";

const PortableEquivalent kPortable[] = {
    // (input, weight, bias, running_mean, running_var, training, factor, eps) -> (out,
    // save_mean, save_var, reserve): the reserve is cuDNN's own.
    {"aten::cudnn_batch_norm",
     "aten::native_batch_norm",
     kNativeBatchNorm,
     {"0", "1", "2", "3", "4", "5", "6", "7"},
     {0, 1, 2},
     false,
     true},
    {"aten::miopen_batch_norm",
     "aten::native_batch_norm",
     kNativeBatchNorm,
     {"0", "1", "2", "3", "4", "5", "6", "7"},
     {0, 1, 2},
     false,
     false},
    // (input, grad_output, weight, running_mean, running_var, save_mean, save_var, eps[,
    // reserve]): run in training mode, every gradient asked for.
    {"aten::cudnn_batch_norm_backward",
     "aten::native_batch_norm_backward",
     kNativeBatchNormBackward,
     {"1", "0", "2", "3", "4", "5", "6", "true", "7", "true*3"},
     {0, 1, 2},
     false,
     true},
    {"aten::miopen_batch_norm_backward",
     "aten::native_batch_norm_backward",
     kNativeBatchNormBackward,
     {"1", "0", "2", "3", "4", "5", "6", "true", "7", "true*3"},
     {0, 1, 2},
     false,
     false},
    // (self, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    {"aten::cudnn_convolution",
     "aten::convolution",
     kConvolution,
     {"0", "1", "none", "3", "2", "4", "false", "zeros:3", "5"},
     {0},
     false,
     true},
    // (self, weight, padding, output_padding, stride, dilation, groups, ...)
    {"aten::cudnn_convolution_transpose",
     "aten::convolution",
     kConvolution,
     {"0", "1", "none", "4", "2", "5", "true", "3", "6"},
     {0},
     false,
     true},
    // (self, weight, bias, padding, stride, dilation, groups[, benchmark, deterministic])
    {"aten::miopen_convolution",
     "aten::convolution",
     kConvolution,
     {"0", "1", "2", "4", "3", "5", "false", "zeros:4", "6"},
     {0},
     false,
     false},
    {"aten::miopen_depthwise_convolution",
     "aten::convolution",
     kConvolution,
     {"0", "1", "2", "4", "3", "5", "false", "zeros:4", "6"},
     {0},
     false,
     false},
    {"aten::mkldnn_convolution",
     "aten::convolution",
     kConvolution,
     {"0", "1", "2", "4", "3", "5", "false", "zeros:4", "6"},
     {0},
     true,
     false},
    // (self, weight, bias, padding, output_padding, stride, dilation, groups, ...)
    {"aten::miopen_convolution_transpose",
     "aten::convolution",
     kConvolution,
     {"0", "1", "2", "5", "3", "6", "true", "4", "7"},
     {0},
     false,
     false},
    // cuDNN samples bilinearly, pads with zeros and aligns corners, nothing else.
    {"aten::cudnn_grid_sampler",
     "aten::grid_sampler_2d",
     kGridSampler,
     {"0", "1", "int:0", "int:0", "true"},
     {0},
     false,
     true},
    {"aten::cudnn_grid_sampler_backward",
     "aten::grid_sampler_2d_backward",
     kGridSamplerBackward,
     {"2", "0", "1", "int:0", "int:0", "true", "true*2"},
     {0, 1},
     false,
     true},
    {"aten::cudnn_affine_grid_generator",
     "aten::affine_grid_generator",
     "aten::affine_grid_generator(Tensor theta, SymInt[] size, bool align_corners) -> Tensor",
     {"0", "list:1,2,3,4", "true"},
     {0},
     false,
     true},
    // cuDNN's fused attention backward (what SDPA runs on Hopper in bf16): (grad_out, q, k, v,
    // out, logsumexp, philox_seed, philox_offset, attn_bias, cum_seq_q, cum_seq_k, max_q,
    // max_k, dropout_p, is_causal, scale). cuDNN's logsumexp is (B, H, L, 1), contiguous: the
    // memory of the (B, H, L) the CPU kernel reads.
    {"aten::_scaled_dot_product_cudnn_attention_backward",
     "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
     "aten::_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, "
     "Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, "
     "Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor "
     "grad_value)",
     {"0", "1", "2", "3", "4", "5", "13", "14", "none", "15"},
     {0, 1, 2},
     false,
     true},
    // A copy into pinned host memory: a copy into host memory where no driver pins it.
    {"aten::_pin_memory", "aten::clone", kClone, {"0", "none"}, {0}, false, true},
    {"aten::pin_memory", "aten::clone", kClone, {"0", "none"}, {0}, false, true},
};

// InputDomainsOf's records: an operator (without overload) and its inputs that need a domain.
struct DomainRecord {
  std::string_view op;
  std::array<InputDomain, 2> inputs;
  size_t count;
};
constexpr DomainRecord kDomains[] = {
    {"aten::sqrt", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::sqrt_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::rsqrt", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::rsqrt_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::log", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::log_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::log2", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::log2_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::log10", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::log10_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::_foreach_sqrt", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::_foreach_sqrt_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::_foreach_log", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::_foreach_log_", {{{0, ValueDomain::kNonNegative}}}, 1},
    {"aten::binary_cross_entropy",
     {{{0, ValueDomain::kUnitInterval}, {1, ValueDomain::kUnitInterval}}},
     2},
    {"aten::binary_cross_entropy_backward",
     {{{1, ValueDomain::kUnitInterval}, {2, ValueDomain::kUnitInterval}}},
     2},
    {"aten::binary_cross_entropy_with_logits", {{{1, ValueDomain::kUnitInterval}}}, 1},
    {"aten::bernoulli", {{{0, ValueDomain::kUnitInterval}}}, 1},
    {"aten::multinomial", {{{0, ValueDomain::kNonNegative}}}, 1},
};

// ShapeOnlyInput's operators and the input each reads for its shape alone. Not the random fills
// (uniform_, normal_, bernoulli_): calibrate measures them as the dropout kind, by the bytes of
// an input read and an output written.
struct ShapeOnly {
  std::string_view op;
  int input;
};
constexpr ShapeOnly kShapeOnly[] = {{"aten::nll_loss_backward", 1},
                                    {"aten::nll_loss2d_backward", 1},
                                    {"aten::fill_", 0},
                                    {"aten::zero_", 0},
                                    {"aten::zeros_like", 0},
                                    {"aten::ones_like", 0},
                                    {"aten::full_like", 0},
                                    {"aten::new_zeros", 0},
                                    {"aten::new_ones", 0},
                                    {"aten::new_full", 0}};

// DecomposesEverywhere's operators (CompositeImplicitAutograd in ATen's native_functions.yaml).
constexpr std::string_view kDecomposesEverywhere[] = {"aten::cross_entropy_loss",
                                                      "aten::nll_loss_nd"};

// KeepsSign's operators.
constexpr std::string_view kKeepSign[] = {"aten::add",
                                          "aten::add_",
                                          "aten::mul",
                                          "aten::mul_",
                                          "aten::div",
                                          "aten::div_",
                                          "aten::sub",
                                          "aten::sub_",
                                          "aten::addcmul",
                                          "aten::addcmul_",
                                          "aten::lerp",
                                          "aten::lerp_",
                                          "aten::clone",
                                          "aten::copy_",
                                          "aten::contiguous",
                                          "aten::detach",
                                          "aten::to",
                                          "aten::_to_copy",
                                          "aten::view",
                                          "aten::reshape",
                                          "aten::_reshape_alias",
                                          "aten::as_strided",
                                          "aten::expand",
                                          "aten::select",
                                          "aten::slice",
                                          "aten::squeeze",
                                          "aten::unsqueeze",
                                          "aten::t",
                                          "aten::transpose",
                                          "aten::permute",
                                          "aten::sparse_mask",
                                          "aten::_values",
                                          "aten::values",
                                          "aten::coalesce",
                                          "aten::_coalesce",
                                          "aten::index_select",
                                          "aten::sum",
                                          "aten::mean",
                                          "aten::_foreach_add",
                                          "aten::_foreach_add_",
                                          "aten::_foreach_mul",
                                          "aten::_foreach_mul_",
                                          "aten::_foreach_div",
                                          "aten::_foreach_div_",
                                          "aten::_foreach_addcmul",
                                          "aten::_foreach_addcmul_",
                                          "aten::_foreach_lerp_",
                                          "aten::maximum",
                                          "aten::max"};

// TimeDependsOnValues' operators: on this project's CPU host each takes at least 1.7x its time
// on a uniform fill when its input holds zeros or subnormals (bench/fidelity/sqrt_values.py
// --ops measures them: sqrt and pow 7x on zeros, 35x on subnormals; log 11x on either; rsqrt,
// exp, division and reciprocal 1.7-1.9x on subnormals alone). The fused optimizers' steps
// (_fused_adam_ and the like) are not measured yet.
constexpr std::string_view kTimeDependsOnValues[] = {"aten::sqrt",
                                                     "aten::sqrt_",
                                                     "aten::_foreach_sqrt",
                                                     "aten::_foreach_sqrt_",
                                                     "aten::rsqrt",
                                                     "aten::rsqrt_",
                                                     "aten::_foreach_rsqrt",
                                                     "aten::_foreach_rsqrt_",
                                                     "aten::pow",
                                                     "aten::pow_",
                                                     "aten::_foreach_pow",
                                                     "aten::_foreach_pow_",
                                                     "aten::log",
                                                     "aten::log_",
                                                     "aten::_foreach_log",
                                                     "aten::_foreach_log_",
                                                     "aten::exp",
                                                     "aten::exp_",
                                                     "aten::_foreach_exp",
                                                     "aten::_foreach_exp_",
                                                     "aten::div",
                                                     "aten::div_",
                                                     "aten::_foreach_div",
                                                     "aten::_foreach_div_",
                                                     "aten::addcdiv",
                                                     "aten::addcdiv_",
                                                     "aten::_foreach_addcdiv",
                                                     "aten::_foreach_addcdiv_",
                                                     "aten::reciprocal",
                                                     "aten::reciprocal_",
                                                     "aten::_foreach_reciprocal",
                                                     "aten::_foreach_reciprocal_"};

// ChangesViewMetadata's operators.
constexpr std::string_view kChangeViewMetadata[] = {"aten::resize_",
                                                    "aten::resize_as_",
                                                    "aten::set_",
                                                    "aten::as_strided_",
                                                    "aten::t_",
                                                    "aten::transpose_",
                                                    "aten::swapdims_",
                                                    "aten::swapaxes_",
                                                    "aten::squeeze_",
                                                    "aten::unsqueeze_",
                                                    "aten::_resize_output_",
                                                    "aten::detach_"};

std::string_view BaseName(std::string_view name) {
  const size_t ns = name.find("::");
  const size_t dot = name.find('.', ns == std::string_view::npos ? 0 : ns + 2);
  return name.substr(0, dot);
}

}  // namespace

OpClass ClassOf(std::string_view op_name) {
  if (const PortableEquivalent* e = PortableOf(op_name)) op_name = e->portable;
  const std::string_view name = BaseName(op_name);
  if (name == "record_param_comms" || name.substr(0, 6) == "c10d::" || name.substr(0, 5) == "nccl:")
    return OpClass::kCollective;
  if (TbeOf(name).pass != TbePass::kNone) return OpClass::kEmbedding;
  for (const ClassRecord& r : kClasses)
    for (std::string_view op : r.ops)
      if (op == name) return r.op_class;
  for (std::string_view op : kElementwise)
    if (op == name) return OpClass::kElementwise;
  return OpClass::kOther;
}

const IndexOp* IndexOpOf(std::string_view op_name) {
  const std::string_view name = BaseName(op_name);
  for (const IndexOp& r : kIndexOps)
    if (r.op == name) return &r;
  return nullptr;
}

bool HasDataDependentShape(std::string_view op_name) {
  static constexpr std::string_view kOps[] = {"aten::nonzero",
                                              "aten::argwhere",
                                              "aten::masked_select",
                                              "aten::unique_dim",
                                              "aten::_unique",
                                              "aten::_unique2",
                                              "aten::unique_consecutive",
                                              "aten::unique_dim_consecutive",
                                              "aten::bincount",
                                              "aten::repeat_interleave",
                                              "aten::nonzero_numpy",
                                              "aten::where"};
  const std::string_view name = BaseName(op_name);
  for (std::string_view op : kOps)
    if (op == name) return true;
  return false;
}

std::span<const InputDomain> InputDomainsOf(std::string_view op_name) {
  const std::string_view name = BaseName(op_name);
  for (const DomainRecord& r : kDomains)
    if (r.op == name) return {r.inputs.data(), r.count};
  return {};
}

namespace {

// Whether `op_name`, overload dropped, is one of `table`'s operators.
template <size_t N>
bool Listed(const std::string_view (&table)[N], std::string_view op_name) {
  return std::find(std::begin(table), std::end(table), BaseName(op_name)) != std::end(table);
}

}  // namespace

bool KeepsSign(std::string_view op_name) { return Listed(kKeepSign, op_name); }

int ShapeOnlyInput(std::string_view op_name) {
  const std::string_view base = BaseName(op_name);
  for (const ShapeOnly& s : kShapeOnly)
    if (s.op == base) return s.input;
  return -1;
}

bool DecomposesEverywhere(std::string_view op_name) {
  return Listed(kDecomposesEverywhere, op_name);
}

bool TimeDependsOnValues(std::string_view op_name) { return Listed(kTimeDependsOnValues, op_name); }

std::string_view ValueDependentKind(std::string_view op_name) {
  if (!TimeDependsOnValues(op_name)) return {};
  std::string_view kind = BaseName(op_name);  // listed ops are all aten::
  kind.remove_prefix(kind.find("::") + 2);
  if (kind.starts_with("_foreach_")) kind.remove_prefix(9);
  if (kind.ends_with('_')) kind.remove_suffix(1);
  return kind;
}

bool ChangesViewMetadata(std::string_view op_name) { return Listed(kChangeViewMetadata, op_name); }

std::string_view OpClassName(OpClass c) {
  for (const ClassRecord& r : kClasses)
    if (r.op_class == c) return r.name;
  switch (c) {
    case OpClass::kCollective: return "collective";
    case OpClass::kElementwise: return "elementwise";
    default: return "other";
  }
}

TbeOp TbeOf(std::string_view op_name) {
  // fbgemm_gpu's generated lookup functions, one per optimizer, and their autograd nodes.
  struct Pattern {
    std::string_view prefix, suffix;
    TbePass pass;
  };
  static constexpr Pattern kPatterns[] = {
      {"fbgemm::split_embedding_codegen_lookup_", "_function", TbePass::kForward},
      {"torch::autograd::CppNode<SplitLookupFunction_", "_Op>", TbePass::kBackward},
  };
  for (const Pattern& p : kPatterns) {
    if (op_name.size() <= p.prefix.size() + p.suffix.size() ||
        op_name.substr(0, p.prefix.size()) != p.prefix ||
        op_name.substr(op_name.size() - p.suffix.size()) != p.suffix)
      continue;
    return {p.pass,
            op_name.substr(p.prefix.size(), op_name.size() - p.prefix.size() - p.suffix.size())};
  }
  return {};
}

DeviceCopy DeviceCopyOf(std::string_view event_name) {
  struct Name {
    std::string_view text;
    CopyRoute route;
  };
  static constexpr Name kRoutes[] = {{"Memcpy HtoD", CopyRoute::kHostToDevice},
                                     {"Memcpy DtoH", CopyRoute::kDeviceToHost},
                                     {"Memcpy DtoD", CopyRoute::kDeviceToDevice},
                                     {"Memcpy PtoP", CopyRoute::kPeer},
                                     {"CopyHostToDevice", CopyRoute::kHostToDevice},
                                     {"CopyDeviceToHost", CopyRoute::kDeviceToHost},
                                     {"CopyDeviceToDevice", CopyRoute::kDeviceToDevice}};
  DeviceCopy c;
  for (const Name& n : kRoutes)
    if (event_name.substr(0, n.text.size()) == n.text) c.route = n.route;
  if (c.route == CopyRoute::kHostToDevice || c.route == CopyRoute::kDeviceToHost) {
    if (event_name.find("Pinned") != std::string_view::npos) c.host = HostMemory::kPinned;
    if (event_name.find("Pageable") != std::string_view::npos) c.host = HostMemory::kPageable;
  }
  return c;
}

bool IsCommunicationKernel(std::string_view event_name) {
  return event_name.starts_with("nccl") || event_name.starts_with("rccl");
}

bool IsTf32Kernel(std::string_view event_name) {
  auto has = [&](std::string_view part) { return event_name.find(part) != std::string_view::npos; };
  if (has("tf32")) return true;
  if (has("f16") || has("fp16") || has("half") || has("int8") || has("fp8")) return false;
  return has("s1688");
}

bool LaunchedTf32Kernel(const proto::Op& op) {
  return std::any_of(op.kernels().begin(), op.kernels().end(),
                     [](const proto::Kernel& k) { return IsTf32Kernel(k.name()); });
}

int KernelArchitecture(std::string_view event_name) {
  constexpr std::pair<std::string_view, int> kFamilies[] = {
      {"volta_", 70}, {"turing_", 75}, {"ampere_", 80}, {"hopper_", 90}};
  int newest = 0;
  for (const auto& [prefix, arch] : kFamilies)
    if (event_name.find(prefix) != std::string_view::npos) newest = std::max(newest, arch);
  // "sm" or "cutlass_" right before two or three digits and an underscore.
  for (std::string_view mark : {"sm", "cutlass_"}) {
    for (size_t at = event_name.find(mark); at != std::string_view::npos;
         at = event_name.find(mark, at + 1)) {
      size_t end = at + mark.size();
      int arch = 0;
      while (end < event_name.size() && end - at - mark.size() < 3 &&
             std::isdigit(static_cast<unsigned char>(event_name[end])))
        arch = arch * 10 + (event_name[end++] - '0');
      const size_t digits = end - at - mark.size();
      if (digits >= 2 && end < event_name.size() && event_name[end] == '_')
        newest = std::max(newest, arch);
    }
  }
  return newest;
}

bool ParseOpClass(std::string_view name, OpClass* out) {
  for (OpClass c : {OpClass::kGemm, OpClass::kConv, OpClass::kAttention, OpClass::kEmbedding,
                    OpClass::kReductionNorm, OpClass::kMemcpy, OpClass::kCollective,
                    OpClass::kElementwise, OpClass::kOther}) {
    if (OpClassName(c) == name) {
      *out = c;
      return true;
    }
  }
  return false;
}

}  // namespace mimic::eg

namespace mimic::eg {
namespace {

bool ParseInt(std::string_view s, int64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// The index of `s` in `list`, added when absent.
int Intern(google::protobuf::RepeatedPtrField<std::string>* list, std::string_view s) {
  for (int k = 0; k < list->size(); ++k)
    if (list->Get(k) == s) return k;
  list->Add(std::string(s));
  return list->size() - 1;
}

proto::Value Typed(proto::Workload* w, std::string_view type) {
  proto::Value v;
  v.set_type(w ? Intern(w->mutable_types(), type) : 0);
  return v;
}

// A list of `n` values that `item` fills in.
template <typename Fill>
proto::Value ListOf(proto::Workload* w, std::string_view item_type, int64_t n, Fill item) {
  std::string type = "GenericList[";
  for (int64_t k = 0; k < n; ++k) type += std::string(k ? "," : "") + std::string(item_type);
  proto::Value v = Typed(w, type + "]");
  for (int64_t k = 0; k < n; ++k) {
    proto::Value* it = v.mutable_list()->add_items();
    *it = Typed(w, item_type);
    item(k, it);
  }
  return v;
}

// The value one argument spec of a PortableEquivalent names; false when the op lacks it.
bool ArgValue(std::string_view spec, const proto::Op& op, proto::Workload* w, proto::Value* out) {
  int64_t n = 0;
  auto after = [&](std::string_view prefix) {
    return spec.substr(0, prefix.size()) == prefix ? spec.substr(prefix.size())
                                                   : std::string_view();
  };
  auto input = [&](int64_t k) -> const proto::Value* {
    return k >= 0 && k < op.inputs_size() ? &op.inputs(static_cast<int>(k)) : nullptr;
  };
  if (ParseInt(spec, &n)) {
    if (!input(n)) return false;
    *out = *input(n);
  } else if (spec == "none") {
    *out = Typed(w, "None");
    out->set_none(true);
  } else if (spec == "true" || spec == "false") {
    *out = Typed(w, "Bool");
    out->set_bool_value(spec == "true");
  } else if (ParseInt(after("int:"), &n)) {
    *out = Typed(w, "Int");
    out->set_int_value(n);
  } else if (ParseInt(after("true*"), &n)) {
    *out = ListOf(w, "Bool", n, [](int64_t, proto::Value* v) { v->set_bool_value(true); });
  } else if (ParseInt(after("zeros:"), &n)) {
    const proto::Value* like = input(n);
    if (!like) return false;
    const int64_t len = like->kind_case() == proto::Value::kList ? like->list().items_size() : 1;
    *out = ListOf(w, "Int", len, [](int64_t, proto::Value* v) { v->set_int_value(0); });
  } else if (std::string_view items = after("list:"); !items.empty()) {
    std::vector<const proto::Value*> parts;
    for (size_t pos = 0; pos <= items.size();) {
      const size_t comma = std::min(items.find(',', pos), items.size());
      if (!ParseInt(items.substr(pos, comma - pos), &n) || !input(n)) return false;
      parts.push_back(input(n));
      pos = comma + 1;
    }
    *out = ListOf(w, "Int", static_cast<int64_t>(parts.size()),
                  [&](int64_t k, proto::Value* v) { *v = *parts[k]; });
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::span<const PortableEquivalent> PortableEquivalents() { return kPortable; }

const PortableEquivalent* PortableOf(std::string_view op_name) {
  const std::string_view name = BaseName(op_name);
  for (const PortableEquivalent& e : kPortable)
    if (e.vendor == name) return &e;
  return nullptr;
}

bool OutputShapeIsTheDevices(std::string_view op_name, int output) {
  static constexpr std::string_view kEmbeddingBags[] = {
      "aten::embedding_bag", "aten::_embedding_bag", "aten::_embedding_bag_forward_only"};
  return output >= 1 && output <= 3 && Listed(kEmbeddingBags, op_name);
}

std::string_view TargetOf(std::string_view device) {
  return device.substr(0, 4) == "cuda" ? "cuda" : "cpu";
}

bool VendorOpRunsOn(const PortableEquivalent& e, std::string_view target) {
  return TargetOf(target) == "cuda" ? e.on_cuda : e.on_cpu;
}

bool RewriteAsPortable(const PortableEquivalent& e, proto::Op* op, proto::Workload* w) {
  std::vector<proto::Value> args(e.args.size());
  size_t k = 0;
  for (std::string_view spec : e.args)
    if (!ArgValue(spec, *op, w, &args[k++])) return false;
  std::vector<proto::Value> outs;
  for (int i : e.outputs)
    if (i < op->outputs_size()) outs.push_back(op->outputs(i));
  op->set_name(std::string(e.portable));
  op->clear_inputs();
  for (proto::Value& v : args) *op->add_inputs() = std::move(v);
  op->clear_outputs();
  for (proto::Value& v : outs) *op->add_outputs() = std::move(v);
  return true;
}

bool NeedsPortable(const proto::Workload& w, std::string_view target) {
  for (const proto::Op& op : w.ops())
    if (const PortableEquivalent* e = PortableOf(op.name()); e && !VendorOpRunsOn(*e, target))
      return true;
  return false;
}

PortableRewrites MakePortable(proto::Workload* w, std::string_view target) {
  PortableRewrites done;
  for (int i = 0; i < w->ops_size(); ++i) {
    proto::Op* op = w->mutable_ops(i);
    const PortableEquivalent* e = PortableOf(op->name());
    if (!e || VendorOpRunsOn(*e, target) || !RewriteAsPortable(*e, op, w)) continue;
    op->set_schema(Intern(w->mutable_schemas(), e->schema));
    ++done[std::string(e->vendor)];
  }
  return done;
}

proto::Transformation PortableTransformation(const PortableRewrites& rewrites,
                                             std::string_view target) {
  proto::Transformation t;
  t.set_name("portable");
  (*t.mutable_params())["target"] = std::string(TargetOf(target));
  std::string summary;
  int64_t total = 0;
  for (const auto& [vendor, n] : rewrites) {
    const std::string_view portable = PortableOf(vendor)->portable;
    (*t.mutable_params())[vendor] = std::string(portable);
    summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + vendor + " -> " +
               std::string(portable);
    total += n;
  }
  t.set_summary("rewrote " + std::to_string(total) + " vendor ops as portable ATen ops" +
                (summary.empty() ? "" : ": " + summary));
  return t;
}

}  // namespace mimic::eg
