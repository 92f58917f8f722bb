#pragma once
// Graphviz rendering of a graph: one box per node (op, outputs with their
// types, source line), edges along the data flow, each FusionGroup a filled
// cluster of its member ops, each If a cluster holding a "then" and an "else"
// cluster, each Loop a cluster holding its body; blocks nest as the IR does.
#include <filesystem>
#include <string>

#include "graph/ir/ir.h"

namespace graph::inspect {

// The DOT text for `g`; `title` heads the picture.
std::string to_dot(const ir::Graph& g, const std::string& title);

// Writes `dot_text` to `out` as DOT (format "dot") or runs Graphviz's `dot`
// to render it ("svg", "png", ...). Throws graph::Error when `dot` is
// missing or fails.
void render(const std::string& dot_text, const std::string& format, const std::filesystem::path& out);

}  // namespace graph::inspect
