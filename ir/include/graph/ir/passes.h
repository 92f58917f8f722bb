#pragma once
// Graph-to-graph passes run between lowering and code generation. Each pass
// is one entry function here and one file under ir/src/passes/; the doc
// comment states what the pass expects and what it guarantees.
#include <string>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir {

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
//  - matmul gives f32, [a, k] x [k, b] -> [a, b]; t reverses a 2-D shape;
//  - If outputs take what both branches agree on; Loop-carried values are
//    iterated to a fixed point starting from the initial values.
// Anything not derivable stays unknown. Postcondition: `g` still verifies.
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

// One line per FusionGroup of `g` (pre-order), listing its member ops in
// order, e.g. "add,mul,relu". For tests and graph-inspect.
std::vector<std::string> fusion_summary(const Graph& g);

}  // namespace graph::ir
