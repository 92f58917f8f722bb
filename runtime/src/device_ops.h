#pragma once
// Private to the runtime: the device paths of the indexing, scan, sort and
// normalization ops of issue 19 (index_ops.cpp, select.cpp, sort_ops.cpp,
// batch_norm.cpp, interpolate.cpp). Defined over the kernels of
// graph/cuda/tensor_kernels.h in cuda_tensor_ops.cpp, and as throwing stubs
// in no_cuda.cpp (no tensor reaches the device there). The ops check shapes,
// dtypes and devices first; these take tensors on the device.
#include <cstdint>

#include "graph/tensor.h"

namespace graph::detail {

// The position of the first index outside [0, size) in `idx` (contiguous
// int64), or -1. Synchronizes: the verdict is read on the host.
int64_t cuda_first_bad_index(const Tensor& idx, int64_t size);

// A walk over the positions of `shape` (tensor_kernels.h IndexWalk): dst and
// src through their own strides, the index through `idx_strides`; at `dim`
// the index's value addresses dst (`index_dst`, a scatter) or src (a gather).
// scatter_add: dst[...] += src[...] (atomic adds); else dst[...] = src[...].
// Indices outside [0, limit) are skipped (the ops checked them).
void cuda_index_walk(bool scatter_add, const Tensor& dst, const Tensor& src, const Tensor& idx, const Shape& shape,
                     const Shape& idx_strides, int64_t dim, bool index_dst, int64_t limit);

// triu (upper) / tril of the last two dims.
Tensor cuda_triangle(const Tensor& x, int64_t diagonal, bool upper);
// The running sum of contiguous x (float32, float64, int64) along dim.
Tensor cuda_cumsum(const Tensor& x, int64_t dim, bool reverse);
// The stable sorting permutation (int64) of each row of contiguous x
// [lines, n] (float32, float64, int32, int64, bool).
Tensor cuda_argsort_rows(const Tensor& x, bool descending);

// batch_norm over contiguous x [N, C, S] (float32/float64); statistics are
// contiguous float64 [C] tensors on the device.
void cuda_bn_stats(const Tensor& x, int64_t N, int64_t C, int64_t S, const Tensor& mean, const Tensor& var);
// invstd = 1 / sqrt(var + eps); rm, rv (float64, may be undefined) updated
// with momentum (var times unbias).
void cuda_bn_finish(const Tensor& mean, const Tensor& var, const Tensor& invstd, double eps, const Tensor& rm,
                    const Tensor& rv, double momentum, double unbias);
void cuda_bn_normalize(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& w, const Tensor& b,
                       const Tensor& y, int64_t N, int64_t C, int64_t S);
// gx, gw, gb may be undefined (not wanted); w may be undefined.
void cuda_bn_backward(bool training, const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                      const Tensor& invstd, const Tensor& gx, const Tensor& gw, const Tensor& gb, int64_t N, int64_t C,
                      int64_t S);

// interpolate's planes [planes, ih, iw] -> [planes, oh, ow] (mode 0 nearest,
// 1 linear, 2 bilinear; interpolate.cpp Resize): forward into `out`, or the
// backward adding grad `in` into zeroed `out`.
struct DeviceResize {
  int mode = 0;
  bool align_corners = false;
  double scale = 0.0;
  int64_t planes = 0, ih = 1, iw = 1, oh = 1, ow = 1;
};
void cuda_interpolate(bool backward, const Tensor& in, const Tensor& out, const DeviceResize& r);

}  // namespace graph::detail
