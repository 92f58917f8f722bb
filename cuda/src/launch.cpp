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

namespace graph::cuda {

namespace {

// Row-major leading dimension of an [r, c] matrix with strides (s0, s1), or
// 0 when it is not row-major with unit inner stride. Size-1 dims are never
// stepped, so their strides do not matter; cuBLAS wants ld >= max(c, 1).
int64_t row_major_ld(int64_t r, int64_t c, int64_t s0, int64_t s1) {
  const int64_t min_ld = std::max<int64_t>(c, 1);
  if (c > 1 && s1 != 1) return 0;
  if (r <= 1) return min_ld;
  return s0 >= min_ld ? s0 : 0;
}

}  // namespace

GemmOperand gemm_operand(int ndim, const int64_t* sizes, const int64_t* strides) {
  GemmOperand o;
  if (ndim < 2) return o;
  const int64_t r = sizes[ndim - 2], c = sizes[ndim - 1], s0 = strides[ndim - 2], s1 = strides[ndim - 1];
  constexpr int64_t kMaxLd = 2147483647;  // cuBLAS takes int leading dimensions
  if (const int64_t ld = row_major_ld(r, c, s0, s1); ld > 0 && ld <= kMaxLd) {
    o.ld = ld;
  } else if (const int64_t ldt = row_major_ld(c, r, s1, s0); ldt > 0 && ldt <= kMaxLd) {
    o.transposed = true;  // the transpose of a row-major [c, r] matrix
    o.ld = ldt;
  } else {
    return o;
  }
  // The batch dims must step by one stride (size-1 dims aside): a batch of
  // views, a broadcast (stride 0) or a dense stack.
  bool first = true;
  int64_t expected = 0;
  for (int d = ndim - 3; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] < 0) return GemmOperand{};
    if (first) {
      o.batch_stride = strides[d];
      first = false;
    } else if (strides[d] != expected) {
      return GemmOperand{};
    }
    expected = strides[d] * sizes[d];
  }
  o.in_place = true;
  return o;
}

BlasCall plan_gemm(const GemmOperand& a, const GemmOperand& b, int64_t batch, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMax = 2147483647;  // cuBLAS takes int sizes
  if (m > kMax || n > kMax || k > kMax || batch > kMax)
    throw Error("matmul: cuda: sizes beyond 2^31 - 1 are not supported");
  if (!a.in_place || !b.in_place) throw Error("matmul: cuda: an operand layout cuBLAS cannot read (internal error)");
  BlasCall c;
  c.batch = batch;
  if (batch == 1 && m == 1) {
    // One row: c^T = B^T a^T, a matrix-vector product. B row-major [k, n]
    // is column-major n x k as stored; B stored transposed ([n, k]) is
    // column-major k x n, used transposed. a's elements step by 1, or by
    // its ld when it is stored as a column.
    c.kind = BlasCall::Kind::Gemv;
    c.transa = b.transposed;
    c.m = b.transposed ? k : n;
    c.n = b.transposed ? n : k;
    c.lda = b.ld;
    c.incx = a.transposed ? a.ld : 1;
    return c;
  }
  c.kind = batch == 1 ? BlasCall::Kind::Gemm : BlasCall::Kind::StridedBatched;
  c.transa = b.transposed, c.transb = a.transposed;
  c.m = n, c.n = m, c.k = k;
  c.lda = b.ld, c.ldb = a.ld, c.ldc = n;
  c.stride_a = b.batch_stride, c.stride_b = a.batch_stride, c.stride_c = m * n;
  return c;
}

}  // namespace graph::cuda
