// The seed's static-graph example (graph-generation.md):
//
//   def model(X, flag):
//       if flag > 0: Y = matmul(W1, X)
//       else:        Y = matmul(W2, X)
//       Y = Y + b
//       Y = relu(Y)
//       return Y
//
// W1, W2 and b are globals, as in the seed: the graph reads them at each
// call (they are graph inputs the prologue passes), so updates are seen.
#include "model.h"

using namespace graph;

Tensor W1, W2, b;

[[graph::static]] Tensor model(Tensor X, int flag) {
  Tensor Y = flag > 0 ? matmul(W1, X) : matmul(W2, X);
  return relu(Y + b);
}
