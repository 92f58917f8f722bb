#pragma once
// Saved graphs: a graph plus the tensors bound to some of its inputs (a
// model's weights), in one versioned file that runs without the C++ source
// (graph::run_saved here, or the graph-run command).
//
//   ir::Graph& g = ...;                          // e.g. parsed from a .graph file
//   graph::save("rnn.cxgraph", g, {{"W_h", W_h}, {"w_x", w_x}});
//   graph::SavedGraph m = graph::load("rnn.cxgraph");
//   auto out = graph::run_saved(m, {x, prev_h});  // the free inputs, in order
//
// The format is docs/saved-graph-format.md: magic, version, the graph as IR
// text, then named parameter tensors in the nn tensor-file record encoding.
// Loading validates everything before it allocates or returns: every length
// against the bytes left, the IR text (parsed and verified), and every
// parameter against the type of the input it binds. Any problem throws
// graph::Error naming the byte offset and what was expected, e.g.
//   saved graph: truncated at byte 123 while reading parameter 'w1' (need 4096 bytes, 17 left)
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graph/interpreter.h"
#include "graph/ir/ir.h"
#include "graph/tensor.h"

namespace graph {

// The current format version. load() reads versions 1..kSavedGraphVersion.
inline constexpr uint32_t kSavedGraphVersion = 1;

struct SavedGraph {
  std::unique_ptr<ir::Graph> graph;      // verified
  std::map<std::string, Tensor> params;  // graph input name -> value

  // The graph inputs no parameter binds, in graph order: what run_saved takes.
  std::vector<const ir::Value*> free_inputs() const;
};

// Writes `g` and `params` to `path`. Every key of `params` must name a graph
// input (by its name in the IR text, without `%`) whose type the tensor fits:
// a tensor input, the same dtype if the input's is known, the same rank and
// static sizes if its shape is known, and one size per symbolic dim across all
// parameters. `g` must verify. Throws graph::Error otherwise.
void save(const std::string& path, const ir::Graph& g, const std::map<std::string, Tensor>& params = {});
SavedGraph load(const std::string& path);

// The same, in memory (tests, the fuzzer, embedding a model in a binary).
std::string save_to_string(const ir::Graph& g, const std::map<std::string, Tensor>& params = {});
SavedGraph load_from_string(std::string_view bytes);

// Runs the saved graph with the interpreter: `free_inputs` are the values of
// SavedGraph::free_inputs(), in order; the parameters fill in the rest.
std::vector<IValue> run_saved(const SavedGraph& saved, std::vector<IValue> free_inputs,
                              const RunOptions& options = {});

}  // namespace graph
