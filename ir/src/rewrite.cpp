// Graph surgery shared by the passes (rewrite.h).
#include "rewrite.h"

#include <algorithm>

namespace graph::ir::detail {

namespace {

void drop_nested_uses(Node* n) {
  for (const auto& b : n->blocks())
    for (const auto& inner : b->nodes()) {
      drop_nested_uses(inner.get());
      inner->drop_inputs();
    }
}

bool returned_under(const Block* b, const Value* v) {
  if (std::find(b->returns().begin(), b->returns().end(), v) != b->returns().end()) return true;
  for (const auto& n : b->nodes())
    for (const auto& inner : n->blocks())
      if (returned_under(inner.get(), v)) return true;
  return false;
}

}  // namespace

void erase_node(Node* n) {
  drop_nested_uses(n);
  n->owner()->erase(n);
}

Node* clone_node(const Node* src, Block* dst, const Node* pos, ValueMap& env) {
  Node* c = pos ? pos->owner()->insert_before(pos, src->op()) : dst->append(src->op());
  c->attrs() = src->attrs();
  c->set_loc(src->loc());
  for (Value* in : src->inputs()) {
    auto it = env.find(in);
    c->add_input(it == env.end() ? in : it->second);
  }
  for (const Value* out : src->outputs()) env[out] = c->add_output(out->type(), out->name());
  for (const auto& b : src->blocks()) {
    Block* nb = c->add_block();
    for (const auto& p : b->params()) env[p.get()] = nb->add_param(p->type(), p->name());
    for (const auto& inner : b->nodes()) clone_node(inner.get(), nb, nullptr, env);
    std::vector<Value*> rets;
    for (Value* r : b->returns()) {
      auto it = env.find(r);
      rets.push_back(it == env.end() ? r : it->second);
    }
    nb->set_returns(std::move(rets));
  }
  return c;
}

// Block offers only move_to_end: move the nodes there, then move `pos` and
// everything that followed it behind them.
void move_before(const std::vector<Node*>& nodes, Node* pos) {
  Block* b = pos->owner();
  std::vector<Node*> tail;
  bool after = false;
  for (const auto& n : b->nodes()) {
    if (n.get() == pos) after = true;
    if (after) tail.push_back(n.get());
  }
  for (Node* n : nodes) b->move_to_end(n);
  for (Node* n : tail) b->move_to_end(n);
}

bool is_used(const Value* v, const Block* root) { return !v->users().empty() || returned_under(root, v); }

Node* rebuild(Node* n, const Keep& keep) {
  Block* owner = n->owner();
  Node* c = owner->insert_before(n, n->op());
  c->attrs() = n->attrs();
  c->set_loc(n->loc());
  for (size_t i = 0; i < n->inputs().size(); ++i)
    if (keep.inputs[i]) c->add_input(n->input(i));
  for (size_t b = 0; b < n->blocks().size(); ++b) {
    Block* from = n->block(b);
    Block* to = c->add_block();
    for (size_t i = 0; i < from->params().size(); ++i)
      if (keep.params[b][i]) replace_uses(from, from->param(i), to->add_param(from->param(i)->type(), from->param(i)->name()));
    std::vector<Node*> inner;
    for (const auto& m : from->nodes()) inner.push_back(m.get());
    for (Node* m : inner) to->move_to_end(m);
    std::vector<Value*> rets;
    for (size_t i = 0; i < from->returns().size(); ++i)
      if (keep.returns[b][i]) rets.push_back(from->returns()[i]);
    to->set_returns(std::move(rets));
  }
  for (size_t i = 0; i < n->num_outputs(); ++i) {
    if (!keep.outputs[i]) continue;
    Value* out = c->add_output(n->output(i)->type(), n->output(i)->name());
    replace_uses(owner, n->output(i), out);
  }
  // Uses of the old outputs may sit in enclosing blocks' returns only when
  // `owner` returns them, which replace_uses(owner) covered.
  erase_node(n);
  return c;
}

std::optional<double> constant_number(const Value* v) {
  const Node* p = v->producer();
  if (!p || !p->is(OpId::constant)) return std::nullopt;
  const AttrValue& a = p->attrs().at("value");
  if (auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&a)) return *d;
  return std::nullopt;  // bools are not arithmetic identities
}

}  // namespace graph::ir::detail
