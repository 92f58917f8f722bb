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
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// Over the trailing dims given by normalized_shape; weight/bias optional.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x [N, C_in, H, W], weight [C_out, C_in / groups, kH, kW], bias [C_out] or undefined.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Shape stride = {1, 1},
              Shape padding = {0, 0}, Shape dilation = {1, 1}, int64_t groups = 1);
Tensor max_pool2d(const Tensor& x, Shape kernel_size, Shape stride = {}, Shape padding = {0, 0});
Tensor avg_pool2d(const Tensor& x, Shape kernel_size, Shape stride = {}, Shape padding = {0, 0});
// weight [num, dim]; indices int64 of any shape -> [..., dim]
Tensor embedding(const Tensor& weight, const Tensor& indices);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Zeroes elements with probability p and scales the rest by 1 / (1 - p) when
// training; the identity otherwise.
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

// ---- losses (mean reduction, as PyTorch's default) ---------------------------
Tensor mse_loss(const Tensor& input, const Tensor& target);
// logits [N, C], target int64 class indices [N]
Tensor cross_entropy(const Tensor& logits, const Tensor& target);

// softmax(q k^T / sqrt(d) + mask) v over the last two dims; a bool mask keeps
// true positions, a floating mask is added; is_causal masks the future.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false);

}  // namespace graph
