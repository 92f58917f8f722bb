// unpack_lists: cat and stack of a list whose elements are known where it is
// built (a braced list, or push_backs outside any loop) take those tensors as
// their operands.
//
// Precondition: the graph verifies. A list value built by list_new followed
// by list_append nodes has a fixed length and fixed elements: cat(list) is
// then cat(t0, t1, ...). The operand form needs no list at run time, and its
// gradient needs each element's shape only where the cat is, so it also works
// inside a Loop body, where a list could not be saved for the backward.
// Lists that are Loop-carried, block parameters or graph inputs stay lists;
// so does a cat whose `dim` is known only at run time (its "@i" input index
// would move). Postcondition: `g` verifies; the lists may be left for dce.
#include <algorithm>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

// The elements of `list` in order, when it is list_new plus list_appends.
bool known_elements(const Value* list, std::vector<Value*>& out) {
  std::vector<Value*> reversed;
  for (const Value* v = list;;) {
    const Node* p = v->producer();
    if (!p) return false;
    if (p->is(OpId::list_new)) break;
    if (!p->is(OpId::list_append)) return false;
    reversed.push_back(p->input(1));
    v = p->input(0);
  }
  out.assign(reversed.rbegin(), reversed.rend());
  return true;
}

void unpack_in(Block* b) {
  for (const auto& n : b->nodes()) {
    for (const auto& inner : n->blocks()) unpack_in(inner.get());
    if (!n->is(OpId::cat) && !n->is(OpId::stack)) continue;
    if (n->inputs().size() != 1 || !n->input(0)->type().is_list() || has_dynamic_attrs(*n)) continue;
    std::vector<Value*> elements;
    if (!known_elements(n->input(0), elements) || elements.empty()) continue;  // cat of nothing: the kernel's error
    n->replace_input(0, elements[0]);
    for (size_t i = 1; i < elements.size(); ++i) n->add_input(elements[i]);
  }
}

}  // namespace

void unpack_lists(Graph& g) { unpack_in(g.top()); }

}  // namespace graph::ir
