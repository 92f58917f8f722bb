#pragma once
// The source rewrite's helpers shared by the single-graph prologue
// (Plugin.cpp) and the graph-break prologue (Split.cpp): how the function is
// named and hashed in the registry, how it calls itself eagerly, and where
// the main file lives.
#include <string>

#include "clang/AST/ASTContext.h"
#include "clang/AST/Decl.h"
#include "clang/Basic/SourceManager.h"

namespace cxxgraph {

// The hash of the whole definition as written (a name from a macro
// argument included): the registry key's second half, so stale kernels
// never match.
std::string body_hash(clang::ASTContext& ctx, const clang::FunctionDecl* fd);

// For GRAPH_CHECK, a lambda calling the function again with its own
// parameters, or "nullptr" where it cannot be named or called.
std::string eager_call(const clang::FunctionDecl* fd, const std::string& result_type);

// The main file's absolute path, for #line directives and the registrars.
std::string main_file_path(const clang::SourceManager& sm);

}  // namespace cxxgraph
