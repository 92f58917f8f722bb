#pragma once
// Gradient formulas of the elementwise ops, generated from ops.def: one
// function per op, generic over the value type V, returning the gradient of
// each input from the gradient of the result. V is graph::Tensor for eager
// autograd; the IR autodiff pass instantiates the same formulas with values
// that build IR nodes. The formulas call ops unqualified, so V's own ops are
// found by argument-dependent lookup.
//
//   tanh_backward(grad, x, result)        -> V             (gradient of x)
//   mul_backward(grad, a, b, result)      -> std::array<V, 2>
//
// An undefined V{} means "not differentiable in this input".
#include <array>

namespace graph::derivatives {

#define GRAPH_NO_GRAD V{}
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                                     \
  template <class V>                                                                                 \
  V name##_backward([[maybe_unused]] const V& grad, [[maybe_unused]] const V& x,                     \
                    [[maybe_unused]] const V& result) {                                              \
    return grad_x;                                                                                   \
  }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                            \
  template <class V>                                                                                 \
  std::array<V, 2> name##_backward([[maybe_unused]] const V& grad, [[maybe_unused]] const V& a,      \
                                   [[maybe_unused]] const V& b, [[maybe_unused]] const V& result) {  \
    return {grad_a, grad_b};                                                                         \
  }
#include "graph/ops.def"
#undef GRAPH_NO_GRAD

}  // namespace graph::derivatives
