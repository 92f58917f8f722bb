#pragma once
// The CPU code generator: turns optimized graphs into one C++ source file.
//
// For each graph the source holds a function with the GraphFn signature
// (static.h) that guards its inputs, runs every node (fused elementwise
// groups as single strided loops calling graph::scalar::<op>, everything else
// through the eager ops), and stores the outputs; then a CompiledGraph and a
// Registrar that make it findable under (mangled name, body hash). The text
// is meant to be read: comments name the source lines each kernel came from.
// A graph::Error thrown inside gets the failing node's op and source line
// appended (" (at model.cpp:12:7, matmul in static graph 'model')").
#include <string>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/ir/signature.h"

namespace graph::ir {
struct GradientGraphs;  // graph/ir/compile.h
}

namespace graph::codegen {

using GradientUnit = ir::GradientGraphs;  // grad.h

// What the printer writes: the graph and what the build decided about it.
// The printer only reads these; compile_unit (unit.h) fills them from
// ir::compile, so the guards and the registration say what the driver
// decided.
struct GraphUnit {
  const ir::Graph* graph;     // has run infer_types and fuse_elementwise
  std::string mangled_name;   // the annotated function's mangled name
  std::string body_hash;      // hash of its body (stale kernels never match)
  std::string source;         // "model.cpp:12", for messages
  // Its gradient (grad.h), written next to it when set.
  const GradientUnit* gradient = nullptr;
  // Why it must not be captured into a CUDA Graph, "" when it may be: decided
  // at build time (ir/compile.h) and printed into its registration.
  std::string cuda_graph_blocker{};
  // The graph as lowered, before any pass (empty: none). Printed into the
  // registration so the runtime can specialize the graph for a call whose
  // dtypes the compiled code refuses (static.h's CompiledGraph::lowered_ir).
  std::string lowered_ir{};
  // The call contract of `graph` (ir::compile's signature): its guards and
  // its registration's table. Must describe every input of `graph`.
  ir::Signature signature{};
  // Whether `graph` is a static train step (ir::compile's train_step),
  // printed into its registration.
  bool train_step = false;
};

// One C++ source for all graphs of one annotated source file. Throws
// graph::Error when a graph holds something the CPU backend cannot run (an
// op it does not know, a tensor input of unknown dtype).
std::string generate_cpu_source(const std::vector<GraphUnit>& units, const std::string& origin_file);

// The same in two units, so that a build compiles them in parallel: the
// graph functions (what generate_cpu_source writes, less the fused loops)
// and the fused loops, which include only graph/detail/loop_support.h.
// `loops_namespace` (an identifier unique in the program: the plugin derives
// it from the loops file's path) holds what the loops' unit exports.
struct CpuSources {
  std::string functions;  // <source>.graph.cpp
  std::string loops;      // <source>.loops.cpp
};
CpuSources generate_cpu_sources(const std::vector<GraphUnit>& units, const std::string& origin_file,
                                const std::string& loops_namespace);

// The CUDA source (<source>.graph.cu) for the same graphs: per elementwise
// FusionGroup one __global__ grid-stride kernel, named
// graph_<function>_group<k> and commented with the ops and source lines it
// came from, plus its host launcher and a registrar under
// "<mangled>#<hash>/group<k>" (graph/cuda/fused.h). The CPU source written
// by generate_cpu_source for the same units runs a group through that key
// when its inputs are on the device. Groups the kernels cannot take
// (f16/bf16 operands, more than 32 operands or 16 scalars) get a comment
// instead. Includes only graph/cuda/fused.h and graph/scalar_ops.h.
std::string generate_cuda_source(const std::vector<GraphUnit>& units, const std::string& origin_file);

}  // namespace graph::codegen
