#pragma once
// Properties of the op table's entries derived from ops.def, for the tools
// that read the whole table (tools/progen, graph-inspect's op listing,
// op_table_test): kept apart from op_table.h so
// that the libraries including the table do not rebuild when they change.
#include <string_view>

#include "graph/op_table.h"

namespace graph {

// Whether an op has a gradient in at least one input: ToBool and ToIndex
// results never do; an elementwise op does unless every gradient column of
// ops.def is GRAPH_NO_GRAD (spelled out, so this reads the column itself).
namespace detail {
inline constexpr bool kOpHasGrad[] = {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) std::string_view(#grad_x) != "GRAPH_NO_GRAD",
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b) \
  std::string_view(#grad_a) != "GRAPH_NO_GRAD" || std::string_view(#grad_b) != "GRAPH_NO_GRAD",
#define GRAPH_REDUCE_OP(name, rule) DTypeRule::rule != DTypeRule::ToIndex,
#define GRAPH_LIBRARY_OP(name, inputs) true,
#define GRAPH_VIEW_OP(name, inputs) true,
#define GRAPH_OTHER_OP(name, inputs, rule, traits) \
  DTypeRule::rule != DTypeRule::ToIndex && !op_info(OpId::name).has(op_trait::ValuesUnread),  // argsort, rand_like: none
#define GRAPH_BACKWARD_OP(name, inputs, outputs, traits) false,
#include "graph/ops.def"
};
static_assert(sizeof(kOpHasGrad) / sizeof(kOpHasGrad[0]) == kNumOps);
}  // namespace detail

inline constexpr bool differentiable(const OpInfo& op) {
  return !op.primitive() && op.rule != DTypeRule::ToBool && detail::kOpHasGrad[static_cast<size_t>(op.id)];
}
static_assert(differentiable(op_info(OpId::mul)) && differentiable(op_info(OpId::matmul)) &&
              !differentiable(op_info(OpId::sign)) && !differentiable(op_info(OpId::lt)) &&
              !differentiable(op_info(OpId::argmax)) && !differentiable(op_info(OpId::argsort)) &&
              !differentiable(op_info(OpId::sum_to)));

// Whether random-program generation (tools/progen) must draw the op: every
// op a user can call, i.e. every op but the primitives and the gradient ops
// the autodiff pass emits. progen fails when one lacks an emitter, so a new
// op is fuzzed from the day it lands.
inline constexpr bool generatable(const OpInfo& op) { return !op.primitive() && !op.has(op_trait::Backward); }

}  // namespace graph
