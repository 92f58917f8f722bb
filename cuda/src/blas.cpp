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

}  // namespace

// cuBLAS is column-major: a row-major C (m x n) is a column-major C^T, and
// C^T = B^T A^T, so the row-major product is cuBLAS's B * A with the sizes
// swapped and no transposes. A B stored transposed (n x k row-major) is
// column-major k x n: cuBLAS transposes it (ld k).
void gemm(DType t, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n, int64_t k,
          int64_t a_batch, int64_t b_batch, bool b_transposed) {
  if (batch == 0 || m == 0 || n == 0) return;
  constexpr int64_t kMax = 2147483647;  // cuBLAS takes int sizes
  if (m > kMax || n > kMax || k > kMax || batch > kMax)
    throw Error("matmul: cuda: sizes beyond 2^31 - 1 are not supported");
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  check(cublasSetStream(handle(), static_cast<cudaStream_t>(current_stream())));
  const cublasOperation_t tb = b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ldb = b_transposed ? ik : in;
  if (t == kFloat32) {
    const float one = 1, zero = 0;
    check(cublasSgemmStridedBatched(handle(), tb, CUBLAS_OP_N, in, im, ik, &one,
                                    static_cast<const float*>(b), ldb, b_batch, static_cast<const float*>(a),
                                    ik, a_batch, &zero, static_cast<float*>(c), in, m * n, static_cast<int>(batch)));
  } else if (t == kFloat64) {
    const double one = 1, zero = 0;
    check(cublasDgemmStridedBatched(handle(), tb, CUBLAS_OP_N, in, im, ik, &one,
                                    static_cast<const double*>(b), ldb, b_batch,
                                    static_cast<const double*>(a), ik, a_batch, &zero,
                                    static_cast<double*>(c), in, m * n, static_cast<int>(batch)));
  } else {
    throw Error("matmul: cuda: float32 or float64 only, got " + std::string(dtype_name(t)));
  }
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
