#pragma once
// Shared by the .cu files: launch error checks and strided offsets.
#include <cuda_runtime.h>

#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/launch.h"
#include "graph/error.h"

namespace graph::cuda::detail {

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
__device__ inline int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace graph::cuda::detail
