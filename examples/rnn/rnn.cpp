// The seed's RNN step (dynamic-static-conversion.md): a branch that depends
// on tensor values. Tracing would record only the branch the example input
// took; the plugin lowers the source, so the graph keeps both branches as
// the blocks of an If node and decides at run time.
#include "rnn.h"

using namespace graph;

[[graph::static]] Tensor rnn_step(Tensor x, Tensor prev_h, Tensor W_h, Tensor w_x) {
  Tensor h2h = matmul(W_h, prev_h.t());
  if (h2h.sum() > w_x.sum()) {
    Tensor i2h = matmul(w_x, x.t());
    h2h = h2h + i2h;
  }
  return tanh(h2h);
}
