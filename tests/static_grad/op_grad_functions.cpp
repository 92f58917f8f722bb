// The functions of op_grad_functions.h: each applies one op (the inputs'
// shapes and domains are op_grad_test.cpp's).
#include "op_grad_functions.h"

#include <cmath>
#include <vector>

namespace og {
using namespace graph;

// ---- elementwise: a [2, 3] (positive for log, sqrt, rsqrt), b [3] or [2, 3]
[[graph::static]] Tensor op_neg(const Tensor& a, const Tensor&, const Tensor&) { return -a; }
[[graph::static]] Tensor op_abs(const Tensor& a, const Tensor&, const Tensor&) { return abs(a); }
[[graph::static]] Tensor op_relu(const Tensor& a, const Tensor&, const Tensor&) { return relu(a); }
[[graph::static]] Tensor op_exp(const Tensor& a, const Tensor&, const Tensor&) { return exp(a); }
[[graph::static]] Tensor op_log(const Tensor& a, const Tensor&, const Tensor&) { return log(a); }
[[graph::static]] Tensor op_sqrt(const Tensor& a, const Tensor&, const Tensor&) { return sqrt(a); }
[[graph::static]] Tensor op_rsqrt(const Tensor& a, const Tensor&, const Tensor&) { return rsqrt(a); }
[[graph::static]] Tensor op_tanh(const Tensor& a, const Tensor&, const Tensor&) { return tanh(a); }
[[graph::static]] Tensor op_sigmoid(const Tensor& a, const Tensor&, const Tensor&) { return sigmoid(a); }
[[graph::static]] Tensor op_erf(const Tensor& a, const Tensor&, const Tensor&) { return erf(a); }
[[graph::static]] Tensor op_gelu(const Tensor& a, const Tensor&, const Tensor&) { return gelu(a); }
[[graph::static]] Tensor op_silu(const Tensor& a, const Tensor&, const Tensor&) { return silu(a); }
[[graph::static]] Tensor op_add(const Tensor& a, const Tensor& b, const Tensor&) { return a + b; }
[[graph::static]] Tensor op_sub(const Tensor& a, const Tensor& b, const Tensor&) { return a - b; }
[[graph::static]] Tensor op_mul(const Tensor& a, const Tensor& b, const Tensor&) { return a * b; }
[[graph::static]] Tensor op_div(const Tensor& a, const Tensor& b, const Tensor&) { return a / b; }
[[graph::static]] Tensor op_pow(const Tensor& a, const Tensor& b, const Tensor&) { return pow(a, b); }
[[graph::static]] Tensor op_maximum(const Tensor& a, const Tensor& b, const Tensor&) { return maximum(a, b); }
[[graph::static]] Tensor op_minimum(const Tensor& a, const Tensor& b, const Tensor&) { return minimum(a, b); }

// ---- the ops real models need (a [2, 3] of both signs; b [3]): method forms,
// PyTorch's default parameters, and clamp/hardtanh, which are clamp_min then clamp_max.
[[graph::static]] Tensor op_sin(const Tensor& a, const Tensor&, const Tensor&) { return a.sin(); }
[[graph::static]] Tensor op_cos(const Tensor& a, const Tensor&, const Tensor&) { return cos(a); }
[[graph::static]] Tensor op_log1p(const Tensor& a, const Tensor&, const Tensor&) { return log1p(a); }
[[graph::static]] Tensor op_expm1(const Tensor& a, const Tensor&, const Tensor&) { return a.expm1(); }
[[graph::static]] Tensor op_softplus(const Tensor& a, const Tensor&, const Tensor&) { return softplus(a * 3.0); }
[[graph::static]] Tensor op_clamp_min(const Tensor& a, const Tensor&, const Tensor&) { return a.clamp_min(-0.1); }
[[graph::static]] Tensor op_clamp_min_tensor(const Tensor& a, const Tensor& b, const Tensor&) { return clamp_min(a, b); }
[[graph::static]] Tensor op_clamp(const Tensor& a, const Tensor&, const Tensor&) { return clamp(a, -0.6, 0.7); }
[[graph::static]] Tensor op_hardtanh(const Tensor& a, const Tensor&, const Tensor&) { return hardtanh(a * 1.3); }
[[graph::static]] Tensor op_clamp_max(const Tensor& a, const Tensor&, const Tensor&) { return a.clamp_max(0.3); }
[[graph::static]] Tensor op_clamp_max_tensor(const Tensor& a, const Tensor& b, const Tensor&) { return clamp_max(a, b); }
[[graph::static]] Tensor op_leaky_relu(const Tensor& a, const Tensor&, const Tensor&) { return leaky_relu(a, 0.2); }
[[graph::static]] Tensor op_leaky_relu_default(const Tensor& a, const Tensor&, const Tensor&) { return leaky_relu(a); }
[[graph::static]] Tensor op_elu(const Tensor& a, const Tensor&, const Tensor&) { return elu(a, 0.7); }
[[graph::static]] Tensor op_elu_default(const Tensor& a, const Tensor&, const Tensor&) { return elu(a); }

// ---- reductions over a [2, 3], b [2, 3]
[[graph::static]] Tensor op_sum(const Tensor& a, const Tensor& b, const Tensor&) { return a.sum(1, true) * b.sum(); }
[[graph::static]] Tensor op_mean(const Tensor& a, const Tensor&, const Tensor&) { return mean(a, 0); }
[[graph::static]] Tensor op_amax(const Tensor& a, const Tensor&, const Tensor&) { return amax(a, Shape{1}); }
[[graph::static]] Tensor op_amin(const Tensor& a, const Tensor&, const Tensor&) { return amin(a, Shape{0}, true); }

// ---- library calls
[[graph::static]] Tensor op_matmul(const Tensor& a, const Tensor& b, const Tensor&) { return matmul(a, b); }
[[graph::static]] Tensor op_matmul_batched(const Tensor& a, const Tensor& b, const Tensor&) { return matmul(a, b); }
[[graph::static]] Tensor op_conv2d(const Tensor& a, const Tensor& b, const Tensor& c) {
  return conv2d(a, b, c, {1, 2}, {1, 1});
}
[[graph::static]] Tensor op_conv2d_no_bias(const Tensor& a, const Tensor& b, const Tensor&) { return conv2d(a, b); }
[[graph::static]] Tensor op_conv_transpose2d(const Tensor& a, const Tensor& b, const Tensor& c) {
  return conv_transpose2d(a, b, c, {2, 1}, {1, 0}, {1, 0});
}
[[graph::static]] Tensor op_conv_transpose2d_no_bias(const Tensor& a, const Tensor& b, const Tensor&) {
  return conv_transpose2d(a, b, Tensor(), {1, 2}, {0, 1}, {0, 0}, 1, {2, 1});
}

// ---- views of a [2, 3, 4] (t: [2, 3]; expand: [1, 3]; squeeze: [2, 1, 3])
[[graph::static]] Tensor op_t(const Tensor& a, const Tensor&, const Tensor&) { return a.t() * 1.0; }
[[graph::static]] Tensor op_transpose(const Tensor& a, const Tensor&, const Tensor&) { return a.transpose(0, 2) * 1.0; }
[[graph::static]] Tensor op_permute(const Tensor& a, const Tensor&, const Tensor&) { return a.permute({2, 0, 1}) * 1.0; }
[[graph::static]] Tensor op_reshape(const Tensor& a, const Tensor&, const Tensor&) { return a.reshape({4, -1}) * 1.0; }
[[graph::static]] Tensor op_expand(const Tensor& a, const Tensor&, const Tensor&) { return a.expand({4, 3}) * 1.0; }
[[graph::static]] Tensor op_slice(const Tensor& a, const Tensor&, const Tensor&) { return a.slice(2, 1, 4, 2) * 1.0; }
[[graph::static]] Tensor op_squeeze(const Tensor& a, const Tensor&, const Tensor&) { return a.squeeze(1) * 1.0; }
[[graph::static]] Tensor op_unsqueeze(const Tensor& a, const Tensor&, const Tensor&) { return a.unsqueeze(1) * 1.0; }
[[graph::static]] Tensor op_flatten(const Tensor& a, const Tensor&, const Tensor&) { return a.flatten(1) * 1.0; }

// ---- other kernels
[[graph::static]] Tensor op_where(const Tensor& a, const Tensor& b, const Tensor&) { return where(a > 0.0, a, b); }
[[graph::static]] Tensor op_softmax(const Tensor& a, const Tensor&, const Tensor&) { return softmax(a, 1); }
[[graph::static]] Tensor op_log_softmax(const Tensor& a, const Tensor&, const Tensor&) { return log_softmax(a, 0); }
[[graph::static]] Tensor op_linear(const Tensor& a, const Tensor& b, const Tensor& c) { return linear(a, b, c); }
[[graph::static]] Tensor op_linear_no_bias(const Tensor& a, const Tensor& b, const Tensor&) { return linear(a, b); }
[[graph::static]] Tensor op_layer_norm(const Tensor& a, const Tensor& b, const Tensor& c) {
  return layer_norm(a, {3}, b, c, 1e-5);
}
[[graph::static]] Tensor op_layer_norm_no_affine(const Tensor& a, const Tensor&, const Tensor&) {
  return layer_norm(a, {2, 3});
}
[[graph::static]] Tensor op_max_pool2d(const Tensor& a, const Tensor&, const Tensor&) { return max_pool2d(a, {2, 2}); }
[[graph::static]] Tensor op_avg_pool2d(const Tensor& a, const Tensor&, const Tensor&) {
  return avg_pool2d(a, {3, 3}, {2, 2}, {1, 1});
}
[[graph::static]] Tensor op_embedding(const Tensor& a, const Tensor&, const Tensor& c) { return embedding(a, c); }
[[graph::static]] Tensor op_cat(const Tensor& a, const Tensor& b, const Tensor&) { return cat({a, b * 2.0}, 1); }
[[graph::static]] Tensor op_cat_vector(const Tensor& a, const Tensor& b, const Tensor&) {
  std::vector<Tensor> parts;
  parts.push_back(a);
  parts.push_back(tanh(b));
  parts.push_back(a * b);
  return cat(parts, 0);
}
[[graph::static]] Tensor op_stack(const Tensor& a, const Tensor& b, const Tensor&) { return stack({a, b}, 1); }
[[graph::static]] Tensor op_stack_vector(const Tensor& a, const Tensor& b, const Tensor&) {
  std::vector<Tensor> parts;
  for (int i = 0; i < 3; ++i) parts.push_back(a * b + i);
  return stack(parts, -1);
}
[[graph::static]] Tensor op_dropout(const Tensor& a, const Tensor&, const Tensor&) { return dropout(a, 0.3, false); }
[[graph::static]] Tensor op_mse_loss(const Tensor& a, const Tensor& b, const Tensor&) { return mse_loss(a, b); }
[[graph::static]] Tensor op_cross_entropy(const Tensor& a, const Tensor&, const Tensor& c) { return cross_entropy(a, c); }
[[graph::static]] Tensor op_scaled_dot_product_attention(const Tensor& a, const Tensor& b, const Tensor& c) {
  return scaled_dot_product_attention(a, b, c);
}
[[graph::static]] Tensor op_scaled_dot_product_attention_masked(const Tensor& a, const Tensor& b, const Tensor& c) {
  return scaled_dot_product_attention(a, b, c, a.slice(2, 0, 1) * b.slice(2, 0, 1).transpose(1, 2));
}
[[graph::static]] Tensor op_scaled_dot_product_attention_causal(const Tensor& a, const Tensor& b, const Tensor& c) {
  return scaled_dot_product_attention(a, b, c, Tensor(), 0.0, true);
}

// ---- masked_fill (the method, a -inf fill, a value known at run time), where
// with a scalar operand on either side, triu / tril
[[graph::static]] Tensor op_masked_fill(const Tensor& a, const Tensor& b, const Tensor&) {
  return a.masked_fill(b > 0.0, -0.75) * b;
}
[[graph::static]] Tensor op_masked_fill_ninf(const Tensor& a, const Tensor& b, const Tensor&) {
  return exp(masked_fill(a, b > 0.0, -INFINITY)) + b;
}
[[graph::static]] Tensor op_masked_fill_runtime(const Tensor& a, const Tensor& b, const Tensor&) {
  const double v = 0.25 * a.size(1);
  return masked_fill(a * b, b.unsqueeze(0) < 0.0, v);
}
// A GPT block's causal mask: triu of a bool tensor built in the graph.
[[graph::static]] Tensor op_masked_fill_causal(const Tensor& a, const Tensor& b, const Tensor&) {
  const int64_t n = a.size(0);
  const Tensor mask = triu(ones({n, n}, kBool), 1);
  return softmax(matmul(a, b.t()).masked_fill(mask, -INFINITY), -1);
}
[[graph::static]] Tensor op_where_scalar(const Tensor& a, const Tensor& b, const Tensor&) {
  return where(a > 0.0, a * b, 0.5) + where(b < 0.1, -1, a);
}
[[graph::static]] Tensor op_triu(const Tensor& a, const Tensor&, const Tensor&) { return triu(a, 1) * 2.0; }
[[graph::static]] Tensor op_tril(const Tensor& a, const Tensor&, const Tensor&) { return a.tril(-1); }
// to: up to float64 (the gradients come back as float32), and a mask cast
// from bool (no gradient through it). Not down to float32: the float64
// finite differences would see its rounding.
[[graph::static]] Tensor op_to(const Tensor& a, const Tensor& b, const Tensor&) {
  return a.to(kFloat64) * b.to(kFloat64) + (a > 0.0).to(kFloat64) * b;
}
// type_as: up to float64 through b's dtype made float64 (the gradient comes
// back as float32), and to a's own dtype (no conversion).
[[graph::static]] Tensor op_type_as(const Tensor& a, const Tensor& b, const Tensor&) {
  const Tensor b64 = b.to(kFloat64);
  return a.type_as(b64) * b64 + b.type_as(a);
}
[[graph::static]] Tensor op_contiguous(const Tensor& a, const Tensor&, const Tensor&) { return a.t().contiguous() * 2.0; }

// ---- index_select (repeated indices: the gradient adds up), gather (along
// either dim, the index smaller than the input), cumsum, bmm (function and method)
[[graph::static]] Tensor op_index_select(const Tensor& a, const Tensor&, const Tensor& c) {
  return index_select(a, 1, c) * 2.0;
}
[[graph::static]] Tensor op_index_select_rows(const Tensor& a, const Tensor& b, const Tensor& c) {
  return a.index_select(0, c) * b;
}
[[graph::static]] Tensor op_gather(const Tensor& a, const Tensor&, const Tensor& c) { return exp(gather(a, 1, c)); }
[[graph::static]] Tensor op_gather_dim0(const Tensor& a, const Tensor& b, const Tensor& c) {
  return a.gather(0, c) * b;
}
[[graph::static]] Tensor op_cumsum(const Tensor& a, const Tensor&, const Tensor&) { return cumsum(a, 1) * a; }
[[graph::static]] Tensor op_cumsum_neg_dim(const Tensor& a, const Tensor&, const Tensor&) { return tanh(a.cumsum(-3)); }
[[graph::static]] Tensor op_bmm(const Tensor& a, const Tensor& b, const Tensor&) { return bmm(a, b); }
[[graph::static]] Tensor op_bmm_method(const Tensor& a, const Tensor& b, const Tensor&) { return a.bmm(b.transpose(1, 2)); }
// batch_norm where a graph can hold it: training without running stats, and
// eval with running stats (built in the graph here; the plugin rejects
// training with running stats, plugin_cases/fallbacks.cpp).
[[graph::static]] Tensor op_batch_norm_train(const Tensor& a, const Tensor& b, const Tensor& c) {
  return batch_norm(a, Tensor(), Tensor(), b, c, true, 0.1, 1e-3);
}
[[graph::static]] Tensor op_batch_norm_eval(const Tensor& a, const Tensor& b, const Tensor& c) {
  return batch_norm(a, ones({3}) * 0.2, ones({3}) * 1.5, b, c, false);
}
[[graph::static]] Tensor op_batch_norm_plain(const Tensor& a, const Tensor&, const Tensor&) {
  return batch_norm(a, Tensor(), Tensor(), Tensor(), Tensor(), true) * 2.0;
}

// ---- decompositions without a table entry (issue 19): logsumexp, var/std,
// nll_loss (c: int64 targets), binary_cross_entropy(_with_logits) with each
// Reduction and their optional weights. Tested in op_grad_test's Composite.
[[graph::static]] Tensor op_logsumexp(const Tensor& a, const Tensor&, const Tensor&) { return logsumexp(a * 3.0, {1}); }
[[graph::static]] Tensor op_logsumexp_keepdim(const Tensor& a, const Tensor&, const Tensor&) {
  return logsumexp(a, {0, 2}, true) * a;
}
[[graph::static]] Tensor op_var(const Tensor& a, const Tensor&, const Tensor&) { return var(a, {1}); }
[[graph::static]] Tensor op_var_biased_keepdim(const Tensor& a, const Tensor&, const Tensor&) {
  return var(a, {0, 2}, false, true) * a;
}
[[graph::static]] Tensor op_var_all(const Tensor& a, const Tensor&, const Tensor&) { return var(a) * a; }
[[graph::static]] Tensor op_std(const Tensor& a, const Tensor&, const Tensor&) { return graph::std(a, {0}, 2.0); }
[[graph::static]] Tensor op_std_all(const Tensor& a, const Tensor&, const Tensor&) { return graph::std(a) + a; }
[[graph::static]] Tensor op_nll_loss(const Tensor& a, const Tensor&, const Tensor& c) {
  return nll_loss(log_softmax(a, 1), c);
}
[[graph::static]] Tensor op_nll_loss_weight_sum(const Tensor& a, const Tensor& b, const Tensor& c) {
  return nll_loss(log_softmax(a, 1), c, b, graph::kSum, 2);
}
[[graph::static]] Tensor op_nll_loss_weight_none(const Tensor& a, const Tensor& b, const Tensor& c) {
  return nll_loss(a, c, b, graph::kNone);
}
[[graph::static]] Tensor op_nll_loss_weight_mean(const Tensor& a, const Tensor& b, const Tensor& c) {
  return nll_loss(a, c, b);
}
[[graph::static]] Tensor op_bce(const Tensor& a, const Tensor& b, const Tensor&) {
  return binary_cross_entropy(sigmoid(a), sigmoid(b));
}
[[graph::static]] Tensor op_bce_weight_none(const Tensor& a, const Tensor& b, const Tensor& c) {
  return binary_cross_entropy(sigmoid(a), sigmoid(b), graph::kNone, c);
}
[[graph::static]] Tensor op_bce_logits(const Tensor& a, const Tensor& b, const Tensor&) {
  return binary_cross_entropy_with_logits(a * 4.0, sigmoid(b), graph::kSum);
}
[[graph::static]] Tensor op_bce_logits_pos_weight(const Tensor& a, const Tensor& b, const Tensor& c) {
  return binary_cross_entropy_with_logits(a, sigmoid(b), graph::kNone, c, c * 0.5 + 1.0);
}

// ---- parts along a dim (issue 19): select, narrow, unbind, split, chunk, as
// functions and methods, negative dims and indices. Composites in op_grad_test.
[[graph::static]] Tensor op_select(const Tensor& a, const Tensor&, const Tensor&) {
  return select(a, 1, -1) * 2.0 + a.select(0, 1).slice(0, 0, 3);
}
[[graph::static]] Tensor op_narrow(const Tensor& a, const Tensor&, const Tensor&) {
  return narrow(a, -1, -3, 2) * 3.0 + a.narrow(0, 1, 2).sum();
}
[[graph::static]] Tensor op_unbind(const Tensor& a, const Tensor& b, const Tensor&) {
  const std::vector<Tensor> cols = unbind(a, -1);
  return cols[0] * cols[2] + a.unbind()[1].sum() * b;
}
[[graph::static]] Tensor op_split(const Tensor& a, const Tensor&, const Tensor&) {
  const std::vector<Tensor> p = a.split(2);  // [2, 3], [2, 3], [1, 3]
  return p[0].sum(0) * p[2].sum(0) + split(a, {1, 4}, 0)[1].sum(0);
}
[[graph::static]] Tensor op_chunk(const Tensor& a, const Tensor&, const Tensor&) {
  const std::vector<Tensor> c = chunk(a, 3, -1);  // [5, 1] each
  return c[0] * c[2] + a.chunk(2)[1].sum();       // dim 0: [3, 3], [2, 3]
}
// max / min along a dim with indices, argmin (an index result: no gradient).
[[graph::static]] Tensor op_max_dim(const Tensor& a, const Tensor&, const Tensor&) {
  auto [v, i] = a.max(1);
  auto [m, j] = min(a, 0, true);
  return v * 2.0 + m.sum() + (i - j.sum() + a.argmin(1)).to(kFloat64);
}

// ---- nn decompositions (issue 19, nn_functional.h): group_norm, conv1d, 1-d
// pools, adaptive_avg_pool2d, pad, the *_like factories and one_hot (c: int64).
[[graph::static]] Tensor op_group_norm(const Tensor& a, const Tensor& b, const Tensor& c) {
  return group_norm(a, 2, b, c, 1e-3);
}
[[graph::static]] Tensor op_group_norm_plain(const Tensor& a, const Tensor&, const Tensor&) { return group_norm(a, 3); }
[[graph::static]] Tensor op_conv1d(const Tensor& a, const Tensor& b, const Tensor& c) {
  return conv1d(a, b, c, 2, 1, 1, 1);
}
[[graph::static]] Tensor op_conv1d_groups(const Tensor& a, const Tensor& b, const Tensor&) {
  return conv1d(a, b, Tensor(), 1, 2, 2, 2);
}
[[graph::static]] Tensor op_max_pool1d(const Tensor& a, const Tensor&, const Tensor&) { return max_pool1d(a, 2); }
[[graph::static]] Tensor op_avg_pool1d(const Tensor& a, const Tensor&, const Tensor&) { return avg_pool1d(a, 3, 2, 1); }
[[graph::static]] Tensor op_adaptive_avg_pool2d(const Tensor& a, const Tensor&, const Tensor&) {
  return adaptive_avg_pool2d(a, {2, 1}) + adaptive_avg_pool2d(a, {1, 1});
}
[[graph::static]] Tensor op_pad(const Tensor& a, const Tensor&, const Tensor&) { return pad(a, {1, 2, -1, 1}, 0.5); }
[[graph::static]] Tensor op_like(const Tensor& a, const Tensor&, const Tensor&) {
  return a * ones_like(a) + full_like(a, 2.5) * a + zeros_like(a);
}
[[graph::static]] Tensor op_one_hot(const Tensor& a, const Tensor&, const Tensor& c) { return a * one_hot(c, 4); }

// ---- scatter_add (c: int64; repeated indices add up, src larger than the index),
// sort / topk (argsort + gather: the values' gradient scatters back), norm.
[[graph::static]] Tensor op_scatter_add(const Tensor& a, const Tensor& b, const Tensor& c) {
  return scatter_add(a, 1, c, b) * a;
}
[[graph::static]] Tensor op_scatter_add_method(const Tensor& a, const Tensor& b, const Tensor& c) {
  return exp(a.scatter_add(0, c, b * 2.0));
}
[[graph::static]] Tensor op_sort(const Tensor& a, const Tensor&, const Tensor&) {
  auto [v, i] = sort(a, 1, true);
  auto [w, j] = a.sort(0);
  return v * v + w.sum(0) + (i - j).sum().to(kFloat64) + a.argsort().to(kFloat64);
}
[[graph::static]] Tensor op_topk(const Tensor& a, const Tensor&, const Tensor&) {
  auto [v, i] = topk(a, 2);
  auto [w, j] = a.topk(1, 0, false);
  return v * 3.0 + w.sum() + i.to(kFloat64) + j.sum().to(kFloat64);
}
[[graph::static]] Tensor op_norm(const Tensor& a, const Tensor&, const Tensor&) {
  return norm(a, 2.0, {1}) * linalg_vector_norm(a, 3.0, {1}) + a.norm(INFINITY, {1}) + norm(a, 1.0, {0}, true).sum();
}
[[graph::static]] Tensor op_norm_all(const Tensor& a, const Tensor&, const Tensor&) { return norm(a) * a; }

// ---- adaptive pooling with overlapping windows, interpolate (nn_functional.h).
[[graph::static]] Tensor op_adaptive_pools(const Tensor& a, const Tensor&, const Tensor&) {
  return adaptive_avg_pool2d(a, {3, 2}) * adaptive_max_pool2d(a, {3, 2}) + adaptive_max_pool2d(a, {2, 1}).sum();
}
[[graph::static]] Tensor op_interpolate_nearest(const Tensor& a, const Tensor&, const Tensor&) {
  return interpolate(a, {5, 3}) + interpolate_scale(a, 1.5).sum();
}
[[graph::static]] Tensor op_interpolate_bilinear(const Tensor& a, const Tensor&, const Tensor&) {
  return interpolate(a, {5, 2}, kBilinear) * interpolate(a, {5, 2}, kBilinear, true);
}
[[graph::static]] Tensor op_interpolate_linear(const Tensor& a, const Tensor&, const Tensor&) {
  return interpolate_scale(a.flatten(2), 0.7, kLinear) + interpolate(a.flatten(2), {9}, kLinear, true).sum();
}

}  // namespace og
