#pragma once
// Row-major GEMM on the CPU, C[M, N] = alpha * op(A) @ op(B) + beta * C, for
// matmul and the convolutions' im2col products.
//
//   float : oneDNN's dnnl_sgemm. Its JIT kernels are chosen from the CPU's
//           feature bits (AVX2, AVX-512, AMX). OpenBLAS 0.3.21 (Debian 12)
//           chooses by CPU model number and falls back to its SSE3
//           "Prescott" kernels on models it does not know; on the 5th-gen
//           Xeon these benchmarks run on (family 6, model 207) that made
//           sgemm 1024^3 about 10x slower (16 vs 166 GFLOPS, one thread).
//   double: OpenBLAS's cblas_dgemm (oneDNN has no double GEMM).
//
// Under graph::AutocastGuard(kBFloat16) the float GEMM rounds its operands
// to bf16 and sums in float32 (gemm_bf16_rowmajor).
//
// Threads: both libraries follow graph::cpu::num_threads() (GRAPH_NUM_THREADS),
// like the elementwise kernels.
#include <cstdint>

namespace graph::cpu {

// Sets oneDNN's OpenMP team to the runtime's thread count (one thread under
// ThreadSanitizer), as every GEMM here does before it calls oneDNN.
void use_blas_threads();

void gemm_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// The float GEMM above under a bf16 autocast scope (graph/autocast.h):
// operands rounded to bf16, oneDNN's bf16 matmul primitive, float32 C
// (bf16_gemm.cpp). False (nothing written) when oneDNN refuses the case.
// rows x cols of `src` (rows `ld` apart) as bf16 bits, rounded to nearest
// even, into the dense `dst`.
void round_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst);
bool gemm_bf16_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                        int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void gemm_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
                   int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

}  // namespace graph::cpu
