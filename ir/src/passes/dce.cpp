// dce: dead code elimination.
//
// Precondition: the graph verifies. Sweeps every block from the end, so a
// node's users are gone before the node is considered; nested blocks are
// swept before the node that owns them. If/Loop outputs nobody reads are cut
// (with their block returns, and for a Loop the whole carried value when the
// body ignores it too), which can leave more of the body dead: the sweeps
// repeat until nothing changes.
#include <map>
#include <vector>

#include "../rewrite.h"
#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

// Nodes whose only effect is their outputs: all but the op table's Effectful
// ones (call: the callee is unknown until inlining), and If/Loop with such a
// node inside. Random ops count: an unused draw changes nothing observable.
bool pure(const Node* n) {
  const OpInfo* info = n->info();
  if (!info || info->has(op_trait::Effectful)) return false;
  if (n->is(OpId::If) || n->is(OpId::Loop)) {
    for (const auto& b : n->blocks())
      for (const auto& m : b->nodes())
        if (!pure(m.get())) return false;
  }
  return true;
}

class Sweep {
 public:
  explicit Sweep(Graph& g) : g_(g) {}

  // One sweep over the graph; true when something was removed.
  bool run() {
    recount();
    changed_ = false;
    block(g_.top());
    return changed_;
  }

 private:
  void recount() {
    returned_.clear();
    count_returns(g_.top());
  }

  void count_returns(const Block* b) {
    for (const Value* r : b->returns()) ++returned_[r];
    for (const auto& n : b->nodes())
      for (const auto& inner : n->blocks()) count_returns(inner.get());
  }

  bool used(const Value* v) const { return !v->users().empty() || returned_.count(v); }

  void block(Block* b) {
    std::vector<Node*> order;
    for (const auto& n : b->nodes()) order.push_back(n.get());
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      if (!n->is(OpId::FusionGroup))
        for (const auto& inner : n->blocks()) block(inner.get());
      if (n->is(OpId::If) || n->is(OpId::Loop)) {
        Node* rebuilt = n->is(OpId::If) ? prune_if(n) : prune_loop(n);
        if (rebuilt != n) recount();  // the rebuilt node's returns are new values' uses
        n = rebuilt;
      }
      bool live = !pure(n);
      for (const Value* v : n->outputs()) live = live || used(v);
      if (!live) {
        detail::erase_node(n);
        changed_ = true;
      }
    }
  }

  Node* prune_if(Node* n) {
    detail::Keep keep{std::vector<bool>(n->inputs().size(), true), {}, {{}, {}}, {}};
    bool any = false;
    for (const Value* v : n->outputs()) {
      keep.outputs.push_back(used(v));
      any = any || !used(v);
    }
    if (!any || n->blocks().size() != 2) return n;
    keep.returns = {keep.outputs, keep.outputs};
    changed_ = true;
    return detail::rebuild(n, keep);
  }

  // Carried value i goes when output i is unused and the body reads its
  // parameter nowhere (returning it unchanged as the next value is no read).
  Node* prune_loop(Node* n) {
    if (n->blocks().size() != 1) return n;
    const Block* body = n->block(0);
    const size_t carried = n->num_outputs();
    std::vector<bool> keep_carried(carried, true);
    bool any = false;
    for (size_t i = 0; i < carried; ++i) {
      const Value* p = body->param(i + 1);
      int returns = returned_.count(p) ? returned_.at(p) : 0;
      if (body->returns()[i + 1] == p) --returns;
      if (!used(n->output(i)) && p->users().empty() && returns == 0) {
        keep_carried[i] = false;
        any = true;
      }
    }
    if (!any) return n;
    detail::Keep keep{{true, true}, keep_carried, {{true}}, {{true}}};
    for (size_t i = 0; i < carried; ++i) {
      keep.inputs.push_back(keep_carried[i]);
      keep.params[0].push_back(keep_carried[i]);
      keep.returns[0].push_back(keep_carried[i]);
    }
    changed_ = true;
    return detail::rebuild(n, keep);
  }

  Graph& g_;
  std::map<const Value*, int> returned_;
  bool changed_ = false;
};

}  // namespace

void dce(Graph& g) {
  Sweep sweep(g);
  while (sweep.run()) {
  }
}

}  // namespace graph::ir
