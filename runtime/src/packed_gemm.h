#pragma once
// Float32 linear layers of static graphs through oneDNN's matmul primitive
// with the weight reordered once into the primitive's preferred (blocked)
// layout, the bias as the primitive's bias argument and an optional ReLU as
// a post-op: no separate pass over the output. See packed_gemm.cpp.
#include <cstdint>

#include "graph/tensor.h"

namespace graph::cpu {

// Products up to this many multiply-adds stay on the eager matmul's small
// kernel (matmul.cpp's kSmallGemm), which is faster there and keeps static
// and eager bit for bit equal.
inline constexpr int64_t kPackedGemmMinWork = 32 * 32 * 32;
// Below this many rows (batch 1 to 3: matrix-vector products)
// dnnl_sgemm's own kernels are faster than the matmul primitive.
inline constexpr int64_t kPackedGemmMinRows = 4;

// The activation applied to the output tile by a oneDNN post-op. Relu maps
// NaN to 0, unlike graph::relu, so generated code does not ask for it yet;
// GeluErf is the exact x * Phi(x) (PyTorch's default gelu) with oneDNN's
// erf, a few ulps from graph::math::erf.
enum class PostOp { None, Relu, GeluErf };

// out[rows, m] = x[rows, k] @ weight[m, k]^T (+ bias[m]) (then `post`), all
// float32 on the CPU; x and out dense row-major, bias undefined or dense,
// weight row-major or its transpose. Returns false (nothing written) when it
// cannot take the product (another layout, oneDNN refuses): the caller then
// runs the plain GEMM.
bool packed_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, PostOp post, const Tensor& out);

}  // namespace graph::cpu
