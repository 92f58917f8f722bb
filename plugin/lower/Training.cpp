// Static train steps: `loss.backward()` as a statement becomes one
// backward_loss node (ir/passes.h's expand_backward turns it into the
// gradient and a set_grads at compile time); an optimizer's zero_grad() and
// step() become its effect nodes (ops.def: optimizer_*).
#include "FunctionLowering.h"

namespace cxxgraph::lower {

namespace {

bool is_tensor_backward(const CXXMemberCallExpr* m) {
  const CXXMethodDecl* md = m->getMethodDecl();
  return md && md->getIdentifier() && md->getName() == "backward" && is_tensor_record(m->getObjectType());
}

bool is_optimizer_class(const CXXRecordDecl* r) {
  return r && r->getQualifiedNameAsString() == "graph::optim::Optimizer";
}

// opt.step() / opt.zero_grad() without arguments on a graph::optim::Optimizer
// (or a class derived from it): "step", "zero_grad", or nullptr.
const char* optimizer_call(const CXXMemberCallExpr* m) {
  const CXXMethodDecl* md = m->getMethodDecl();
  if (!md || !md->getIdentifier() || m->getNumArgs() != 0) return nullptr;
  const char* what = md->getName() == "step" ? "step" : md->getName() == "zero_grad" ? "zero_grad" : nullptr;
  const CXXRecordDecl* r = m->getObjectType()->getAsCXXRecordDecl();
  if (!what || !r || !r->hasDefinition()) return nullptr;
  if (is_optimizer_class(r)) return what;
  return r->forallBases([](const CXXRecordDecl* b) { return !is_optimizer_class(b); }) ? nullptr : what;
}

}  // namespace

// `opt->zero_grad()` / `opt->step()` at the top level: optimizer_zero_grad /
// optimizer_step nodes on the optimizer's handle (an int input the prologue
// reads at every call), and one optimizer_guard first in the graph, so that a
// refused optimizer runs the eager body before any effect.
auto FunctionLowering::optimizer_statement(const CXXMemberCallExpr* m, const char* what) -> void {
  SourceLocation at = m->getExprLoc();
  if (depth_ != 0 || frames_.size() != 1)
    unsupported(at, std::string("optimizer ") + what + "() is lowered only at the top level of the function, not "
                    "inside an if, a loop or a called function");
  const std::string path = "::graph::detail::optimizer_handle(" + object_pointer(m) + ")";
  ir::Value* opt = nullptr;
  if (auto it = members_.find(path); it != members_.end()) {
    opt = it->second;
  } else {
    opt = graph_->add_input(ir::Type::int_(), "opt");
    captures_.push_back(path);
    members_[path] = opt;
    ir::Node* guard = block_->nodes().empty() ? block_->append("optimizer_guard")
                                              : block_->insert_before(block_->nodes().front().get(), "optimizer_guard");
    guard->add_input(opt);
    guard->set_loc(loc(at));
  }
  const bool step = std::string(what) == "step";
  ir::Node* n = block_->append(step ? "optimizer_step" : "optimizer_zero_grad");
  n->add_input(opt);
  if (step) n->attrs()["params"] = int64_t{0};  // expand_backward adds the graph's gradients
  stepped_ = stepped_ || step;
  n->set_loc(loc(at));
}

auto FunctionLowering::training_statement(const Expr* e) -> bool {
  const auto* m = dyn_cast<CXXMemberCallExpr>(e);
  if (m && !is_tensor_backward(m))
    if (const char* what = optimizer_call(m)) {
      optimizer_statement(m, what);
      return true;
    }
  if (!m || !is_tensor_backward(m)) return false;
  SourceLocation at = m->getExprLoc();
  for (const Expr* a : m->arguments())
    if (!isa<CXXDefaultArgExpr>(a))
      unsupported(at, "loss.backward() with arguments (a gradient, retain_graph) cannot be lowered; "
                      "a static train step calls loss.backward() on a scalar loss");
  if (depth_ != 0 || frames_.size() != 1)
    unsupported(at, "loss.backward() is lowered only at the top level of the function, not inside an if, a loop "
                    "or a called function");
  ir::Value* loss = expr(m->getImplicitObjectArgument());
  if (!loss->type().is_tensor()) unsupported(at, "backward() needs a tensor loss");
  // The parameters: tensors read through `this` or a module (members_), in
  // input order; tensor arguments and globals are data.
  std::vector<ir::Value*> inputs{loss};
  for (const auto& in : graph_->inputs())
    for (const auto& [path, v] : members_)
      if (v == in.get() && v->type().is_tensor()) inputs.push_back(v);
  if (inputs.size() == 1)
    unsupported(at, "loss.backward(): the function reads no parameter through 'this' or a module before it, so "
                    "nothing would get a gradient");
  ir::Node* n = block_->append("backward_loss");
  for (ir::Value* v : inputs) n->add_input(v);
  n->set_loc(loc(at));
  return true;
}

}  // namespace cxxgraph::lower
