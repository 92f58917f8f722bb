#pragma once
// Annotated functions built with extra dtype variants (DTYPES float64 int64
// in tests/e2e.cmake): dtype_variant_test.cpp checks which code each call runs.
#include <graph/graph.h>

namespace variants {
using graph::Tensor;

Tensor layer(Tensor x, Tensor w, Tensor b);
Tensor counts(Tensor x, int64_t k);
Tensor needs_float(Tensor x, Tensor w);

}  // namespace variants
