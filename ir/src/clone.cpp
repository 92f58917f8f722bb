// clone (ir.h): a structural copy, named as parse(print(g)) would name it.
#include <unordered_map>

#include "graph/ir/ir.h"
#include "value_names.h"

namespace graph::ir {

namespace {

class Cloner {
 public:
  // Values are named in the printer's order: a block's parameters, then each
  // node's outputs, then its nested blocks.
  void block(const Block& from, Block& to) {
    for (const auto& p : from.params()) map_[p.get()] = to.add_param(p->type(), names_(p.get()));
    for (const auto& n : from.nodes()) node(*n, to);
    for (const Value* r : from.returns()) to.add_return(map_.at(r));
  }

 private:
  void node(const Node& n, Block& to) {
    Node* c = to.append(n.op());
    for (size_t i = 0; i < n.num_outputs(); ++i) {
      const Value* o = n.output(i);
      map_[o] = c->add_output(o->type(), names_(o));
    }
    for (const Value* in : n.inputs()) c->add_input(map_.at(in));
    c->attrs() = n.attrs();
    c->set_loc(n.loc());
    for (const auto& b : n.blocks()) block(*b, *c->add_block());
  }

  std::unordered_map<const Value*, Value*> map_;
  detail::ValueNames names_;
};

}  // namespace

std::unique_ptr<Graph> clone(const Graph& g) {
  auto out = std::make_unique<Graph>(g.name());
  Cloner().block(*g.top(), *out->top());
  return out;
}

}  // namespace graph::ir
