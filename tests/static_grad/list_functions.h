#pragma once
// Annotated functions whose gradients flow through lists of tensors (cat and
// stack of braced lists and of std::vectors built in loops, lists crossing
// Loops and If branches), for list_grad_test.cpp.
#include <graph/graph.h>

#include <vector>

namespace lg {
using graph::Tensor;

Tensor cat_braced(const Tensor& a, const Tensor& b);              // cat({a * 2, b}, 0)
Tensor stack_loop(const Tensor& w, const Tensor& x);              // push_back in a for, stack
Tensor cat_in_if(const Tensor& a, const Tensor& b, bool flag);    // cat inside an If branch
Tensor cat_in_loop(const Tensor& a, const Tensor& b, int steps);  // cat inside a Loop body
Tensor list_read_reversed(const Tensor& w, const Tensor& x, int n);  // parts[n - 1 - i] in a Loop
std::vector<Tensor> list_result(const Tensor& x);                // a list result: runs eagerly with grad

// A bidirectional LSTM tagger (embedding, a forward and a backward cell with
// explicit gates, per-step outputs pushed into vectors, cat per step, stack,
// a linear head): the pattern whose gradients were lost.
struct BiTaggerImpl : graph::nn::Module {
  BiTaggerImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t tags);
  // ids: [T] int64; returns [T, tags]
  Tensor forward(const Tensor& ids);
  graph::nn::Embedding emb;
  graph::nn::Linear fx, fh, bx, bh, head;
  int64_t hidden;
};
GRAPH_MODULE(BiTagger);

}  // namespace lg
