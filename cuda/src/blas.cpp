// Matrix products through cuBLAS (cuda.h gemm).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

// One handle per thread: cuBLAS handles are not safe to share between
// threads that call at once.
cublasHandle_t handle() {
  thread_local cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    const cublasStatus_t s = cublasCreate(&created);
    if (s != CUBLAS_STATUS_SUCCESS)
      throw Error(std::string("matmul: cublasCreate: ") + cublasGetStatusString(s));
    return created;
  }();
  return h;
}

void check(cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("matmul: cublas: ") + cublasGetStatusString(s));
}

template <class T>
struct Blas;
template <>
struct Blas<float> {
  static constexpr auto gemv = cublasSgemv;
  static constexpr auto gemm = cublasSgemm;
  static constexpr auto batched = cublasSgemmStridedBatched;
};
template <>
struct Blas<double> {
  static constexpr auto gemv = cublasDgemv;
  static constexpr auto gemm = cublasDgemm;
  static constexpr auto batched = cublasDgemmStridedBatched;
};

cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

// plan_gemm checked every size against int.
template <class T>
void run(const BlasCall& c, const T* a, const T* b, T* out) {
  const T one = 1, zero = 0;
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  switch (c.kind) {
    case BlasCall::Kind::Gemv:
      return check(Blas<T>::gemv(handle(), op(c.transa), i(c.m), i(c.n), &one, b, i(c.lda), a, i(c.incx), &zero,
                                 out, 1));
    case BlasCall::Kind::Gemm:
      return check(Blas<T>::gemm(handle(), op(c.transa), op(c.transb), i(c.m), i(c.n), i(c.k), &one, b, i(c.lda), a,
                                 i(c.ldb), &zero, out, i(c.ldc)));
    case BlasCall::Kind::StridedBatched:
      return check(Blas<T>::batched(handle(), op(c.transa), op(c.transb), i(c.m), i(c.n), i(c.k), &one, b, i(c.lda),
                                    c.stride_a, a, i(c.ldb), c.stride_b, &zero, out, i(c.ldc), c.stride_c,
                                    i(c.batch)));
  }
}

}  // namespace

// cuBLAS's A is our b, its B (gemv: its x) our a (cuda.h plan_gemm).
void gemm(DType t, const void* a, const GemmOperand& oa, const void* b, const GemmOperand& ob, void* c,
          int64_t batch, int64_t m, int64_t n, int64_t k) {
  if (batch == 0 || m == 0 || n == 0) return;
  if (t != kFloat32 && t != kFloat64)
    throw Error("matmul: cuda: float32 or float64 only, got " + std::string(dtype_name(t)));
  const BlasCall call = plan_gemm(oa, ob, batch, m, n, k);
  // cuBLAS's gemv computes y = A x with A column-major m x n: our b
  // row-major [n, m] with row stride lda, x our a's row.
  if (t == kFloat32 && call.kind == BlasCall::Kind::Gemv && !call.transa && small_gemv_applies(call.n, call.m))
    return small_gemv(static_cast<const float*>(a), call.incx, static_cast<const float*>(b), call.lda,
                      static_cast<float*>(c), call.n, call.m);
  check(cublasSetStream(handle(), static_cast<cudaStream_t>(current_stream())));
  if (t == kFloat32)
    run(call, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c));
  else
    run(call, static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(c));
}

namespace {

void lt_check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("matmul epilogue: cublasLt: ") + call + ": " + cublasGetStatusString(s));
}

cublasLtHandle_t lt_handle() {
  thread_local cublasLtHandle_t h = [] {
    cublasLtHandle_t created = nullptr;
    lt_check(cublasLtCreate(&created), "cublasLtCreate");
    return created;
  }();
  return h;
}

// The descriptors and the chosen algorithm of one plan. Made once per plan
// and thread: creating them and asking the heuristic costs more host time
// than a small GEMM takes on the device.
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool found = false;
  LtCall() = default;
  LtCall(const LtCall&) = delete;
  LtCall& operator=(const LtCall&) = delete;
  ~LtCall() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

using PlanKey = std::array<int64_t, 12>;

PlanKey key_of(const LtGemmPlan& p) {
  return {p.trans_a, p.a_rows, p.a_cols, p.lda, p.b_rows, p.b_cols, p.ldb, p.m, p.n, p.k, p.ldc,
          static_cast<int64_t>(p.epilogue)};
}

void prepare(const LtGemmPlan& p, LtCall& call) {
  lt_check(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  lt_check(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), "TRANSA");
  lt_check(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), "TRANSB");
  const cublasLtEpilogue_t epi = p.epilogue == LtEpilogue::Bias       ? CUBLASLT_EPILOGUE_BIAS
                                 : p.epilogue == LtEpilogue::Relu     ? CUBLASLT_EPILOGUE_RELU
                                 : p.epilogue == LtEpilogue::ReluBias ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                                      : CUBLASLT_EPILOGUE_DEFAULT;
  lt_check(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), "EPILOGUE");
  lt_check(cublasLtMatrixLayoutCreate(&call.a, CUDA_R_32F, p.a_rows, p.a_cols, p.lda), "layout A");
  lt_check(cublasLtMatrixLayoutCreate(&call.b, CUDA_R_32F, p.b_rows, p.b_cols, p.ldb), "layout B");
  lt_check(cublasLtMatrixLayoutCreate(&call.c, CUDA_R_32F, p.m, p.n, p.ldc), "layout C");
  constexpr size_t kWorkspace = size_t{4} << 20;
  cublasLtMatmulPreference_t pref = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                                          sizeof kWorkspace);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmulAlgoGetHeuristic(lt_handle(), call.op, call.a, call.b, call.c, call.c, pref, 1, &heuristic,
                                       &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return;  // call.found stays false
  lt_check(s, "cublasLtMatmulAlgoGetHeuristic");
  call.algo = heuristic.algo;
  call.workspace = heuristic.workspaceSize;
  call.found = true;
}

}  // namespace

bool gemm_lt(const LtGemmPlan& p, DType t, const void* x, const void* w, const void* bias, void* out) {
  if (t != kFloat32) return false;  // the bias and relu epilogues with FP32 compute: float32 only here
  // The heuristic assumes 256-byte aligned matrices (the preference's
  // default); a view at an offset takes the plain GEMM instead.
  const auto aligned = [](const void* ptr, uintptr_t to) { return reinterpret_cast<uintptr_t>(ptr) % to == 0; };
  if (!aligned(x, 256) || !aligned(w, 256) || !aligned(out, 256) || (bias && !aligned(bias, 16))) return false;
  thread_local std::map<PlanKey, std::unique_ptr<LtCall>> calls;
  std::unique_ptr<LtCall>& slot = calls[key_of(p)];
  if (!slot) {
    auto made = std::make_unique<LtCall>();
    prepare(p, *made);  // throws before the cache keeps a half-made entry
    slot = std::move(made);
  }
  LtCall& call = *slot;
  if (!call.found) return false;
  if (p.epilogue == LtEpilogue::Bias || p.epilogue == LtEpilogue::ReluBias)
    lt_check(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
             "BIAS_POINTER");
  void* ws = call.workspace ? device_allocator().allocate(call.workspace) : nullptr;
  const float one = 1, zero = 0;
  const cublasStatus_t s = cublasLtMatmul(lt_handle(), call.op, &one, w, call.a, x, call.b, &zero, out, call.c, out,
                                          call.c, &call.algo, ws, call.workspace,
                                          static_cast<cudaStream_t>(current_stream()));
  if (ws) device_allocator().release(ws);
  lt_check(s, "cublasLtMatmul");
  return true;
}

}  // namespace graph::cuda
