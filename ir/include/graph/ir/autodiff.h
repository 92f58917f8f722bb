#pragma once
// Reverse-mode automatic differentiation as a graph transformation.
//
// differentiate(g) splits the gradient computation of `g` into two graphs:
//
//   forward  (inputs...)                 -> (outputs..., saved...)
//   backward (saved..., grad_outputs...) -> (one gradient per input that
//                                            requires grad)
//
// The forward graph is `g` plus the values the backward needs ("saved"); this
// is the split that puts a static graph on the eager tape: forward at the
// call, backward at backward(). A gradient that is structurally zero (the
// input does not reach any output) is an `undefined()` value.
//
// Gradients come from the op table: elementwise ops instantiate the same
// formulas as eager autograd (graph/derivatives.h) with values that build IR
// nodes; the gradient of a broadcast operand is reduced with `sum_to`. Other
// ops use existing ops (views, softmax, where, stack) or a gradient op of
// ops.def (`OP_backward`) whose kernel runs the op's eager backward. Every
// backward node carries the source location of the forward node it came from.
//
// Control flow:
//  - If: the forward If also returns what its branches' backward needs (a
//    branch that did not compute a value returns `undefined()`); the backward
//    is an If on the same condition whose branches run each branch backward.
//  - Loop (any trip count, also data dependent): the forward Loop counts its
//    iterations and appends what each iteration's backward needs to `list`
//    values it carries; the backward is a Loop running that many iterations
//    in reverse (`list_get` at count - 1 - iteration), carrying the gradients
//    of the carried values and one accumulator per value from outside the
//    loop that the body uses.
//
// Precondition: `g` verifies, has no `call` (run inline_calls first) and no
// FusionGroup (differentiate before fusing). Throws graph::Error naming the op
// and its source location when a value that requires grad reaches an output
// through an op without a gradient (a gradient op itself, dropout while
// training), and for what is not supported yet (a Loop inside a Loop whose
// body values the backward needs). Postcondition: both graphs verify.
#include <memory>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir {

struct GradGraphs {
  std::unique_ptr<Graph> forward;   // (inputs...) -> (outputs..., saved...)
  std::unique_ptr<Graph> backward;  // (saved..., grad_outputs...) -> (grads...)
  size_t num_outputs = 0;           // outputs of the original graph
  size_t num_saved = 0;             // values the forward adds to its outputs
  std::vector<size_t> grad_inputs;  // the inputs backward returns gradients of, in order
};

// Differentiates `g` with respect to the inputs whose `requires_grad` entry
// is true (one entry per input; only tensor inputs may require grad). The
// backward's grad_outputs must be defined tensors (zeros for an output that
// gets no gradient).
GradGraphs differentiate(const Graph& g, const std::vector<bool>& requires_grad);

// The forward and the backward in one graph, for tests and tools:
// (inputs..., grad_outputs...) -> (outputs..., grads...).
std::unique_ptr<Graph> differentiate_combined(const Graph& g, const std::vector<bool>& requires_grad);

}  // namespace graph::ir
