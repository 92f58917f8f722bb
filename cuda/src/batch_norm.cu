// batch_norm on the device (tensor_kernels.h): the CPU kernel's arithmetic
// (runtime/src/batch_norm.cpp) with a block per channel for the statistics
// and the backward's sums, accumulated in double. Hand kernels rather than
// cuDNN's batch norm (the legacy API, deprecated in cuDNN 9): cuDNN keeps
// float32 data's statistics in float, where the op and its CPU kernel work in
// double (two-pass variance), so the device stays within rounding of the CPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/tensor_kernels.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {
using detail::float_or_double;

using detail::block_sum;
using detail::grid_start;
using detail::grid_step;

// Channel c's elements: for e in [0, N * S), x[(n * C + c) * S + i].
__device__ inline int64_t at(int64_t e, int64_t c, int64_t C, int64_t S) {
  const int64_t n = e / S, i = e - n * S;
  return (n * C + c) * S + i;
}

template <class T>
__global__ void stats_kernel(const T* __restrict__ x, int64_t N, int64_t C, int64_t S, double* mean, double* var) {
  const int64_t M = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    double s = 0;
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x) s += static_cast<double>(x[at(e, c, C, S)]);
    const double mu = block_sum(s) / static_cast<double>(M);
    double v = 0;
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
      const double d = static_cast<double>(x[at(e, c, C, S)]) - mu;
      v += d * d;
    }
    v = block_sum(v);
    if (threadIdx.x == 0) {
      mean[c] = mu;
      var[c] = v / static_cast<double>(M);
    }
  }
}

__global__ void finish_kernel(const double* mean, const double* var, double* invstd, int64_t C, double eps, double* rm,
                              double* rv, double momentum, double unbias) {
  for (int64_t c = grid_start(); c < C; c += grid_step()) {
    invstd[c] = 1.0 / std::sqrt(var[c] + eps);
    if (!rm) continue;
    rm[c] = (1 - momentum) * rm[c] + momentum * mean[c];
    rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * unbias;
  }
}

template <class T>
__global__ void normalize_kernel(const T* __restrict__ x, const double* __restrict__ mean,
                                 const double* __restrict__ invstd, const T* w, const T* b, T* __restrict__ y,
                                 int64_t total, int64_t C, int64_t S) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t c = (e / S) % C;
    const double scale = invstd[c] * (w ? static_cast<double>(w[c]) : 1.0);
    const T a = static_cast<T>(scale);
    const T s = static_cast<T>((b ? static_cast<double>(b[c]) : 0.0) - mean[c] * scale);
    y[e] = x[e] * a + s;
  }
}

// The CPU's backward_channels: sums of g and g * (x - mean) per channel,
// then gx = k * (g - (sg + xhat * sgx) / M) in training, k * g in eval.
template <class T>
__global__ void backward_kernel(bool training, const T* __restrict__ g, const T* __restrict__ x, const T* w,
                                const double* __restrict__ mean, const double* __restrict__ invstd, T* gx, T* gw,
                                T* gb, int64_t N, int64_t C, int64_t S) {
  const int64_t M = N * S;
  for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
    const double mu = mean[c], is = invstd[c];
    double sg = 0, sgx = 0;
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
      const int64_t o = at(e, c, C, S);
      sg += static_cast<double>(g[o]);
      sgx += static_cast<double>(g[o]) * (static_cast<double>(x[o]) - mu);
    }
    sg = block_sum(sg);
    sgx = block_sum(sgx) * is;
    if (threadIdx.x == 0) {
      if (gw) gw[c] = static_cast<T>(sgx);
      if (gb) gb[c] = static_cast<T>(sg);
    }
    if (!gx) continue;
    const double k = (w ? static_cast<double>(w[c]) : 1.0) * is;
    for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
      const int64_t o = at(e, c, C, S);
      double d = static_cast<double>(g[o]);
      if (training) d -= (sg + (static_cast<double>(x[o]) - mu) * is * sgx) / static_cast<double>(M);
      gx[o] = static_cast<T>(k * d);
    }
  }
}


}  // namespace

void bn_channel_stats(DType t, const void* x, int64_t N, int64_t C, int64_t S, double* mean, double* var) {
  const LaunchConfig c = row_launch(C, N * S, device_limits());
  if (!c.blocks) return;
  float_or_double("batch_norm", t, [&](auto v) {
    using T = decltype(v);
    stats_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(x), N, C, S, mean, var);
  });
  detail::check_launch("batch_norm");
}

void bn_finish(const double* mean, const double* var, double* invstd, int64_t C, double eps, double* rm, double* rv,
               double momentum, double unbias) {
  const LaunchConfig c = elementwise_launch(C, 1, device_limits());
  if (!c.blocks) return;
  finish_kernel<<<c.blocks, c.threads, 0, detail::stream()>>>(mean, var, invstd, C, eps, rm, rv, momentum, unbias);
  detail::check_launch("batch_norm");
}

void bn_normalize(DType t, const void* x, const double* mean, const double* invstd, const void* w, const void* b,
                  void* y, int64_t N, int64_t C, int64_t S) {
  const int64_t total = N * C * S;
  const LaunchConfig c = elementwise_launch(total, 1, device_limits());
  if (!c.blocks) return;
  float_or_double("batch_norm", t, [&](auto v) {
    using T = decltype(v);
    normalize_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(
        static_cast<const T*>(x), mean, invstd, static_cast<const T*>(w), static_cast<const T*>(b), static_cast<T*>(y),
        total, C, S);
  });
  detail::check_launch("batch_norm");
}

void bn_backward(DType t, bool training, const void* g, const void* x, const void* w, const double* mean,
                 const double* invstd, void* gx, void* gw, void* gb, int64_t N, int64_t C, int64_t S) {
  const LaunchConfig c = row_launch(C, N * S, device_limits());
  if (!c.blocks) return;
  float_or_double("batch_norm backward", t, [&](auto v) {
    using T = decltype(v);
    backward_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(
        training, static_cast<const T*>(g), static_cast<const T*>(x), static_cast<const T*>(w), mean, invstd,
        static_cast<T*>(gx), static_cast<T*>(gw), static_cast<T*>(gb), N, C, S);
  });
  detail::check_launch("batch_norm backward");
}

}  // namespace graph::cuda
