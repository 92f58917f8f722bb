// Kernels of the gradient ops (GRAPH_BACKWARD_OP entries of ops.def) for the
// interpreter: each reads its node's attributes and calls the op's backward
// kernel (graph/detail/backward_kernels.h), as generated code and eager
// autograd do. None runs its op's forward again.
#include <limits>
#include <string>
#include <unordered_map>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/op_table.h"
#include "graph/ops.h"
#include "storage.h"

namespace graph::detail {

namespace {

using Out = std::vector<IValue>;
using In = std::span<const IValue>;

const Tensor& T(const ir::Node& n, In in, size_t i) { return tensor_arg(n, in, i); }

int64_t int_attr(const ir::Node& n, const char* key, int64_t dflt) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) return dflt;
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i;
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be an integer");
}

Out sum_to_kernel(const ir::Node& n, In in) { return {sum_to_backward(T(n, in, 0), T(n, in, 1))}; }
Out reshape_as_kernel(const ir::Node& n, In in) { return {reshape_as_backward(T(n, in, 0), T(n, in, 1))}; }
Out zeros_like_kernel(const ir::Node& n, In in) { return {zeros_like_backward(T(n, in, 0))}; }

// cat_backward{dim, index}(grad, xs...): the slice of grad xs[index] filled.
Out cat_backward_kernel(const ir::Node& n, In in) {
  std::vector<Tensor> xs;
  for (size_t i = 1; i < in.size(); ++i) xs.push_back(T(n, in, i));
  return {cat_backward(T(n, in, 0), xs, int_attr(n, "dim", 0), int_attr(n, "index", 0))};
}

std::vector<bool> grad_mask(const ir::Node& n, size_t inputs) {
  auto it = n.attrs().find("grad_mask");
  if (it == n.attrs().end()) return std::vector<bool>(inputs, true);
  const auto* v = std::get_if<std::vector<int64_t>>(&it->second);
  if (!v || v->size() != inputs)
    throw Error(n.op() + ": attribute 'grad_mask' must be a list of " + std::to_string(inputs) + " integers");
  std::vector<bool> mask;
  for (int64_t b : *v) mask.push_back(b != 0);
  return mask;
}

GradMask mask_bits(const ir::Node& n, size_t inputs) {
  const std::vector<bool> mask = grad_mask(n, inputs);
  GradMask bits = 0;
  for (size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) bits |= GradMask{1} << i;
  return bits;
}

Shape shape_attr(const ir::Node& n, const char* key, Shape dflt) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) return dflt;
  if (auto* i = std::get_if<int64_t>(&it->second)) return Shape{*i};
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return Shape(v->begin(), v->end());
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a list of integers");
}

double float_attr(const ir::Node& n, const char* key, double dflt) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) return dflt;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a number");
}

bool bool_attr(const ir::Node& n, const char* key, bool dflt) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) return dflt;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a bool");
}

// The reductions' dims: absent = all, one integer or a list.
Shape reduce_dims(const ir::Node& n) {
  auto it = n.attrs().find("dim");
  if (it == n.attrs().end()) return {};
  if (auto* i = std::get_if<int64_t>(&it->second)) return Shape{*i};
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return Shape(v->begin(), v->end());
  throw Error(n.op() + ": attribute 'dim' must be an integer or a list of integers");
}

bool keepdim(const ir::Node& n) { return bool_attr(n, "keepdim", false); }

template <Tensor (*F)(const Tensor&, const Tensor&, const Shape&, bool)>
Out reduce_backward_kernel(const ir::Node& n, In in) {
  if (!grad_mask(n, 1)[0]) return {Tensor()};
  return {F(T(n, in, 0), T(n, in, 1), reduce_dims(n), keepdim(n))};
}

Tensor amax_grad(const Tensor& g, const Tensor& x, const Shape& d, bool k) { return amax_backward(g, x, d, k); }
Tensor amin_grad(const Tensor& g, const Tensor& x, const Shape& d, bool k) { return amin_backward(g, x, d, k); }

Out to_out(std::vector<Tensor> grads) { return Out(grads.begin(), grads.end()); }

Out matmul_backward_kernel(const ir::Node& n, In in) {
  return to_out(matmul_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), mask_bits(n, 2)));
}
Out linear_backward_kernel(const ir::Node& n, In in) {
  return to_out(linear_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3), mask_bits(n, 3)));
}
Out mse_loss_backward_kernel(const ir::Node& n, In in) {
  return to_out(mse_loss_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), mask_bits(n, 2)));
}
Out cross_entropy_backward_kernel(const ir::Node& n, In in) {
  return to_out(cross_entropy_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), mask_bits(n, 2)));
}
Out slice_backward_kernel(const ir::Node& n, In in) {
  if (!grad_mask(n, 1)[0]) return {Tensor()};
  return {slice_backward(T(n, in, 0), T(n, in, 1), int_attr(n, "dim", 0), int_attr(n, "start", 0),
                         int_attr(n, "end", std::numeric_limits<int64_t>::max()), int_attr(n, "step", 1))};
}
Out layer_norm_backward_kernel(const ir::Node& n, In in) {
  return to_out(layer_norm_backward(T(n, in, 0), T(n, in, 1), shape_attr(n, "normalized_shape", {}), T(n, in, 2),
                                    T(n, in, 3), float_attr(n, "eps", 1e-5), mask_bits(n, 3)));
}
Out embedding_backward_kernel(const ir::Node& n, In in) {
  return to_out(embedding_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), mask_bits(n, 2)));
}
template <std::vector<Tensor> (*F)(const Tensor&, const Tensor&, const Tensor&, int64_t, GradMask)>
Out index_backward_kernel(const ir::Node& n, In in) {
  return to_out(F(T(n, in, 0), T(n, in, 1), T(n, in, 2), int_attr(n, "dim", 0), mask_bits(n, 2)));
}
Out cumsum_backward_kernel(const ir::Node& n, In in) {
  return to_out(cumsum_backward(T(n, in, 0), T(n, in, 1), int_attr(n, "dim", 0), mask_bits(n, 1)));
}
Out bmm_backward_kernel(const ir::Node& n, In in) {
  return to_out(bmm_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), mask_bits(n, 2)));
}
Out scatter_add_backward_kernel(const ir::Node& n, In in) {
  return to_out(scatter_add_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3), int_attr(n, "dim", 0),
                                     mask_bits(n, 3)));
}
Out conv_transpose2d_backward_kernel(const ir::Node& n, In in) {
  return to_out(conv_transpose2d_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3),
                                          shape_attr(n, "stride", {1, 1}), shape_attr(n, "padding", {0, 0}),
                                          shape_attr(n, "output_padding", {0, 0}), int_attr(n, "groups", 1),
                                          shape_attr(n, "dilation", {1, 1}), mask_bits(n, 3)));
}
Out conv2d_backward_kernel(const ir::Node& n, In in) {
  return to_out(conv2d_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3), shape_attr(n, "stride", {1, 1}),
                                shape_attr(n, "padding", {0, 0}), shape_attr(n, "dilation", {1, 1}),
                                int_attr(n, "groups", 1), mask_bits(n, 3)));
}
template <Tensor (*F)(const Tensor&, const Tensor&, const Shape&, const Shape&, const Shape&)>
Out pool_backward_kernel(const ir::Node& n, In in) {
  if (!grad_mask(n, 1)[0]) return {Tensor()};
  return {F(T(n, in, 0), T(n, in, 1), shape_attr(n, "kernel", {}), shape_attr(n, "stride", {}),
            shape_attr(n, "padding", {0, 0}))};
}
Out adaptive_pool_backward_kernel(const ir::Node& n, In in) {
  if (!grad_mask(n, 1)[0]) return {Tensor()};
  return {adaptive_avg_pool2d_backward(T(n, in, 0), T(n, in, 1), shape_attr(n, "output_size", {}))};
}
Out pad_backward_kernel(const ir::Node& n, In in) {
  if (!grad_mask(n, 1)[0]) return {Tensor()};
  return {pad_backward(T(n, in, 0), T(n, in, 1), shape_attr(n, "pad", {}))};
}
Out interpolate_backward_kernel(const ir::Node& n, In in) {
  if (!grad_mask(n, 1)[0]) return {Tensor()};
  return {interpolate_backward(T(n, in, 0), T(n, in, 1), shape_attr(n, "size", {}), float_attr(n, "scale_factor", 0.0),
                               int_attr(n, "mode", 0), bool_attr(n, "align_corners", false))};
}
Out sdpa_backward_kernel(const ir::Node& n, In in) {
  if (float_attr(n, "dropout_p", 0.0) != 0.0)
    throw Error(n.op() + ": no gradient with dropout_p > 0 (the backward would need the forward's random mask)");
  return to_out(scaled_dot_product_attention_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3), T(n, in, 4),
                                                      bool_attr(n, "is_causal", false), mask_bits(n, 4)));
}
Out batch_norm_backward_kernel(const ir::Node& n, In in) {
  return to_out(batch_norm_backward(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3), T(n, in, 4), T(n, in, 5),
                                    bool_attr(n, "training", false), float_attr(n, "eps", 1e-5), mask_bits(n, 5)));
}

const std::unordered_map<std::string_view, Kernel>& kernels() {
  static const std::unordered_map<std::string_view, Kernel> table = [] {
    std::unordered_map<std::string_view, Kernel> t{
        {"sum_to", sum_to_kernel},
        {"reshape_as", reshape_as_kernel},
        {"zeros_like", zeros_like_kernel},
        {"cat_backward", cat_backward_kernel},
        {"sum_backward", reduce_backward_kernel<sum_backward>},
        {"mean_backward", reduce_backward_kernel<mean_backward>},
        {"amax_backward", reduce_backward_kernel<amax_grad>},
        {"amin_backward", reduce_backward_kernel<amin_grad>},
        {"matmul_backward", matmul_backward_kernel},
        {"linear_backward", linear_backward_kernel},
        {"mse_loss_backward", mse_loss_backward_kernel},
        {"cross_entropy_backward", cross_entropy_backward_kernel},
        {"slice_backward", slice_backward_kernel},
        {"layer_norm_backward", layer_norm_backward_kernel},
        {"embedding_backward", embedding_backward_kernel},
        {"conv2d_backward", conv2d_backward_kernel},
        {"conv_transpose2d_backward", conv_transpose2d_backward_kernel},
        {"max_pool2d_backward", pool_backward_kernel<max_pool2d_backward>},
        {"avg_pool2d_backward", pool_backward_kernel<avg_pool2d_backward>},
        {"adaptive_avg_pool2d_backward", adaptive_pool_backward_kernel},
        {"pad_backward", pad_backward_kernel},
        {"interpolate_backward", interpolate_backward_kernel},
        {"scaled_dot_product_attention_backward", sdpa_backward_kernel},
        {"index_select_backward", index_backward_kernel<index_select_backward>},
        {"gather_backward", index_backward_kernel<gather_backward>},
        {"cumsum_backward", cumsum_backward_kernel},
        {"bmm_backward", bmm_backward_kernel},
        {"batch_norm_backward", batch_norm_backward_kernel},
        {"scatter_add_backward", scatter_add_backward_kernel}};
    return t;
  }();
  return table;
}

}  // namespace

const Kernel* find_backward_kernel(std::string_view op) {
  const auto& t = kernels();
  auto it = t.find(op);
  return it == t.end() ? nullptr : &it->second;
}

}  // namespace graph::detail
