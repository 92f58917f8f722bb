#pragma once
// The text views of one graph: its fusion groups, its source map and its
// memory plan (ir/memory_plan.h's describe()).
#include <map>
#include <string>

#include "graph/ir/ir.h"

namespace graph::inspect {

// "%y, %z = op(%a, %b)" as in the IR text, without types and attributes.
std::string node_signature(const ir::Node& n);

// "rnn.cpp:12:18" (file name without its directories), or "" for none.
std::string short_loc(const ir::SourceLoc& loc);

// One paragraph per FusionGroup (pre-order): its outputs, kind, member ops
// and the source lines they came from.
std::string fusion_report(const ir::Graph& g);

// Every node grouped by the C++ line it came from, in line order, each line
// headed by its source text when the file is readable; nodes inside If/Loop
// blocks and fusion groups say where they are.
std::string source_map(const ir::Graph& g);

// Gives the graph inputs named in `types` these types ("X" -> "f32[3, 5]",
// in the IR text's syntax) and re-infers every type, so that a graph
// generated shape-generic can be planned for one input signature. Throws
// graph::Error for an unknown input name or a malformed type.
void specialize_inputs(ir::Graph& g, const std::map<std::string, std::string>& types);

// The memory plan of `g` as describe() prints it.
std::string memory_report(const ir::Graph& g);

// Every op and IR primitive of the op table (graph/op_table.h), one per line:
// name, kind, inputs and outputs, traits.
std::string op_listing();

// docs/ops.md: the table's user-facing ops (not gradient ops) as a Markdown
// table of kind, result dtype, autograd, static and CUDA support.
std::string op_markdown();

}  // namespace graph::inspect
