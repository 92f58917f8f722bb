#pragma once
// Per-element cost of the elementwise ops of the op table (ops.def), kept
// beside it rather than as a column of every GRAPH_UNARY_OP/GRAPH_BINARY_OP
// entry: only codegen reads it. Keyed by OpId, so renaming or removing an op
// in ops.def fails to compile here.
//
// Expensive: ops whose body costs far more than loading and storing an
// element (transcendentals, division, square roots); a fused loop of two or
// more is compute-bound, and codegen strip-mines it into L1-sized blocks with
// one simple loop per expensive op (codegen/src/fusion_kernel.cpp). Every
// other elementwise op is cheap (a few instructions, memory-bound when fused).
#include "graph/op_table.h"

namespace graph {

inline constexpr OpId kExpensiveOps[] = {
    OpId::exp,     OpId::log,  OpId::sqrt, OpId::rsqrt, OpId::tanh, OpId::sigmoid,
    OpId::erf,     OpId::gelu, OpId::silu, OpId::div,   OpId::pow,
};

inline constexpr bool expensive_op(OpId id) {
  for (OpId e : kExpensiveOps)
    if (e == id) return true;
  return false;
}

inline constexpr bool expensive_op(const OpInfo& op) { return op.kind == OpKind::Elementwise && expensive_op(op.id); }

}  // namespace graph
