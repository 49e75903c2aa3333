#include "mimic/eg/op_class.h"

#include <array>

namespace mimic::eg {
namespace {

struct ClassRecord {
  OpClass op_class;
  std::string_view name;
  // Base names (namespace::name, no overload) that belong to the class.
  std::initializer_list<std::string_view> ops;
};

// First match wins; unlisted aten ops are elementwise if they are pointwise math, else other.
const ClassRecord kClasses[] = {
    {OpClass::kGemm, "gemm",
     {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
      "aten::addmv", "aten::mv", "aten::dot", "aten::_addmm_activation", "aten::einsum"}},
    {OpClass::kConv, "conv",
     {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
      "aten::convolution_backward", "aten::mkldnn_convolution", "aten::cudnn_convolution",
      "aten::conv_transpose2d", "aten::_convolution_double_backward"}},
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
      "aten::index_add_", "aten::index_put_", "aten::_index_put_impl_", "aten::index"}},
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
      "aten::_adaptive_avg_pool2d_backward", "aten::binary_cross_entropy_with_logits",
      "aten::mse_loss", "aten::argmax", "aten::topk", "aten::sort", "aten::_foreach_norm"}},
    {OpClass::kMemcpy, "memcpy",
     {"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous",
      "aten::cat", "aten::stack", "aten::_local_scalar_dense", "aten::item"}},
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

std::string_view BaseName(std::string_view name) {
  const size_t ns = name.find("::");
  const size_t dot = name.find('.', ns == std::string_view::npos ? 0 : ns + 2);
  return name.substr(0, dot);
}

}  // namespace

OpClass ClassOf(std::string_view op_name) {
  const std::string_view name = BaseName(op_name);
  if (name == "record_param_comms" || name.substr(0, 6) == "c10d::" || name.substr(0, 5) == "nccl:")
    return OpClass::kCollective;
  for (const ClassRecord& r : kClasses)
    for (std::string_view op : r.ops)
      if (op == name) return r.op_class;
  for (std::string_view op : kElementwise)
    if (op == name) return OpClass::kElementwise;
  return OpClass::kOther;
}

std::string_view OpClassName(OpClass c) {
  for (const ClassRecord& r : kClasses)
    if (r.op_class == c) return r.name;
  switch (c) {
    case OpClass::kCollective: return "collective";
    case OpClass::kElementwise: return "elementwise";
    default: return "other";
  }
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
