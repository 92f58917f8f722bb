// Output reach (output_reach.h): one backward sweep over the top block.
#include "graph/ir/output_reach.h"

#include <algorithm>
#include <iterator>

namespace graph::ir {

namespace {

void merge_into(std::vector<size_t>& into, const std::vector<size_t>& from) {
  if (from.empty()) return;
  std::vector<size_t> u;
  std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(u));
  into = std::move(u);
}

// Every value `n` reads: its inputs, and the inputs and returns of the nodes
// of its nested blocks.
template <class F>
void for_each_read(const Node* n, F&& f) {
  for (const Value* v : n->inputs()) f(v);
  for (const auto& b : n->blocks()) {
    for (const auto& inner : b->nodes()) for_each_read(inner.get(), f);
    for (const Value* r : b->returns()) f(r);
  }
}

}  // namespace

OutputReach::OutputReach(const Graph& g) : num_outputs_(g.outputs().size()) {
  for (size_t k = 0; k < g.outputs().size(); ++k) merge_into(reach_[g.outputs()[k]], {k});
  const auto& nodes = g.top()->nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const std::vector<size_t> reach = of_node(it->get());
    for_each_read(it->get(), [&](const Value* v) { merge_into(reach_[v], reach); });
  }
}

const std::vector<size_t>& OutputReach::of(const Value* v) const {
  static const std::vector<size_t> kNone;
  auto it = reach_.find(v);
  return it == reach_.end() ? kNone : it->second;
}

std::vector<size_t> OutputReach::of_node(const Node* n) const {
  // An effect (assign, set_grads, the optimizer's) is wanted whatever the
  // caller wants: it and what it reads always run.
  if (n->is(OpId::assign) || (n->info() && n->info()->has(op_trait::Effectful) && !n->is(OpId::call))) {
    std::vector<size_t> all(num_outputs_);
    for (size_t k = 0; k < num_outputs_; ++k) all[k] = k;
    return all;
  }
  std::vector<size_t> u;
  for (size_t i = 0; i < n->num_outputs(); ++i) merge_into(u, of(n->output(i)));
  return u;
}

bool OutputReach::any(const std::vector<size_t>& reach, const std::vector<bool>& needed) {
  for (size_t k : reach)
    if (k < needed.size() && needed[k]) return true;
  return false;
}

}  // namespace graph::ir
