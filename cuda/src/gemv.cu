// A one-row float32 product for small matrices (cuda.h small_gemv): an LSTM
// step's h [1, k] @ w_h [k, n]. What costs there is latency, not bandwidth:
// the weights fit in L2 and the product is a few thousand FMAs. cuBLAS's gemv
// kernel cannot start before the kernel ahead of it in the stream has ended;
// this one is launched as a programmatic dependent launch (fused.h), as the
// generated kernels are, so its launch overlaps the previous kernel's tail.
// Measured on an H200, 100 steps of [1, 64] @ [64, 256] plus the gate kernel
// in one CUDA graph: 248 us with both launched this way, 363 us with
// cuBLAS's gemv.
#include <cuda_runtime.h>

#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/fused.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

constexpr int kCols = 256;   // output columns per block
constexpr int kSlices = 4;   // k split over this many threads per column, summed in order

// y[col] = sum over i < k of x[i * incx] * w[i * ldw + col], col < n.
__global__ void small_gemv_kernel(const float* __restrict__ x, int64_t incx, const float* __restrict__ w,
                                  int64_t ldw, float* __restrict__ y, int k, int n) {
  __shared__ float part[kSlices][kCols];
  fused_prologue();
  const int c = threadIdx.x % kCols, s = threadIdx.x / kCols;
  const int col = blockIdx.x * kCols + c;
  const int per = (k + kSlices - 1) / kSlices;
  const int i0 = s * per, i1 = min(k, i0 + per);
  float acc = 0.0f;
  if (col < n) {
#pragma unroll 4
    for (int i = i0; i < i1; ++i) acc = fmaf(x[i * incx], w[i * ldw + col], acc);
  }
  part[s][c] = acc;
  __syncthreads();
  if (s == 0 && col < n) {
    float sum = part[0][c];
#pragma unroll
    for (int q = 1; q < kSlices; ++q) sum += part[q][c];
    y[col] = sum;
  }
}

}  // namespace

bool small_gemv_applies(int64_t k, int64_t n) { return k >= 1 && n >= 1 && k <= 2048 && k * n <= (int64_t{1} << 20); }

void small_gemv(const float* x, int64_t incx, const float* w, int64_t ldw, float* y, int64_t k, int64_t n) {
  if (!small_gemv_applies(k, n)) throw Error("matmul: cuda: small_gemv of k " + std::to_string(k) + ", n " + std::to_string(n));
  LaunchConfig launch;
  launch.blocks = (n + kCols - 1) / kCols;
  launch.threads = kCols * kSlices;
  launch.pdl = pdl_allowed();
  launch_fused(small_gemv_kernel, launch, current_stream(), x, incx, w, ldw, y, static_cast<int>(k),
               static_cast<int>(n));
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string("matmul: cuda: small_gemv launch: ") + cudaGetErrorString(e));
}

}  // namespace graph::cuda
