// graph::detail::gemm (generated_support.h): the GEMM of a generated
// matmul_epilogue group, written into a buffer the graph keeps between calls.
#include <cblas.h>

#include <climits>
#include <cstring>

#include "graph/generated_support.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"

namespace graph::detail {

namespace {

// How the 2-D operand `b` enters BLAS as the [k, m] right-hand side (b
// itself for matmul, b's transpose for linear): its transpose flag and
// leading dimension, or ld 0 when neither layout is row-major.
struct Rhs {
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  blasint ld = 0;
};

Rhs rhs(const Tensor& b, bool linear) {
  // Logical [k, m] with strides (sk, sm).
  const int64_t k = linear ? b.size(1) : b.size(0), m = linear ? b.size(0) : b.size(1);
  const int64_t sk = linear ? b.stride(1) : b.stride(0), sm = linear ? b.stride(0) : b.stride(1);
  if ((sm == 1 || m == 1) && sk >= std::max<int64_t>(m, 1) && sk <= INT_MAX) return {CblasNoTrans, static_cast<blasint>(sk)};
  if ((sk == 1 || k == 1) && sm >= std::max<int64_t>(k, 1) && sm <= INT_MAX) return {CblasTrans, static_cast<blasint>(sm)};
  return {};
}

template <class T>
void blas(const Rhs& r, int64_t rows, int64_t k, int64_t m, const T* a, const T* b, T beta, T* out) {
  const auto R = static_cast<blasint>(rows), K = static_cast<blasint>(k), M = static_cast<blasint>(m);
  if (rows == 1) {  // a vector times a matrix: GEMV has less setup per call
    const CBLAS_TRANSPOSE t = r.trans == CblasNoTrans ? CblasTrans : CblasNoTrans;
    const blasint rows_b = r.trans == CblasNoTrans ? K : M, cols_b = r.trans == CblasNoTrans ? M : K;
    if constexpr (std::is_same_v<T, float>) cblas_sgemv(CblasRowMajor, t, rows_b, cols_b, 1.0f, b, r.ld, a, 1, beta, out, 1);
    else cblas_dgemv(CblasRowMajor, t, rows_b, cols_b, 1.0, b, r.ld, a, 1, beta, out, 1);
    return;
  }
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, r.trans, R, M, K, 1.0f, a, K, b, r.ld, beta, out, M);
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, r.trans, R, M, K, 1.0, a, K, b, r.ld, beta, out, M);
}

Tensor eager(const Tensor& a, const Tensor& b, bool linear, const Tensor& bias) {
  return linear ? graph::linear(a, b, bias) : graph::matmul(a, b);
}

}  // namespace

Tensor gemm(GraphBuffers::Lease& buffers, size_t slot, const Tensor& a, const Tensor& b, bool linear,
            const Tensor& bias) {
  if (!a.defined() || !b.defined() || a.dim() < 1 || b.dim() != 2 || a.dtype() != b.dtype() ||
      (a.dtype() != kFloat32 && a.dtype() != kFloat64) || !a.is_contiguous())
    return eager(a, b, linear, bias);
  const int64_t k = a.size(-1), m = linear ? b.size(0) : b.size(1);
  const int64_t rows = k == 0 ? 0 : a.numel() / k;
  const bool has_bias = linear && bias.defined();
  if ((linear ? b.size(1) : b.size(0)) != k || k == 0 || m == 0 || rows == 0 || k > INT_MAX || m > INT_MAX ||
      rows > INT_MAX || (has_bias && (bias.dtype() != a.dtype() || bias.dim() != 1 || bias.size(0) != m ||
                                      !bias.is_contiguous())))
    return eager(a, b, linear, bias);
  const Rhs r = rhs(b, linear);
  if (r.ld == 0) return eager(a, b, linear, bias);

  Shape shape = a.sizes();
  if (a.dim() == 1 && !linear) shape = {m};  // a vector times a matrix
  else shape.back() = m;
  Tensor out = buffers.take(slot, shape, a.dtype());
  dispatch_dtype(a.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* po = out.data_ptr<T>();
      if (has_bias)
        for (int64_t i = 0; i < rows; ++i) std::memcpy(po + i * m, bias.data_ptr<T>(), sizeof(T) * m);
      blas<T>(r, rows, k, m, a.data_ptr<T>(), b.data_ptr<T>(), has_bias ? T(1) : T(0), po);
    }
  });
  return out;
}

}  // namespace graph::detail
