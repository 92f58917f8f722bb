// expand_backward (passes.h): `loss.backward()` of a static train step
// becomes the gradient of the graph before it and one set_grads node.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/ir/autodiff.h"
#include "graph/ir/passes.h"
#include "../rewrite.h"

namespace graph::ir {

namespace {

[[noreturn]] void refuse(const Node* n, const std::string& msg) {
  std::string where;
  if (n->loc().valid())
    where = " at " + n->loc().file + ":" + std::to_string(n->loc().line) + ":" + std::to_string(n->loc().col);
  throw GraphError("loss.backward()" + where + ": " + msg, n->loc(), "loss.backward(): " + msg);
}

bool floating_tensor(const Value* v) {
  return v->type().is_tensor() && v->type().dtype && is_floating(*v->type().dtype);
}

size_t input_index(const Graph& g, const Value* v) {
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (g.inputs()[i].get() == v) return i;
  return g.inputs().size();
}

// The loss must be a known scalar: eager backward() without a gradient
// refuses anything else, and the seed here is ones of its shape.
void check_loss(const Node* b) {
  const Type& t = b->input(0)->type();
  if (!floating_tensor(b->input(0))) refuse(b, "the loss must be a floating-point tensor, not " + t.str());
  if (!t.dims)
    refuse(b, "grad can be implicitly created only for scalar outputs, and the loss's rank is unknown here; "
              "reduce it to a scalar (.sum(), .mean())");
  int64_t numel = 1;
  for (const Dim& d : *t.dims) numel = d.is_static() ? numel * d.size : -1;
  if (numel != 1)
    refuse(b, "grad can be implicitly created only for scalar outputs, and the loss is " + t.str());
}

bool optimizer_effect(const Node* n) {
  return n->is(OpId::optimizer_guard) || n->is(OpId::optimizer_zero_grad) || n->is(OpId::optimizer_step);
}

// Each opt.step() after backward() gets the graph's gradients (`s` is the
// set_grads) when the same optimizer's zero_grad() came before backward() and
// none between: its parameters' .grad then holds exactly these values (the
// runtime maps the optimizer's parameters onto these), so the update need
// not read .grad back. Otherwise it reads .grad, as eager step() does.
void feed_steps(Graph& g, const Node* s, const std::vector<Value*>& params, const std::vector<Value*>& grads) {
  std::vector<Value*> cleared_before, cleared_after;  // optimizer handles
  bool after = false;
  auto has = [](const std::vector<Value*>& v, Value* x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  for (const auto& up : g.top()->nodes()) {
    Node* n = up.get();
    if (n == s) after = true;
    if (n->is(OpId::optimizer_zero_grad)) (after ? cleared_after : cleared_before).push_back(n->input(0));
    if (!after || !n->is(OpId::optimizer_step) || n->inputs().size() != 1) continue;
    if (!has(cleared_before, n->input(0)) || has(cleared_after, n->input(0))) continue;
    for (Value* p : params) n->add_input(p);
    for (Value* d : grads) n->add_input(d);
    n->attrs()["params"] = static_cast<int64_t>(params.size());
  }
}

// (inputs...) -> (loss): the top-level nodes before `b`, copied.
std::unique_ptr<Graph> prefix(const Graph& g, const Node* b) {
  auto p = std::make_unique<Graph>(g.name() + "_loss");
  detail::ValueMap env;
  for (const auto& in : g.inputs()) env[in.get()] = p->add_input(in->type(), in->name());
  for (const auto& n : g.top()->nodes()) {
    if (n.get() == b) break;
    if (optimizer_effect(n.get())) continue;  // no values: nothing to differentiate
    detail::clone_node(n.get(), p->top(), nullptr, env);
  }
  auto it = env.find(b->input(0));
  p->top()->add_return(it->second);
  return p;
}

// ones of the loss's shape and dtype, before `b`.
Value* seed(Block* top, const Node* b) {
  Value* loss = b->input(0);
  Node* sizes = top->insert_before(b, "tensor_sizes");
  sizes->add_input(loss);
  sizes->add_output(Type::tensor(DType::Int64, {Dim::of(static_cast<int64_t>(loss->type().dims->size()))}));
  Node* one = top->insert_before(b, "constant");
  one->attrs()["value"] = 1.0;
  one->add_output(Type::float_());
  Node* full = top->insert_before(b, "full_dyn");
  full->attrs()["dtype"] = std::string(dtype_token(*loss->type().dtype));
  full->add_input(sizes->output());
  full->add_input(one->output());
  full->add_output(loss->type());
  for (Node* n : {sizes, one, full}) n->set_loc(b->loc());
  return full->output();
}

void expand(Graph& g, Node* b) {
  check_loss(b);
  std::vector<bool> is_param(g.inputs().size(), false);
  std::vector<Value*> params;
  for (size_t i = 1; i < b->inputs().size(); ++i) {
    Value* p = b->input(i);
    const size_t k = input_index(g, p);
    if (k == g.inputs().size()) refuse(b, "parameter " + std::to_string(i - 1) + " is not an input of the graph");
    if (!floating_tensor(p) || is_param[k]) continue;  // an integer member (a Shape, indices) is data
    is_param[k] = true;
    params.push_back(p);
  }
  if (params.empty()) refuse(b, "no parameter reaches the loss through 'this' or a module, so nothing gets a gradient");
  std::unique_ptr<Graph> combined;
  try {
    combined = differentiate_combined(*prefix(g, b), is_param);
  } catch (const GraphError&) {
    throw;
  } catch (const Error& e) {
    refuse(b, e.what());
  }
  // (inputs..., grad_loss) -> (loss, grads in input order...): placed before
  // `b`; CSE then merges its copy of the forward with the graph's own.
  detail::ValueMap env;
  for (size_t i = 0; i < g.inputs().size(); ++i) env[combined->inputs()[i].get()] = g.inputs()[i].get();
  env[combined->inputs().back().get()] = seed(g.top(), b);
  for (const auto& n : combined->top()->nodes()) detail::clone_node(n.get(), g.top(), b, env);
  auto mapped = [&](Value* v) { return env.count(v) ? env.at(v) : v; };
  Node* s = g.top()->insert_before(b, "set_grads");
  s->set_loc(b->loc());
  std::vector<Value*> in_order;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (is_param[i]) in_order.push_back(g.inputs()[i].get());
  for (Value* p : in_order) s->add_input(p);
  for (size_t k = 0; k < in_order.size(); ++k) s->add_input(mapped(combined->outputs()[1 + k]));
  // The data tensors: set_grads refuses a call where one requires grad,
  // since eager backward() would write its .grad and the graph does not.
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (!is_param[i] && floating_tensor(g.inputs()[i].get())) s->add_input(g.inputs()[i].get());
  s->attrs()["params"] = static_cast<int64_t>(in_order.size());
  b->drop_inputs();
  g.top()->erase(b);
  std::vector<Value*> grads;
  for (size_t k = 0; k < in_order.size(); ++k) grads.push_back(s->input(in_order.size() + k));
  feed_steps(g, s, in_order, grads);
}

}  // namespace

void expand_backward(Graph& g) {
  std::vector<Node*> found;
  walk(g.top(), [&](const Node* n) {
    if (n->is(OpId::backward_loss)) found.push_back(const_cast<Node*>(n));
  });
  for (Node* b : found)
    if (b->owner() != g.top()) refuse(b, "it must be at the top level of the function, not inside an if or a loop");
  if (found.size() > 1) refuse(found[1], "a static train step may call backward() once");
  if (!found.empty()) expand(g, found[0]);
}

}  // namespace graph::ir
