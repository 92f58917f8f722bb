#pragma once
// The per-op type rules of infer_types (infer_types_rules.cpp), for its walk
// (infer_types.cpp). Each gives the result type of one single-output
// op-table node, or throws graph::Error naming the node for shapes that can
// never agree.
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/op_table.h"

namespace graph::ir::type_rules {

using Dims = std::vector<Dim>;

// The more general of two types of one value (If branches, Loop rounds).
Type join(const Type& a, const Type& b);
std::string dims_str(const Dims& d);
const Dims* dims_of(const Value* v);  // null when the rank is unknown
[[noreturn]] void shape_error(const Node* n, const std::string& msg);
std::optional<DType> same_operand_dtype(const Node* n, const Value* a, const Value* b);

Type elementwise(const OpInfo& op, const Node* n);
Type reduce(const OpInfo& op, const Node* n);
Type same_dtype(const OpInfo& op, const Node* n);
Type matmul(const Node* n);
Type conv2d(const Node* n);
Type conv_transpose2d(const Node* n);
Type masked_fill(const Node* n);
Type view(const OpInfo& op, const Node* n);
Type other(const OpInfo& op, const Node* n);

}  // namespace graph::ir::type_rules
