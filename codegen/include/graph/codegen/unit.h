#pragma once
// From a lowered graph to the GraphUnit codegen prints: the one path the
// plugin and graph-codegen share. ir::compile (the passes, the gradient
// graphs, the CUDA-graph decision), the gradient kept only where this back
// end can print it (grad.h), and the lowered IR the registration carries so a
// call in other dtypes runs the graph specialized at run time (static.h's
// CompiledGraph::lowered_ir).
#include <memory>
#include <string>
#include <vector>

#include "graph/codegen/cpp.h"
#include "graph/codegen/grad.h"
#include "graph/ir/compile.h"

namespace graph::codegen {

struct UnitOptions {
  std::string mangled_name;  // the registry key
  std::string body_hash;
  std::string source;        // "model.cpp:12", for messages
  // Another dtype than float32 makes a dtype variant (the plugin's dtypes=):
  // its graph is named <name>_<dtype> and registered under <hash>:<dtype>,
  // without lowered IR (the float32 unit carries it for every dtype).
  DType tensor_default = DType::Float32;
  bool verify_each_pass = false;  // compile.h's CompileOptions
  const std::vector<std::unique_ptr<ir::Graph>>* module = nullptr;  // likewise
};

// Owns what `unit` points to; moving it keeps those pointers valid.
struct CompiledUnit {
  std::unique_ptr<ir::Graph> optimized;
  std::unique_ptr<GradientUnit> gradient;
  GraphUnit unit;  // unit.signature: the prologue's argument order
};

// `lowered` must verify (it is checked first). Throws ir::GraphError when the
// graph can never run (ir::compile), graph::Error when it does not verify.
CompiledUnit compile_unit(const ir::Graph& lowered, const UnitOptions& options);

// A GraphUnit for a graph optimized without compile_unit (the codegen tests
// run single passes): its signature and train step decided from `optimized`
// as ir::compile decides them. `optimized` and `gradient` must outlive it.
GraphUnit graph_unit(const ir::Graph& optimized, std::string mangled_name, std::string body_hash,
                     std::string source, const GradientUnit* gradient = nullptr);

}  // namespace graph::codegen
