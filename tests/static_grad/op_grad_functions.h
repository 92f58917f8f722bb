#pragma once
// One [[graph::static]] function per differentiable op of the op table (and
// per optional operand or list form), for op_grad_test.cpp. Every function
// has the same signature, so the test names it by op: og::op_<case>.
#include <graph/graph.h>

namespace og {
using graph::Tensor;

#define OG_CASES(X)                                                                                   \
  X(neg) X(abs) X(relu) X(exp) X(log) X(sqrt) X(rsqrt) X(tanh) X(sigmoid) X(erf) X(gelu) X(silu)      \
  X(sin) X(cos) X(log1p) X(expm1) X(softplus) X(clamp_min) X(clamp_min_tensor) X(clamp) X(hardtanh)   \
  X(clamp_max) X(clamp_max_tensor) X(leaky_relu) X(leaky_relu_default) X(elu) X(elu_default)          \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum)                                            \
  X(sum) X(mean) X(amax) X(amin) X(matmul) X(matmul_batched) X(conv2d) X(conv2d_no_bias)              \
  X(conv_transpose2d) X(conv_transpose2d_no_bias)                                                     \
  X(t) X(transpose) X(permute) X(reshape) X(expand) X(slice) X(squeeze) X(unsqueeze) X(flatten)       \
  X(where) X(softmax) X(log_softmax) X(linear) X(linear_no_bias) X(layer_norm) X(layer_norm_no_affine) \
  X(max_pool2d) X(avg_pool2d) X(embedding) X(cat) X(cat_vector) X(stack) X(stack_vector) X(dropout)   \
  X(mse_loss) X(cross_entropy) X(scaled_dot_product_attention) X(scaled_dot_product_attention_masked) \
  X(scaled_dot_product_attention_causal) X(masked_fill) X(masked_fill_ninf) X(masked_fill_runtime) X(masked_fill_causal) \
  X(where_scalar) \
  X(triu) X(tril) X(index_select) X(index_select_rows) X(gather) X(gather_dim0) X(cumsum) X(cumsum_neg_dim) X(bmm) \
  X(bmm_method) X(batch_norm_train) X(batch_norm_eval) X(batch_norm_plain) X(to) X(type_as) X(contiguous)        \
  X(logsumexp) X(logsumexp_keepdim) X(var) X(var_biased_keepdim) X(var_all) X(std) X(std_all) X(nll_loss) \
  X(nll_loss_weight_sum) X(nll_loss_weight_none) X(nll_loss_weight_mean) X(bce) X(bce_weight_none)    \
  X(bce_logits) X(bce_logits_pos_weight) X(group_norm) X(group_norm_plain) X(conv1d) X(conv1d_groups)        \
  X(max_pool1d) X(avg_pool1d) X(adaptive_avg_pool2d) X(pad) X(like) X(one_hot) \
  X(select) X(narrow) X(unbind) X(split) X(chunk) X(max_dim) \
  X(scatter_add) X(scatter_add_method) X(sort) X(topk) X(norm) X(norm_all)                         \
  X(adaptive_pools) X(interpolate_nearest) X(interpolate_bilinear) X(interpolate_linear)

#define OG_DECLARE(name) Tensor op_##name(const Tensor& a, const Tensor& b, const Tensor& c);
OG_CASES(OG_DECLARE)
#undef OG_DECLARE

}  // namespace og
