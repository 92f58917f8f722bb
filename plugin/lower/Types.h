#pragma once
// The type mapping from C++ types to graph types, and the small facts about
// declarations the lowering asks everywhere (which op a call is, how a
// statement is named in a diagnostic).
#include <optional>
#include <string>
#include <vector>

#include "Lower.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "clang/AST/Stmt.h"
#include "graph/ir/ir.h"
#include "graph/op_table.h"

namespace cxxgraph::lower {

using namespace clang;
namespace ir = graph::ir;

// How deep If/Loop blocks may nest. The IR text format reads back at most
// 100 levels (ir/src/parser.cpp) and fusion adds one (a FusionGroup's
// block); real code stays far below either.
inline constexpr int kMaxBlockDepth = 64;

inline constexpr const char* kAcceptedTypes =
    "accepted are 'graph::Tensor', 'std::vector<graph::Tensor>', bool, signed integers, float and double";

[[noreturn]] void unsupported(SourceLocation loc, std::string msg);

std::string type_name(QualType t);

bool in_graph_namespace(const DeclContext* dc);

bool is_tensor_record(QualType t);

// std::vector<graph::Tensor>: a `list` value in the graph.
bool is_tensor_vector(QualType t);

// graph::Shape (graph::SmallVector<int64_t, N>) or a std::vector of a signed
// integer: an int list. A local one (`auto s = x.sizes();`) is a 1-D int64
// tensor in the graph (ir/value_primitives.h), which a run-time list
// attribute reads.
bool is_int_list(QualType t);

// std::tuple<...> or std::pair<...>: its element types, else nullopt.
std::optional<std::vector<QualType>> tuple_elements(QualType t);

bool is_scalar_record(QualType t);
// An int, float or bool host value: what a graph::Scalar parameter holds.
inline bool is_host_number(const graph::ir::Type& t) {
  using K = graph::ir::Type::Kind;
  return t.kind == K::Int || t.kind == K::Float || t.kind == K::Bool;
}

// The IR type of a C++ type, if it is one the subset accepts. Host ints are
// int64 in the graph, so only signed integers (whose overflow is undefined
// anyway) keep their C++ meaning there: unsigned types wrap, and character
// types are not numbers. Likewise host floats are doubles: float and double.
std::optional<ir::Type> ir_type(QualType t);

// The op-table entry a declaration is annotated with (GRAPH_OP), or null.
const graph::OpInfo* annotated_op(const FunctionDecl* fd);

// A void function marked GRAPH_EAGER_CHECK (graph/tensor.h): argument checks
// that run eagerly and are left out of graphs, whose ops check shapes too.
bool is_eager_check(const FunctionDecl* fd);

bool is_lambda_call(const FunctionDecl* fd);

const char* statement_name(const Stmt* s);

const char* expression_name(const Expr* e);

}  // namespace cxxgraph::lower
