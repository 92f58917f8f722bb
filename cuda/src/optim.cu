// Optimizer updates (cuda.h sgd_update, adam_update): one in-place kernel per
// parameter, with the CPU loops' math (runtime/src/optim.cpp) step for step.
// The _rn intrinsics keep nvcc from contracting a * b + c into one fused
// multiply-add, which the CPU loops (built without FMA) never do.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "graph/cuda/cuda.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {

using detail::grid_start;
using detail::grid_step;

__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline double div(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline float root(float a) { return __fsqrt_rn(a); }
__device__ inline double root(double a) { return __dsqrt_rn(a); }

template <class T>
struct SgdScalars {
  T wd, mom, damp1, neg_lr;
};

template <class T>
__global__ void sgd_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, int64_t n,
                           SgdScalars<T> s, bool decay, bool first, bool nesterov) {
  for (int64_t j = grid_start(); j < n; j += grid_step()) {
    T d = g[j];
    if (decay) d = add(d, mul(s.wd, p[j]));
    if (buf) {
      const T b = first ? d : add(mul(buf[j], s.mom), mul(s.damp1, d));
      buf[j] = b;
      d = nesterov ? add(d, mul(s.mom, b)) : b;
    }
    p[j] = add(p[j], mul(s.neg_lr, d));
  }
}

template <class T>
struct AdamScalars {
  T b1, c1, b2, c2, wd, eps, bc2_sqrt, neg_step_size;
};

template <class T>
__global__ void adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
                            T* __restrict__ vmax, int64_t n, AdamScalars<T> s, bool decay) {
  for (int64_t j = grid_start(); j < n; j += grid_step()) {
    T grad = g[j];
    if (decay) grad = add(grad, mul(s.wd, p[j]));
    const T mj = add(mul(m[j], s.b1), mul(s.c1, grad));
    const T vj = add(mul(v[j], s.b2), mul(mul(s.c2, grad), grad));
    m[j] = mj;
    v[j] = vj;
    T second = vj;
    if (vmax) {
      if (vmax[j] < vj || isnan(vj)) vmax[j] = vj;
      second = vmax[j];
    }
    const T denom = add(div(root(second), s.bc2_sqrt), s.eps);
    p[j] = add(p[j], div(mul(s.neg_step_size, mj), denom));
  }
}

template <class F>
void float_types(const char* what, DType t, F f) {
  if (t == kFloat32) return f(float{});
  if (t == kFloat64) return f(double{});
  throw Error(std::string(what) + ": cuda: float32 or float64 parameters only, got " + std::string(dtype_name(t)));
}

}  // namespace

void sgd_update(DType t, void* p, const void* g, void* buf, int64_t n, const SgdStep& o) {
  float_types("SGD", t, [&](auto v) {
    using T = decltype(v);
    const SgdScalars<T> s{static_cast<T>(o.weight_decay), static_cast<T>(o.momentum),
                          static_cast<T>(1.0 - o.dampening), static_cast<T>(-o.lr)};
    const LaunchConfig c = elementwise_launch(n, 1, device_limits());
    if (c.blocks)
      sgd_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<T*>(p), static_cast<const T*>(g),
                                                                  static_cast<T*>(buf), n, s, o.weight_decay != 0,
                                                                  o.first, o.nesterov);
  });
  detail::check_launch("SGD");
}

void adam_update(DType t, void* p, const void* g, void* m, void* v, void* vmax, int64_t n, const AdamStep& o) {
  float_types("Adam", t, [&](auto tag) {
    using T = decltype(tag);
    // As the CPU loop: bias corrections in double, then cast.
    const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(o.step));
    const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(o.step));
    const AdamScalars<T> s{static_cast<T>(o.beta1),        static_cast<T>(1.0 - o.beta1),
                           static_cast<T>(o.beta2),        static_cast<T>(1.0 - o.beta2),
                           static_cast<T>(o.weight_decay), static_cast<T>(o.eps),
                           static_cast<T>(std::sqrt(bc2)), static_cast<T>(-(o.lr / bc1))};
    const LaunchConfig c = elementwise_launch(n, 1, device_limits());
    if (c.blocks)
      adam_kernel<T><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<T*>(p), static_cast<const T*>(g),
                                                                   static_cast<T*>(m), static_cast<T*>(v),
                                                                   static_cast<T*>(vmax), n, s, o.weight_decay != 0);
  });
  detail::check_launch("Adam");
}

}  // namespace graph::cuda
