// fuse_groups: reductions and matmul epilogues absorb elementwise groups.
//
// Precondition: the graph verifies and has run infer_types and
// fuse_elementwise. Per block (recursively, FusionGroup bodies excluded):
//  - a reduction whose input is the only output of an elementwise group that
//    nothing else reads becomes, with that group, one FusionGroup
//    {kind="reduce"} placed where the reduction was;
//  - a matmul, linear or conv2d whose output is read only by one elementwise
//    group (conv2d: the library adds a relu in its output tile),
//    whose outputs all have the matmul's known shape (or, shapes unknown,
//    which reads nothing else but 0-d values), becomes with it one
//    FusionGroup{kind="matmul_epilogue"} placed where the group was.
// The absorbed group's nodes are moved, not copied, and its parameters are
// rebound to the new group's; values keep their names, types and locations.
// Neither rewrite can create a cycle: everything the new group reads was
// defined before the node whose position it takes.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "../rewrite.h"
#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

bool elementwise_group(const Node* n) {
  if (!n || !n->is(OpId::FusionGroup) || n->blocks().size() != 1) return false;
  auto it = n->attrs().find("kind");
  return it == n->attrs().end() || it->second == AttrValue(std::string("elementwise"));
}

bool returned_under(const Block* b, const Value* v) {
  if (std::find(b->returns().begin(), b->returns().end(), v) != b->returns().end()) return true;
  for (const auto& n : b->nodes())
    for (const auto& inner : n->blocks())
      if (returned_under(inner.get(), v)) return true;
  return false;
}

// The only node reading `v` (once), or null.
Node* sole_user(const Value* v, const Block* top) {
  if (v->users().size() != 1 || returned_under(top, v)) return nullptr;
  return v->users()[0];
}

// Builds the new group before `pos`; `param_for` maps each outside value the
// group reads to its parameter.
struct NewGroup {
  Node* node;
  Block* body;
  std::map<const Value*, Value*> param_for;

  NewGroup(Node* pos, const char* kind) {
    node = pos->owner()->insert_before(pos, "FusionGroup");
    node->attrs()["kind"] = std::string(kind);
    node->set_loc(pos->loc());
    body = node->add_block();
  }

  Value* param(Value* outside) {
    auto it = param_for.find(outside);
    if (it != param_for.end()) return it->second;
    node->add_input(outside);
    return param_for[outside] = body->add_param(outside->type(), outside->name());
  }

  // Moves group `g`'s members in; `bind` gives, for some of g's inputs, the
  // value inside the new group they become (else a parameter).
  void absorb(Node* g, const std::map<const Value*, Value*>& bind) {
    Block* from = g->block(0);
    for (size_t i = 0; i < g->inputs().size(); ++i) {
      auto it = bind.find(g->input(i));
      replace_uses(from, from->param(i), it != bind.end() ? it->second : param(g->input(i)));
    }
    std::vector<Node*> members;
    for (const auto& m : from->nodes()) members.push_back(m.get());
    for (Node* m : members) body->move_to_end(m);
  }

  // Moves a single node in, its inputs becoming parameters.
  void absorb_node(Node* n) {
    for (size_t i = 0; i < n->inputs().size(); ++i) n->replace_input(i, param(n->input(i)));
    body->move_to_end(n);
  }

  // The values of the body that `outside` uses see, as outputs.
  void finish(const std::vector<Value*>& inner_results) {
    for (Value* r : inner_results) {
      Value* out = node->add_output(r->type(), r->name());
      replace_uses(node->owner(), r, out, body);
    }
    body->set_returns(inner_results);
  }
};

void fuse_reduce(Node* r, Node* g) {
  Value* produced = g->block(0)->returns()[0];
  NewGroup ng(r, "reduce");
  ng.absorb(g, {});
  g->block(0)->set_returns({});
  r->replace_input(0, produced);
  ng.body->move_to_end(r);
  ng.finish({r->output()});
  detail::erase_node(g);
}

void fuse_epilogue(Node* mm, Node* g) {
  std::vector<Value*> results = g->block(0)->returns();
  NewGroup ng(g, "matmul_epilogue");
  ng.absorb_node(mm);
  ng.absorb(g, {{mm->output(), mm->output()}});
  g->block(0)->set_returns({});
  std::vector<Value*> old_outputs = g->outputs();
  for (size_t i = 0; i < old_outputs.size(); ++i) {
    Value* out = ng.node->add_output(results[i]->type(), results[i]->name());
    replace_uses(ng.node->owner(), old_outputs[i], out);
  }
  ng.body->set_returns(results);
  detail::erase_node(g);
}

bool reducible(const Node* r, const Block* top) {
  const OpInfo* info = r->table_op();
  // A reduction whose dims are known only at run time stays outside.
  if (!info || info->kind != OpKind::Reduce || has_dynamic_attrs(*r)) return false;
  const Node* g = r->input(0)->producer();
  return elementwise_group(g) && g->num_outputs() == 1 && sole_user(g->output(), top) == r;
}

bool has_epilogue(const Node* mm, const Block* top) {
  const OpInfo* info = mm->table_op();
  if (!info || (info->id != OpId::matmul && info->id != OpId::linear && info->id != OpId::conv2d) ||
      mm->num_outputs() != 1)
    return false;
  const Type& t = mm->output()->type();
  const Node* g = sole_user(mm->output(), top);
  if (!elementwise_group(g) || g->owner() != mm->owner()) return false;
  if (!t.dims) {
    // Shapes known only at run time: the group keeps the GEMM's shape when
    // nothing else it reads can broadcast it (0-d values only), e.g. relu.
    for (const Value* in : g->inputs())
      if (in != mm->output() && !(in->type().dims && in->type().dims->empty())) return false;
    return true;
  }
  for (const Value* out : g->outputs())
    if (!out->type().dims || *out->type().dims != *t.dims) return false;
  return true;
}

void fuse_block(Block* b, const Block* top) {
  std::vector<Node*> order;
  for (const auto& n : b->nodes()) order.push_back(n.get());
  for (Node* n : order) {
    if (n->is(OpId::FusionGroup)) continue;
    for (const auto& inner : n->blocks()) fuse_block(inner.get(), top);
  }
  std::set<const Node*> erased;  // absorbed groups still listed in `order`
  for (Node* n : order) {
    if (erased.count(n)) continue;
    if (reducible(n, top)) {
      erased.insert(n->input(0)->producer());
      fuse_reduce(n, n->input(0)->producer());
    } else if (has_epilogue(n, top)) {
      Node* g = sole_user(n->output(), top);
      erased.insert(g);
      fuse_epilogue(n, g);
    }
  }
}

}  // namespace

void fuse_groups(Graph& g) { fuse_block(g.top(), g.top()); }

}  // namespace graph::ir
