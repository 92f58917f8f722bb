// Annotated functions for the conversion end-to-end tests (conversion_functions.h).
#include "conversion_functions.h"

#include <cstdint>

namespace conv {
using namespace graph;

// ---- Tensor::to(DType) ------------------------------------------------------
[[graph::static]] Tensor to_double(Tensor x) { return (x.to(kFloat64) * 3).sum(0); }

[[graph::static]] Tensor mask_to_float(Tensor x) {
  Tensor mask = (x > 0).to(kFloat32);
  return x * mask + mask;
}

// Truncation toward zero, nonzero is true, int64 + int32 promotes.
[[graph::static]] Tensor to_integral(Tensor x) { return (x * 4).to(kInt64) + x.to(kBool).to(kInt32); }

[[graph::static]] Tensor to_same_dtype(Tensor x) { return x.to(kFloat32) * 2; }

// Through float64 and back: the gradients arrive in float32.
[[graph::static]] Tensor cast_grad(Tensor w, Tensor b) {
  Tensor wide = w.to(kFloat64) * b.to(kFloat64);
  return (wide * wide).sum().to(kFloat32) + (w > 0).to(kFloat32).sum() * b.sum();
}

// ---- contiguous() -------------------------------------------------------------
[[graph::static]] Tensor contiguous_t(Tensor x) { return x.t().contiguous(); }

// ---- host conversions -----------------------------------------------------------
[[graph::static]] Tensor host_casts(Tensor x, int n, double d) {
  double h = n;  // int -> double
  h += n / 2;    // an integer division, then promoted
  const int64_t k = static_cast<int64_t>(d);
  int j = d * 2;  // truncating
  return x * static_cast<double>(n) + x / static_cast<float>(x.size(0)) + h * 0.5 + k + j + n * 0.25;
}

// ---- arange -----------------------------------------------------------------------
[[graph::static]] Tensor aranges(Tensor x, int n, double step) {
  return x + arange(x.size(1)).to(kFloat32) + arange(0, n, 2).sum() + arange(0.5, n, step).sum();
}

[[graph::static]] Tensor arange_ints(Tensor x, int64_t step) { return arange(1, x.size(0) + 1, step) * 2; }

// ---- zeros, ones, full with run-time sizes in ifs and loops --------------------
[[graph::static]] Tensor sizes_in_loops(Tensor x, int n) {
  Tensor y = x;
  if (n > 2) y = y + zeros({n, x.size(1)}).sum(0);
  else y = y - ones({x.size(1)}, kFloat64).to(kFloat32);
  for (int i = 1; i < n; ++i) y = y + full({i, x.size(1)}, 0.5 * i).sum(0) + arange(i).sum();
  return y;
}

// ---- any dtype: compiled for float32, specialized at run time for the rest -------
[[graph::static]] Tensor mlp_any(Tensor x, Tensor w, Tensor b) {
  Tensor h = relu(matmul(x, w) + b);
  return h * h.mean(1, true) + exp(-h) - x.sum(1, true) * 0.5;
}

[[graph::static]] Tensor int_math(Tensor x, int64_t k) {
  Tensor y = x * k + 1;
  return y.sum(0) + (x > 2).to(kInt64).sum() + y.amax() - x.size(0);
}

[[graph::static]] Tensor matmul_only(Tensor x, Tensor w) { return matmul(x, w) * 2; }

}  // namespace conv
