#pragma once
// Neural-network ops (eager, CPU, differentiable), with PyTorch's semantics
// and argument order. Shapes follow PyTorch: images are [N, C, H, W].
#include <optional>

#include "graph/tensor.h"

namespace graph {

// ---- random numbers ------------------------------------------------------------
// One process-wide generator (not PyTorch's stream: same seed, other values).
void manual_seed(uint64_t seed);
Tensor rand(const Shape& sizes, DType dtype = kFloat32);   // uniform [0, 1)
Tensor randn(const Shape& sizes, DType dtype = kFloat32);  // standard normal

// ---- layers as functions -------------------------------------------------------
// x [..., in] @ weight[out, in]^T + bias[out]
GRAPH_OP("linear") Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// Over the trailing dims given by normalized_shape; weight/bias optional.
GRAPH_OP("layer_norm") Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined.
GRAPH_OP("conv2d") Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Shape stride = {1, 1},
              Shape padding = {0, 0}, Shape dilation = {1, 1}, int64_t groups = 1);
GRAPH_OP("max_pool2d") Tensor max_pool2d(const Tensor& x, Shape kernel, Shape stride = {}, Shape padding = {0, 0});
GRAPH_OP("avg_pool2d") Tensor avg_pool2d(const Tensor& x, Shape kernel, Shape stride = {}, Shape padding = {0, 0});
// weight [num, dim]; indices int64 of any shape -> [..., dim]
GRAPH_OP("embedding") Tensor embedding(const Tensor& weight, const Tensor& indices);
GRAPH_OP("cat") Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
GRAPH_OP("stack") Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when
// training; the identity otherwise.
GRAPH_OP("dropout") Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);
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

// softmax(q k^T / sqrt(d) + mask) v over the last two dims; a bool mask keeps
// true positions, a floating mask is added; is_causal masks the future.
GRAPH_OP("scaled_dot_product_attention") Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false);

}  // namespace graph
