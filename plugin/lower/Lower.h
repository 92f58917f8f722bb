#pragma once
// Lowering of one [[graph::static]] function's AST to the graph IR.
//
// The lowering keeps an environment from C++ variables to their current SSA
// value; reassignment rebinds a variable, `if`/`?:` become If nodes whose
// outputs are the variables either branch assigns, `while`/`for` become Loop
// nodes carrying the variables the loop assigns. Globals of type Tensor that
// the body reads become extra graph inputs, passed by the prologue at each
// call (so updates are seen). Anything outside the accepted subset stops the
// lowering with an Unsupported error at the construct's exact location; the
// lowering never changes the AST and never evaluates dependent code (so it
// refuses templates before looking at their bodies).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Stmt.h"
#include "graph/ir/ir.h"

namespace cxxgraph {

// Why a function cannot be lowered, and where. The message follows the
// diagnostic style (lowercase, names quoted with quote(), no trailing
// period); Diagnostics in Plugin.cpp reports it.
struct Unsupported {
  clang::SourceLocation loc;
  std::string message;
  // Notes reported after the warning (e.g. at each branch of an `if` that
  // leaves a variable unassigned on one path).
  std::vector<std::pair<clang::SourceLocation, std::string>> notes = {};
  // False where the statement at `loc` must not become a graph break (the
  // error is about the graph as a whole, or about the break itself).
  bool breakable = true;
};

// 'name', the quoting every diagnostic uses for names and types.
inline std::string quote(llvm::StringRef name) { return "'" + name.str() + "'"; }

// `name` with every character outside [A-Za-z0-9_] replaced by '_', for
// names that reach the IR text and file names (operator%, unicode).
std::string identifier(llvm::StringRef name);

struct Lowered {
  std::unique_ptr<graph::ir::Graph> graph;
  // What the prologue passes, in graph-input order: parameter names, then
  // the qualified names of captured globals ("::W1") and the members read
  // through `this` ("this->fc1.operator->()->weight").
  std::vector<std::string> call_args;
  // The C++ type the prologue's result variable has: the function's result
  // ("::graph::Tensor", "::std::tuple<::graph::Tensor, int>", ...).
  std::string result_type;
  // For a region before a graph break: each of Region::outputs as a C++
  // expression over the region's result `_graph_o` (a tuple or pair output
  // spans several graph outputs and is rebuilt from them).
  std::vector<std::string> outputs;
};

// Lowers `fd`; throws Unsupported. `fd` must be a definition. Calls to
// functions and member functions whose bodies are visible are inlined;
// members read through `this` become graph inputs.
Lowered lower_function(clang::ASTContext& ctx, const clang::FunctionDecl* fd);

// One static region of a function split by graph breaks: the top-level
// statements [begin, end) of its body. `inputs` (locals, parameters and
// structured bindings declared before the region) become graph inputs, in
// order (a std::tuple/std::pair one input per element), then the captures; a
// region before a break returns `outputs` (result_type is "::std::tuple<...>"
// of them, tuples flattened), the last region returns the function's result.
// A region before a break must not return.
struct Region {
  using StmtIt = clang::CompoundStmt::const_body_iterator;
  size_t index = 0;
  StmtIt begin = nullptr, end = nullptr;
  std::vector<const clang::ValueDecl*> inputs, outputs;
  bool last = false;
  clang::SourceLocation boundary;  // where the outputs are read (the break)
};
Lowered lower_region(clang::ASTContext& ctx, const clang::FunctionDecl* fd, const Region& region);

// How a value of type `t` is spelled when it crosses a graph break (a
// tensor, a list of tensors, a host scalar, a std::tuple/std::pair of
// those), or nullopt when it cannot.
std::optional<std::string> break_type(clang::QualType t, const clang::PrintingPolicy& policy);

}  // namespace cxxgraph
