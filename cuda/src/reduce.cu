// Row-wise kernels: reductions and softmax over contiguous rows, one block
// per row (a grid-stride loop over rows when there are more rows than the
// grid holds). The runtime moves the reduced dims last and makes the input
// contiguous first (runtime/src/cuda_dispatch.cpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>

#include "graph/cuda/cuda.h"
#include "graph/scalar_ops.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {

// The accumulator of a reduction: its value and (for argmax) its index.
template <class A>
struct Acc {
  A v;
  int64_t i;
};

template <class A>
struct SumOp {
  __device__ static Acc<A> init() { return {A(0), 0}; }
  __device__ static Acc<A> combine(Acc<A> x, Acc<A> y) { return {x.v + y.v, 0}; }
};
// The identity of max: -inf for floats (a row of -inf has max -inf), the
// lowest value for integers.
template <class A>
__device__ A lowest() {
  return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
}
template <class A>
__device__ A highest() {
  return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
}

// max/min propagate NaN, as the CPU reductions and graph::scalar::maximum do.
template <class A>
struct MaxOp {
  __device__ static Acc<A> init() { return {lowest<A>(), 0}; }
  __device__ static Acc<A> combine(Acc<A> x, Acc<A> y) { return {::graph::scalar::maximum(x.v, y.v), 0}; }
};
template <class A>
struct MinOp {
  __device__ static Acc<A> init() { return {highest<A>(), 0}; }
  __device__ static Acc<A> combine(Acc<A> x, Acc<A> y) { return {::graph::scalar::minimum(x.v, y.v), 0}; }
};
// The first index of the largest value; a NaN counts as the largest.
template <class A>
struct ArgMaxOp {
  __device__ static Acc<A> init() { return {lowest<A>(), -1}; }
  __device__ static Acc<A> combine(Acc<A> x, Acc<A> y) {
    if (x.i < 0) return y;
    if (y.i < 0) return x;
    const bool xnan = x.v != x.v, ynan = y.v != y.v;
    if (xnan || ynan) return xnan && (!ynan || x.i < y.i) ? x : y;
    if (x.v != y.v) return x.v > y.v ? x : y;
    return x.i < y.i ? x : y;
  }
};

// Block-wide combine through shared memory; every thread gets the result.
template <class Op, class A>
__device__ Acc<A> block_combine(Acc<A> a) {
  __shared__ Acc<A> buf[1024];
  buf[threadIdx.x] = a;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) buf[threadIdx.x] = Op::combine(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  const Acc<A> r = buf[0];
  __syncthreads();  // buf is reused by the next row
  return r;
}

// The element types accumulate in A (int64 for integers and bool, the input
// type otherwise); `divide` makes it a mean.
template <class Op, class In, class A, class Out>
__global__ void reduce_kernel(const In* x, Out* y, int64_t rows, int64_t n, bool divide, bool index) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const In* row = x + r * n;
    Acc<A> a = Op::init();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) a = Op::combine(a, Acc<A>{static_cast<A>(row[j]), j});
    const Acc<A> total = block_combine<Op>(a);
    if (threadIdx.x == 0) {
      if (index) y[r] = static_cast<Out>(total.i < 0 ? 0 : total.i);
      else y[r] = static_cast<Out>(divide ? total.v / static_cast<A>(n) : total.v);
    }
  }
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t n, bool log) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* in = x + r * n;
    T* out = y + r * n;
    Acc<T> m = MaxOp<T>::init();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOp<T>::combine(m, {in[j], j});
    const T mx = block_combine<MaxOp<T>>(m).v;
    Acc<T> s = SumOp<T>::init();
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s.v += ::graph::math::exp(in[j] - mx);
    const T sum = block_combine<SumOp<T>>(s).v;
    const T log_sum = std::log(sum);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      out[j] = log ? in[j] - mx - log_sum : ::graph::math::exp(in[j] - mx) / sum;
  }
}

template <class Op, class In, class A>
void launch_reduce(const void* in, DType out_t, void* out, int64_t rows, int64_t n, bool divide, bool index) {
  const LaunchConfig c = row_launch(rows, n, device_limits());
  if (!c.blocks) return;
  dispatch_dtype(out_t, [&](auto o) {
    using Out = decltype(o);
    if constexpr (std::is_same_v<Out, A> || std::is_same_v<Out, int64_t>) {
      reduce_kernel<Op, In, A, Out><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const In*>(in), static_cast<Out*>(out),
                                                             rows, n, divide, index);
    } else {
      throw Error("reduce: cuda: no kernel giving " + std::string(dtype_name(out_t)));
    }
  });
}

template <template <class> class Op, class In>
void reduce_typed(const void* in, DType out_t, void* out, int64_t rows, int64_t n, bool divide, bool index) {
  using A = std::conditional_t<std::is_floating_point_v<In>, In, int64_t>;
  launch_reduce<Op<A>, In, A>(in, out_t, out, rows, n, divide, index);
}

}  // namespace

void reduce_rows(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t rows, int64_t n) {
  auto run = [&](auto v) {
    using In = decltype(v);
    if constexpr (std::is_same_v<In, Half> || std::is_same_v<In, BFloat16>) {
      throw Error("reduce: cuda: 16-bit inputs are converted to float32 first");
    } else {
      switch (r) {
        case Reduction::Sum: return reduce_typed<SumOp, In>(in, out_t, out, rows, n, false, false);
        case Reduction::Mean: return reduce_typed<SumOp, In>(in, out_t, out, rows, n, true, false);
        case Reduction::Max: return reduce_typed<MaxOp, In>(in, out_t, out, rows, n, false, false);
        case Reduction::Min: return reduce_typed<MinOp, In>(in, out_t, out, rows, n, false, false);
        case Reduction::ArgMax: return reduce_typed<ArgMaxOp, In>(in, out_t, out, rows, n, false, true);
      }
    }
  };
  dispatch_dtype(in_t, run);
  detail::check_launch("reduce");
}

void softmax_rows(bool log, DType t, const void* in, void* out, int64_t rows, int64_t n) {
  const char* name = log ? "log_softmax" : "softmax";
  const LaunchConfig c = row_launch(rows, n, device_limits());
  if (!c.blocks) return;
  if (t == kFloat32) {
    softmax_kernel<float><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const float*>(in), static_cast<float*>(out), rows, n, log);
  } else if (t == kFloat64) {
    softmax_kernel<double><<<c.blocks, c.threads, 0, detail::stream()>>>(static_cast<const double*>(in), static_cast<double*>(out), rows, n, log);
  } else {
    throw Error(std::string(name) + ": cuda: float32 or float64 only, got " + std::string(dtype_name(t)));
  }
  detail::check_launch(name);
}

}  // namespace graph::cuda
