// Hand kernels of the nn ops that do not go through cuDNN: layer_norm
// (forward and backward; cuDNN 9 has it only in its graph API), where, and
// embedding's gather and scatter-add. Small on purpose (nvcc time): no
// per-op template fan-out beyond float/double and element sizes.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/fused.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {
using detail::float_or_double;
using detail::by_size;

using detail::grid_start;
using detail::grid_step;
using detail::block_sum;

// One block per row: mean, then the variance around it (two passes, as the
// CPU kernel, so rows far from 0 lose nothing), then y.
template <class T>
__global__ void layer_norm_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                                  T* __restrict__ y, T* __restrict__ mean, T* __restrict__ rstd, int64_t rows,
                                  int64_t M, double eps) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * M;
    T* yr = y + r * M;
    T s = 0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) s += xr[j];
    const T mu = block_sum(s) / static_cast<T>(M);
    T v = 0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const T d = xr[j] - mu;
      v += d * d;
    }
    const T rs = T(1) / std::sqrt(block_sum(v) / static_cast<T>(M) + static_cast<T>(eps));
    if (threadIdx.x == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      T o = (xr[j] - mu) * rs;
      if (w) o *= w[j];
      if (b) o += b[j];
      yr[j] = o;
    }
  }
}

// dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w * xhat)), one block per row.
template <class T>
__global__ void layer_norm_grad_x(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w,
                                  const T* __restrict__ mean, const T* __restrict__ rstd, T* __restrict__ gx,
                                  int64_t rows, int64_t M) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* gr = g + r * M;
    const T* xr = x + r * M;
    const T mu = mean[r], rs = rstd[r];
    T a = 0, c = 0;
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const T gy = w ? gr[j] * w[j] : gr[j];
      a += gy;
      c += gy * (xr[j] - mu) * rs;
    }
    a = block_sum(a) / static_cast<T>(M);
    c = block_sum(c) / static_cast<T>(M);
    for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
      const T gy = w ? gr[j] * w[j] : gr[j];
      gx[r * M + j] = rs * (gy - a - (xr[j] - mu) * rs * c);
    }
  }
}

// dw[j] = sum_r dy * xhat, db[j] = sum_r dy: one thread per column, rows in
// order (deterministic; reads are coalesced across the threads of a row).
template <class T>
__global__ void layer_norm_grad_wb(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ mean,
                                   const T* __restrict__ rstd, T* __restrict__ gw, T* __restrict__ gb, int64_t rows,
                                   int64_t M) {
  for (int64_t j = grid_start(); j < M; j += grid_step()) {
    T aw = 0, ab = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T gj = g[r * M + j];
      aw += gj * (x[r * M + j] - mean[r]) * rstd[r];
      ab += gj;
    }
    if (gw) gw[j] = aw;
    if (gb) gb[j] = ab;
  }
}

// out = cond ? a : b over a FusedGeometry of 4 operands (out, cond, a, b),
// elements moved as unsigned integers of their size.
template <class U>
__global__ void where_kernel(U* __restrict__ o, const bool* __restrict__ c, const U* __restrict__ a,
                             const U* __restrict__ b, FusedIndex<4> ix, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    if (ix.contiguous) {
      o[i] = c[i] ? a[i] : b[i];
    } else {
      int64_t off[4];
      fused_offsets(ix, i, off);
      o[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
    }
  }
}

// out[i, :] = table[idx[i], :] for rows of D elements; an index outside
// [0, num) writes zeros and records itself in *bad (the last one wins).
template <class U>
__global__ void gather_kernel(const U* __restrict__ table, const int64_t* __restrict__ idx, U* __restrict__ out,
                              int64_t n, int64_t D, int64_t num, unsigned long long* bad) {
  const int64_t total = n * D;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t i = e / D, j = e - i * D;
    const int64_t k = idx[i];
    if (k < 0 || k >= num) {
      out[e] = U(0);
      if (j == 0 && bad) atomicExch(bad, static_cast<unsigned long long>(k));
    } else {
      out[e] = table[k * D + j];
    }
  }
}

template <class T>
__global__ void scatter_add_kernel(const T* __restrict__ g, const int64_t* __restrict__ idx, T* __restrict__ gw,
                                   int64_t n, int64_t D) {
  const int64_t total = n * D;
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t i = e / D, j = e - i * D;
    atomicAdd(gw + idx[i] * D + j, g[e]);
  }
}



}  // namespace

void layer_norm_rows(DType t, const void* x, const void* w, const void* b, void* y, void* mean, void* rstd,
                     int64_t rows, int64_t M, double eps) {
  const LaunchConfig c = row_launch(rows, M, device_limits());
  if (!c.blocks || M == 0) return;
  float_or_double("layer_norm", t, [&](auto v) {
    using T = decltype(v);
    layer_norm_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                                  static_cast<const T*>(b), static_cast<T*>(y), static_cast<T*>(mean),
                                                  static_cast<T*>(rstd), rows, M, eps);
  });
  detail::check_launch("layer_norm");
}

void layer_norm_backward_rows(DType t, const void* g, const void* x, const void* w, const void* mean,
                              const void* rstd, void* gx, void* gw, void* gb, int64_t rows, int64_t M) {
  if (rows == 0 || M == 0) return;
  float_or_double("layer_norm backward", t, [&](auto v) {
    using T = decltype(v);
    if (gx) {
      const LaunchConfig c = row_launch(rows, M, device_limits());
      layer_norm_grad_x<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(g), static_cast<const T*>(x),
                                                    static_cast<const T*>(w), static_cast<const T*>(mean),
                                                    static_cast<const T*>(rstd), static_cast<T*>(gx), rows, M);
    }
    if (gw || gb) {
      const LaunchConfig c = elementwise_launch(M, 1, device_limits());
      layer_norm_grad_wb<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(g), static_cast<const T*>(x),
                                                     static_cast<const T*>(mean), static_cast<const T*>(rstd),
                                                     static_cast<T*>(gw), static_cast<T*>(gb), rows, M);
    }
  });
  detail::check_launch("layer_norm backward");
}

void where_select(size_t elem, void* out, const void* cond, const void* a, const void* b, const FusedGeometry& g) {
  const LaunchConfig c = elementwise_launch(g.numel, 1, device_limits());
  if (!c.blocks) return;
  const FusedIndex<4> ix = fused_index<4>(g);
  by_size("where", elem, [&](auto v) {
    using U = decltype(v);
    where_kernel<U><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<U*>(out), static_cast<const bool*>(cond),
                                             static_cast<const U*>(a), static_cast<const U*>(b), ix, g.numel);
  });
  detail::check_launch("where");
}

bool gather_rows(size_t elem, const void* table, int64_t num, int64_t D, const int64_t* idx, int64_t n, void* out,
                 int64_t* bad_index) {
  const LaunchConfig c = elementwise_launch(n * D, 1, device_limits());
  if (!c.blocks) return true;
  if (!bad_index) {  // checked by the caller
    by_size("embedding", elem, [&](auto v) {
      using U = decltype(v);
      gather_kernel<U><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const U*>(table), idx,
                                                                      static_cast<U*>(out), n, D, num, nullptr);
    });
    detail::check_launch("embedding");
    return true;
  }
  constexpr unsigned long long kNone = 0x7fffffffffffffffull;  // never a bad index (those are < 0 or >= num)
  void* flag = device_allocator().allocate(sizeof(unsigned long long));
  bool ok = true;
  try {
    unsigned long long host = kNone;
    copy_host_to_device(flag, &host, sizeof host);
    by_size("embedding", elem, [&](auto v) {
      using U = decltype(v);
      gather_kernel<U><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const U*>(table), idx, static_cast<U*>(out), n, D, num,
                                                static_cast<unsigned long long*>(flag));
    });
    detail::check_launch("embedding");
    copy_device_to_host(&host, flag, sizeof host);  // synchronizes: the range check is exact
    if (host != kNone) {
      ok = false;
      if (bad_index) *bad_index = static_cast<int64_t>(host);
    }
  } catch (...) {
    device_allocator().release(flag);
    throw;
  }
  device_allocator().release(flag);
  return ok;
}

void scatter_add_rows(DType t, const void* grad, const int64_t* idx, int64_t n, int64_t D, void* table_grad) {
  const LaunchConfig c = elementwise_launch(n * D, 1, device_limits());
  if (!c.blocks) return;
  float_or_double("embedding backward", t, [&](auto v) {
    using T = decltype(v);
    scatter_add_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(grad), idx, static_cast<T*>(table_grad), n, D);
  });
  detail::check_launch("embedding backward");
}

}  // namespace graph::cuda
