// Kernels of the gradient ops (GRAPH_BACKWARD_OP entries of ops.def) for the
// interpreter.
//
// OP_backward(grad, inputs...) runs OP's eager backward: the inputs whose
// gradient is wanted (attribute grad_mask) become fresh leaves, OP runs
// through its own interpreter kernel with grad mode on, and backward() from
// its result gives exactly the gradients eager autograd gives. The forward is
// computed again for that; what eager backward needs from it (pooling
// indices, layer_norm's statistics) is recomputed rather than saved.
#include <string>
#include <unordered_map>

#include "graph/autograd.h"
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

// sum_to(grad, like): grad reduced to like's shape and converted to its dtype,
// as the eager engine does for every input.
Out sum_to_kernel(const ir::Node& n, In in) {
  const Tensor& g = T(n, in, 0);
  const Tensor& like = T(n, in, 1);
  Tensor r = autograd::sum_to(g, like.sizes());
  if (is_floating(like.dtype()) && r.dtype() != like.dtype()) r = r.to(like.dtype());
  return {r};
}

Out reshape_as_kernel(const ir::Node& n, In in) { return {T(n, in, 0).reshape(T(n, in, 1).sizes())}; }

Out zeros_like_kernel(const ir::Node& n, In in) {
  const Tensor& like = T(n, in, 0);
  return {zeros(like.sizes(), like.dtype())};
}

// cat_backward{dim, index}(grad, xs...): the slice of grad xs[index] filled.
Out cat_backward_kernel(const ir::Node& n, In in) {
  const Tensor& g = T(n, in, 0);
  const int64_t index = int_attr(n, "index", 0);
  if (index < 0 || static_cast<size_t>(index) + 1 >= in.size())
    throw Error("cat_backward: index " + std::to_string(index) + " out of range for " +
                std::to_string(in.size() - 1) + " inputs");
  const int64_t d = wrap_dim("cat_backward", int_attr(n, "dim", 0), g.sizes());
  // cat skips 1-D empty tensors (PyTorch's legacy rule): they get zeros.
  const auto skipped = [&](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0 && g.dim() != 1; };
  int64_t offset = 0;
  for (int64_t i = 0; i < index; ++i) {
    const Tensor& x = T(n, in, static_cast<size_t>(i) + 1);
    if (!skipped(x)) offset += x.size(d);
  }
  const Tensor& x = T(n, in, static_cast<size_t>(index) + 1);
  if (skipped(x)) return {zeros(x.sizes(), g.dtype())};
  return {g.slice(d, offset, offset + x.size(d))};
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

// OP_backward through OP's eager autograd.
Out eager_backward(const ir::Node& n, In in, const Kernel& forward) {
  const Tensor& grad = T(n, in, 0);
  const std::vector<bool> mask = grad_mask(n, in.size() - 1);
  std::vector<IValue> args(in.begin() + 1, in.end());
  std::vector<Tensor> leaves(args.size());
  autograd::GradModeGuard grad_on(true);
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor* t = std::get_if<Tensor>(&args[i]);
    if (!mask[i] || !t || !t->defined() || !is_floating(t->dtype())) continue;
    leaves[i] = t->detach();
    leaves[i].requires_grad_();
    args[i] = leaves[i];
  }
  const Out out = forward(n, args);
  const Tensor& y = std::get<Tensor>(out.at(0));
  if (y.requires_grad()) autograd::backward(y, grad, false);
  Out grads;
  for (size_t i = 0; i < args.size(); ++i) {
    Tensor gi = leaves[i].defined() ? leaves[i].grad() : Tensor();
    // A wanted gradient that no path reached is zero, not missing: later
    // gradient nodes read it as a tensor.
    if (!gi.defined() && leaves[i].defined()) gi = zeros(leaves[i].sizes(), leaves[i].dtype());
    grads.push_back(gi);
  }
  return grads;
}

// matmul of two matrices needs no second forward.
Out matmul_backward_kernel(const ir::Node& n, In in, const Kernel& forward) {
  const Tensor& g = T(n, in, 0);
  const Tensor& a = T(n, in, 1);
  const Tensor& b = T(n, in, 2);
  if (a.dim() != 2 || b.dim() != 2) return eager_backward(n, in, forward);
  const std::vector<bool> mask = grad_mask(n, 2);
  return {mask[0] ? matmul(g, b.t()) : Tensor(), mask[1] ? matmul(a.t(), g) : Tensor()};
}

const std::unordered_map<std::string_view, Kernel>& kernels() {
  static const std::unordered_map<std::string_view, Kernel> table = [] {
    std::unordered_map<std::string_view, Kernel> t{{"sum_to", sum_to_kernel},
                                                   {"reshape_as", reshape_as_kernel},
                                                   {"zeros_like", zeros_like_kernel},
                                                   {"cat_backward", cat_backward_kernel}};
    // Every other gradient op is OP_backward of a forward op OP.
    const std::string_view suffix = "_backward";
    for (const OpInfo& op : kOpTable) {
      if (t.count(op.name) || !op.name.ends_with(suffix)) continue;
      const std::string forward(op.name.substr(0, op.name.size() - suffix.size()));
      // Only forward ops: find_kernel of a gradient op would come back here.
      const OpInfo* fwd = find_op(forward);
      if (!fwd || fwd->id > OpId::scaled_dot_product_attention) continue;
      const Kernel* k = find_kernel(forward);
      if (!k) continue;
      if (forward == "matmul")
        t.emplace(op.name, [k](const ir::Node& n, In in) { return matmul_backward_kernel(n, in, *k); });
      else
        t.emplace(op.name, [k](const ir::Node& n, In in) { return eager_backward(n, in, *k); });
    }
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
