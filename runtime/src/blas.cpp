// The CPU GEMM behind matmul and conv2d (see blas.h for why float goes to
// oneDNN and double to OpenBLAS).
#include "blas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <dnnl.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "graph/autocast.h"
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

// rows x cols of `src` (rows `ld` apart), each value rounded to the nearest
// bf16 (ties to even) but kept as float: bf16 x bf16 products are exact in
// float32, so dnnl_sgemm on these copies computes what a bf16 GEMM with
// float32 accumulation does.
std::vector<float> rounded_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t u;
      std::memcpy(&u, &src[r * ld + c], sizeof u);
      if ((u & 0x7fffffffu) <= 0x7f800000u) u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
      std::memcpy(&out[static_cast<size_t>(r * cols + c)], &u, sizeof u);
    }
  return out;
}

}  // namespace

void use_blas_threads() { use_runtime_threads(); }

void gemm_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (autocast_bf16()) {
    if (gemm_bf16_rowmajor(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    // oneDNN has no bf16 primitive for this case: the same products on
    // rounded float copies.
    const std::vector<float> a = rounded_to_bf16(A, trans_a ? K : M, trans_a ? M : K, lda);
    const std::vector<float> b = rounded_to_bf16(B, trans_b ? N : K, trans_b ? K : N, ldb);
    A = a.data(), B = b.data(), lda = trans_a ? M : K, ldb = trans_b ? K : N;
    use_runtime_threads();
    const dnnl_status_t s = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb,
                                       beta, C, ldc);
    if (s != dnnl_success)
      throw Error("gemm: oneDNN's dnnl_sgemm failed (status " + std::to_string(static_cast<int>(s)) + ")");
    return;
  }
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
