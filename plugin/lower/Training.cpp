// Static train steps: `loss.backward()` as a statement becomes one
// backward_loss node (ir/passes.h's expand_backward turns it into the
// gradient and a set_grads at compile time).
#include "FunctionLowering.h"

namespace cxxgraph::lower {

namespace {

bool is_tensor_backward(const CXXMemberCallExpr* m) {
  const CXXMethodDecl* md = m->getMethodDecl();
  return md && md->getIdentifier() && md->getName() == "backward" && is_tensor_record(m->getObjectType());
}

}  // namespace

auto FunctionLowering::training_statement(const Expr* e) -> bool {
  const auto* m = dyn_cast<CXXMemberCallExpr>(e);
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
