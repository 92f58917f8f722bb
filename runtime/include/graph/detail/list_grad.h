#pragma once
// Gradients of lists of tensors, for the static backward (the list_* gradient
// primitives of ir.h, which the autodiff pass emits for cat/stack of a list
// and for list_append/list_get). A list's gradient is a list with one
// gradient per element, each shaped like its element; zeros are real zeros
// (never undefined), so accumulating and indexing them needs no special case.
// The generated code and the interpreter both call these.
#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace graph::detail {

using TensorVector = std::vector<Tensor>;

// cat(like, dim)'s backward: grad cut along dim into one piece per element
// of `like` (1-D empty elements, which cat skips, get zeros).
TensorVector list_split_like(const Tensor& grad, const TensorVector& like, int64_t dim);
// stack(xs, dim)'s backward: grad's slices along dim, without that dim.
TensorVector list_unbind(const Tensor& grad, int64_t dim);
// Element-by-element sum of two gradients of one list.
TensorVector list_add(const TensorVector& a, const TensorVector& b);
TensorVector list_zeros_like(const TensorVector& like);
// list_append(l, t)'s backward: t's gradient (the last element) and l's (the rest).
Tensor list_last(const TensorVector& grad);
TensorVector list_drop_last(const TensorVector& grad);
// list_get(like, i)'s backward: grad at element i (negative from the end),
// zeros like the other elements.
TensorVector list_onehot(const TensorVector& like, int64_t i, const Tensor& grad);

}  // namespace graph::detail
