// Eager matmul: 2-D float32 through cblas_sgemm.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>

#include "graph/ops.h"
#include "storage.h"

namespace graph {

namespace {

// How one operand is handed to BLAS: row-major as is (NoTrans), as the
// transpose of a row-major matrix (Trans, e.g. the result of t()), or, for any
// other layout, a contiguous copy kept alive in `owner`.
struct BlasOperand {
  Tensor owner;
  const float* data = nullptr;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  blasint ld = 1;
};

// Row-major leading dimension of an [r, c] view with strides (s0, s1), or 0
// if the view is not row-major with unit inner stride. Size-1 dims are never
// stepped, so their strides do not matter.
int64_t row_major_ld(int64_t r, int64_t c, int64_t s0, int64_t s1) {
  const int64_t min_ld = std::max<int64_t>(c, 1);
  if (c > 1 && s1 != 1) return 0;
  if (r <= 1) return min_ld;
  return s0 >= min_ld ? s0 : 0;
}

BlasOperand blas_operand(const Tensor& t) {
  const int64_t r = t.size(0), c = t.size(1), s0 = t.stride(0), s1 = t.stride(1);
  BlasOperand op;
  if (int64_t ld = row_major_ld(r, c, s0, s1); ld > 0 && ld <= INT_MAX) {
    op.owner = t;
    op.ld = static_cast<blasint>(ld);
  } else if (int64_t ldt = row_major_ld(c, r, s1, s0); ldt > 0 && ldt <= INT_MAX) {
    op.owner = t;
    op.trans = CblasTrans;
    op.ld = static_cast<blasint>(ldt);
  } else {
    op.owner = t.clone();
    op.ld = static_cast<blasint>(std::max<int64_t>(c, 1));
  }
  op.data = op.owner.data_ptr<float>();
  return op;
}

void check_operands(const Tensor& a, const Tensor& b) {
  detail::check_defined("matmul", a);
  detail::check_defined("matmul", b);
  const std::string shapes = shape_str(a.sizes()) + " and " + shape_str(b.sizes());
  if (a.dim() != 2 || b.dim() != 2) {
    throw Error("matmul: expected 2-D tensors, got shapes " + shapes);
  }
  if (a.dtype() != kFloat32 || b.dtype() != kFloat32) {
    throw Error("matmul: expected float tensors, got " + std::string(dtype_name(a.dtype())) +
                " and " + std::string(dtype_name(b.dtype())) + " (shapes " + shapes + ")");
  }
  if (a.size(1) != b.size(0)) throw Error("matmul: shapes " + shapes + " cannot be multiplied");
  for (int64_t s : {a.size(0), a.size(1), b.size(1)}) {
    if (s > INT_MAX) throw Error("matmul: shapes " + shapes + " exceed the BLAS int range");
  }
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands(a, b);
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  // BLAS rejects zero leading dimensions; an empty product is all zeros.
  if (n == 0 || m == 0 || k == 0) return zeros({n, m});
  const BlasOperand x = blas_operand(a), y = blas_operand(b);
  Tensor out = empty({n, m});
  cblas_sgemm(CblasRowMajor, x.trans, y.trans, static_cast<blasint>(n), static_cast<blasint>(m),
              static_cast<blasint>(k), 1.0f, x.data, x.ld, y.data, y.ld, 0.0f,
              out.data_ptr<float>(), static_cast<blasint>(m));
  return out;
}

}  // namespace graph
