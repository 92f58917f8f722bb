#pragma once
// The op table as data: one OpInfo per entry of ops.def. The IR verifier,
// the plugin's call mapping and codegen's fusion read op classes from here
// instead of keeping lists of op names.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/dtype.h"

namespace graph {

enum class OpKind : uint8_t {
  Elementwise,  // one loop over the broadcast output; fusable
  Reduce,       // over all elements, or along attribute `dim` (+ `keepdim`)
  Library,      // a call into a tuned library (BLAS)
  View,         // a strided view of its input, no data moved
  Other,        // its own kernel (softmax, conv-free nn ops, losses, ...)
};

// Result dtype of an op from its promoted input dtype (see ops.def).
enum class DTypeRule : uint8_t { Same, ToFloat, ToBool, Accumulate, ToIndex };

enum class OpId : uint16_t {
#define GRAPH_UNARY_OP(name, rule, body, grad_x) name,
#define GRAPH_BINARY_OP(name, rule, body, grad_a, grad_b) name,
#define GRAPH_REDUCE_OP(name, rule) name,
#define GRAPH_LIBRARY_OP(name, inputs) name,
#define GRAPH_VIEW_OP(name, inputs) name,
#define GRAPH_OTHER_OP(name, inputs, rule) name,
#define GRAPH_BACKWARD_OP(name, inputs, outputs) name,
#include "graph/ops.def"
};

struct OpInfo {
  OpId id;
  std::string_view name;
  OpKind kind;
  int num_inputs;  // -1: a list of tensors
  DTypeRule rule;
  int num_outputs = 1;
};

inline constexpr OpInfo kOpTable[] = {
#define GRAPH_UNARY_OP(name, rule, body, grad_x) {OpId::name, #name, OpKind::Elementwise, 1, DTypeRule::rule},
#define GRAPH_BINARY_OP(name, rule, body, grad_a, grad_b) {OpId::name, #name, OpKind::Elementwise, 2, DTypeRule::rule},
#define GRAPH_REDUCE_OP(name, rule) {OpId::name, #name, OpKind::Reduce, 1, DTypeRule::rule},
#define GRAPH_LIBRARY_OP(name, inputs) {OpId::name, #name, OpKind::Library, inputs, DTypeRule::Same},
#define GRAPH_VIEW_OP(name, inputs) {OpId::name, #name, OpKind::View, inputs, DTypeRule::Same},
#define GRAPH_OTHER_OP(name, inputs, rule) {OpId::name, #name, OpKind::Other, inputs, DTypeRule::rule},
#define GRAPH_BACKWARD_OP(name, inputs, outputs) {OpId::name, #name, OpKind::Other, inputs, DTypeRule::Same, outputs},
#include "graph/ops.def"
};

inline constexpr size_t kNumOps = sizeof(kOpTable) / sizeof(kOpTable[0]);

inline constexpr const OpInfo& op_info(OpId id) { return kOpTable[static_cast<size_t>(id)]; }

// The entry named `name`, or nullptr.
inline constexpr const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : kOpTable)
    if (op.name == name) return &op;
  return nullptr;
}

// Result dtype of an elementwise op whose inputs promote to `in`: integral
// inputs of ToFloat ops give the default float dtype, as in PyTorch.
inline constexpr DType result_dtype(const OpInfo& op, DType in) {
  switch (op.rule) {
    case DTypeRule::Same: return in;
    case DTypeRule::ToFloat: return is_floating(in) ? in : kDefaultFloat;
    case DTypeRule::ToBool: return DType::Bool;
    case DTypeRule::Accumulate: return is_floating(in) ? in : DType::Int64;
    case DTypeRule::ToIndex: return DType::Int64;
  }
  return in;
}

// The dtype an elementwise op's scalar body computes in (its T): the promoted
// input dtype, made floating for ToFloat ops, and float32 for 16-bit floats.
inline constexpr DType compute_dtype(const OpInfo& op, DType in) {
  return opmath_dtype(op.rule == DTypeRule::ToFloat ? result_dtype(op, in) : in);
}

}  // namespace graph
