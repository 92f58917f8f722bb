#pragma once
// Device kernels of the indexing, scan, sort and normalization ops of issue
// 19 (index.cu, sort.cu, batch_norm.cu, interpolate.cu): index_select,
// gather, scatter_add, triu/tril, cumsum, argsort, batch_norm, interpolate.
// Plain C++ like cuda.h: raw device pointers and sizes; the runtime's ops
// check shapes and dtypes first and mirror their CPU kernels' arithmetic.
#include <cstddef>
#include <cstdint>

#include "graph/dtype.h"

namespace graph::cuda {

// ---- indexing (index.cu) -------------------------------------------------
inline constexpr int kMaxIndexDims = 12;

// A walk over the positions of `sizes` (row-major) with three strided
// operands, strides in elements: dst, src and the int64 index. At `dim`, the
// side named by `index_dst` (dst for a scatter, src for a gather) is
// addressed by the index's value k (k * its stride there), the other by the
// position itself. An index outside [0, limit) is skipped: the callers have
// checked them (find_bad_index), and a bad one never touches memory.
struct IndexWalk {
  int ndim = 0, dim = 0;
  bool index_dst = false;
  int64_t limit = 0;
  int64_t sizes[kMaxIndexDims] = {};
  int64_t dst[kMaxIndexDims] = {}, src[kMaxIndexDims] = {}, idx[kMaxIndexDims] = {};
};

// The position of the first index outside [0, size) among p[0, n) (device,
// contiguous int64), or -1; synchronizes (the verdict is read on the host).
int64_t find_bad_index(const int64_t* p, int64_t n, int64_t size);
// dst[pos] = src[pos with dim := idx] (elements of `elem` bytes).
void index_gather(size_t elem, void* dst, const void* src, const int64_t* idx, const IndexWalk& w);
// dst[pos with dim := idx] += src[pos] by atomic adds (float32, float64,
// int32, int64): float sums land in a varying order, so their last bits may
// differ between runs (PyTorch's CUDA scatter_add does the same).
void index_scatter_add(DType t, void* dst, const void* src, const int64_t* idx, const IndexWalk& w);

// out = in on the kept triangle of each [rows, cols] matrix (contiguous,
// `lines` rows in all), zeros elsewhere: j - i >= diagonal (upper) or
// j - i <= diagonal.
void triangle(size_t elem, void* out, const void* in, int64_t lines, int64_t rows, int64_t cols, int64_t diagonal,
              bool upper);

// The running sums of contiguous [outer, n, inner] along n (from the end
// with `reverse`): float32/float64 accumulate in double, int64 in int64, one
// thread per line in the CPU kernel's order (the same bits).
void cumsum_lines(DType t, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool reverse);

// ---- argsort (sort.cu) -----------------------------------------------------
// out[l, :] = the stable permutation sorting row l of contiguous x [lines, n]
// (float32, float64, int32, int64 or bool; 16-bit floats come as float32), NaN the
// largest, -0.0 equal to 0.0; descending inverts the order of the keys only.
void argsort_rows(DType t, const void* x, int64_t* out, int64_t lines, int64_t n, bool descending);

// ---- batch_norm (batch_norm.cu) -------------------------------------------
// x contiguous [N, C, S] of float32/float64 (t); per-channel statistics in
// double, as the CPU kernel (runtime/src/batch_norm.cpp).
// Training: mean[c] and the biased var[c] of the batch (two passes).
void bn_channel_stats(DType t, const void* x, int64_t N, int64_t C, int64_t S, double* mean, double* var);
// invstd = 1 / sqrt(var + eps); with rm/rv (double, may be null) and
// `update`: running = (1 - momentum) * running + momentum * batch (var
// unbiased by `unbias`).
void bn_finish(const double* mean, const double* var, double* invstd, int64_t C, double eps, double* rm, double* rv,
               double momentum, double unbias);
// y = x * scale + shift per channel; w, b (type t) may be null.
void bn_normalize(DType t, const void* x, const double* mean, const double* invstd, const void* w, const void* b,
                  void* y, int64_t N, int64_t C, int64_t S);
// gx (if not null), gw, gb (each may be null), from g and x.
void bn_backward(DType t, bool training, const void* g, const void* x, const void* w, const double* mean,
                 const double* invstd, void* gx, void* gw, void* gb, int64_t N, int64_t C, int64_t S);

// ---- interpolate (interpolate.cu) -----------------------------------------
// Planes of ih x iw (contiguous) resized to oh x ow: nearest (mode 0) on
// elements of `elem` bytes; linear (1, one row) and bilinear (2) in t
// (float32/float64). The source indices and weights are computed per output
// as the CPU kernel's tables (runtime/src/interpolate.cpp), rounding alike.
struct Resample {
  int mode = 0;
  bool align_corners = false;
  double scale = 0.0;  // > 0: the user's scale_factor
  int64_t planes = 0, ih = 1, iw = 1, oh = 1, ow = 1;
};
void interpolate_forward(DType t, size_t elem, const void* x, void* out, const Resample& r);
// gx (zeroed, [planes, ih, iw]) += g read back through the same weights, by
// atomic adds (float32/float64; the order of the sums varies).
void interpolate_backward(DType t, const void* g, void* gx, const Resample& r);

}  // namespace graph::cuda
