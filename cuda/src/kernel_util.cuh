#pragma once
// Shared by the .cu files: launch error checks and strided offsets.
#include <cuda_runtime.h>

#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/launch.h"
#include "graph/error.h"

namespace graph::cuda::detail {

// Calls f with a value of the element type: float or double, the two dtypes
// of the floating kernels; any other dtype is an error naming `op`.
template <class F>
void float_or_double(const char* op, DType t, F&& f) {
  if (t == kFloat32) f(float{});
  else if (t == kFloat64) f(double{});
  else throw Error(std::string(op) + ": cuda: float32 or float64 only, got " + std::string(dtype_name(t)));
}

// Calls f with an unsigned integer as wide as an element: for kernels that
// only move elements, whatever their dtype.
template <class F>
void by_size(const char* op, size_t elem, F&& f) {
  switch (elem) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: throw Error(std::string(op) + ": cuda: no kernel for " + std::to_string(elem) + "-byte elements");
  }
}

// The stream kernels are launched on (cuda.h current_stream).
inline cudaStream_t stream() { return static_cast<cudaStream_t>(current_stream()); }

// Throws graph::Error naming `op` when the last launch failed.
inline void check_launch(const char* op) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string(op) + ": cuda kernel launch: " + cudaGetErrorString(e));
}

// Element offset of operand k for linear output index i: the index
// decomposed over the collapsed dims, innermost last.
__device__ inline int64_t offset_of(const Geometry& g, int k, int64_t i) {
  int64_t off = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t size = g.sizes[d];
    off += (i % size) * g.strides[k][d];
    i /= size;
  }
  return off;
}

__device__ inline int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
// The sum of `v` over the block (blockDim.x a power of two <= 1024, as
// row_launch gives); every thread gets it.
template <class A>
__device__ inline A block_sum(A v) {
  __shared__ A buf[32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) buf[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  A t = 0;
  for (int w = 0; w < warps; ++w) t += buf[w];
  __syncthreads();  // buf is reused by the next call
  return t;
}

__device__ inline int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace graph::cuda::detail
