// place_grad_sync (passes.h): the gradient all-reduce of data-parallel
// training as nodes of a static train step. One grad_sync_start right after
// each node that computes weight gradients (so a bucket's all-reduce starts as
// soon as its last gradient exists, while the rest of backward runs), and one
// grad_sync_wait before set_grads, whose outputs replace the gradients that
// set_grads and the optimizer steps read. Which gradients share a bucket is
// decided at run time by the DDP (its bucket_cap_bytes and the parameters'
// sizes, which a build does not know); the graph fixes the order.
#include <vector>

#include "graph/ir/passes.h"

namespace graph::ir {

namespace {

Node* find_set_grads(const Graph& g) {
  for (const auto& n : g.top()->nodes())
    if (n->is(OpId::set_grads)) return n.get();
  return nullptr;
}

bool already_placed(const Graph& g) {
  for (const auto& n : g.top()->nodes())
    if (n->is(OpId::grad_sync_wait)) return true;
  return false;
}

// The node after `n` in its block (set_grads at the latest).
const Node* next_of(const Block* b, const Node* n) {
  for (auto it = b->nodes().begin(); it != b->nodes().end(); ++it)
    if (it->get() == n) return std::next(it) == b->nodes().end() ? nullptr : std::next(it)->get();
  return nullptr;
}

}  // namespace

void place_grad_sync(Graph& g) {
  Node* s = find_set_grads(g);
  if (!s || already_placed(g)) return;
  const size_t np = static_cast<size_t>(s->i("params"));
  std::vector<Value*> params, grads;
  for (size_t i = 0; i < np; ++i) {
    params.push_back(s->input(i));
    grads.push_back(s->input(np + i));
  }
  // One start per top-level producer, in program order (linear_backward
  // gives a weight's and a bias's gradients together). A gradient that is
  // undefined (the loss does not reach its parameter) has nothing to send.
  Block* top = g.top();
  for (const auto& up : top->nodes()) {
    Node* p = up.get();
    if (p == s) break;
    if (p->is(OpId::undefined)) continue;
    std::vector<size_t> mine;
    for (size_t i = 0; i < np; ++i)
      for (const Value* o : p->outputs())
        if (grads[i] == o) mine.push_back(i);
    if (mine.empty()) continue;
    Node* start = top->insert_before(next_of(top, p), "grad_sync_start");
    for (size_t i : mine) start->add_input(params[i]);
    for (size_t i : mine) start->add_input(grads[i]);
    start->attrs()["params"] = static_cast<int64_t>(mine.size());
    start->set_loc(s->loc());  // loss.backward()'s line, for its errors
  }
  Node* wait = top->insert_before(s, "grad_sync_wait");
  for (Value* p : params) wait->add_input(p);
  for (Value* d : grads) wait->add_input(d);
  wait->attrs()["params"] = static_cast<int64_t>(np);
  wait->set_loc(s->loc());
  for (size_t i = 0; i < np; ++i) wait->add_output(grads[i]->type());
  // set_grads and each optimizer step fed by it (expand_backward's
  // feed_steps: the same parameters, in order) read the synced gradients.
  for (size_t i = 0; i < np; ++i) s->replace_input(np + i, wait->output(i));
  bool after = false;
  for (const auto& up : top->nodes()) {
    Node* n = up.get();
    after = after || n == s;
    if (!after || !n->is(OpId::optimizer_step) || n->i("params") != static_cast<int64_t>(np)) continue;
    for (size_t i = 0; i < np; ++i)
      if (n->input(1 + i) == params[i] && n->input(1 + np + i) == grads[i]) n->replace_input(1 + np + i, wait->output(i));
  }
}

}  // namespace graph::ir
