#pragma once
// Graph breaks on the Clang side: the facts the planner (planner/Planner.h)
// needs, taken from the top-level statements of an annotated body, the
// lowering of each static region it plans, and the prologue that runs the
// regions and the eager islands between them.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "Lower.h"

namespace cxxgraph {

// One statement that runs eagerly, for its warning.
struct Break {
  Unsupported why;
  std::string what;   // "it", or "the 'if' statement at line 12 that contains it"
  std::string where;  // "between two static regions", ...
};

struct Split {
  std::vector<size_t> regions;  // the regions with a graph, in order, as passed to CompileRegion
  std::vector<Break> breaks;
  clang::SourceLocation lbrace;
  std::string prologue;
};

// Checks and compiles one lowered region under its registry name; may throw
// Unsupported (then no break is possible).
using CompileRegion = std::function<void(size_t index, Lowered& lowered, const std::string& name)>;

// Splits `fd` around the statement that `first` is about. Throws Unsupported
// when a break is impossible; nullopt when `first` is not about a top-level
// statement of the body, or when no region gets a graph.
std::optional<Split> split(clang::ASTContext& ctx, const clang::FunctionDecl* fd, const Unsupported& first,
                           const CompileRegion& compile);

}  // namespace cxxgraph
