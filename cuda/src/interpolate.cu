// interpolate on the device (tensor_kernels.h): one thread per output
// element, its source indices and weights computed in place with the CPU
// tables' arithmetic (runtime/src/interpolate.cpp: nearest_table,
// LinearTable), products and sums rounded one by one (no contraction into
// fma) so the results are the CPU's bits. The backward scatters each
// output's gradient by atomic adds.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/tensor_kernels.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {
using detail::float_or_double;

using detail::grid_start;
using detail::grid_step;

// One resized dim: in -> out, nearest's float step, linear's step and corner ratio.
struct Axis {
  int64_t in = 1, out = 1;
  float nearest = 0;
  double step = 0, corner = 0;
  bool align_corners = false;
};

Axis axis(int64_t in, int64_t out, const Resample& r) {
  Axis a;
  a.in = in, a.out = out, a.align_corners = r.align_corners;
  a.nearest = r.scale > 0 ? static_cast<float>(1.0 / r.scale) : static_cast<float>(in) / static_cast<float>(out);
  a.step = r.scale > 0 ? 1.0 / r.scale : static_cast<double>(in) / static_cast<double>(out);
  a.corner = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return a;
}

__device__ inline int64_t nearest_src(const Axis& a, int64_t j) {
  if (a.out == a.in) return j;
  if (a.out == 2 * a.in) return j >> 1;
  const int64_t k = static_cast<int64_t>(floorf(__fmul_rn(static_cast<float>(j), a.nearest)));
  return k < a.in - 1 ? k : a.in - 1;
}

__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }

template <class T>
struct Taps {
  int64_t i0, i1;
  T w0, w1;
};

template <class T>
__device__ inline Taps<T> linear_src(const Axis& a, int64_t j) {
  const double dst = static_cast<double>(j);
  const double src = a.align_corners ? __dmul_rn(dst, a.corner)
                                     : fmax(__dadd_rn(__dmul_rn(__dadd_rn(dst, 0.5), a.step), -0.5), 0.0);
  const int64_t i = static_cast<int64_t>(src);
  const T w = static_cast<T>(fmin(fmax(__dsub_rn(src, static_cast<double>(i)), 0.0), 1.0));
  return {i, i + 1 < a.in - 1 ? i + 1 : a.in - 1, T(1) - w, w};
}

template <class U>
__global__ void nearest_kernel(const U* __restrict__ x, U* __restrict__ o, Axis h, Axis c, bool rows, int64_t total) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t j = e % c.out, i = (e / c.out) % h.out, p = e / (c.out * h.out);
    const int64_t si = rows ? nearest_src(h, i) : 0;
    o[e] = x[(p * h.in + si) * c.in + nearest_src(c, j)];
  }
}

template <class T>
__global__ void linear_kernel(const T* __restrict__ x, T* __restrict__ o, Axis h, Axis c, bool rows, int64_t total) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t j = e % c.out, i = (e / c.out) % h.out, p = e / (c.out * h.out);
    const Taps<T> tc = linear_src<T>(c, j);
    const T* xp = x + p * h.in * c.in;
    if (!rows) {
      o[e] = add(mul(xp[tc.i0], tc.w0), mul(xp[tc.i1], tc.w1));
      continue;
    }
    const Taps<T> th = linear_src<T>(h, i);
    const T* a = xp + th.i0 * c.in;
    const T* b = xp + th.i1 * c.in;
    const T u = add(mul(a[tc.i0], tc.w0), mul(a[tc.i1], tc.w1));
    const T v = add(mul(b[tc.i0], tc.w0), mul(b[tc.i1], tc.w1));
    o[e] = add(mul(u, th.w0), mul(v, th.w1));
  }
}

template <class T>
__global__ void backward_kernel(const T* __restrict__ g, T* gx, Axis h, Axis c, bool rows, bool nearest,
                                int64_t total) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    const int64_t j = e % c.out, i = (e / c.out) % h.out, p = e / (c.out * h.out);
    T* gp = gx + p * h.in * c.in;
    if (nearest) {
      atomicAdd(gp + (rows ? nearest_src(h, i) : 0) * c.in + nearest_src(c, j), g[e]);
      continue;
    }
    const Taps<T> tc = linear_src<T>(c, j);
    const Taps<T> th = rows ? linear_src<T>(h, i) : Taps<T>{0, 0, T(1), T(0)};
    T* a = gp + th.i0 * c.in;
    const T ga = mul(g[e], th.w0);
    atomicAdd(a + tc.i0, mul(ga, tc.w0));
    atomicAdd(a + tc.i1, mul(ga, tc.w1));
    if (!rows) continue;
    T* b = gp + th.i1 * c.in;
    const T gb = mul(g[e], th.w1);
    atomicAdd(b + tc.i0, mul(gb, tc.w0));
    atomicAdd(b + tc.i1, mul(gb, tc.w1));
  }
}


}  // namespace

void interpolate_forward(DType t, size_t elem, const void* x, void* out, const Resample& r) {
  const int64_t total = r.planes * r.oh * r.ow;
  const LaunchConfig c = elementwise_launch(total, 1, device_limits());
  if (!c.blocks) return;
  const Axis h = axis(r.ih, r.oh, r), w = axis(r.iw, r.ow, r);
  const bool rows = r.mode == 2 || (r.mode == 0 && r.ih * r.oh != 1);
  if (r.mode == 0) {
    const auto run = [&](auto v) {
      using U = decltype(v);
      nearest_kernel<U><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const U*>(x), static_cast<U*>(out),
                                                                       h, w, rows, total);
    };
    switch (elem) {
      case 1: run(uint8_t{}); break;
      case 2: run(uint16_t{}); break;
      case 4: run(uint32_t{}); break;
      default: run(uint64_t{}); break;
    }
  } else {
    float_or_double("interpolate", t, [&](auto v) {
      using T = decltype(v);
      linear_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(x), static_cast<T*>(out),
                                                                      h, w, rows, total);
    });
  }
  detail::check_launch("interpolate");
}

void interpolate_backward(DType t, const void* g, void* gx, const Resample& r) {
  const int64_t total = r.planes * r.oh * r.ow;
  const LaunchConfig c = elementwise_launch(total, 1, device_limits());
  if (!c.blocks) return;
  const Axis h = axis(r.ih, r.oh, r), w = axis(r.iw, r.ow, r);
  const bool rows = r.mode == 2 || (r.mode == 0 && r.ih * r.oh != 1);
  float_or_double("interpolate_backward", t, [&](auto v) {
    using T = decltype(v);
    backward_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const T*>(g), static_cast<T*>(gx), h,
                                                                      w, rows, r.mode == 0, total);
  });
  detail::check_launch("interpolate_backward");
}

}  // namespace graph::cuda
