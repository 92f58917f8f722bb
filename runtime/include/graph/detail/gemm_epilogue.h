#pragma once
// GEMM epilogues of generated code beyond generated_support.h's gemm (kept
// apart so that a new one does not rebuild every generated kernel file).
#include <cstddef>

#include "graph/detail/generated_support.h"
#include "graph/tensor.h"

namespace graph::detail {

// gelu(linear(x, weight, bias)) for a matmul_epilogue group that is exactly
// that (codegen/src/fused_groups.cpp): the linear's output has no other user.
// A float32 linear that takes the packed oneDNN GEMM (graph_gemm.cpp) gets
// the exact (erf) GELU as the primitive's post-op, applied while the output
// tile is in registers; its erf is oneDNN's, a few ulps from graph::gelu's.
// Anything else (float64, small products, the device, a forward run for a
// backward) is gemm(...) and then graph::gelu. Errors are linear's.
Tensor linear_gelu(GraphBuffers::Lease& buffers, size_t slot, const Tensor& x, const Tensor& weight,
                   const Tensor& bias);

}  // namespace graph::detail
