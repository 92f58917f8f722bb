#pragma once
// The build-time compile order for one lowered graph, owned here and nowhere
// else. The plugin calls compile() once per function; codegen prints what it
// returns.
//
//   lowered ─ clone ─ default_pipeline ─────────────────────────────────► optimized
//           └ clone ─ the pipeline up to fusion ─ differentiate ─┬─ gradient_pipeline ─► gradient.forward
//                                                                └─ gradient_pipeline ─► gradient.backward
//
// The gradient is made from the graph before fusion (autodiff wants no calls
// and no fusion groups); each half is then optimized and fused like the
// graph itself, so the backward's elementwise chains fuse as the forward's do.
#include <memory>
#include <string>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/ir/signature.h"

namespace graph::ir {

// The gradient of a graph for mixed execution (codegen/grad.h prints it):
//   forward  (inputs...)                 -> (outputs..., saved...)
//   backward (saved..., grad_outputs...) -> (one gradient per floating tensor input)
struct GradientGraphs {
  std::unique_ptr<Graph> forward;   // null when `unsupported` is set
  std::unique_ptr<Graph> backward;  // its inputs typed from the forward's outputs
  size_t num_outputs = 0;           // outputs of the original graph
  size_t num_saved = 0;
  std::vector<size_t> grad_inputs;  // the inputs backward returns gradients of
  std::string unsupported;          // why there is no gradient, or empty
  // The call contract of `forward` (signature.h), made with it, so codegen
  // prints its input guards without deciding them.
  Signature forward_signature;
};

struct CompiledGraphs {
  std::unique_ptr<Graph> optimized;  // default_pipeline, verified
  GradientGraphs gradient;
  // Why the optimized graph must not be captured into a CUDA Graph, "" when
  // it may be (device_control.h's cuda_graph_blocker).
  std::string cuda_graph_blocker;
  // The call contract of `optimized` (signature.h): the prologue's argument
  // order; codegen writes the same table for the guards and interpret mode.
  Signature signature;
  // is_train_step(lowered): the registration says so, and the runtime then
  // runs it without a tape and never captures it into a CUDA Graph.
  bool train_step = false;
};

struct CompileOptions {
  // The dtype of the tensor inputs whose dtype the front end left open
  // (infer_types; index inputs are int64 whatever it is): float32 for the
  // generated code, another for a build's extra dtype variants (the plugin's
  // dtypes= option).
  DType tensor_default = DType::Float32;
  // Verify before and after every pass, so a broken graph names the pass
  // that broke it (graph-codegen, a tool for inspection). Off: verified once
  // at the end, which on long functions costs less than the passes.
  bool verify_each_pass = false;
  // The callees of inline_calls (graph-codegen: the other graphs of its
  // file); the plugin inlines while lowering and passes none.
  const std::vector<std::unique_ptr<Graph>>* module = nullptr;
};

// `lowered` as a front end made it (verified, not optimized) is not changed.
// Throws GraphError when the optimized graph can never run (a shape or dtype
// that cannot work, at its location). A graph autodiff refuses (dropout while
// training, a Loop inside a Loop) is no error: the reason goes to
// gradient.unsupported.
CompiledGraphs compile(const Graph& lowered, const CompileOptions& options);
CompiledGraphs compile(const Graph& lowered, DType tensor_default = DType::Float32);

// The optimized graph alone: the default pipeline (after expanding a train
// step's backward) and the verifier. compile() starts with it; the runtime
// calls it to specialize a graph for a call's dtypes (static.h). Throws
// GraphError as compile() does.
std::unique_ptr<Graph> optimize(const Graph& lowered, const CompileOptions& options);
std::unique_ptr<Graph> optimize(const Graph& lowered, DType tensor_default = DType::Float32);

// Whether `g` is a static train step: it holds loss.backward()
// (backward_loss), or set_grads after compile() expanded it. compile() then
// expands it (passes.h's expand_backward) before the default pipeline, and
// gives no GradientGraphs (the graph writes .grad itself).
bool is_train_step(const Graph& g);

// The gradient part of compile() alone, with respect to every floating
// tensor input.
GradientGraphs gradient_graphs(const Graph& lowered, const CompileOptions& options);
GradientGraphs gradient_graphs(const Graph& lowered, DType tensor_default = DType::Float32);

}  // namespace graph::ir
