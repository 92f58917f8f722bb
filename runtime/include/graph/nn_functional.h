#pragma once
// nn functions that are decompositions into table ops (no table entry, issue
// 19): inline, so the plugin lowers them like user code, their kernels are
// those ops' (vectorized, CUDA where those have it) and so are their
// gradients. Bad input is an error of the op that meets it, naming that op
// and the shapes (a group count that does not divide the channels: the
// reshape to [N, groups, C / groups * L]); nothing reshapes with an inferred
// -1, so a wrong size can never be absorbed into another dim.
// Included by graph/nn_ops.h.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "graph/ops.h"
#include "graph/tensor.h"

namespace graph {

// ---- factories from a tensor ---------------------------------------------------
// full_like(x, v): x's shape and dtype, every element v (converted as
// Tensor::fill would: int64 x, 0.5 -> 0). Written as a masked_fill of x with an
// all-true mask, so it lowers with x's dtype read at run time; x's gradient
// through it is zero.
inline Tensor full_like(const Tensor& x, Scalar value) { return masked_fill(x, ones({}, kBool), value); }
inline Tensor zeros_like(const Tensor& x) { return full_like(x, 0); }
inline Tensor ones_like(const Tensor& x) { return full_like(x, 1); }

// one_hot(indices, num_classes): int64 [..., num_classes], 1 at each index
// (torch.nn.functional.one_hot): each index compared with every class, so
// O(numel * num_classes), the result's size. The indices first go through
// index_select of arange, the identity on valid ones: an index out of
// [0, num_classes) is index_select's error naming it, eager and static.
inline Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  Tensor classes = arange(num_classes);
  Tensor checked = index_select(classes, 0, indices.reshape({-1})).reshape(indices.sizes());
  return eq(checked.unsqueeze(-1), classes).to(kInt64);
}
// num_classes = max(indices) + 1 (PyTorch's -1). Eager only: the class count
// is read from the data, which a graph's shapes cannot depend on.
Tensor one_hot(const Tensor& indices);

// ---- normalization --------------------------------------------------------------
// group_norm(x [N, C, *], num_groups, weight [C], bias [C], eps): each sample's
// channels split into num_groups groups, each normalized over its channels and
// positions (biased variance, as PyTorch), then scaled and shifted per
// channel. layer_norm over the flattened groups: one fused kernel each way.
inline Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                         const Tensor& bias = Tensor(), double eps = 1e-5) {
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t L = x.numel() / std::max<int64_t>(N * C, 1);  // positions per channel
  const int64_t per_group = C / std::max<int64_t>(num_groups, 1) * L;
  Tensor y = layer_norm(x.reshape({N, num_groups, per_group}), {per_group}, Tensor(), Tensor(), eps).reshape({N, C, L});
  if (weight.defined()) y = y * weight.unsqueeze(1);
  if (bias.defined()) y = y + bias.unsqueeze(1);
  return y.reshape(x.sizes());
}

// ---- 1-d convolution and pooling -----------------------------------------------
// conv1d(x [N, C_in, L], weight [C_out, C_in / groups, K], bias [C_out]):
// conv2d over a height-1 image, so its kernels (oneDNN, cuDNN) and gradients.
inline Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                     int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1) {
  return conv2d(x.unsqueeze(2), weight.unsqueeze(2), bias, {1, stride}, {0, padding}, {1, dilation}, groups)
      .squeeze(2);
}
// max_pool1d / avg_pool1d over the last dim of x [N, C, L]; stride 0 means
// kernel_size (PyTorch's default). avg_pool1d counts padding (count_include_pad).
inline Tensor max_pool1d(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0) {
  const int64_t s = stride > 0 ? stride : kernel_size;
  return max_pool2d(x.unsqueeze(2), {1, kernel_size}, {1, s}, {0, padding}).squeeze(2);
}
inline Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0) {
  const int64_t s = stride > 0 ? stride : kernel_size;
  return avg_pool2d(x.unsqueeze(2), {1, kernel_size}, {1, s}, {0, padding}).squeeze(2);
}

// ---- adaptive pooling ------------------------------------------------------------
namespace detail {
// Which of `in` positions each of `out` adaptive windows covers, bool [out, in]:
// window i is PyTorch's [floor(i * in / out), ceil((i + 1) * in / out)), tested
// in integers: h >= start <=> (h + 1) * out > i * in, h < end <=> h * out < (i + 1) * in.
inline Tensor adaptive_windows(int64_t in, int64_t out) {
  Tensor i = arange(out).unsqueeze(1), h = arange(in).unsqueeze(0);
  return eq(gt((h + 1) * out, i * in).to(kInt64) + lt(h * out, (i + 1) * in).to(kInt64), 2);
}
}  // namespace detail

// adaptive_max_pool2d(x [N, C, H, W], {oh, ow}): the maxima of the same
// windows (the values only, as torch.nn.functional's; no indices). Overlapping
// windows take the maximum over each window's columns, then over its rows, so
// the gradient goes to the maximal element as PyTorch's does (ties: shared).
inline Tensor adaptive_max_pool2d(const Tensor& x, const Shape& output_size) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oh = output_size[0], ow = output_size[1];
  if (oh > 0 && ow > 0 && H % oh == 0 && W % ow == 0)
    return x.reshape({N, C, oh, H / oh, ow, W / ow}).amax({3, 5});
  // [N, C, H, 1, W] against [ow, W]: [N, C, H, ow]; then [N, C, 1, H, ow] against [oh, H, 1].
  Tensor cols = where(detail::adaptive_windows(W, ow), x.unsqueeze(3), -INFINITY).amax({-1});
  return where(detail::adaptive_windows(H, oh).unsqueeze(-1), cols.unsqueeze(2), -INFINITY).amax({3});
}

// ---- resizing -------------------------------------------------------------------
// interpolate(x, size, mode, align_corners), interpolate_scale(x, scale_factor, ...):
// torch.nn.functional.interpolate for x [N, C, L] (kNearest, kLinear) and
// [N, C, H, W] (kNearest, kBilinear). An op of the table (ops.def), one direct
// kernel (runtime/src/interpolate.cpp) and its backward:
//  - nearest: source min(floor(dst * s), in - 1), computed in float32 for every
//    dtype as PyTorch does, s = in / out (1 / scale_factor when one is given);
//  - linear: source s * (dst + 0.5) - 0.5 clamped at 0 (half-pixel centres),
//    or dst * (in - 1) / (out - 1) with align_corners, then its two neighbours
//    weighted by the distance (positions in float64, weights in x's dtype; the
//    last dim first, then the rows). float16/bfloat16 compute in float32.
// A scale_factor gives the output size floor(in * scale_factor) (PyTorch with
// recompute_scale_factor unset). Bad input is interpolate's error, eagerly and
// in a graph (its type rule). On the CPU and the device.
enum class InterpolateMode { Nearest, Linear, Bilinear };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
GRAPH_OP("interpolate") Tensor interpolate(const Tensor& x, const Shape& size, InterpolateMode mode = kNearest,
                                           bool align_corners = false);
// By a scale factor: its own name, because `interpolate(x, {3})` must mean
// a size (an overload on double would take the braced 3 as a scale).
GRAPH_OP("interpolate") Tensor interpolate_scale(const Tensor& x, double scale_factor, InterpolateMode mode = kNearest,
                                                 bool align_corners = false);

}  // namespace graph
