#pragma once
// Graph-to-graph passes run between lowering and code generation. Each pass
// is one entry function here and one file under ir/src/passes/; the doc
// comment states what the pass expects and what it guarantees.
#include <memory>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/ir/ir.h"

namespace graph::ir {

// A graph that can never run, found by a pass (a shape or dtype mismatch
// that holds whatever the inputs' values): the message, and where the node
// came from, so a front end can report it at the C++ line.
class GraphError : public Error {
 public:
  GraphError(const std::string& what, SourceLoc at, std::string reason)
      : Error(what), loc(std::move(at)), message(std::move(reason)) {}
  SourceLoc loc;
  std::string message;  // without the location
};

// Dtype and shape inference.
//
// Precondition: `g` verifies. Tensor graph inputs whose dtype is unknown get
// `tensor_default`: that is the dtype the compiled graph is specialized for,
// and the generated input guards check it at run time.
//
// Every node's outputs get the most precise type the inputs allow:
//  - elementwise ops promote tensor dtypes (promote_types), then host scalars
//    raise the category (promote_with_scalar), then the op's rule applies
//    (result_dtype); shapes broadcast where known. All-scalar elementwise
//    nodes give scalars typed by C++ arithmetic (int op int -> int, a float
//    operand -> float, comparisons -> bool);
//  - sum keeps the dtype (bool -> i64), mean keeps it; whole-tensor
//    reductions give rank 0, along `dim` drop it (or keep it as 1);
//  - reductions take `dim` as an int or a list, with keepdim; matmul
//    (batched, broadcast, 1-D operands), linear, conv2d and the pools
//    (output size formula), softmax, layer_norm, embedding, cat/stack,
//    where (broadcast of 3), the losses (0-d), attention, and every view
//    (t, transpose, permute, reshape with -1, expand, slice, squeeze,
//    unsqueeze, flatten) follow the attribute conventions of ops.def;
//  - symbolic dims propagate: N with N or with 1 gives N, N with M gives "?";
//  - If outputs take what both branches agree on; Loop-carried values are
//    iterated to a fixed point starting from the initial values.
// Anything not derivable stays unknown. A shape that is wrong whatever the
// values (matmul [2, 3] x [4, 5], broadcasting 3 with 4, a reshape that
// changes the element count) throws graph::Error naming the node's op and
// source location. Postcondition: `g` still verifies.
void infer_types(Graph& g, DType tensor_default = DType::Float32);

// Elementwise fusion.
//
// Precondition: `g` verifies and has run infer_types (only nodes with known
// dtypes fuse). In every block (recursively), maximal sets of elementwise
// op-table nodes with at least one tensor input become one FusionGroup node:
//
//   %a : f32[N], %b : f32[N] = FusionGroup(%x, %y, %s)
//     block(%x.1 : f32[N], %y.1 : f32[N], %s.1 : float) { ...; -> (%a.1, %b.1) }
//
// whose block parameters mirror the inputs and whose returns are the members'
// values used outside the group. Groups never create a cycle: a group stops
// growing as soon as anything outside it uses one of its values. Constants
// and scalar-only arithmetic stay outside. Postcondition: `g` verifies.
void fuse_elementwise(Graph& g);

// Slice sinking, before fuse_elementwise.
//
// Precondition: `g` verifies and has run infer_types. slice(e(a, b, ...)),
// e a pure elementwise op, becomes e(slice(a), slice(b), ...) so that e fuses
// with the slice's users (an LSTM's gate add joins the gate math). Only when
// nothing is computed twice and the move pays: every use of e's value is a
// slice with constant attributes in e's block, the slices read each element
// at most once, the value is returned by no block, and each slice is used
// only by elementwise nodes of its block. Operands broadcast along the sliced
// dim stay whole, host scalars stay; where the types cannot tell, an operand
// is expanded (a view) to broadcast_sizes of e's tensor operands first.
// Repeats until nothing moves. Postcondition: `g` verifies; values keep
// their dtypes and shapes.
void sink_slices(Graph& g);

// One line per FusionGroup of `g` (pre-order), listing its member ops in
// order, e.g. "add,mul,relu". For tests and graph-inspect.
std::vector<std::string> fusion_summary(const Graph& g);

// Group fusion, after fuse_elementwise.
//
// Precondition: `g` verifies and has run infer_types and fuse_elementwise.
// Two kinds of FusionGroup (attribute `kind`) are formed, flattening the
// elementwise group they absorb:
//  - kind="reduce": a reduction (sum, mean, amax, amin) together with the
//    elementwise group that produces its input, when nothing else reads that
//    group's values: the reduction runs over the fused expression;
//  - kind="matmul_epilogue": a matmul, linear or conv2d followed by the
//    elementwise group that is its only user, when the group's result has the
//    product's shape (its other operands, like a bias, only broadcast into it).
// Postcondition: `g` verifies; the group's outputs are the absorbed values
// used outside, exactly as before.
void fuse_groups(Graph& g);

// Inlining of calls between the graphs of a module.
//
// Precondition: `g` verifies. Every call{callee="f"} node, in any block, is
// replaced by a copy of graph f's body (f taken from `module`, its own calls
// inlined first), its parameters bound to the call's inputs and the call's
// outputs to f's returns. Copied nodes keep their source locations. Throws
// graph::Error for an unknown callee, a call whose number or kinds of inputs
// and outputs differ from f's, and recursion ("f -> g -> f").
// Postcondition: `g` verifies and has no call nodes.
void inline_calls(Graph& g, const std::vector<std::unique_ptr<Graph>>& module);

// Constant folding.
//
// Precondition: `g` verifies. Elementwise op-table nodes whose inputs are all
// constants (host scalars) become constants, computed by graph::scalar::<op>
// in the C++ type codegen would use (so folded and generated values agree);
// a fold that would raise or overflow (integer division by zero, INT64_MIN /
// -1, signed overflow) is left to run time. An If on a constant condition is
// replaced by the taken block's nodes; a Loop with constant max trip count 0
// or a constant false initial condition by its initial carried values.
// Postcondition: `g` verifies; dead constants are left to dce.
void const_fold(Graph& g);

// Common subexpression elimination.
//
// Precondition: `g` verifies. A pure node (an op-table op other than dropout,
// a constant, undefined()) with the same op, attributes, inputs and output
// types as an earlier one in scope (its own block or an enclosing one) is
// replaced by that earlier node. Inside a FusionGroup only the group's own
// nodes are candidates, since a group reads nothing from outside.
// Postcondition: `g` verifies.
void cse(Graph& g);

// Dead code elimination.
//
// Precondition: `g` verifies. Removes, in every block, nodes whose outputs
// are unused and that have no effect besides their outputs (op-table ops,
// constants, undefined, list_*: nothing in the op table writes memory;
// dropout only draws random numbers), and If/Loop outputs nobody reads, with
// the block returns (and for a Loop the carried value) that fed them when the
// loop body does not read it either. call nodes are kept.
// Postcondition: `g` verifies.
void dce(Graph& g);

// Attention written out as ops becomes the fused op (fuse_attention.cpp):
// matmul(softmax(matmul(q, transpose(k, -2, -1)) * c [+ mask], -1), v) ->
// scaled_dot_product_attention(q, k, v, mask or undefined()), when c (or
// `/ c`) is the op's scale 1/sqrt(E) up to float rounding, every
// intermediate value has the next node as its only user and is returned by
// no block, and q, k, v are float32 or float64 of known rank >= 2.
// Precondition: `g` verifies and has run infer_types; run it before
// fuse_elementwise. Postcondition: `g` verifies.
void fuse_attention(Graph& g);

// Algebraic simplification.
//
// Precondition: `g` verifies (run infer_types first: rewrites that depend on
// dtypes only fire where they are known). Rewrites, each only when the result
// provably keeps the value, dtype and shape of what it replaces:
//   x + 0, 0 + x (not floats: -0.0 + 0 is +0.0), x - 0, x * 1, 1 * x, x / 1,
//   x * 0 -> 0 for host ints only (a float may be NaN or inf, and a tensor
//   would need a zeros op), neg(neg(x)), t(t(x)), transpose twice on the same
//   pair, permute of permute (composed, or dropped when the identity),
//   reshape of reshape, squeeze(unsqueeze(x, d), d).
// "0" and "1" are host-scalar constants; a rewrite happens only when the
// op table's promotion of x's dtype with the constant gives x's dtype again
// (a bool tensor + 0 is i64, so it is not x). Postcondition: `g` verifies.
void simplify(Graph& g);

// cat and stack of a list built in place (list_new + list_append: a braced
// list, push_backs outside loops) take its tensors as their operands, so that
// they need no list at run time and their gradient needs none either
// (unpack_lists.cpp). Precondition: `g` verifies. Postcondition: `g` verifies.
void unpack_lists(Graph& g);

// A dropout that may be training becomes x * dropout_mask(x, p, training)
// (split_dropout.cpp), so that its gradient is the mask the forward drew.
// differentiate() runs it on the forward graph it extends.
// Precondition: `g` verifies. Postcondition: `g` verifies.
void split_dropout(Graph& g);

// A static train step's `loss.backward()` (compile.h).
//
// Precondition: `g` verifies, has no `call` and no FusionGroup, and its types
// are inferred. The one backward_loss(loss, params...) node, which must be in
// the top block, is replaced by the gradient of the top-level nodes before it
// with respect to `params` (graph inputs; autodiff.h), seeded with ones of the
// loss's shape, and one set_grads(params..., grads..., data...) node (attribute
// `params`: how many; `data`: the graph's other floating tensor inputs, which
// must not require grad at run time). The gradient holds its own copy of the
// forward: run cse afterwards to merge it with the graph's. Throws GraphError
// at backward()'s line for a loss that is not a known floating scalar, a
// backward() nested in an If or Loop or called twice, or a graph autodiff
// refuses. Postcondition: `g` verifies; a graph without backward_loss is
// unchanged.
void expand_backward(Graph& g);

// The gradient all-reduce of data-parallel training in a static train step
// (ops.def: grad_sync_start, grad_sync_wait; docs/distributed.md).
//
// Precondition: `g` verifies (run it last: after fusion, so that "right after
// the node computing a gradient" holds in the code that runs). For the
// top-level set_grads, if any: one grad_sync_start{params}(params...,
// grads...) right after each top-level node that computes some of its
// gradients (in program order), and one grad_sync_wait{params}(params...,
// grads...) -> (grads...) just before it; set_grads and every optimizer_step
// after it that reads the same gradients read the wait's outputs instead. At
// run time the nodes do nothing unless a DistributedDataParallel owns the
// parameters. A graph without set_grads, or with a grad_sync_wait already,
// is unchanged. Postcondition: `g` verifies.
void place_grad_sync(Graph& g);

}  // namespace graph::ir
