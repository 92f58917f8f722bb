// Annotated functions for dtype_variant_test.cpp (dtype_variant_functions.h).
#include "dtype_variant_functions.h"

namespace variants {
using namespace graph;

[[graph::static]] Tensor layer(Tensor x, Tensor w, Tensor b) {
  Tensor h = tanh(matmul(x, w) + b);
  return h * h.sum(1, true) - x.mean(1, true);
}

[[graph::static]] Tensor counts(Tensor x, int64_t k) { return (x * k + 1).sum(0) + (x > 1).to(kInt64).sum(); }

// matmul takes one dtype: with x in float64 or int64 and w cast to float32
// neither variant can be compiled (two -Wgraph-fallback warnings at build
// time), so calls in other dtypes are specialized at run time.
[[graph::static]] Tensor needs_float(Tensor x, Tensor w) { return matmul(x, w.to(kFloat32)) * 2; }

}  // namespace variants
