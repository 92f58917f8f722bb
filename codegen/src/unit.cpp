// compile_unit (unit.h): ir::compile, then what codegen needs to print it;
// graph_unit, the same decisions for a graph optimized by hand.
#include "graph/codegen/unit.h"

#include "graph/dtype.h"
#include "graph/ir/signature.h"
#include "graph/ir/verifier.h"

namespace graph::codegen {

CompiledUnit compile_unit(const ir::Graph& lowered, const UnitOptions& o) {
  ir::verify_or_throw(lowered);
  ir::CompileOptions co;
  co.tensor_default = o.tensor_default;
  co.verify_each_pass = o.verify_each_pass;
  co.module = o.module;
  ir::CompiledGraphs compiled = ir::compile(lowered, co);
  CompiledUnit c;
  c.optimized = std::move(compiled.optimized);
  // Autodiff refusing the graph is no error: only grad calls run eagerly.
  c.gradient = std::make_unique<GradientUnit>(std::move(compiled.gradient));
  keep_printable_gradient(*c.gradient);
  const bool variant = o.tensor_default != DType::Float32;
  std::string hash = o.body_hash;
  if (variant) {
    const std::string token(dtype_token(o.tensor_default));
    c.optimized->set_name(c.optimized->name() + "_" + token);
    hash += ":" + token;
  }
  c.unit = GraphUnit{c.optimized.get(), o.mangled_name, hash, o.source, c.gradient.get(),
                     compiled.cuda_graph_blocker, variant ? "" : ir::print(lowered),
                     std::move(compiled.signature), compiled.train_step};
  return c;
}

GraphUnit graph_unit(const ir::Graph& optimized, std::string mangled_name, std::string body_hash,
                     std::string source, const GradientUnit* gradient) {
  GraphUnit u{&optimized, std::move(mangled_name), std::move(body_hash), std::move(source), gradient};
  u.signature = ir::signature(optimized);
  u.train_step = ir::is_train_step(optimized);
  return u;
}

}  // namespace graph::codegen
