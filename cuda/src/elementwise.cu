// Eager elementwise kernels: every unary and binary op of ops.def, through the
// same graph::scalar bodies as the CPU kernels and the generated loops.
//
// Two kernels per op and type: a contiguous one (operands dense or a single
// broadcast value; 16-byte vector loads when every pointer is aligned and the
// types have one size), and a strided one for any other geometry.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/scalar_ops.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {

using detail::grid_start;
using detail::grid_step;
using detail::offset_of;

// One functor per op, so kernels are templates over the op.
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                        \
  struct name##_fn {                                                                    \
    template <class T>                                                                  \
    __host__ __device__ auto operator()(T x) const { return ::graph::scalar::name(x); } \
  };
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                               \
  struct name##_fn {                                                                    \
    template <class T>                                                                  \
    __host__ __device__ auto operator()(T a, T b) const { return ::graph::scalar::name(a, b); } \
  };
#include "graph/ops.def"

template <class T, int V>
struct alignas(16) Pack {
  T v[V];
};

// sa, sb in {0, 1}: a dense input or one broadcast value.
template <class R, class C, class F>
__global__ void binary_contiguous(R* __restrict__ o, const C* __restrict__ a, const C* __restrict__ b,
                                  int64_t n, int sa, int sb, bool vec, F f) {
  constexpr int V = 16 / sizeof(C);
  int64_t start = 0;
  if constexpr (sizeof(R) == sizeof(C) && V > 1) {
    if (vec) {  // sa == sb == 1, every pointer 16-byte aligned
      const int64_t packs = n / V;
      for (int64_t p = grid_start(); p < packs; p += grid_step()) {
        const Pack<C, V> pa = reinterpret_cast<const Pack<C, V>*>(a)[p];
        const Pack<C, V> pb = reinterpret_cast<const Pack<C, V>*>(b)[p];
        Pack<R, V> po;
#pragma unroll
        for (int j = 0; j < V; ++j) po.v[j] = f(pa.v[j], pb.v[j]);
        reinterpret_cast<Pack<R, V>*>(o)[p] = po;
      }
      start = packs * V;
    }
  }
  for (int64_t i = start + grid_start(); i < n; i += grid_step()) o[i] = f(a[i * sa], b[i * sb]);
}

template <class R, class C, class F>
__global__ void binary_strided(R* o, const C* a, const C* b, Geometry g, F f) {
  for (int64_t i = grid_start(); i < g.numel; i += grid_step())
    o[offset_of(g, 0, i)] = f(a[offset_of(g, 1, i)], b[offset_of(g, 2, i)]);
}

template <class R, class C, class F>
__global__ void unary_contiguous(R* __restrict__ o, const C* __restrict__ x, int64_t n, bool vec, F f) {
  constexpr int V = 16 / sizeof(C);
  int64_t start = 0;
  if constexpr (sizeof(R) == sizeof(C) && V > 1) {
    if (vec) {
      const int64_t packs = n / V;
      for (int64_t p = grid_start(); p < packs; p += grid_step()) {
        const Pack<C, V> px = reinterpret_cast<const Pack<C, V>*>(x)[p];
        Pack<R, V> po;
#pragma unroll
        for (int j = 0; j < V; ++j) po.v[j] = f(px.v[j]);
        reinterpret_cast<Pack<R, V>*>(o)[p] = po;
      }
      start = packs * V;
    }
  }
  for (int64_t i = start + grid_start(); i < n; i += grid_step()) o[i] = f(x[i]);
}

template <class R, class C, class F>
__global__ void unary_strided(R* o, const C* x, Geometry g, F f) {
  for (int64_t i = grid_start(); i < g.numel; i += grid_step())
    o[offset_of(g, 0, i)] = f(x[offset_of(g, 1, i)]);
}

// A geometry the contiguous kernels take: one dense dim (or one element)
// with each input dense or a single value. Sets the input steps.
bool dense_or_scalar(const Geometry& g, int* steps) {
  if (g.ndim > 1) return false;
  if (g.ndim == 1 && g.strides[0][0] != 1) return false;
  for (int k = 1; k < g.operands; ++k) {
    const int64_t s = g.ndim == 0 ? 0 : g.strides[k][0];
    if (s != 0 && s != 1) return false;
    steps[k - 1] = static_cast<int>(s);
  }
  return true;
}

template <class C, class F>
void launch_unary(const char* name, void* out, const void* in, const Geometry& g, F f) {
  using R = decltype(f(C{}));
  R* o = static_cast<R*>(out);
  const C* x = static_cast<const C*>(in);
  int steps[2] = {1, 1};
  if (dense_or_scalar(g, steps) && steps[0] == 1) {
    const void* ptrs[] = {out, in};
    const int vec = sizeof(R) == sizeof(C) ? vector_width(sizeof(C), ptrs, 2) : 1;
    const LaunchConfig c = elementwise_launch(g.numel, vec, device_limits());
    if (c.blocks) unary_contiguous<R, C><<<c.blocks, c.threads, 0, detail::stream()>>>(o, x, g.numel, vec > 1, f);
  } else {
    const LaunchConfig c = elementwise_launch(g.numel, 1, device_limits());
    if (c.blocks) unary_strided<R, C><<<c.blocks, c.threads, 0, detail::stream()>>>(o, x, g, f);
  }
  detail::check_launch(name);
}

template <class C, class F>
void launch_binary(const char* name, void* out, const void* pa, const void* pb, const Geometry& g, F f) {
  using R = decltype(f(C{}, C{}));
  R* o = static_cast<R*>(out);
  const C* a = static_cast<const C*>(pa);
  const C* b = static_cast<const C*>(pb);
  int steps[2] = {1, 1};
  if (dense_or_scalar(g, steps)) {
    const void* ptrs[] = {out, pa, pb};
    const bool dense = steps[0] == 1 && steps[1] == 1;
    const int vec = dense && sizeof(R) == sizeof(C) ? vector_width(sizeof(C), ptrs, 3) : 1;
    const LaunchConfig c = elementwise_launch(g.numel, vec, device_limits());
    if (c.blocks)
      binary_contiguous<R, C><<<c.blocks, c.threads, 0, detail::stream()>>>(o, a, b, g.numel, steps[0], steps[1], vec > 1, f);
  } else {
    const LaunchConfig c = elementwise_launch(g.numel, 1, device_limits());
    if (c.blocks) binary_strided<R, C><<<c.blocks, c.threads, 0, detail::stream()>>>(o, a, b, g, f);
  }
  detail::check_launch(name);
}

// Calls f(T{}) for the compute types an op of `rule` can have (compute_dtype):
// ToFloat ops compute only in float and double, so their bodies are never
// instantiated for integers (std::log(int64_t) has no device version).
template <DTypeRule rule, class F>
void dispatch_compute(const char* name, DType t, F f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    default: break;
  }
  if constexpr (rule != DTypeRule::ToFloat) {
    switch (t) {
      case DType::Int32: return f(int32_t{});
      case DType::Int64: return f(int64_t{});
      case DType::Bool: return f(bool{});
      default: break;
    }
  }
  throw Error(std::string(name) + ": cuda: no kernel for compute dtype " + std::string(dtype_name(t)));
}

}  // namespace

void unary(OpId op, DType compute, void* out, const void* x, const Geometry& g) {
  switch (op) {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                              \
  case OpId::name:                                                                            \
    return dispatch_compute<DTypeRule::rule>(#name, compute, [&](auto c) {                    \
      launch_unary<decltype(c)>(#name, out, x, g, name##_fn{});                               \
    });
#include "graph/ops.def"
    default: break;
  }
  throw Error(std::string(op_info(op).name) + ": cuda: not a unary elementwise op");
}

void binary(OpId op, DType compute, void* out, const void* a, const void* b, const Geometry& g) {
  switch (op) {
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                     \
  case OpId::name:                                                                            \
    return dispatch_compute<DTypeRule::rule>(#name, compute, [&](auto c) {                    \
      launch_binary<decltype(c)>(#name, out, a, b, g, name##_fn{});                           \
    });
#include "graph/ops.def"
    default: break;
  }
  throw Error(std::string(op_info(op).name) + ": cuda: not a binary elementwise op");
}

// ---- dtype conversion ------------------------------------------------------

namespace {

// static_cast, except that floating values outside an integer type's range
// give its minimum, as on the CPU (storage.h detail::convert).
template <class To, class From>
__device__ To convert_value(From v) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert_value<To>(static_cast<float>(v));
  } else if constexpr ((std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) &&
                       !std::is_same_v<From, float>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    const double d = static_cast<double>(v);
    if (!(d >= lo && d < -lo)) return std::numeric_limits<To>::min();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <class D, class S>
__global__ void convert_kernel(D* o, const S* x, Geometry g) {
  if (g.contiguous()) {
    for (int64_t i = grid_start(); i < g.numel; i += grid_step()) o[i] = convert_value<D>(x[i]);
  } else {
    for (int64_t i = grid_start(); i < g.numel; i += grid_step())
      o[offset_of(g, 0, i)] = convert_value<D>(x[offset_of(g, 1, i)]);
  }
}

}  // namespace

void convert(DType out_t, void* out, DType in_t, const void* in, const Geometry& g) {
  const LaunchConfig c = elementwise_launch(g.numel, 1, device_limits());
  if (!c.blocks) return;
  dispatch_dtype(out_t, [&](auto d) {
    dispatch_dtype(in_t, [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      convert_kernel<D, S><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<D*>(out), static_cast<const S*>(in), g);
    });
  });
  detail::check_launch("copy");
}

}  // namespace graph::cuda
