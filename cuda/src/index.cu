// Indexing and scan kernels (tensor_kernels.h): one strided gather and one
// strided scatter-add serve index_select, gather, scatter_add and their
// gradients; triu/tril; cumsum. Elements are moved as unsigned words of
// their size wherever values are not read (one instantiation per width).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/tensor_kernels.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {
using detail::by_size;

using detail::grid_start;
using detail::grid_step;

// The dst, src and index offsets of position i, and the index's value k
// placed on the side it addresses. False when k is outside [0, limit).
__device__ inline bool walk_offsets(const IndexWalk& w, const int64_t* idx, int64_t i, int64_t& od, int64_t& os) {
  int64_t coord[kMaxIndexDims];
  int64_t oi = 0;
  od = 0, os = 0;
  for (int d = w.ndim - 1; d >= 0; --d) {
    const int64_t c = i % w.sizes[d];
    i /= w.sizes[d];
    coord[d] = c;
    oi += c * w.idx[d];
    if (d != w.dim) od += c * w.dst[d], os += c * w.src[d];
  }
  const int64_t k = idx[oi];
  if (k < 0 || k >= w.limit) return false;
  if (w.index_dst) od += k * w.dst[w.dim], os += coord[w.dim] * w.src[w.dim];
  else od += coord[w.dim] * w.dst[w.dim], os += k * w.src[w.dim];
  return true;
}

template <class U>
__global__ void gather_kernel(U* __restrict__ dst, const U* __restrict__ src, const int64_t* __restrict__ idx,
                              IndexWalk w, int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    int64_t od, os;
    if (walk_offsets(w, idx, i, od, os)) dst[od] = src[os];
  }
}

// atomicAdd for the four dtypes scatter_add adds in; int64 as the unsigned
// 64-bit add (two's complement: the same bits).
__device__ inline void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void atomic_add(int32_t* p, int32_t v) { atomicAdd(reinterpret_cast<int*>(p), static_cast<int>(v)); }
__device__ inline void atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

template <class T>
__global__ void scatter_kernel(T* dst, const T* __restrict__ src, const int64_t* __restrict__ idx, IndexWalk w,
                               int64_t n) {
  for (int64_t i = grid_start(); i < n; i += grid_step()) {
    int64_t od, os;
    if (walk_offsets(w, idx, i, od, os)) atomic_add(dst + od, src[os]);
  }
}

// The smallest position of a bad index, by atomicMin (all positions are >= 0).
__global__ void bad_index_kernel(const int64_t* __restrict__ p, int64_t n, int64_t size, unsigned long long* first) {
  for (int64_t i = grid_start(); i < n; i += grid_step())
    if (static_cast<uint64_t>(p[i]) >= static_cast<uint64_t>(size)) atomicMin(first, static_cast<unsigned long long>(i));
}

template <class U>
__global__ void triangle_kernel(U* __restrict__ out, const U* __restrict__ in, int64_t total, int64_t rows,
                                int64_t cols, int64_t diagonal, bool upper) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    const bool keep = upper ? j - i >= diagonal : j - i <= diagonal;
    out[e] = keep ? in[e] : U(0);
  }
}

// One thread per line; neighbouring threads take neighbouring inner
// positions (coalesced reads for inner > 1).
template <class T, class Acc>
__global__ void cumsum_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t lines, int64_t n, int64_t inner,
                              bool reverse) {
  for (int64_t l = grid_start(); l < lines; l += grid_step()) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    const int64_t step = reverse ? -inner : inner;
    Acc s = 0;
    for (int64_t j = 0, off = base + (reverse ? (n - 1) * inner : 0); j < n; ++j, off += step) {
      s += static_cast<Acc>(in[off]);
      out[off] = static_cast<T>(s);
    }
  }
}


int64_t positions(const IndexWalk& w) {
  int64_t n = 1;
  for (int d = 0; d < w.ndim; ++d) n *= w.sizes[d];
  return w.ndim ? n : 1;
}

}  // namespace

int64_t find_bad_index(const int64_t* p, int64_t n, int64_t size) {
  const LaunchConfig c = elementwise_launch(n, 1, device_limits());
  if (!c.blocks) return -1;
  constexpr unsigned long long kNone = ~0ull;
  void* flag = device_allocator().allocate(sizeof(unsigned long long), current_stream());
  unsigned long long host = kNone;
  try {
    copy_host_to_device(flag, &host, sizeof host);
    bad_index_kernel<<<c.blocks, c.threads, 0, detail::stream()>>>(p, n, size, static_cast<unsigned long long*>(flag));
    detail::check_launch("index check");
    copy_device_to_host(&host, flag, sizeof host);  // synchronizes
  } catch (...) {
    device_allocator().release(flag);
    throw;
  }
  device_allocator().release(flag);
  return host == kNone ? -1 : static_cast<int64_t>(host);
}

void index_gather(size_t elem, void* dst, const void* src, const int64_t* idx, const IndexWalk& w) {
  const int64_t n = positions(w);
  const LaunchConfig c = elementwise_launch(n, 1, device_limits());
  if (!c.blocks) return;
  by_size("gather", elem, [&](auto v) {
    using U = decltype(v);
    gather_kernel<U><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<U*>(dst), static_cast<const U*>(src),
                                                                    idx, w, n);
  });
  detail::check_launch("gather");
}

void index_scatter_add(DType t, void* dst, const void* src, const int64_t* idx, const IndexWalk& w) {
  const int64_t n = positions(w);
  const LaunchConfig c = elementwise_launch(n, 1, device_limits());
  if (!c.blocks) return;
  const auto run = [&](auto v) {
    using T = decltype(v);
    scatter_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<T*>(dst), static_cast<const T*>(src),
                                                                     idx, w, n);
  };
  if (t == kFloat32) run(float{});
  else if (t == kFloat64) run(double{});
  else if (t == kInt32) run(int32_t{});
  else if (t == kInt64) run(int64_t{});
  else throw Error("scatter_add: cuda: no atomic add for " + std::string(dtype_name(t)));
  detail::check_launch("scatter_add");
}

void triangle(size_t elem, void* out, const void* in, int64_t lines, int64_t rows, int64_t cols, int64_t diagonal,
              bool upper) {
  const int64_t total = lines * cols;
  const LaunchConfig c = elementwise_launch(total, 1, device_limits());
  if (!c.blocks) return;
  by_size(upper ? "triu" : "tril", elem, [&](auto v) {
    using U = decltype(v);
    triangle_kernel<U><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<U*>(out), static_cast<const U*>(in),
                                                                      total, rows, cols, diagonal, upper);
  });
  detail::check_launch(upper ? "triu" : "tril");
}

void cumsum_lines(DType t, const void* in, void* out, int64_t outer, int64_t n, int64_t inner, bool reverse) {
  const int64_t lines = outer * inner;
  const LaunchConfig c = elementwise_launch(lines, 1, device_limits());
  if (!c.blocks || n == 0) return;
  const auto run = [&](auto v, auto acc) {
    using T = decltype(v);
    cumsum_kernel<T, decltype(acc)><<<c.blocks, c.threads, 0, detail::stream()>>>(
        static_cast<const T*>(in), static_cast<T*>(out), lines, n, inner, reverse);
  };
  if (t == kFloat32) run(float{}, double{});
  else if (t == kFloat64) run(double{}, double{});
  else if (t == kInt64) run(int64_t{}, int64_t{});
  else throw Error("cumsum: cuda: float32, float64 or int64 only, got " + std::string(dtype_name(t)));
  detail::check_launch("cumsum");
}

}  // namespace graph::cuda
