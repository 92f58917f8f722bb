#pragma once
// Private to the runtime: where tensor data lives, and the entry points of
// the CUDA backend for the eager ops. The CUDA versions are in
// cuda_dispatch.cpp (built when CXXGRAPH_HAS_CUDA) and otherwise in
// no_cuda.cpp, whose functions throw; the runtime itself never includes a
// CUDA header.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "graph/op_table.h"
#include "graph/static.h"
#include "graph/tensor.h"

namespace graph::ir {
class Graph;
}  // namespace graph::ir
namespace graph::optim {
class SGDOptions;
class AdamOptions;
}  // namespace graph::optim

namespace graph::detail {

void* device_allocate(Device d, size_t nbytes);
void device_release(Device d, void* p, size_t nbytes);

// A contiguous, uninitialized tensor on `d`.
Tensor empty_on(Device d, const Shape& sizes, DType dtype);

// The device `op` runs on for operands a and b. A 0-d CPU tensor goes with
// a tensor on any device (a host scalar, as in PyTorch); any other mix throws
// "<op>: expected tensors on one device, got cpu [2, 3] and cuda [3]".
Device common_device(std::string_view op, const Tensor& a, const Tensor& b);

// ---- CUDA Graph capture of static graphs ----------------------------------
// Whether a graph may be captured was decided at build time
// (CompiledGraph::cuda_graph_blocker, from ir/device_control.h).
// GRAPH_CUDA_GRAPHS=1 in the environment (read once), or set_cuda_graphs.
bool cuda_graphs_enabled();
void set_cuda_graphs(bool on);
// Runs compiled graph `g` through the capture cache (capture.h) when its
// tensor inputs are on the device: 1 when it ran (captured or replayed, out
// written), -1 when a guard failed (why set), 0 when it was not captured
// (the caller runs g.fn as usual).
int cuda_run_captured(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, size_t n_out, std::string* why);

// ---- the CUDA backend ----------------------------------------------------
// A copy of `t` on `d` (one of them the CPU); throws graph::Error
// "to(kCUDA): no CUDA device (cudaGetDeviceCount: ...)" without a device.
Tensor cuda_to(const Tensor& t, Device d);
// copy_into for tensors on the device: dst = convert(src broadcast).
void cuda_copy_into(const Tensor& dst, const Tensor& src);
// Elementwise op `op` computing in `compute` (the inputs already have it),
// output of the scalar body's natural type (bool for comparisons).
Tensor cuda_unary(OpId op, const Tensor& x, DType compute);
Tensor cuda_binary(OpId op, const Tensor& a, const Tensor& b, const Shape& shape, DType compute);
// Reduction `op` (sum, mean, amax, amin, argmax) over `dims` (sorted,
// wrapped; argmax: exactly one) giving `out_shape` of dtype `out_dtype`.
Tensor cuda_reduce(std::string_view op, const Tensor& x, const std::vector<int64_t>& dims,
                   const Shape& out_shape, DType out_dtype);
Tensor cuda_softmax(bool log, const Tensor& x, int64_t dim);  // dim wrapped
// [..., n, k] @ [..., k, m] with equal batch dims and dtypes.
Tensor cuda_matmul(const Tensor& a, const Tensor& b);
// The eager linear's x @ w.t() + bias (x, w, bias on the device) in one
// cuBLASLt call with the bias epilogue, or undefined where that does not
// apply (not float32, not dense, a broadcast bias): then matmul and add.
Tensor cuda_linear_bias(const Tensor& x, const Tensor& w, const Tensor& bias);

// One in-place kernel per dense CUDA parameter p (float32/float64; g, buf,
// m, v, vmax dense of p's dtype and shape), with the CPU loops' math
// (optim.cpp). buf undefined: no momentum; first: buf's first step (buf =
// d). vmax undefined: no amsgrad. step: 1 on the first Adam update.
void cuda_sgd_update(const Tensor& p, const Tensor& g, const Tensor& buf, const optim::SGDOptions& o, bool first);
void cuda_adam_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const Tensor& vmax,
                      const optim::AdamOptions& o, int64_t step);

// Throws graph::Error "<what>: no CUDA device (...)" (or: no CUDA backend)
// unless a CUDA device can be used.
void require_cuda(const std::string& what);
// A tensor of `value` on `d` (CPU: graph::full; CUDA: one element copied to
// the device and broadcast by the conversion kernel).
Tensor full_on(Device d, const Shape& sizes, Scalar value, DType dtype);

// ---- nn ops on the device (cuDNN, or the hand kernels of cuda/src/nn.cu) ----
// Shapes and dtypes were checked by the op (conv.cpp, pool.cpp, nn_ops.cpp);
// inputs are contiguous, float32 or float64.
struct Conv2dParams {
  int64_t sH, sW, pH, pW, dH, dW, groups;
};
// conv(x [N, C, H, W], w) without bias, through cuDNN.
Tensor cuda_conv2d(const Tensor& x, const Tensor& w, const Conv2dParams& p);
Tensor cuda_conv2d_grad_input(const Tensor& w, const Tensor& go, const Shape& x_shape, const Conv2dParams& p);
Tensor cuda_conv2d_grad_weight(const Tensor& x, const Tensor& go, const Shape& w_shape, const Conv2dParams& p);
struct Pool2dParams {
  int64_t kH, kW, sH, sW, pH, pW;
  bool max;
};
// Pooling of x ([C, H, W] or [N, C, H, W]) giving `out_shape`, through cuDNN.
Tensor cuda_pool2d(const Tensor& x, const Pool2dParams& p, const Shape& out_shape);
Tensor cuda_pool2d_backward(const Tensor& x, const Tensor& y, const Tensor& go, const Pool2dParams& p);
// {y, mean, rstd} of layer_norm over rows of M elements; w, b may be undefined.
std::vector<Tensor> cuda_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, int64_t M, double eps);
// {gx, gw, gb}, each only when asked for.
std::vector<Tensor> cuda_layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                                             const Tensor& rstd, int64_t M, bool need_x, bool need_w, bool need_b);
// cond ? a : b at `shape`; a and b already have the result dtype.
Tensor cuda_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& shape);
// weight [num, D] rows picked by int64 `idx`; throws naming the bad index
// like the CPU kernel (`shapes` for the message).
// `checked`: the caller has range-checked idx (no device check, no wait).
Tensor cuda_embedding(const Tensor& weight, const Tensor& idx, const std::string& shapes, bool checked = false);
Tensor cuda_embedding_backward(const Tensor& grad, const Tensor& idx, const Shape& weight_shape, DType dtype);

}  // namespace graph::detail
