// Launch geometry (launch.h): host code only, tested without a GPU.
#include "graph/cuda/launch.h"
#include "graph/cuda/cuda.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "collapse.h"
#include "graph/error.h"

namespace graph::cuda {

Geometry collapse(const char* op, int ndim, const int64_t* shape, int operands,
                  const int64_t* const* strides) {
  if (operands < 1 || operands > kMaxOperands)
    throw Error(std::string(op) + ": cuda: " + std::to_string(operands) + " operands (at most " +
                std::to_string(kMaxOperands) + ")");
  if (ndim > 64) throw Error(std::string(op) + ": cuda: more than 64 dims");
  Geometry g;
  detail::collapse_into<kMaxOperands, kMaxDims>(g, op, "the CUDA kernels", ndim, shape, operands, strides);
  return g;
}

int vector_width(size_t elem, const void* const* ptrs, int n) {
  if (elem == 0 || elem > 16 || 16 % elem != 0) return 1;
  for (int i = 0; i < n; ++i)
    if (reinterpret_cast<uintptr_t>(ptrs[i]) % 16 != 0) return 1;
  return static_cast<int>(16 / elem);
}

LaunchConfig elementwise_launch(int64_t numel, int vec, const DeviceLimits& limits) {
  LaunchConfig c;
  if (numel <= 0) return c;
  c.vec = std::max(vec, 1);
  c.threads = 256;
  const int64_t items = (numel + c.vec - 1) / c.vec;  // one vector per thread-iteration
  const int64_t needed = (items + c.threads - 1) / c.threads;
  // Four waves of resident blocks hide latency; beyond that the grid-stride
  // loop is cheaper than more blocks.
  const int64_t resident = int64_t{limits.sm_count} * (limits.max_threads_per_sm / c.threads);
  c.blocks = std::clamp<int64_t>(needed, 1, std::min<int64_t>(resident * 4, limits.max_grid_x));
  return c;
}

LaunchConfig row_launch(int64_t rows, int64_t row_length, const DeviceLimits& limits) {
  LaunchConfig c;
  if (rows <= 0) return c;
  c.threads = 32;
  while (c.threads < 1024 && c.threads < row_length) c.threads *= 2;
  c.blocks = std::min<int64_t>(rows, limits.max_grid_x);
  return c;
}

ReduceLaunch fused_reduce_launch(int64_t rows, int64_t row_length, size_t acc_size, const DeviceLimits& limits) {
  if (rows < 0 || row_length < 0)
    throw Error("fused reduction: cuda: negative size (" + std::to_string(rows) + " rows of " +
                std::to_string(row_length) + ")");
  if (acc_size == 0) throw Error("fused reduction: cuda: an accumulator of 0 bytes");
  ReduceLaunch r;
  if (rows == 0) return r;
  r.threads = 32;
  while (r.threads < 1024 && r.threads < row_length) r.threads *= 2;
  if (rows > 1) {
    r.blocks = std::min<int64_t>(rows, limits.max_grid_x);
    return r;
  }
  // One output: enough blocks to fill the device (each thread reducing at
  // least 4 elements before the block's tree), at most 1024 partials.
  constexpr int64_t kMaxPartials = 1024;
  const int64_t per_block = int64_t{r.threads} * 4;
  const int64_t needed = (row_length + per_block - 1) / per_block;
  const int64_t resident = int64_t{limits.sm_count} * std::max(limits.max_threads_per_sm / r.threads, 1);
  r.blocks = std::clamp<int64_t>(needed, 1, std::min({resident, kMaxPartials, limits.max_grid_x}));
  if (r.blocks > 1) {
    r.two_stage = true;
    r.stage2_threads = 32;
    while (r.stage2_threads < r.blocks) r.stage2_threads *= 2;
    r.scratch_bytes = static_cast<size_t>(r.blocks) * acc_size;
  }
  return r;
}

LtGemmPlan plan_lt_gemm(int64_t rows, int64_t k, int64_t n, bool weight_transposed, bool bias, bool relu) {
  if (rows <= 0 || k <= 0 || n <= 0)
    throw Error("matmul epilogue: cuda: an empty product (" + std::to_string(rows) + "x" + std::to_string(k) + " @ " +
                std::to_string(k) + "x" + std::to_string(n) + ") takes no GEMM");
  constexpr int64_t kMax = 2147483647;
  if (rows > kMax || k > kMax || n > kMax)
    throw Error("matmul epilogue: cuda: sizes beyond 2^31 - 1 are not supported");
  LtGemmPlan p;
  p.trans_a = weight_transposed;
  // W row-major [k, n] is column-major n x k (ld n); [n, k] is k x n (ld k).
  p.a_rows = weight_transposed ? k : n;
  p.a_cols = weight_transposed ? n : k;
  p.lda = p.a_rows;
  // x row-major [rows, k] is column-major k x rows (ld k).
  p.b_rows = k, p.b_cols = rows, p.ldb = k;
  p.m = n, p.n = rows, p.k = k, p.ldc = n;
  p.epilogue = bias ? (relu ? LtEpilogue::ReluBias : LtEpilogue::Bias) : (relu ? LtEpilogue::Relu : LtEpilogue::None);
  return p;
}

}  // namespace graph::cuda
