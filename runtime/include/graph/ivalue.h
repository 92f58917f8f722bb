#pragma once
// The one run-time value of a graph: what the prologue passes to a compiled
// graph (static.h), what generated code reads and writes, and what the
// interpreter computes (interpreter.h). One type, so a call in interpret mode
// hands the same values to the interpreter that compiled mode hands to the
// generated function, without copying between two variants.
#include <cstdint>
#include <variant>
#include <vector>

#include "graph/tensor.h"

namespace graph {

// A tensor, a host int/float/bool, or a list of tensors (the IR's `list`,
// Type::Kind::List). An undefined Tensor stands for `undefined()`.
using TensorList = std::vector<Tensor>;
using IValue = std::variant<Tensor, int64_t, double, bool, TensorList>;

}  // namespace graph
