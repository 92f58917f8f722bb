#pragma once
// Lowering of one [[graph::static]] function's AST to the graph IR.
//
// The lowering keeps an environment from C++ variables to their current SSA
// value; reassignment rebinds a variable, `if`/`?:` become If nodes whose
// outputs are the variables either branch assigns, `while`/`for` become Loop
// nodes carrying the variables the loop assigns. Globals of type Tensor that
// the body reads become extra graph inputs, passed by the prologue at each
// call (so updates are seen). Anything outside the accepted subset stops the
// lowering with an Unsupported error at the construct's exact location.
#include <memory>
#include <string>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "graph/ir/ir.h"

namespace cxxgraph {

// Why a function cannot be lowered, and where.
struct Unsupported {
  clang::SourceLocation loc;
  std::string message;
};

struct Lowered {
  std::unique_ptr<graph::ir::Graph> graph;
  // What the prologue passes, in graph-input order: parameter names, then the
  // qualified names of captured globals ("::W1").
  std::vector<std::string> call_args;
};

// Lowers `fd`; throws Unsupported. `fd` must have a body.
Lowered lower_function(clang::ASTContext& ctx, const clang::FunctionDecl* fd);

}  // namespace cxxgraph
