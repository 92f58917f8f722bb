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
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "graph/ir/ir.h"

namespace cxxgraph {

// Why a function cannot be lowered, and where. The message follows the
// diagnostic style (lowercase, names quoted with quote(), no trailing
// period); Diagnostics in Plugin.cpp reports it.
struct Unsupported {
  clang::SourceLocation loc;
  std::string message;
};

// 'name', the quoting every diagnostic uses for names and types.
inline std::string quote(llvm::StringRef name) { return "'" + name.str() + "'"; }

// `name` with every character outside [A-Za-z0-9_] replaced by '_', for
// names that reach the IR text and file names (operator%, unicode).
std::string identifier(llvm::StringRef name);

struct Lowered {
  std::unique_ptr<graph::ir::Graph> graph;
  // What the prologue passes, in graph-input order: parameter names, then the
  // qualified names of captured globals ("::W1").
  std::vector<std::string> call_args;
};

// Lowers `fd`; throws Unsupported. `fd` must be a definition.
Lowered lower_function(clang::ASTContext& ctx, const clang::FunctionDecl* fd);

}  // namespace cxxgraph
