#pragma once
// The CUDA backend's host API: device queries, memory, and the eager kernels
// over raw device pointers. Plain C++ (no CUDA headers, no Tensor), so the
// runtime can call it without including CUDA; the runtime turns tensors into
// pointers and a Geometry (runtime/src/cuda_dispatch.cpp).
//
// Kernels are queued on the default stream and are asynchronous; the copies
// to the host synchronize.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/cuda/allocator.h"
#include "graph/cuda/fused.h"
#include "graph/cuda/launch.h"
#include "graph/dtype.h"
#include "graph/op_table.h"

namespace graph::cuda {

// The number of CUDA devices; 0 when there is none or the driver fails, with
// `why` (when given) set to cudaGetDeviceCount's error string.
int device_count(std::string* why = nullptr);
// Throws graph::Error "<what>: no CUDA device (cudaGetDeviceCount: <error>)".
void require_device(const std::string& what);
DeviceLimits device_limits();  // of the current device, queried once

// The process-wide caching allocator over cudaMalloc/cudaFree.
BlockCache& device_allocator();

// The stream this thread's kernels, library calls and copies go to:
// nullptr (the legacy default stream) unless a CUDA Graph capture or replay
// (capture.h) set its own for the duration. StreamGuard sets and restores it.
Stream current_stream();
void set_current_stream(Stream s);
struct StreamGuard {
  explicit StreamGuard(Stream s) : prev(current_stream()) { set_current_stream(s); }
  ~StreamGuard() { set_current_stream(prev); }
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  Stream prev;
};

// On the current stream. `src` may be reused when it returns; up to 64 KiB
// the host does not wait for the stream (pinned staging), larger copies do.
void copy_host_to_device(void* dst, const void* src, size_t nbytes);
// Waits for the current stream: the data is on the host when it returns.
void copy_device_to_host(void* dst, const void* src, size_t nbytes);
void copy_device_to_device(void* dst, const void* src, size_t nbytes);
void memset_zero(void* dst, size_t nbytes);
void synchronize();

// ---- elementwise kernels (elementwise.cu) ------------------------------
// Operand 0 of the geometry is the output, then the inputs. `compute` is the
// op's compute dtype (op_table.h compute_dtype); inputs already have it and
// the output has the scalar body's natural result type (bool for ToBool).
void unary(OpId op, DType compute, void* out, const void* x, const Geometry& g);
void binary(OpId op, DType compute, void* out, const void* a, const void* b, const Geometry& g);
// out = convert<out_t>(in) elementwise (to(dtype), contiguous(), clone()).
void convert(DType out_t, void* out, DType in_t, const void* in, const Geometry& g);

// ---- row-wise kernels (reduce.cu) ---------------------------------------
// Over `rows` contiguous rows of `n` elements each: one result per row.
enum class Reduction { Sum, Mean, Max, Min, ArgMax };
// `in_t` float32/float64/int32/int64/bool; `out_t` as the op table says
// (sum of integers: int64, argmax: int64).
void reduce_rows(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t rows,
                 int64_t n);
// The same over the columns of a dense [n, cols] matrix: one result per
// column (reduced dims leading, as a bias gradient's sum over the batch).
void reduce_columns(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t n, int64_t cols);
// softmax (or log_softmax) of each row; float32 or float64.
void softmax_rows(bool log, DType t, const void* in, void* out, int64_t rows, int64_t n);

// ---- library calls (blas.cpp, via cuBLAS) --------------------------------
// How cuBLAS reads one operand of a row-major product, a [..., r, c] view
// with `ndim` >= 2 dims: row-major (ld: the row stride) or as the transpose
// of a row-major matrix (a t() view; ld: the column stride), one matrix
// every batch_stride elements (0: one matrix for every batch). in_place is
// false for any other layout: the caller passes a contiguous copy instead.
struct GemmOperand {
  bool in_place = false;
  bool transposed = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};
GemmOperand gemm_operand(int ndim, const int64_t* sizes, const int64_t* strides);
// The cuBLAS call for row-major C[i] = A[i] (m x k) * B[i] (k x n), i <
// batch, C dense. cuBLAS is column-major: a row-major C is a column-major
// C^T = B^T A^T, so cuBLAS's A is our B and its B our A, sizes swapped.
// One product takes classic cuBLAS (gemv for one row, as PyTorch's mm
// does), several the strided batched call. Fields in cuBLAS's names.
struct BlasCall {
  enum class Kind { Gemv, Gemm, StridedBatched } kind = Kind::Gemm;
  bool transa = false, transb = false;  // CUBLAS_OP_T; gemv: transa only
  int64_t m = 0, n = 0, k = 0;          // gemv: the matrix is m x n (as stored)
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // StridedBatched
  int64_t incx = 1;                                  // gemv: x is our A's row
  int64_t batch = 1;
};
// Throws graph::Error for sizes beyond cuBLAS's int range or an operand
// that is not in_place.
BlasCall plan_gemm(const GemmOperand& a, const GemmOperand& b, int64_t batch, int64_t m, int64_t n, int64_t k);
// Runs plan_gemm's call; float32 or float64, FP32/FP64 compute (no TF32).
// Empty products (batch, m or n 0) do nothing; k 0 is the caller's.
void gemm(DType t, const void* a, const GemmOperand& oa, const void* b, const GemmOperand& ob, void* c,
          int64_t batch, int64_t m, int64_t n, int64_t k);

// y[n] = x[k] @ W for float32, W row-major with row stride ldw (cuBLAS's gemv
// without transpose), as one programmatic dependent launch (gemv.cu): for
// small matrices, where launch latency is what counts. gemm takes it for one
// row when small_gemv_applies (k <= 2048, k * n <= 2^20).
bool small_gemv_applies(int64_t k, int64_t n);
void small_gemv(const float* x, int64_t incx, const float* w, int64_t ldw, float* y, int64_t k, int64_t n);

// ---- a GEMM with its elementwise epilogue in one cuBLASLt call ---------------
// Row-major out[rows, n] = x[rows, k] @ W (+ bias[n]) (then relu), W either
// [k, n] or, for linear's weight, [n, k] used transposed. cuBLASLt is
// column-major, so it computes out^T = W^T x^T: its A is W, its B is x.
enum class LtEpilogue { None, Bias, Relu, ReluBias };  // CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _RELU, _RELU_BIAS
struct LtGemmPlan {
  bool trans_a = false;           // CUBLAS_OP_T on W (linear's [n, k] weight)
  int64_t a_rows = 0, a_cols = 0, lda = 0;  // W's column-major layout as stored
  int64_t b_rows = 0, b_cols = 0, ldb = 0;  // x's
  int64_t m = 0, n = 0, k = 0, ldc = 0;     // D = op(A) op(B): m x n, column-major
  LtEpilogue epilogue = LtEpilogue::None;
};
// Throws graph::Error for sizes beyond cuBLASLt's or empty products (the
// caller handles those without a GEMM).
LtGemmPlan plan_lt_gemm(int64_t rows, int64_t k, int64_t n, bool weight_transposed, bool bias, bool relu);
// Runs the plan (float32, FP32 compute, no TF32); false when cuBLASLt finds
// no algorithm for it, so the caller runs the GEMM and epilogue separately.
bool gemm_lt(const LtGemmPlan& p, DType t, const void* x, const void* w, const void* bias, void* out);

// ---- optimizer updates (optim.cu) --------------------------------------------
// One in-place kernel over a parameter's n dense elements, with the math of
// the CPU loops in runtime/src/optim.cpp (scalars in double, cast to T).
struct SgdStep {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first = false;  // the momentum buffer's first step: buf = d
};
// buf: the momentum buffer, null without momentum.
void sgd_update(DType t, void* p, const void* g, void* buf, int64_t n, const SgdStep& o);
struct AdamStep {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  int64_t step = 1;  // 1 on the first update
};
// vmax: the running maximum of v (amsgrad), null without.
void adam_update(DType t, void* p, const void* g, void* m, void* v, void* vmax, int64_t n, const AdamStep& o);

// ---- nn kernels (nn.cu); conv2d and pooling are in dnn.h (cuDNN) ----------
// layer_norm over `rows` contiguous rows of M: y, and each row's mean and
// 1/sqrt(var + eps) (of type t, for the backward). w, b may be null.
void layer_norm_rows(DType t, const void* x, const void* w, const void* b, void* y, void* mean, void* rstd,
                     int64_t rows, int64_t M, double eps);
// Any of gx, gw, gb may be null (not wanted); w may be null.
void layer_norm_backward_rows(DType t, const void* g, const void* x, const void* w, const void* mean,
                              const void* rstd, void* gx, void* gw, void* gb, int64_t rows, int64_t M);
// out = cond ? a : b; the geometry's operands are out, cond, a, b (elements
// of `elem` bytes; cond bool).
void where_select(size_t elem, void* out, const void* cond, const void* a, const void* b, const FusedGeometry& g);
// out[i, :] = table[idx[i], :] (rows of D elements of `elem` bytes, num rows
// in the table, n indices). False (out holds zeros at those rows) when an
// index is outside [0, num), one of them in *bad_index; synchronizes. With
// bad_index null the caller has checked the indices: no check, no wait.
bool gather_rows(size_t elem, const void* table, int64_t num, int64_t D, const int64_t* idx, int64_t n, void* out,
                 int64_t* bad_index);
// table_grad[idx[i], :] += grad[i, :] (atomic adds: the order of the sums,
// and so the last bits of float results, vary between runs).
void scatter_add_rows(DType t, const void* grad, const int64_t* idx, int64_t n, int64_t D, void* table_grad);

}  // namespace graph::cuda
