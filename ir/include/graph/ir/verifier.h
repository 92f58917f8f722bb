#pragma once
// The verifier: checks every IR invariant and reports each violation.
//
// Invariants (each a named note in the messages):
//  [op]        every node runs an op-table entry or a primitive (constant, If,
//              Loop) with the right number of inputs, outputs and blocks;
//  [scoping]   every use sees its definition: earlier in the same block, or in an
//              enclosing block before the node that owns the nested block;
//  [types]     scalars flow only where scalars are allowed; elementwise ops on
//              scalars give scalars; If/Loop block signatures match the node;
//  [attrs]     attributes an op needs are present with the right kind.
#include <string>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir {

// Every violation found, as "note: message" lines naming the node; empty when
// the graph is well formed.
std::vector<std::string> verify(const Graph& g);

// Throws graph::Error with all violations when the graph is malformed.
void verify_or_throw(const Graph& g);

}  // namespace graph::ir
