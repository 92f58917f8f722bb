#pragma once
// Backward kernels of the ops whose gradient is a kernel of its own: the
// gradient ops of ops.def (GRAPH_BACKWARD_OP), callable directly from C++.
// Not public API (graph/detail/): eager autograd's recorded nodes, the
// interpreter (grad_kernels.cpp) and generated backward code call them.
//
// OP_backward(grad, inputs..., attributes..., mask) takes the gradient of
// OP's result, the values the forward saved (OP's inputs) and OP's typed
// attributes, and returns one gradient per input of OP: undefined where the
// mask does not want it. None runs OP's forward again under autograd. Where
// the backward needs a statistic of the forward that the graph does not save
// (it saves OP's inputs), the kernel recomputes only that, without autograd,
// and says so: amax/amin's extreme, cross_entropy's log-probabilities,
// layer_norm's row mean and rstd, max_pool2d's window maxima, attention's
// probabilities; on the device, cuDNN pooling's result.
//
// Each kernel is defined next to its op's forward where it needs that file's
// private kernels (reduce.cpp, matmul.cpp, conv.cpp, pool.cpp, nn_ops.cpp),
// else in backward_kernels.cpp.
#include <cstdint>
#include <functional>
#include <vector>

#include "graph/tensor.h"

namespace graph::detail {

// Bit i set: the gradient of input i is wanted.
using GradMask = uint32_t;
constexpr GradMask kAllGrads = ~GradMask{0};
inline bool wants(GradMask m, size_t i) { return ((m >> i) & 1u) != 0; }

// ---- helpers the gradients of several ops share (ops.def) -------------------

// grad summed over the dims it was broadcast along to like's shape, and
// converted to like's (floating) dtype, as the eager engine does.
Tensor sum_to_backward(const Tensor& grad, const Tensor& like);
// grad reshaped to like's shape.
Tensor reshape_as_backward(const Tensor& grad, const Tensor& like);
Tensor zeros_like_backward(const Tensor& like);
// The part of grad (cat's result along dim) that came from xs[index].
Tensor cat_backward(const Tensor& grad, const std::vector<Tensor>& xs, int64_t dim, int64_t index);

// ---- reductions (reduce.cpp); empty dims = all dims ------------------------
Tensor sum_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim);
Tensor mean_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim);
// Ties share the gradient evenly, as PyTorch's. `result` is the forward's
// result; undefined recomputes it (one reduction, no autograd).
Tensor amax_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim,
                     const Tensor& result = Tensor());
Tensor amin_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim,
                     const Tensor& result = Tensor());

// ---- products (matmul.cpp, nn_ops.cpp) --------------------------------------
// Any shapes matmul takes (1-D, batched, broadcast batch dims). The
// transposed operands are views: the GEMMs read them with transpose flags.
std::vector<Tensor> matmul_backward(const Tensor& grad, const Tensor& a, const Tensor& b, GradMask mask);
// linear(x [..., in], weight [out, in], bias): dx = g W, dW = g^T x over
// the flattened leading dims (one GEMM each), dbias = g summed to its shape.
std::vector<Tensor> linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    GradMask mask);

// ---- losses (nn_ops.cpp) -------------------------------------------------------
std::vector<Tensor> mse_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, GradMask mask);
// `log_probs`: the forward's log_softmax of the logits' rows ([R, C], the
// class dim last); undefined recomputes it (one log_softmax, no autograd).
std::vector<Tensor> cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& target,
                                           GradMask mask, const Tensor& log_probs = Tensor());

// ---- views, normalization, lookup (backward_kernels.cpp, nn_ops.cpp) --------
Tensor slice_backward(const Tensor& grad, const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step);
std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Shape& normalized_shape,
                                        const Tensor& weight, const Tensor& bias, double eps, GradMask mask);
// The indices get no gradient.
std::vector<Tensor> embedding_backward(const Tensor& grad, const Tensor& weight, const Tensor& indices, GradMask mask);
// index_select / gather (index_ops.cpp): grad scatter-added into zeros of x's
// shape; the index gets no gradient. cumsum: the reverse cumsum of grad.
std::vector<Tensor> index_select_backward(const Tensor& grad, const Tensor& x, const Tensor& index, int64_t dim,
                                          GradMask mask);
std::vector<Tensor> gather_backward(const Tensor& grad, const Tensor& x, const Tensor& index, int64_t dim,
                                    GradMask mask);
std::vector<Tensor> cumsum_backward(const Tensor& grad, const Tensor& x, int64_t dim, GradMask mask);
// bmm: matmul_backward of the 3-D operands.
std::vector<Tensor> bmm_backward(const Tensor& grad, const Tensor& a, const Tensor& b, GradMask mask);
// scatter_add (sort_ops.cpp): grad to self, gather(grad, dim, index) to src
// (zeros where src reaches past index), none to the index.
std::vector<Tensor> scatter_add_backward(const Tensor& grad, const Tensor& self, const Tensor& index,
                                         const Tensor& src, int64_t dim, GradMask mask);

// ---- convolution and pooling (conv.cpp, pool.cpp) -----------------------------
std::vector<Tensor> conv2d_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    const Shape& stride, const Shape& padding, const Shape& dilation, int64_t groups,
                                    GradMask mask);
std::vector<Tensor> conv_transpose2d_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                              const Tensor& bias, const Shape& stride, const Shape& padding,
                                              const Shape& output_padding, int64_t groups, const Shape& dilation,
                                              GradMask mask);
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const Shape& kernel_size, const Shape& stride,
                           const Shape& padding);
Tensor avg_pool2d_backward(const Tensor& grad, const Tensor& x, const Shape& kernel_size, const Shape& stride,
                           const Shape& padding);
// x's gradient of adaptive_avg_pool2d: each output's gradient shared over its window.
Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x, const Shape& output_size);
// x's gradient of pad (pad.cpp): pad(grad, -pad, 0), which crops what was
// padded and gives zeros where x was cropped.
Tensor pad_backward(const Tensor& grad, const Tensor& x, const Shape& pad);
// x's gradient of interpolate (interpolate.cpp): each output's gradient added
// to the source elements it was read from, with their weights. The output
// size is `size`, or floor(in * scale_factor) when scale_factor > 0; mode is
// an InterpolateMode's value.
Tensor interpolate_backward(const Tensor& grad, const Tensor& x, const Shape& size, double scale_factor, int64_t mode,
                            bool align_corners);
// interpolate's sources along one dim of size `in` resized to `out`: int64
// indices i0, i1 [out] and float64 weights w1 [out] of i1 (the output is
// x[i0] * (1 - w1) + x[i1] * w1 in x's dtype; nearest: i1 = i0, w1 = 0). How
// the ONNX export writes the op.
std::vector<Tensor> interpolate_sources(int64_t in, int64_t out, double scale_factor, int64_t mode, bool align_corners);
// The [out, in] matrix averaging adaptive_avg_pool2d's windows along one dim
// (row i: 1 / size over window i): the op is two products with these, which
// is how it runs on the device and how the ONNX export writes it.
Tensor adaptive_averaging(int64_t in, int64_t out, DType dtype);

// ---- attention (nn_ops.cpp) ----------------------------------------------------
std::vector<Tensor> scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                          const Tensor& v, const Tensor& attn_mask, bool is_causal,
                                                          GradMask mask);

// ---- batch normalization (batch_norm.cpp) ----------------------------------------
// One gradient per input of batch_norm: the running stats' are undefined.
// Training: through the batch statistics, recomputed from x; eval: the
// running stats are constants.
std::vector<Tensor> batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& running_mean,
                                        const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                                        bool training, double eps, GradMask mask);

// ---- a test hook ----------------------------------------------------------------
// When set, each kernel above that takes a mask first reports its op and the
// mask it was given: tests check that no gradient nobody wants is computed.
// Set it only while no backward runs.
using GradMaskObserver = void (*)(const char* op, GradMask mask);
void set_grad_mask_observer(GradMaskObserver observer);
void observe_grad_mask(const char* op, GradMask mask);

// ---- the fallback ------------------------------------------------------------
// `forward` (an eager op on its tensor inputs) runs again under autograd on
// fresh leaves, and backward() from its result gives the gradients. No
// gradient op uses it; kept for ops added without a kernel (and as a
// reference in tests).
std::vector<Tensor> rerun_backward(const Tensor& grad, const std::vector<Tensor>& inputs, GradMask mask,
                                   const std::function<Tensor(const std::vector<Tensor>&)>& forward);

}  // namespace graph::detail
