#include "meta_kernels.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <mutex>
#include <optional>
#include <vector>

namespace mimic::synth {
namespace {

// Output shapes of the ops LibTorch's C++ gives no meta kernel (PyTorch registers theirs in
// Python: torch/_meta_registrations.py, torch/_decomp), as those registrations give them. Each
// takes its schema's arguments off the stack and leaves its outputs. Layouts are left
// contiguous: the propagation lays each output out as the trace recorded it.

using Stack = torch::jit::Stack;

std::vector<int64_t> Ints(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  if (v.isList())
    for (const c10::IValue& item : v.toListRef())
      out.push_back(item.isInt() ? item.toInt() : item.toSymInt().expect_int());
  return out;
}

at::Tensor EmptyLike(const at::Tensor& like, c10::IntArrayRef sizes) {
  return at::empty(sizes, like.options());
}

std::optional<at::Tensor> Defined(const c10::IValue& v) {
  if (v.isTensor() && v.toTensor().defined()) return v.toTensor();
  return std::nullopt;
}

std::vector<bool> Mask(const c10::IValue& v) {
  std::vector<bool> out;
  for (const c10::IValue& item : v.toListRef()) out.push_back(item.toBool());
  return out;
}

// The op's arguments, the last of the stack: as many as its schema has.
std::vector<c10::IValue> Args(const c10::OperatorHandle& op, const Stack* stack) {
  const auto args = torch::jit::last(*stack, op.schema().arguments().size());
  return std::vector<c10::IValue>(args.begin(), args.end());  // not {}: IValue takes a pointer
}

// Replaces the stack's `args` arguments with `outputs`.
void Return(Stack* stack, size_t args, std::vector<c10::IValue> outputs) {
  torch::jit::drop(*stack, args);
  for (c10::IValue& v : outputs) stack->push_back(std::move(v));
}

// convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups): each spatial size as the convolution (or its transpose) computes it.
void Convolution(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor input = args[0].toTensor(), weight = args[1].toTensor();
  const std::vector<int64_t> stride = Ints(args[3]), padding = Ints(args[4]),
                             dilation = Ints(args[5]), output_padding = Ints(args[7]);
  const bool transposed = args[6].toBool();
  const int64_t groups = args[8].toInt();
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t dflt) {
    return v.empty() ? dflt : v[std::min(i, v.size() - 1)];
  };
  std::vector<int64_t> shape = {input.size(0),
                                transposed ? weight.size(1) * groups : weight.size(0)};
  for (int64_t d = 2; d < input.dim(); ++d) {
    const size_t i = static_cast<size_t>(d - 2);
    const int64_t in = input.size(d), k = weight.size(d), s = at(stride, i, 1),
                  p = at(padding, i, 0), dil = at(dilation, i, 1);
    shape.push_back(transposed ? (in - 1) * s - 2 * p + dil * (k - 1) + at(output_padding, i, 0) + 1
                               : (in + 2 * p - dil * (k - 1) - 1) / s + 1);
  }
  if (input.size(1) == 0) shape[1] = 0;
  Return(stack, args.size(), {EmptyLike(input, shape)});
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
// transposed, output_padding, groups, output_mask): the gradients of input, weight and bias.
void ConvolutionBackward(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor grad = args[0].toTensor(), input = args[1].toTensor(),
                   weight = args[2].toTensor();
  const std::vector<bool> mask = Mask(args[10]);
  std::vector<c10::IValue> out(3, c10::IValue(at::Tensor()));
  if (mask[0]) out[0] = EmptyLike(grad, input.sizes());
  if (mask[1]) out[1] = EmptyLike(grad, weight.sizes());
  if (mask[2])
    out[2] =
        EmptyLike(grad, args[3].isNone() ? std::vector<int64_t>{weight.size(0)} : Ints(args[3]));
  Return(stack, args.size(), std::move(out));
}

// native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
// the output and, in training, the channels' saved mean and inverse deviation.
void NativeBatchNorm(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor input = args[0].toTensor();
  const std::optional<at::Tensor> weight = Defined(args[1]);
  const at::Tensor& stats_like = weight ? *weight : input;
  const int64_t channels = args[5].toBool() && input.dim() > 1 ? input.size(1) : 0;
  Return(stack, args.size(),
         {EmptyLike(input, input.sizes()), EmptyLike(stats_like, {channels}),
          EmptyLike(stats_like, {channels})});
}

// native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
// save_invstd, train, eps, output_mask): the gradients of input, weight and bias.
void NativeBatchNormBackward(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor grad = args[0].toTensor(), input = args[1].toTensor();
  const std::optional<at::Tensor> weight = Defined(args[2]);
  const at::Tensor& param_like = weight ? *weight : input;
  const std::vector<bool> mask = Mask(args[9]);
  const int64_t channels = input.dim() > 1 ? input.size(1) : 1;
  std::vector<c10::IValue> out(3, c10::IValue(at::Tensor()));
  if (mask[0]) out[0] = EmptyLike(grad, input.sizes());
  if (mask[1]) out[1] = EmptyLike(param_like, {channels});
  if (mask[2]) out[2] = EmptyLike(param_like, {channels});
  Return(stack, args.size(), std::move(out));
}

// native_layer_norm(input, normalized_shape, weight, bias, eps): the output, and the mean and
// inverse deviation of each row: the leading dimensions, then a 1 for each normalized one.
void NativeLayerNorm(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor input = args[0].toTensor();
  const int64_t normalized = static_cast<int64_t>(Ints(args[1]).size());
  std::vector<int64_t> stats(input.sizes().begin(), input.sizes().end());
  for (int64_t d = std::max<int64_t>(input.dim() - normalized, 0); d < input.dim(); ++d)
    stats[d] = 1;
  const c10::TensorOptions stats_options = input.options().dtype(
      at::isReducedFloatingType(input.scalar_type()) ? at::kFloat : input.scalar_type());
  Return(stack, args.size(),
         {EmptyLike(input, input.sizes()), at::empty(stats, stats_options),
          at::empty(stats, stats_options)});
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
// output_mask): the gradients of input, weight and bias.
void NativeLayerNormBackward(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor grad = args[0].toTensor(), input = args[1].toTensor();
  const std::optional<at::Tensor> weight = Defined(args[5]), bias = Defined(args[6]);
  const std::vector<bool> mask = Mask(args[7]);
  std::vector<c10::IValue> out(3, c10::IValue(at::Tensor()));
  if (mask[0]) out[0] = EmptyLike(grad, input.sizes());
  if (mask[1] && weight) out[1] = EmptyLike(*weight, weight->sizes());
  if (mask[2] && bias) out[2] = EmptyLike(*bias, bias->sizes());
  Return(stack, args.size(), std::move(out));
}

// _scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp,
// dropout_p, is_causal, return_debug_mask, scale): the output [B, H, L, Ev], the fp32
// logsumexp [B, H, L, 1], no cumulative lengths, L and S, the dropout's seed and offset.
void CudnnAttention(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  const at::Tensor q = args[0].toTensor(), k = args[1].toTensor(), v = args[2].toTensor();
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), s = k.size(2);
  const at::Tensor scalar = at::empty({}, q.options().dtype(at::kLong));
  Return(stack, args.size(),
         {EmptyLike(q, {b, h, l, v.size(-1)}),
          at::empty({b, h, l, 1}, q.options().dtype(at::kFloat)), at::Tensor(), at::Tensor(),
          c10::IValue(l), c10::IValue(s), scalar, scalar.clone(), at::Tensor()});
}

// The backwards of fused attention (cuDNN's): the gradients of query, key and value.
void AttentionBackward(const c10::OperatorHandle& op, c10::DispatchKeySet, Stack* stack) {
  const std::vector<c10::IValue> args = Args(op, stack);
  Return(stack, args.size(),
         {EmptyLike(args[1].toTensor(), args[1].toTensor().sizes()),
          EmptyLike(args[2].toTensor(), args[2].toTensor().sizes()),
          EmptyLike(args[3].toTensor(), args[3].toTensor().sizes())});
}

// Registers `Fn` as aten::`name`'s meta kernel where this LibTorch has none.
template <void (*Fn)(const c10::OperatorHandle&, c10::DispatchKeySet, Stack*)>
void ImplementWhereMissing(torch::Library& lib, const char* name) {
  const std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findOp(c10::OperatorName(std::string("aten::") + name, ""));
  if (op && !op->hasKernelForDispatchKey(c10::DispatchKey::Meta))
    lib.impl(name, torch::CppFunction::makeFromBoxedFunction<Fn>());
}

}  // namespace

void RegisterMissingMetaKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    static torch::Library* lib = new torch::Library(torch::Library::IMPL, "aten",
                                                    c10::DispatchKey::Meta, __FILE__, __LINE__);
    ImplementWhereMissing<&Convolution>(*lib, "convolution");
    ImplementWhereMissing<&ConvolutionBackward>(*lib, "convolution_backward");
    ImplementWhereMissing<&NativeBatchNorm>(*lib, "native_batch_norm");
    ImplementWhereMissing<&NativeBatchNormBackward>(*lib, "native_batch_norm_backward");
    ImplementWhereMissing<&NativeLayerNorm>(*lib, "native_layer_norm");
    ImplementWhereMissing<&NativeLayerNormBackward>(*lib, "native_layer_norm_backward");
    ImplementWhereMissing<&CudnnAttention>(*lib, "_scaled_dot_product_cudnn_attention");
    ImplementWhereMissing<&AttentionBackward>(*lib, "_scaled_dot_product_cudnn_attention_backward");
  });
}

}  // namespace mimic::synth
