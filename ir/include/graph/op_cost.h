#pragma once
// Per-element cost of the elementwise ops, read from the op table's cost
// column (ops.def: Cheap or Expensive).
//
// Expensive: ops whose body costs far more than loading and storing an
// element (transcendentals, division, square roots); a fused loop of two or
// more is compute-bound, and codegen strip-mines it into L1-sized blocks with
// one simple loop per expensive op (codegen/src/fusion_kernel.cpp). Every
// other elementwise op is cheap (a few instructions, memory-bound when fused).
#include "graph/op_table.h"

namespace graph {

inline constexpr bool expensive_op(const OpInfo& op) {
  return op.kind == OpKind::Elementwise && op.has(op_trait::Expensive);
}

inline constexpr bool expensive_op(OpId id) { return id != OpId::unknown && expensive_op(op_info(id)); }

}  // namespace graph
