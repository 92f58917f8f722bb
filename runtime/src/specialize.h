#pragma once
// A compiled graph specialized at run time for a call whose tensors have other
// dtypes than the ones its generated code was built for (static.h's
// CompiledGraph::lowered_ir): the lowered graph with the call's dtypes, through
// ir::optimize, cached per graph and dtypes, run on the interpreter.
#include <memory>
#include <string>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/static.h"

namespace graph::detail {

struct Specialization {
  std::vector<InputGuard> rows;      // the compiled code's guard with the call's dtypes
  std::unique_ptr<ir::Graph> graph;  // optimized for the call's dtypes; null when it cannot be
  std::string error;                 // why not, when graph is null
};

// Whether some defined tensor input has another dtype than `g`'s signature
// row (no allocation: every call pays it).
bool dtype_differs(const CompiledGraph& g, const IValue* in, size_t n_in);

// The specialization for this call, made on first use; nullptr when the call
// is not one the graph takes apart from tensor dtypes (the compiled code's
// own guard then explains it), or the registration has no lowered graph.
// Call it only when dtype_differs.
const Specialization* specialization(const CompiledGraph& g, const IValue* in, size_t n_in);

}  // namespace graph::detail
