#pragma once
// The op table as data: one OpInfo per entry of ops.def, and one id space
// for ops and IR primitives. The IR verifier, the passes, the plugin's call
// mapping and codegen read op classes and traits from here instead of
// keeping lists of op names.
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
  // Primitives (GRAPH_PRIMITIVE_OP): structural IR, not library ops.
  Control,  // owns blocks or calls a graph: If, Loop, FusionGroup, call
  List,     // builds or reads a list value: list_*
  Value,    // a host value or tensor metadata: constant, tensor_size, ...
};

// Result dtype of an op from its promoted input dtype (see ops.def).
// Same: the promoted inputs; FirstInput: input 0's (index_select: the
// indices do not promote); SecondInput: input 1's (type_as); Attribute: the
// `dtype` attribute's (to).
enum class DTypeRule : uint8_t { Same, ToFloat, ToBool, Accumulate, ToIndex, FirstInput, SecondInput, Attribute, Floating };

// Traits of an op (ops.def explains each). A bit set; spelled bare in ops.def.
namespace op_trait {
enum : uint16_t {
  None = 0,
  Cheap = 0,           // ops.def's cost column: not Expensive
  Pure = 1 << 0,       // CSE may merge two equal nodes
  Random = 1 << 1,     // draws random numbers
  RandomIfDropoutP = 1 << 2,  // random when attribute dropout_p is not 0
  ReadsHost = 1 << 3,  // reads device values on the host, or builds data there
  Effectful = 1 << 4,  // effects beyond its outputs: DCE keeps it
  Expensive = 1 << 5,  // an elementwise body far costlier than a load and store
  Backward = 1 << 6,   // a gradient op (GRAPH_BACKWARD_OP)
  CpuOnly = 1 << 7,    // no CUDA kernel yet: a device operand is an error naming the op
  CudaPartly = 1 << 8,  // some attribute values run on the CPU only (docs/ops.md says which)
  ValuesUnread = 1 << 9,  // reads its input's shape, dtype and device only: no gradient
};
}  // namespace op_trait

// Every op and primitive, one id space: the ops of kOpTable first (an op's id
// is its index there), then the primitives of kPrimitiveTable. `unknown`
// stands for a name in neither (a parsed graph the verifier will reject).
enum class OpId : uint16_t {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) name,
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b) name,
#define GRAPH_REDUCE_OP(name, rule) name,
#define GRAPH_LIBRARY_OP(name, inputs) name,
#define GRAPH_VIEW_OP(name, inputs) name,
#define GRAPH_OTHER_OP(name, inputs, rule, traits) name,
#define GRAPH_BACKWARD_OP(name, inputs, outputs, traits) name,
#define GRAPH_PRIMITIVE_OP(name, kind, traits) name,
#include "graph/ops.def"
  unknown
};

struct OpInfo {
  OpId id;
  std::string_view name;
  OpKind kind;
  int num_inputs;  // -1: a list of tensors (or, for primitives, any number)
  DTypeRule rule;
  int num_outputs = 1;
  uint16_t traits = op_trait::None;

  constexpr bool has(uint16_t trait) const { return (traits & trait) == trait; }
  constexpr bool primitive() const { return kind >= OpKind::Control; }
};

namespace detail {
// A library op is pure unless it draws random numbers (always or by attribute).
constexpr uint16_t op_traits(uint16_t t) {
  return t & (op_trait::Random | op_trait::RandomIfDropoutP) ? t : t | op_trait::Pure;
}
}  // namespace detail

#define GRAPH_OP_TRAITS(traits) detail::op_traits([] { using namespace op_trait; return uint16_t(traits); }())
inline constexpr OpInfo kOpTable[] = {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) \
  {OpId::name, #name, OpKind::Elementwise, 1, DTypeRule::rule, 1, GRAPH_OP_TRAITS(cost)},
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b) \
  {OpId::name, #name, OpKind::Elementwise, 2, DTypeRule::rule, 1, GRAPH_OP_TRAITS(cost)},
#define GRAPH_REDUCE_OP(name, rule) {OpId::name, #name, OpKind::Reduce, 1, DTypeRule::rule, 1, GRAPH_OP_TRAITS(None)},
#define GRAPH_LIBRARY_OP(name, inputs) {OpId::name, #name, OpKind::Library, inputs, DTypeRule::Same, 1, GRAPH_OP_TRAITS(None)},
#define GRAPH_VIEW_OP(name, inputs) {OpId::name, #name, OpKind::View, inputs, DTypeRule::Same, 1, GRAPH_OP_TRAITS(None)},
#define GRAPH_OTHER_OP(name, inputs, rule, traits) \
  {OpId::name, #name, OpKind::Other, inputs, DTypeRule::rule, 1, GRAPH_OP_TRAITS(traits)},
#define GRAPH_BACKWARD_OP(name, inputs, outputs, traits) \
  {OpId::name, #name, OpKind::Other, inputs, DTypeRule::Same, outputs, GRAPH_OP_TRAITS(Backward | traits)},
#include "graph/ops.def"
};

inline constexpr size_t kNumOps = sizeof(kOpTable) / sizeof(kOpTable[0]);

// The primitives' entries (no dtype rule: each has its own typing rule in
// infer_types; num_inputs and num_outputs -1: the verifier checks each
// primitive's signature).
inline constexpr OpInfo kPrimitiveTable[] = {
#define GRAPH_PRIMITIVE_OP(name, kind, traits) \
  {OpId::name, #name, OpKind::kind, -1, DTypeRule::Same, -1, [] { using namespace op_trait; return uint16_t(traits); }()},
#include "graph/ops.def"
};
#undef GRAPH_OP_TRAITS

inline constexpr size_t kNumPrimitives = sizeof(kPrimitiveTable) / sizeof(kPrimitiveTable[0]);

namespace detail {
constexpr bool ids_index_tables() {
  for (size_t i = 0; i < kNumOps; ++i)
    if (static_cast<size_t>(kOpTable[i].id) != i) return false;
  for (size_t i = 0; i < kNumPrimitives; ++i)
    if (static_cast<size_t>(kPrimitiveTable[i].id) != kNumOps + i) return false;
  return static_cast<size_t>(OpId::unknown) == kNumOps + kNumPrimitives;
}
static_assert(ids_index_tables(), "ops.def: every GRAPH_PRIMITIVE_OP must follow the last op");
}  // namespace detail

// The entry of `id`, an op or a primitive (not OpId::unknown).
inline constexpr const OpInfo& op_info(OpId id) {
  const size_t i = static_cast<size_t>(id);
  return i < kNumOps ? kOpTable[i] : kPrimitiveTable[i - kNumOps];
}

// Whether input `i` of op `id` may be an undefined tensor (ops.def's
// GRAPH_OPTIONAL_INPUTS: a bias, a mask).
inline constexpr bool optional_input(OpId id, size_t i) {
  switch (id) {
#define GRAPH_OPTIONAL_INPUTS(name, mask) \
  case OpId::name: return i < 32 && ((uint32_t(mask) >> i) & 1u) != 0;
#include "graph/ops.def"
    default: return false;
  }
}

// The op (not primitive) named `name`, or nullptr.
inline constexpr const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : kOpTable)
    if (op.name == name) return &op;
  return nullptr;
}

// The id of the op or primitive named `name`; OpId::unknown when none is.
// IR nodes resolve their name once, when they are created.
inline constexpr OpId resolve_op(std::string_view name) {
  if (const OpInfo* op = find_op(name)) return op->id;
  for (const OpInfo& p : kPrimitiveTable)
    if (p.name == name) return p.id;
  return OpId::unknown;
}

// The forward op whose gradient the backward op `op` is (OP for OP_backward);
// nullptr for other ops and for the shared helpers (sum_to, reshape_as, ...).
inline constexpr const OpInfo* forward_op(const OpInfo& op) {
  constexpr std::string_view suffix = "_backward";
  if (!op.has(op_trait::Backward) || !op.name.ends_with(suffix)) return nullptr;
  const OpInfo* f = find_op(op.name.substr(0, op.name.size() - suffix.size()));
  return f && !f->has(op_trait::Backward) ? f : nullptr;
}

// The backward op OP_backward of the forward op `op`, or nullptr (elementwise
// ops and views have gradient formulas instead).
inline constexpr const OpInfo* backward_op(const OpInfo& op) {
  for (const OpInfo& b : kOpTable)
    if (const OpInfo* f = forward_op(b); f && f->id == op.id) return &b;
  return nullptr;
}

// Result dtype of an elementwise op whose inputs promote to `in`: integral
// inputs of ToFloat ops give the default float dtype, as in PyTorch.
inline constexpr DType result_dtype(const OpInfo& op, DType in) {
  switch (op.rule) {
    case DTypeRule::Same:
    case DTypeRule::Floating: return in;  // infer_types refuses a non-floating input
    case DTypeRule::ToFloat: return is_floating(in) ? in : kDefaultFloat;
    case DTypeRule::ToBool: return DType::Bool;
    case DTypeRule::Accumulate: return is_floating(in) ? in : DType::Int64;
    case DTypeRule::ToIndex: return DType::Int64;
    case DTypeRule::FirstInput:
    case DTypeRule::SecondInput:
    case DTypeRule::Attribute: return in;  // not elementwise: infer_types has their rules
  }
  return in;
}

// The dtype an elementwise op's scalar body computes in (its T): the promoted
// input dtype, made floating for ToFloat ops, and float32 for 16-bit floats.
inline constexpr DType compute_dtype(const OpInfo& op, DType in) {
  return opmath_dtype(op.rule == DTypeRule::ToFloat ? result_dtype(op, in) : in);
}

}  // namespace graph
