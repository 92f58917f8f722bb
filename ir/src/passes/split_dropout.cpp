// split_dropout: before differentiating, a dropout that may be training
// becomes x * dropout_mask(x, p, training), so the backward multiplies the
// gradient by the very mask the forward drew (saved like any forward value).
//
// Precondition: `g` verifies. A dropout whose attributes say evaluation
// (training false, or p 0) is the identity and stays. Run-time attributes
// ("@i" inputs) move to the mask node unchanged, since its inputs are the
// dropout's. Postcondition: `g` verifies; it draws the same numbers in the
// same order as before, and as eager dropout does under the same seed.
#include <vector>

#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

bool is_identity(const Node& n) {
  if (has_dynamic_attrs(n)) return false;
  const bool training = !n.has_attr("training") || n.b("training");
  const double p = n.has_attr("p") ? n.f("p") : 0.5;
  return !training || p == 0.0;
}

void split_in(Block* root, Block* b) {
  std::vector<Node*> drops;
  for (const auto& n : b->nodes()) {
    for (const auto& inner : n->blocks()) split_in(root, inner.get());
    if (n->is(OpId::dropout) && !is_identity(*n)) drops.push_back(n.get());
  }
  for (Node* d : drops) {
    Node* mask = b->insert_before(d, "dropout_mask");
    for (Value* v : d->inputs()) mask->add_input(v);
    mask->attrs() = d->attrs();
    mask->set_loc(d->loc());
    Value* m = mask->add_output(d->output()->type());
    Node* mul = b->insert_before(d, "mul");
    mul->add_input(d->input(0));
    mul->add_input(m);
    mul->set_loc(d->loc());
    replace_uses(root, d->output(), mul->add_output(d->output()->type(), d->output()->name()));
    b->erase(d);
  }
}

}  // namespace

void split_dropout(Graph& g) { split_in(g.top(), g.top()); }

}  // namespace graph::ir
