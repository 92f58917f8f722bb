// Gradients of static graphs for mixed execution (grad.h): the two halves
// ir::compile made, written as two more GraphFns plus a CompiledGradient
// (runtime: graph/detail/static_autograd.h).
#include <set>
#include <sstream>

#include "emitter.h"
#include "graph/codegen/grad.h"
#include "graph/error.h"

namespace graph::codegen {

void keep_printable_gradient(GradientUnit& u) {
  if (!u.unsupported.empty()) return;
  try {
    detail::gradient_functions(u, "check", "", "", "");
  } catch (const Error& e) {
    u = GradientUnit{};
    u.unsupported = e.what();
  }
}

namespace detail {

namespace {

// The GRAPH_BACKWARD_OP entries of the op table.
bool is_gradient_op(const ir::Node* n) { return n->table_op() && n->table_op()->has(op_trait::Backward); }

}  // namespace

// The gradient ops call their backward kernels (graph/detail/backward_kernels.h)
// directly, with the attributes as C++ values: nothing is parsed at run time.
bool Emitter::gradient_op(const ir::Node* n) {
  if (!is_gradient_op(n)) return false;
  const OpInfo* op = n->table_op();
  if (!op) throw Error("codegen: the gradient op '" + n->op() + "' is not in the op table");
  if (n->loc().valid()) line("// " + loc_str(n->loc()) + ": " + n->op());
  const std::string call = at_source(n, n->op(), gradient_call(n, *op));
  // The kernels of one-input ops return the Tensor itself (backward_kernels.h).
  const bool one = op->id == OpId::sum_to || op->id == OpId::reshape_as || op->id == OpId::zeros_like ||
                   op->id == OpId::cat_backward || op->id == OpId::sum_backward || op->id == OpId::mean_backward ||
                   op->id == OpId::amax_backward || op->id == OpId::amin_backward || op->id == OpId::slice_backward ||
                   op->id == OpId::max_pool2d_backward || op->id == OpId::avg_pool2d_backward ||
                   op->id == OpId::adaptive_avg_pool2d_backward || op->id == OpId::pad_backward ||
                   op->id == OpId::interpolate_backward;
  if (one) {
    line("const ::graph::Tensor " + name(n->output()) + " = " + call + ";");
    return true;
  }
  const std::string results = fresh("results");
  line("const std::vector<::graph::Tensor> " + results + " = " + call + ";");
  for (size_t i = 0; i < n->num_outputs(); ++i)
    line("const ::graph::Tensor " + name(n->output(i)) + " = " + results + "[" + std::to_string(i) + "];");
  return true;
}

// ---- only the work wanted gradients need (ir/output_reach.h) ----------------------

void Emitter::declare_needs(const ir::Graph& g) {
  need_locals_.clear();
  auto declare = [&](const std::vector<size_t>& reach) {
    if (reach.empty() || needs_->reaches_all(reach) || need_locals_.count(reach)) return;
    std::string any;
    for (size_t k : reach) any += (any.empty() ? "" : " || ") + std::string("needed[") + std::to_string(k) + "]";
    const std::string local = fresh("needs");
    need_locals_.emplace(reach, local);
    line("[[maybe_unused]] const bool " + local + " = " + any + ";");
  };
  for (const auto& n : g.top()->nodes()) {
    if (n->is(OpId::constant)) continue;
    declare(needs_->of_node(n.get()));
    if (is_gradient_op(n.get()))
      for (size_t i = 0; i < n->num_outputs(); ++i) declare(needs_->of(n->output(i)));
  }
  if (!need_locals_.empty()) line("");
}

std::string Emitter::needed_expr(const std::vector<size_t>& reach) const {
  if (reach.empty()) return "false";
  if (needs_->reaches_all(reach)) return "true";
  return need_locals_.at(reach);
}

// A node whose outputs only some gradients need runs in an `if`: its outputs
// are declared before it, left undefined when it does not run (no node that
// runs reads them: output_reach.h), and assigned from the node's own locals.
void Emitter::node_if_needed(const ir::Node* n) {
  const std::vector<size_t> reach = needs_->of_node(n);
  if (n->is(OpId::constant) || reach.empty() || needs_->reaches_all(reach)) return node(n);
  std::vector<std::string> outer;
  for (const ir::Value* o : n->outputs()) {
    outer.push_back(name(o));
    line(local_decl_type(o->type()) + " " + outer.back() + "{};");
  }
  for (size_t i = 0; i < outer.size(); ++i) alias(n->output(i), fresh(outer[i] + "_"));
  open("if (" + needed_expr(reach) + ")");
  node(n);
  for (size_t i = 0; i < outer.size(); ++i) {
    line(outer[i] + " = " + name(n->output(i)) + ";");
    alias(n->output(i), outer[i]);
  }
  close();
}

// The build-time mask, without the outputs no wanted gradient reaches; a
// gradient op inside a nested block keeps it (it runs when its node does).
std::string Emitter::runtime_mask(const ir::Node* n, const std::string& build) const {
  if (!needs_ || n->owner() != needs_top_ || n->num_outputs() > 32) return build;
  uint32_t fixed = 0;
  std::string dynamic;
  for (size_t i = 0; i < n->num_outputs(); ++i) {
    const std::string bit = std::to_string(uint32_t{1} << i) + "u";
    const std::string need = needed_expr(needs_->of(n->output(i)));
    if (need == "true") fixed |= uint32_t{1} << i;
    else if (need != "false") dynamic += " | (" + need + " ? " + bit + " : 0u)";
  }
  if (dynamic.empty() && fixed == (n->num_outputs() == 32 ? ~uint32_t{0} : (uint32_t{1} << n->num_outputs()) - 1))
    return build;
  return "(" + build + " & (" + std::to_string(fixed) + "u" + dynamic + "))";
}

std::string gradient_functions(const GradientUnit& u, const std::string& fn, const std::string& source,
                               const std::string& mangled_name, const std::string& body_hash, KernelPool* pool) {
  if (!u.unsupported.empty()) return "";
  KernelPool own;
  if (!pool) pool = &own;
  Emitter e;
  e.line("");
  e.line("// The gradient of " + fn + " (mixed execution): the forward also returns what the backward needs.");
  {
    Emitter f;
    f.set_pool(pool);
    f.set_cuda(fn + "_forward", mangled_name, body_hash + "/forward");
    f.graph_function(*u.forward, fn + "_forward", source, &u.forward_signature);
    e.line("::graph::detail::GraphBuffers " + Emitter::buffers_name(fn + "_forward") + "{" + std::to_string(f.slots()) + "};");
    e.raw(f.take());
  }
  e.line("");
  // The runtime made the backward's inputs from the forward's outputs and the
  // tape's gradients (a saved value may be undefined): nothing to guard.
  Emitter b;
  b.set_pool(pool);
  b.set_cuda(fn + "_backward", mangled_name, body_hash + "/backward");
  const ir::OutputReach reach(*u.backward);
  b.graph_function(*u.backward, fn + "_backward", source, /*signature=*/nullptr, &reach);
  e.line("::graph::detail::GraphBuffers " + Emitter::buffers_name(fn + "_backward") + "{" + std::to_string(b.slots()) + "};");
  e.raw(b.take());
  return (pool == &own ? own.text() : std::string()) + e.take();
}

std::string gradient_registration(const GradientUnit& u, const std::string& fn, const std::string& mangled_name,
                                  const std::string& body_hash) {
  std::ostringstream s;
  const std::string head = ir::quote(mangled_name) + ", " + ir::quote(body_hash) + ", ";
  if (!u.unsupported.empty()) {
    s << "::graph::detail::CompiledGradient gradient_" << fn << "{" << head << "nullptr, nullptr, 0, nullptr, 0, "
      << ir::quote(u.unsupported) << "};\n";
  } else {
    s << "const size_t grad_inputs_" << fn << "[] = {";
    for (size_t i = 0; i < u.grad_inputs.size(); ++i) s << (i ? ", " : "") << u.grad_inputs[i];
    s << "};\n";
    s << "::graph::detail::CompiledGradient gradient_" << fn << "{" << head << "&" << fn << "_forward, &" << fn
      << "_backward, " << u.num_saved << ", grad_inputs_" << fn << ", " << u.grad_inputs.size() << ", nullptr};\n";
  }
  s << "const ::graph::detail::GradientRegistrar register_gradient_" << fn << "{&gradient_" << fn << "};\n";
  return s.str();
}

}  // namespace detail
}  // namespace graph::codegen
