#pragma once
// Float32 conv2d on the CPU through oneDNN's convolution primitives (forward,
// backward data, backward weights with the bias gradient). See dnnl_conv.cpp.
#include <cstdint>

#include "graph/tensor.h"

namespace graph::cpu {

// The geometry of one convolution, as conv.cpp checks it (PyTorch's
// semantics: symmetric padding, dilation d meaning d - 1 holes).
struct DnnlConvShape {
  int64_t N, C, H, W, Cout, kH, kW, sH, sW, pH, pW, dH, dW, groups, Ho, Wo;
};

// Each writes its result into the dense NCHW / OIHW float32 tensors it is
// given and returns true, or returns false having written nothing when
// oneDNN has no primitive for the case (the caller then runs im2col + GEMM).
// Inputs are dense float32 on the CPU.

// out[N, Cout, Ho, Wo] = conv(x, w) (+ bias[Cout]) (then relu, as oneDNN's
// post-op: unlike graph::relu it maps NaN to 0). The weight is reordered into
// the primitive's layout once per Tensor::version and kept. Under
// graph::AutocastGuard(kBFloat16) x and w are converted to bf16 and the
// primitive sums in float32.
bool dnnl_conv_forward(const DnnlConvShape& s, const Tensor& x, const Tensor& w, const Tensor& bias, bool relu,
                       const Tensor& out);
// gx[N, C, H, W] from go[N, Cout, Ho, Wo] and w.
bool dnnl_conv_backward_data(const DnnlConvShape& s, const Tensor& w, const Tensor& go, const Tensor& gx);
// gw (and gb[Cout] when defined) from x and go.
bool dnnl_conv_backward_weights(const DnnlConvShape& s, const Tensor& x, const Tensor& go, const Tensor& gw,
                                const Tensor& gb);

}  // namespace graph::cpu
