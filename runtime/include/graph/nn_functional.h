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
// rand_like / randn_like: graph's generator in x's shape and dtype (floating
// dtypes). Eager only: random factories do not lower, so a static function
// calling them runs eagerly (-Wgraph-fallback names the call).
inline Tensor rand_like(const Tensor& x) { return rand(x.sizes(), x.dtype()); }
inline Tensor randn_like(const Tensor& x) { return randn(x.sizes(), x.dtype()); }

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

// adaptive_avg_pool2d(x [N, C, H, W], {oh, ow}) where oh divides H and ow
// divides W (1x1 included: a global mean), PyTorch's windows then being the
// blocks of the reshape [N, C, oh, H / oh, ow, W / ow]. Other sizes are that
// reshape's error, naming both shapes (PyTorch's overlapping windows are not
// implemented).
inline Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t oh = output_size[0], ow = output_size[1];
  return x.reshape({N, C, oh, H / std::max<int64_t>(oh, 1), ow, W / std::max<int64_t>(ow, 1)}).mean({3, 5});
}

// ---- padding ------------------------------------------------------------------
namespace detail {
// x padded along dim D (< 0: from the last) by pad[k] before and pad[k + 1]
// after, k = -2 D - 2 (negative amounts crop). D is a template argument
// because slice and cat lower only with a constant dim.
template <int64_t D>
inline Tensor pad_dim(const Tensor& x, const Shape& pad, Scalar value) {
  const int64_t lo = pad.at(-2 * D - 2), hi = pad.at(-2 * D - 1);
  Tensor y = x.slice(D, std::max<int64_t>(-lo, 0), x.size(D) - std::max<int64_t>(-hi, 0));
  const int64_t cropped = x.size(D) + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
  if (cropped < 0) y = y + zeros({cropped});  // a crop past the size: zeros' error (slice would give [0])
  Shape s = y.sizes();
  const int64_t at = y.dim() + D;
  if (lo > 0) {
    s[at] = lo;
    y = cat({full_like(y.slice(D, 0, 1), value).expand(s), y}, D);
  }
  if (hi > 0) {
    s[at] = hi;
    y = cat({y, full_like(y.slice(D, 0, 1), value).expand(s)}, D);
  }
  return y;
}
}  // namespace detail
// pad(x, {left, right, top, bottom, ...}, value): torch.nn.functional.pad in
// constant mode, the pairs from the last dim backwards, up to 4 pairs (a plain
// signature, not PadFuncOptions). Negative amounts crop. An odd count, more
// than 4 pairs or more pairs than x has dims is pad's error eagerly (in a
// graph: an error of the list read or of slice); a dim of size 0 cannot be
// padded (expand's error).
namespace detail {
GRAPH_EAGER_CHECK void check_pad(const Tensor& x, const Shape& pad);
}  // namespace detail
inline Tensor pad(const Tensor& x, const Shape& pad, Scalar value = 0.0) {
  detail::check_pad(x, pad);
  const int n = pad.size();
  Tensor y = x;
  if (n >= 1) y = detail::pad_dim<-1>(y, pad, value);
  if (n >= 3) y = detail::pad_dim<-2>(y, pad, value);
  if (n >= 5) y = detail::pad_dim<-3>(y, pad, value);
  if (n >= 7) y = detail::pad_dim<-4>(y, pad, value);
  if (n >= 9) y = y.slice(0, 0, pad.at(n));  // more than 4 pairs: the read past the end is the error
  return y;
}

}  // namespace graph
