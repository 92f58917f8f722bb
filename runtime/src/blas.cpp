// The CPU GEMM behind matmul and conv2d (see blas.h for why float goes to
// oneDNN and double to OpenBLAS).
#include "blas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>

#include <climits>
#include <string>

#include "graph/error.h"
#include "graph/parallel.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GRAPH_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define GRAPH_TSAN 1
#endif

namespace graph::cpu {

namespace {

// oneDNN (Debian's build) runs on OpenMP, whose team size is a per-thread
// setting: set it before each call so that GEMM uses as many threads as the
// rest of the runtime. libgomp comes with libdnnl; it is looked up rather than
// linked so that the runtime's users need no OpenMP flags.
void use_runtime_threads() {
  using SetThreads = void (*)(int);
  static const SetThreads set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
#if defined(GRAPH_TSAN)
  // libgomp's barriers are invisible to ThreadSanitizer: one thread, so that
  // the TSan build reports our races, not false ones inside oneDNN.
  const int threads = 1;
#else
  const int threads = num_threads();
#endif
  thread_local int current = -1;
  if (set && current != threads) {
    set(threads);
    current = threads;
  }
}

void check_int_range(int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  for (int64_t v : {M, N, K, lda, ldb, ldc})
    if (v > INT_MAX)
      throw Error("gemm: size " + std::to_string(v) + " exceeds the BLAS int range");
}

}  // namespace

void use_blas_threads() { use_runtime_threads(); }

void gemm_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  use_runtime_threads();
  const dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                                     beta, C, ldc);
  if (s != dnnl_success)
    throw Error("gemm: oneDNN's dnnl_sgemm failed (status " + std::to_string(static_cast<int>(s)) + ") for [" +
                std::to_string(M) + ", " + std::to_string(K) + "] @ [" + std::to_string(K) + ", " +
                std::to_string(N) + "]");
}

void gemm_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                   int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  check_int_range(M, N, K, lda, ldb, ldc);
  const auto t = [](bool b) { return b ? CblasTrans : CblasNoTrans; };
  const auto i = [](int64_t v) { return static_cast<blasint>(v); };
  cblas_dgemm(CblasRowMajor, t(trans_a), t(trans_b), i(M), i(N), i(K), alpha, A, i(lda), B, i(ldb), beta, C,
              i(ldc));
}

}  // namespace graph::cpu
