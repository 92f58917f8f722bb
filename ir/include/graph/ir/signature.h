#pragma once
// The call contract of a compiled graph: what each input must be for the
// graph to run, in input order. Made once at build time from the optimized
// graph (compile.h keeps it beside the graph); everything that agrees on a
// call reads it instead of re-deriving it from the IR:
//   - codegen writes it as a constexpr table in the generated source, beside
//     the graph function, which checks its inputs against that table
//     (graph::detail::check_inputs, generated_support.h);
//   - the registry's CompiledGraph points to the same table, so interpret
//     mode (GRAPH_MODE=interpret) checks a call with the same checker and
//     the same messages;
//   - the prologue the plugin inserts (codegen/prologue.h) passes one
//     argument per input, in this order. How a host value becomes an input
//     is the prologue's to_arg (static.h): a tensor or a list of tensors as
//     is, a bool as a bool, other integers as int64, floating values as
//     double, and an int list (a `Shape` member) as a 1-D int64 tensor, the
//     form the graph reads a run-time list attribute from
//     (value_primitives.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/dtype.h"

namespace graph::ir {

class Graph;

// (ir.h is not included: static.h, which user sources include, includes
// this header for InputKind.)
enum class InputKind : uint8_t {
  Tensor,      // a tensor of `dtype`, of `rank` and `sizes` when known
  AnyTensor,   // a tensor the graph never reads (unread_input): any dtype or shape, or undefined
  TensorList,  // a std::vector<Tensor>; its elements are not specialized on
  Int,         // int64_t
  Float,       // double
  Bool,        // bool
};

// "a tensor", "an int", ...: as messages name each kind.
const char* input_kind_name(InputKind k);

struct InputSpec {
  std::string name;  // the graph input's name (the C++ parameter or member it came from)
  InputKind kind = InputKind::Tensor;
  std::optional<DType> dtype;     // Tensor only; unknown before infer_types (codegen refuses it)
  bool may_be_undefined = false;  // Tensor only: an undefined tensor passes (may_be_undefined)
  int64_t rank = -1;              // Tensor only: -1 when any rank will do
  std::vector<int64_t> sizes;     // Tensor of known rank: one per dim, -1 where any size will do
};

struct Signature {
  std::vector<InputSpec> inputs;  // one per graph input, in order
  size_t num_outputs = 0;
};

// The signature of `g` (verified; after infer_types every tensor input has
// a dtype).
Signature signature(const Graph& g);

}  // namespace graph::ir
