// Matrix products through cuBLAS (cuda.h gemm).
#include <cublas_v2.h>
#include <cuda_runtime.h>

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
// swapped and no transposes.
void gemm(DType t, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n, int64_t k,
          int64_t a_batch, int64_t b_batch) {
  if (batch == 0 || m == 0 || n == 0) return;
  constexpr int64_t kMax = 2147483647;  // cuBLAS takes int sizes
  if (m > kMax || n > kMax || k > kMax || batch > kMax)
    throw Error("matmul: cuda: sizes beyond 2^31 - 1 are not supported");
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  if (t == kFloat32) {
    const float one = 1, zero = 0;
    check(cublasSgemmStridedBatched(handle(), CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one,
                                    static_cast<const float*>(b), in, b_batch, static_cast<const float*>(a),
                                    ik, a_batch, &zero, static_cast<float*>(c), in, m * n, static_cast<int>(batch)));
  } else if (t == kFloat64) {
    const double one = 1, zero = 0;
    check(cublasDgemmStridedBatched(handle(), CUBLAS_OP_N, CUBLAS_OP_N, in, im, ik, &one,
                                    static_cast<const double*>(b), in, b_batch,
                                    static_cast<const double*>(a), ik, a_batch, &zero,
                                    static_cast<double*>(c), in, m * n, static_cast<int>(batch)));
  } else {
    throw Error("matmul: cuda: float32 or float64 only, got " + std::string(dtype_name(t)));
  }
}

}  // namespace graph::cuda
