// Gradients of lists of tensors (list_grad.h).
#include "graph/detail/list_grad.h"

#include <string>

#include "graph/error.h"
#include "graph/ops.h"
#include "storage.h"

namespace graph::detail {

namespace {

void check_same_length(const char* op, size_t a, size_t b) {
  if (a != b)
    throw Error(std::string(op) + ": gradients of lists of " + std::to_string(a) + " and " + std::to_string(b) +
                " elements");
}

// An element's gradient in its element's dtype and device (the zeros of a
// list of float64 tensors are float64).
Tensor zeros_like_element(const Tensor& t) { return zeros(t.sizes(), t.dtype()).to(t.device()); }

}  // namespace

TensorVector list_split_like(const Tensor& grad, const TensorVector& like, int64_t dim) {
  check_defined("cat's gradient", grad);
  const int64_t d = wrap_dim("cat's gradient", dim, grad.sizes());
  // cat skips 1-D empty tensors (PyTorch's legacy rule): they get zeros.
  const auto skipped = [&](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0 && grad.dim() != 1; };
  TensorVector out;
  out.reserve(like.size());
  int64_t offset = 0;
  for (const Tensor& x : like) {
    if (skipped(x)) {
      out.push_back(zeros_like_element(x));
      continue;
    }
    const int64_t len = x.size(d);
    out.push_back(grad.slice(d, offset, offset + len));
    offset += len;
  }
  if (offset != grad.size(d))
    throw Error("cat's gradient: the list's elements span " + std::to_string(offset) + " along dim " +
                std::to_string(d) + ", the gradient " + std::to_string(grad.size(d)));
  return out;
}

TensorVector list_unbind(const Tensor& grad, int64_t dim) {
  // Also graph::unbind in static graphs (ops.h), hence the name.
  check_defined("unbind", grad);
  if (grad.dim() == 0) throw Error("unbind: cannot unbind a 0-d tensor");
  const int64_t d = wrap_dim("unbind", dim, grad.sizes());
  TensorVector out;
  out.reserve(static_cast<size_t>(grad.size(d)));
  for (int64_t i = 0; i < grad.size(d); ++i) out.push_back(grad.slice(d, i, i + 1).squeeze(d));
  return out;
}

TensorVector list_add(const TensorVector& a, const TensorVector& b) {
  check_same_length("list_add", a.size(), b.size());
  TensorVector out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(a[i] + b[i]);
  return out;
}

TensorVector list_zeros_like(const TensorVector& like) {
  TensorVector out;
  out.reserve(like.size());
  for (const Tensor& t : like) out.push_back(zeros_like_element(t));
  return out;
}

Tensor list_last(const TensorVector& grad) {
  if (grad.empty()) throw Error("list_append's gradient: the list's gradient is empty");
  return grad.back();
}

TensorVector list_drop_last(const TensorVector& grad) {
  if (grad.empty()) throw Error("list_append's gradient: the list's gradient is empty");
  return TensorVector(grad.begin(), grad.end() - 1);
}

TensorVector list_onehot(const TensorVector& like, int64_t i, const Tensor& grad) {
  const auto n = static_cast<int64_t>(like.size());
  if (i < -n || i >= n)
    throw Error("list_get's gradient: index " + std::to_string(i) + " is out of range for a list of " +
                std::to_string(n));
  const auto at = static_cast<size_t>(i < 0 ? i + n : i);
  TensorVector out;
  out.reserve(like.size());
  for (size_t k = 0; k < like.size(); ++k) out.push_back(k == at ? grad : zeros_like_element(like[k]));
  return out;
}

}  // namespace graph::detail
