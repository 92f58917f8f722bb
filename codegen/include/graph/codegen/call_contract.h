#pragma once
// The two texts that must agree on a call to a compiled graph, written side
// by side: the signature table the generated guards read (generated source),
// and the dispatch prologue the plugin inserts into the annotated body (the
// rewritten user source), which passes one argument per signature input, in
// order. Both come from the graph's ir::Signature (ir/signature.h); the
// plugin only supplies the C++ spellings it alone knows (the argument
// expressions, the result type, the eager call).
#include <string>
#include <vector>

#include "graph/ir/signature.h"

namespace graph::codegen {

// C++ at namespace scope: `var`, a constexpr table of
// ::graph::detail::InputGuard rows (static.h), one per input of `sig`, for
// the graph `graph_name` (named in errors). With no inputs `var` is a null
// pointer. Throws graph::Error for a tensor input of unknown dtype.
std::string signature_table(const ir::Signature& sig, const std::string& var, const std::string& graph_name);

// A call of one compiled graph from the rewritten source.
struct Call {
  std::string mangled_name;       // the graph's registry name
  std::string body_hash;          // the hash the graph is registered under
  std::string result_type;        // the C++ type of its result (a tuple for several outputs)
  std::vector<std::string> args;  // one C++ expression per signature input, in order
};

// The one-line prologue of a function compiled whole (static.h shows it):
//    static ::graph::detail::StaticFunction _graph_sf("<mangled>", "<hash>");
//    if (<result> _graph_r{}; _graph_sf.run(_graph_r, <eager_call>, <args>...)) return _graph_r;
// `eager_call` calls the function again for GRAPH_CHECK, or is "nullptr".
// Throws graph::Error when the arguments do not match the signature.
std::string prologue(const Call& c, const ir::Signature& sig, const std::string& eager_call);

// A function split by graph breaks (static.h's run_split). Its prologue is
// split_open, the plugin's continuations (the eager statements, each region
// through region_call), the first region's code, then split_close.
// `regions`: the regions that have a graph, each registered as
// "<mangled>.region<j>" under the same hash.
std::string split_open(const std::string& mangled_name, const std::string& body_hash, const std::string& result_type,
                       const std::string& eager_call, const std::vector<size_t>& regions);
// Region j's graph call: on success it returns `then`, or with `then` empty
// (the last region) the graph's result itself. c.mangled_name is unused
// (the region's StaticFunction is `_graph_sf<j>`).
std::string region_call(size_t j, const Call& c, const ir::Signature& sig, const std::string& then);
// Ends the prologue and puts the original body back at the `{`'s line and
// column (`line`, `column`: 1-based, of the `{` in `origin`).
std::string split_close(unsigned line, unsigned column, const std::string& origin);

}  // namespace graph::codegen
