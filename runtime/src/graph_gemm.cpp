// graph::detail::gemm (generated_support.h): the GEMM of a generated
// matmul_epilogue group, written into a buffer the graph keeps between calls
// by the eager matmul's own kernel, so static and eager agree bit for bit;
// except a float32 linear past the small kernels' range, which runs oneDNN's
// matmul primitive on a packed copy of its weight (packed_gemm.h): faster,
// and a few ulps from eager's dnnl_sgemm sums.
#include <climits>

#include "graph/detail/gemm_epilogue.h"
#include "graph/detail/generated_support.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "packed_gemm.h"

namespace graph::detail {

void matmul_2d_into(const Tensor& a, const Tensor& b, const Tensor& out);  // matmul.cpp
bool forward_with_grad();  // static_autograd.cpp: a forward run for a backward

namespace {

// gemm's body; `gelu` (a linear only) asks for gelu of the result, as the
// packed primitive's post-op where it runs (else *gelu_done stays false and
// the caller applies it).
Tensor gemm_impl(GraphBuffers::Lease& buffers, size_t slot, const Tensor& a, const Tensor& b, bool linear,
                 const Tensor& bias, bool gelu, bool* gelu_done) {
  const auto eager = [&] { return linear ? graph::linear(a, b, bias) : graph::matmul(a, b); };
  // Device operands: one cuBLASLt call, the weight read transposed in place
  // and the bias added by its epilogue (the eager op where that does not fit).
  if (a.defined() && b.defined() && a.device() == Device::CUDA)
    return cuda_gemm_epilogue(a, b, linear, linear ? bias : Tensor(), GemmEpilogue::Bias);
  if (!a.defined() || !b.defined() || a.device() != Device::CPU || b.device() != Device::CPU ||
      (bias.defined() && bias.device() != Device::CPU) || a.dim() < 2 || b.dim() != 2 || a.dtype() != b.dtype() ||
      (a.dtype() != kFloat32 && a.dtype() != kFloat64) || !a.is_contiguous())
    return eager();
  const int64_t k = a.sizes().back(), m = b.sizes()[linear ? 0 : 1];
  const int64_t rows = k == 0 ? 0 : a.numel() / k;
  const bool has_bias = linear && bias.defined();
  if (b.sizes()[linear ? 1 : 0] != k || k == 0 || m == 0 || rows == 0 || k > INT_MAX || m > INT_MAX ||
      rows > INT_MAX || (!linear && a.dim() != 2) ||
      (has_bias && (bias.dtype() != a.dtype() || bias.dim() != 1 || bias.size(0) != m || !bias.is_contiguous())))
    return eager();

  Shape shape = a.sizes();
  shape.back() = m;
  Tensor out = buffers.take(slot, shape, a.dtype());
  // A float32 linear past the small kernel's range: the weight packed once
  // for oneDNN's matmul primitive, the bias added by it (packed_gemm.h).
  // Not a weight being trained (it requires grad, in a forward run for a
  // backward): it changes after every step, so it would never be packed, and
  // the primitive on the plain weight was slower than dnnl_sgemm (MLP b64
  // train step, one thread: 3.1 vs 2.6 ms); the eager path below also gives
  // the eager linear's bits. Inference (no tape) still packs module weights.
  const bool trained = b.requires_grad() && forward_with_grad();
  if (linear && a.dtype() == kFloat32 && rows * k * m > cpu::kPackedGemmMinWork && !trained &&
      cpu::packed_linear(a.dim() == 2 ? a : a.reshape({rows, k}), b, has_bias ? bias : Tensor(),
                         gelu ? cpu::PostOp::GeluErf : cpu::PostOp::None,
                         out.dim() == 2 ? out : out.reshape({rows, m}))) {
    *gelu_done = gelu;
    return out;
  }
  // Views only (no allocation): the operands as the eager op hands them to
  // its kernel, [rows, k] @ [k, m].
  // (2-D operands are passed as they are: no Tensor copies.)
  if (a.dim() == 2 && !linear)
    matmul_2d_into(a, b, out);
  else
    matmul_2d_into(a.dim() == 2 ? a : a.reshape({rows, k}), linear ? b.t() : b,
                   out.dim() == 2 ? out : out.reshape({rows, m}));
  if (has_bias)  // as the eager linear: the product, then + bias
    dispatch_dtype(a.dtype(), [&](auto v) {
      using T = decltype(v);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        T* __restrict po = out.data_ptr<T>();
        const T* __restrict pb = bias.data_ptr<T>();
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < m; ++j) po[i * m + j] += pb[j];
      }
    });
  return out;
}

}  // namespace

Tensor gemm(GraphBuffers::Lease& buffers, size_t slot, const Tensor& a, const Tensor& b, bool linear,
            const Tensor& bias) {
  bool unused = false;
  return gemm_impl(buffers, slot, a, b, linear, bias, false, &unused);
}

Tensor linear_gelu(GraphBuffers::Lease& buffers, size_t slot, const Tensor& x, const Tensor& weight,
                   const Tensor& bias) {
  // A forward run for a backward keeps the pre-activation for gelu's
  // gradient, so codegen never fuses there; the check only keeps it so.
  bool done = false;
  const Tensor y = gemm_impl(buffers, slot, x, weight, true, bias, !forward_with_grad(), &done);
  return done ? y : graph::gelu(y);
}

}  // namespace graph::detail
