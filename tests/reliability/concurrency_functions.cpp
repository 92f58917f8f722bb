// Annotated functions the concurrency tests call from many threads at once.
#include "functions.h"

namespace rel {
using namespace graph;

// A matmul, a fused loop and a reduction: the common kinds of node.
[[graph::static]] Tensor layer(Tensor x, Tensor W, Tensor b) {
  Tensor h = relu(matmul(W, x) + b);
  return h * 0.5f - h.mean();
}

// A loop and a branch on a tensor value.
[[graph::static]] Tensor iterate(Tensor x, int n) {
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    h = tanh(h * 0.9f + 0.1f);
  }
  if (h.sum() > 0.0f) {
    h = h - 1.0f;
  }
  return h;
}

// Called only by the concurrent-first-call test, so that their first calls
// (the registry lookups) happen on many threads at once.
[[graph::static]] Tensor first_call_a(Tensor x) { return sigmoid(x) * 2.0f; }
[[graph::static]] Tensor first_call_b(Tensor x) { return exp(-x) + 1.0f; }

}  // namespace rel
