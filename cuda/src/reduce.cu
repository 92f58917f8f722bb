// Row-wise kernels: reductions and softmax over contiguous rows, one block
// per row (a grid-stride loop over rows when there are more rows than the
// grid holds). The runtime moves the reduced dims last and makes the input
// contiguous first (runtime/src/cuda_dispatch.cpp), except where they lead
// a dense input: a kernel over its columns reads that as it is.
#include <cuda_runtime.h>

#include <algorithm>
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

// Over the columns of a dense [n, cols] matrix (reduced dims leading: a
// bias gradient's sum over the batch), without transposing it first.
// Blocks of 32 columns x 32 row groups: loads coalesce along each row, each
// thread takes every 32nd row in order, then a tree over the row groups.
template <class Op, class In, class A, class Out>
__global__ void __launch_bounds__(1024) reduce_columns_kernel(const In* x, Out* y, int64_t n, int64_t cols, bool divide, bool index) {
  __shared__ Acc<A> buf[32][33];  // padded: the tree reads down columns
  const unsigned tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t c0 = int64_t{blockIdx.x} * 32; c0 < cols; c0 += int64_t{gridDim.x} * 32) {
    const int64_t c = c0 + tx;
    Acc<A> a = Op::init();
    if (c < cols)
      for (int64_t r = ty; r < n; r += 32) a = Op::combine(a, Acc<A>{static_cast<A>(x[r * cols + c]), r});
    buf[ty][tx] = a;
    __syncthreads();
    for (unsigned s = 16; s > 0; s /= 2) {
      if (ty < s) buf[ty][tx] = Op::combine(buf[ty][tx], buf[ty + s][tx]);
      __syncthreads();
    }
    if (ty == 0 && c < cols) {
      const Acc<A> total = buf[0][tx];
      if (index) y[c] = static_cast<Out>(total.i < 0 ? 0 : total.i);
      else y[c] = static_cast<Out>(divide ? total.v / static_cast<A>(n) : total.v);
    }
    __syncthreads();  // buf is reused by the next columns
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

// The rows kernel over `rows` rows of n, or (columns) the columns kernel
// over the `rows` columns of an [n, rows] matrix.
template <class Op, class In, class A>
void launch_reduce(const void* in, DType out_t, void* out, int64_t rows, int64_t n, bool divide, bool index,
                   bool columns) {
  const DeviceLimits limits = device_limits();
  const LaunchConfig c = row_launch(rows, n, limits);
  if (!c.blocks) return;
  dispatch_dtype(out_t, [&](auto o) {
    using Out = decltype(o);
    if constexpr (std::is_same_v<Out, A> || std::is_same_v<Out, int64_t>) {
      const In* x = static_cast<const In*>(in);
      Out* y = static_cast<Out*>(out);
      if (columns) {
        const int64_t blocks = std::min<int64_t>((rows + 31) / 32, limits.max_grid_x);
        reduce_columns_kernel<Op, In, A, Out><<<blocks, dim3(32, 32), 0, detail::stream()>>>(x, y, n, rows, divide, index);
      } else {
        reduce_kernel<Op, In, A, Out><<<c.blocks, c.threads, 0, detail::stream()>>>(x, y, rows, n, divide, index);
      }
    } else {
      throw Error("reduce: cuda: no kernel giving " + std::string(dtype_name(out_t)));
    }
  });
}

template <template <class> class Op, class In>
void reduce_typed(const void* in, DType out_t, void* out, int64_t rows, int64_t n, bool divide, bool index,
                  bool columns) {
  using A = std::conditional_t<std::is_floating_point_v<In>, In, int64_t>;
  launch_reduce<Op<A>, In, A>(in, out_t, out, rows, n, divide, index, columns);
}

void reduce_any(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t rows, int64_t n,
                bool columns) {
  auto run = [&](auto v) {
    using In = decltype(v);
    if constexpr (std::is_same_v<In, Half> || std::is_same_v<In, BFloat16>) {
      throw Error("reduce: cuda: 16-bit inputs are converted to float32 first");
    } else {
      switch (r) {
        case Reduction::Sum: return reduce_typed<SumOp, In>(in, out_t, out, rows, n, false, false, columns);
        case Reduction::Mean: return reduce_typed<SumOp, In>(in, out_t, out, rows, n, true, false, columns);
        case Reduction::Max: return reduce_typed<MaxOp, In>(in, out_t, out, rows, n, false, false, columns);
        case Reduction::Min: return reduce_typed<MinOp, In>(in, out_t, out, rows, n, false, false, columns);
        case Reduction::ArgMax: return reduce_typed<ArgMaxOp, In>(in, out_t, out, rows, n, false, true, columns);
      }
    }
  };
  dispatch_dtype(in_t, run);
  detail::check_launch("reduce");
}

}  // namespace

void reduce_rows(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t rows, int64_t n) {
  reduce_any(r, in_t, in, out_t, out, rows, n, false);
}

void reduce_columns(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t n, int64_t cols) {
  reduce_any(r, in_t, in, out_t, out, cols, n, true);
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
