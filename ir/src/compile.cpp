// compile (compile.h): the order of passes, differentiation and fusion.
#include "graph/ir/compile.h"

#include "graph/error.h"
#include "graph/ir/autodiff.h"
#include "graph/ir/device_control.h"
#include "graph/ir/passes.h"
#include "graph/ir/pipeline.h"
#include "graph/ir/verifier.h"

namespace graph::ir {

namespace {

// The default pipeline up to fusion: what differentiation starts from.
constexpr const char* kBeforeGradient = "inline_calls, infer_types, simplify, unpack_lists, const_fold, cse, dce, infer_types";

PipelineOptions options_for(const CompileOptions& c) {
  PipelineOptions o;
  o.tensor_default = c.tensor_default;
  o.verify = c.verify_each_pass;
  return o;
}

bool floating_tensor(const Type& t) { return t.is_tensor() && t.dtype && is_floating(*t.dtype); }

// The backward's inputs as typed as the forward outputs they receive: saved
// values exactly, gradients as the (tensor) outputs they belong to. Fusion
// needs element types, and autodiff leaves grad_outputs untyped.
void type_backward_inputs(const GradientGraphs& u) {
  const Graph& f = *u.forward;
  Graph& b = *u.backward;
  for (size_t j = 0; j < u.num_saved; ++j) b.inputs()[j]->set_type(f.outputs()[u.num_outputs + j]->type());
  for (size_t i = 0; i < u.num_outputs; ++i)
    if (floating_tensor(f.outputs()[i]->type())) b.inputs()[u.num_saved + i]->set_type(f.outputs()[i]->type());
}

}  // namespace

GradientGraphs gradient_graphs(const Graph& lowered, DType tensor_default) {
  return gradient_graphs(lowered, CompileOptions{tensor_default});
}

GradientGraphs gradient_graphs(const Graph& lowered, const CompileOptions& options) {
  GradientGraphs u;
  // The default pipeline up to fusion; the rest runs on each half.
  std::unique_ptr<Graph> g = clone(lowered);
  run_pipeline(*g, parse_pipeline(kBeforeGradient), options_for(options), options.module);
  std::vector<bool> requires_grad;
  bool any = false;
  for (const auto& in : g->inputs()) {
    requires_grad.push_back(floating_tensor(in->type()));
    any = any || requires_grad.back();
  }
  if (!any) {
    u.unsupported = "the graph has no floating tensor inputs";
    return u;
  }
  GradGraphs gg;
  try {
    gg = differentiate(*g, requires_grad);
  } catch (const Error& e) {
    u.unsupported = e.what();
    return u;
  }
  u.forward = std::move(gg.forward);
  u.backward = std::move(gg.backward);
  u.num_outputs = gg.num_outputs;
  u.num_saved = gg.num_saved;
  u.grad_inputs = gg.grad_inputs;
  type_backward_inputs(u);
  const std::vector<Pass> rest = gradient_pipeline();
  PipelineOptions halves;  // typed already: no tensor default
  halves.verify = options.verify_each_pass;
  run_pipeline(*u.forward, rest, halves);
  run_pipeline(*u.backward, rest, halves);
  verify_or_throw(*u.forward);
  verify_or_throw(*u.backward);
  u.forward_signature = signature(*u.forward);
  return u;
}

bool is_train_step(const Graph& g) {
  bool found = false;
  walk(g.top(), [&](const Node* n) { found = found || n->is(OpId::backward_loss) || n->is(OpId::set_grads) || n->is(OpId::optimizer_guard);
  });
  return found;
}

std::unique_ptr<Graph> optimize(const Graph& lowered, DType tensor_default) {
  return optimize(lowered, CompileOptions{tensor_default});
}

std::unique_ptr<Graph> optimize(const Graph& lowered, const CompileOptions& options) {
  std::unique_ptr<Graph> g = clone(lowered);
  if (is_train_step(lowered)) {
    // loss.backward() becomes the gradient and a set_grads before the rest of
    // the pipeline, so forward and backward are optimized and fused as one.
    run_pipeline(*g, parse_pipeline(kBeforeGradient), options_for(options), options.module);
    expand_backward(*g);
  }
  // By default verified once at the end: after every pass it costs more
  // than all the passes together on long functions (the pass tests verify
  // each step).
  run_pipeline(*g, default_pipeline(), options_for(options), options.module);
  verify_or_throw(*g);
  return g;
}

CompiledGraphs compile(const Graph& lowered, DType tensor_default) {
  return compile(lowered, CompileOptions{tensor_default});
}

CompiledGraphs compile(const Graph& lowered, const CompileOptions& options) {
  CompiledGraphs c;
  c.optimized = optimize(lowered, options);
  c.cuda_graph_blocker = cuda_graph_blocker(*c.optimized);
  c.signature = signature(*c.optimized);
  // Decided on the lowered graph: its backward_loss always becomes a kept
  // set_grads in the optimized one, so both give the same answer.
  c.train_step = is_train_step(lowered);
  if (c.train_step)
    c.gradient.unsupported = "the graph is a train step: it writes .grad itself (loss.backward())";
  else
    c.gradient = gradient_graphs(lowered, options);
  return c;
}

}  // namespace graph::ir
