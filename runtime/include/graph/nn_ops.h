#pragma once
// Neural-network ops (eager, CPU, differentiable), with PyTorch's semantics
// and argument order. Shapes follow PyTorch: images are [N, C, H, W].
#include <optional>

#include "graph/ops.h"
#include "graph/tensor.h"

namespace graph {

// ---- random numbers ------------------------------------------------------------
// One process-wide generator (not PyTorch's stream: same seed, other values).
void manual_seed(uint64_t seed);
Tensor rand(const Shape& sizes, DType dtype = kFloat32);   // uniform [0, 1)
Tensor randn(const Shape& sizes, DType dtype = kFloat32);  // standard normal
// x's shape, dtype and device (ops.def: table ops, so they lower in graphs and
// draw there what the eager code draws under the same seed).
GRAPH_OP("rand_like") Tensor rand_like(const Tensor& x);
GRAPH_OP("randn_like") Tensor randn_like(const Tensor& x);

// ---- layers as functions -------------------------------------------------------
// x [..., in] @ weight[out, in]^T + bias[out]
GRAPH_OP("linear") Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// Over the trailing dims given by normalized_shape; weight/bias optional.
GRAPH_OP("layer_norm") Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined.
GRAPH_OP("conv2d") Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Shape stride = {1, 1},
              Shape padding = {0, 0}, Shape dilation = {1, 1}, int64_t groups = 1);
// The adjoint of conv2d (PyTorch's semantics): x [N, C_in, H, W] (or [C_in, H, W]),
// weight [C_in, C_out / groups, kH, kW], bias [C_out] or undefined; output
// size (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1.
GRAPH_OP("conv_transpose2d") Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                                                     Shape stride = {1, 1}, Shape padding = {0, 0},
                                                     Shape output_padding = {0, 0}, int64_t groups = 1,
                                                     Shape dilation = {1, 1});
GRAPH_OP("max_pool2d") Tensor max_pool2d(const Tensor& x, Shape kernel, Shape stride = {}, Shape padding = {0, 0});
GRAPH_OP("avg_pool2d") Tensor avg_pool2d(const Tensor& x, Shape kernel, Shape stride = {}, Shape padding = {0, 0});
// x [N, C, H, W] (or [C, H, W]) to [.., oh, ow], output_size {oh, ow} (or {o}
// for both): PyTorch's windows, [floor(i * H / oh), ceil((i + 1) * H / oh)),
// which overlap when oh does not divide H. A 1x1 output is a global mean.
GRAPH_OP("adaptive_avg_pool2d") Tensor adaptive_avg_pool2d(const Tensor& x, Shape output_size);
// pad(x, {left, right, top, bottom, ...}, value): torch.nn.functional.pad in
// constant mode, the pairs (before, after) from the last dim backwards, at
// most one per dim; negative amounts crop. An odd count, more pairs than x
// has dims, or a size below 0 is pad's error.
GRAPH_OP("pad") Tensor pad(const Tensor& x, const Shape& pad, Scalar value = 0.0);
// weight [num, dim]; indices int64 of any shape -> [..., dim]
GRAPH_OP("embedding") Tensor embedding(const Tensor& weight, const Tensor& indices);
GRAPH_OP("cat") Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
GRAPH_OP("stack") Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when
// training; the identity otherwise.
GRAPH_OP("dropout") Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
// What dropout multiplies x by: 1 / (1 - p) where an element is kept, 0
// elsewhere (all ones when not training), in x's dtype and shape, from the
// same draw (on the CPU, as dropout's). Static graphs that differentiate a dropout run it as
// x * dropout_mask(x, p, training) and keep the mask for the backward.
GRAPH_OP("dropout_mask") Tensor dropout_mask(const Tensor& x, double p = 0.5, bool training = true);
// torch.nn.functional.batch_norm over dim 1 of x [N, C, ...]; every tensor but
// x may be undefined (running stats: not in eval mode). Training normalizes
// with the batch's statistics and updates defined running stats in place:
// running = (1 - momentum) * running + momentum * batch (unbiased variance).
GRAPH_OP("batch_norm") Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                                         const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                                         bool training = false, double momentum = 0.1, double eps = 1e-5);

// ---- losses (mean reduction, as PyTorch's default) ---------------------------
GRAPH_OP("mse_loss") Tensor mse_loss(const Tensor& input, const Tensor& target);
// logits [N, C], target int64 class indices [N]
GRAPH_OP("cross_entropy") Tensor cross_entropy(const Tensor& logits, const Tensor& target);

// PyTorch's loss reduction (torch::kNone/kMean/kSum): per-element losses, their
// mean (nll_loss: weighted by the picked class weights) or their sum.
enum class Reduction { None, Mean, Sum };
inline constexpr Reduction kNone = Reduction::None;
inline constexpr Reduction kMean = Reduction::Mean;
inline constexpr Reduction kSum = Reduction::Sum;
// The losses below are decompositions into table ops (no table entry): inline,
// so the plugin lowers them like user code and their gradients are those ops'.
namespace detail {
inline Tensor reduce_loss(const Tensor& loss, Reduction reduction) {
  if (reduction == Reduction::Sum) return sum(loss);
  if (reduction == Reduction::Mean) return mean(loss);
  return loss;
}
}  // namespace detail
// nll_loss(log_probs [N, C], target int64 [N]): -log_probs[i, target[i]] *
// weight[target[i]]; targets equal to ignore_index count for nothing (Mean
// divides by the sum of the weights of the others: nan when all are ignored).
// A target out of [0, C), not int64 or not [N] is an error of its gather.
inline Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                       Reduction reduction = Reduction::Mean, int64_t ignore_index = -100) {
  Tensor valid = target != ignore_index;
  Tensor safe = where(valid, target, 0);  // ignored targets pick class 0, weighted 0
  Tensor w = valid * 1.0;
  if (weight.defined()) w = index_select(weight, 0, safe) * valid;
  Tensor loss = -gather(log_probs, 1, safe.unsqueeze(1)).squeeze(1) * w;
  if (reduction == Reduction::Mean) return sum(loss) / sum(w);
  return detail::reduce_loss(loss, reduction);
}
// binary_cross_entropy(p, target): -(t log p + (1 - t) log(1 - p)), each log
// clamped at -100 as PyTorch does (p of 0 or 1 gives a finite loss), times
// weight where given. target must have p's element count (it is read in p's
// shape, so a target [N, 1] for p [N] works; one that would broadcast is an
// error of that reshape).
inline Tensor binary_cross_entropy(const Tensor& p, const Tensor& target, Reduction reduction = Reduction::Mean,
                                   const Tensor& weight = Tensor()) {
  const Tensor t = target.reshape(p.sizes());  // PyTorch wants equal sizes: no broadcasting
  Tensor loss = -(t * clamp_min(log(p), -100.0) + (1 - t) * clamp_min(log(1 - p), -100.0));
  if (weight.defined()) loss = loss * weight;
  return detail::reduce_loss(loss, reduction);
}
// binary_cross_entropy_with_logits(x, target): (1 - t) x + lw softplus(-x),
// lw = 1 + (pos_weight - 1) t; softplus is log1p(exp(.)) below 20, its
// argument above, so no exp overflows (PyTorch's log1p(exp(-|x|)) + relu(-x)).
inline Tensor binary_cross_entropy_with_logits(const Tensor& x, const Tensor& target,
                                               Reduction reduction = Reduction::Mean,
                                               const Tensor& pos_weight = Tensor(), const Tensor& weight = Tensor()) {
  const Tensor t = target.reshape(x.sizes());  // PyTorch wants equal sizes: no broadcasting
  Tensor sp = softplus(-x);
  if (pos_weight.defined()) sp = sp * ((pos_weight - 1) * t + 1);
  Tensor loss = (1 - t) * x + sp;
  if (weight.defined()) loss = loss * weight;
  return detail::reduce_loss(loss, reduction);
}

// softmax(q k^T / sqrt(d) + mask) v over the last two dims; a bool mask keeps
// true positions, a floating mask is added; is_causal masks the future.
GRAPH_OP("scaled_dot_product_attention") Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false);

}  // namespace graph

#include "graph/nn_functional.h"  // group_norm, conv1d, pad, one_hot, ...: decompositions
