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
// Ops whose rule is Floating refuse an integral or bool input 0, as eager does
// (a run-time dtype specialization then runs the eager body, which says so).
void require_floating(const Node* n);
// `d` wrapped into [0, rank), or a shape error.
int64_t wrap_dim(const Node* n, int64_t d, size_t rank);
// An int (list) attribute, or the fallback when it is absent or run-time.
int64_t attr_or(const Node* n, const std::string& k, int64_t fallback);
std::vector<int64_t> ints_or(const Node* n, const std::string& k, std::vector<int64_t> fallback);
// Two dims that must be equal: an error only when both are static and differ.
void require_equal(const Node* n, const Dim& a, const Dim& b, const std::string& what);

Type elementwise(const OpInfo& op, const Node* n);
Type reduce(const OpInfo& op, const Node* n);
Type same_dtype(const OpInfo& op, const Node* n);
Type matmul(const Node* n);
// The nn ops (infer_types_nn.cpp).
Type linear(const Node* n);
Type conv2d(const Node* n);
Type conv_transpose2d(const Node* n);
Type pool2d(const OpInfo& op, const Node* n);
Type adaptive_pool2d(const OpInfo& op, const Node* n);
Type pad(const OpInfo& op, const Node* n);
Type interpolate(const OpInfo& op, const Node* n);
Type layer_norm(const Node* n);
Type batch_norm(const Node* n);
Type embedding(const Node* n);
Type masked_fill(const Node* n);
Type view(const OpInfo& op, const Node* n);
Type other(const OpInfo& op, const Node* n);

}  // namespace graph::ir::type_rules
