#pragma once
// The benchmark workloads, written once against the cxxgraph API. Each is
// [[graph::static]] in models.cpp, which bench_suite builds through the plugin:
// a call runs the compiled graph, and under graph::set_mode(Mode::Eager) the
// very same body op by op, so the eager and static columns run one source.
#include <graph/graph.h>
#include <graph/optim.h>

namespace bench {
using graph::Tensor;

// Memory bandwidth: a = b + 1.5 * c, one pass over three arrays.
Tensor triad(Tensor b, Tensor c);
// Eight elementwise ops with a broadcast operand; one fused loop when static.
Tensor chain8(Tensor x, Tensor y);

// One op on small tensors: the fixed cost per op.
Tensor op_add(Tensor a, Tensor b);
Tensor op_relu(Tensor a);
Tensor op_tanh(Tensor a);
Tensor op_sum(Tensor a);
Tensor op_softmax(Tensor a);
Tensor op_matmul(Tensor a, Tensor b);

// Reductions of elementwise producers over 16M elements: the mean squared
// error of two vectors, and relu(x * y + 1).sum(-1) over [16384, 1024] rows.
Tensor mse(Tensor x, Tensor y);
Tensor row_sum(Tensor x, Tensor y);

// LSTM-style cell run `steps` times on the same input: x, h, c [1, H];
// wx, wh [H, 4H]; b [4H]. Returns the last h.
Tensor lstm(Tensor x, Tensor h, Tensor c, Tensor wx, Tensor wh, Tensor b, int steps);

Tensor sgemm(Tensor a, Tensor b);

// MLP 784-512-512-10: log-probabilities, and the cross-entropy loss to train on.
Tensor mlp(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3);
Tensor mlp_loss(Tensor x, Tensor labels, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3);
// The same loss with the parameters as members, and its loss.backward():
// the whole static train step (forward and backward in one graph, writing
// the members' .grad).
struct MlpStep {
  Tensor w1, b1, w2, b2, w3, b3;
  Tensor loss_backward(Tensor x, Tensor labels);
  // The whole step in one graph: opt->zero_grad(), loss, backward, opt->step().
  graph::optim::SGD* opt = nullptr;
  Tensor full_step(Tensor x, Tensor labels);
};

// Pre-norm Transformer encoder block, as tests/ir_graphs/transformer_block.graph:
// x [B, S, 256], 4 heads of 64, feed-forward 1024.
Tensor transformer(Tensor x, Tensor ln1_w, Tensor ln1_b, Tensor wq, Tensor bq, Tensor wk, Tensor bk, Tensor wv,
                   Tensor bv, Tensor wo, Tensor bo, Tensor ln2_w, Tensor ln2_b, Tensor w1, Tensor b1, Tensor w2,
                   Tensor b2);

// LeNet-5 style: x [N, 1, 28, 28] -> conv 6@5x5 -> pool -> conv 16@5x5 -> pool
// -> 120 -> 84 -> 10.
Tensor lenet(Tensor x, Tensor c1w, Tensor c1b, Tensor c2w, Tensor c2b, Tensor f1w, Tensor f1b, Tensor f2w, Tensor f2b,
             Tensor f3w, Tensor f3b);

// Whole static train steps of the two blocks above (issue 18): opt->zero_grad(),
// the loss (mean squared error against a target for the Transformer block,
// cross-entropy for LeNet), loss.backward() and opt->step(), one graph.
struct TransformerStep {
  Tensor ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2;
  graph::optim::SGD* opt = nullptr;
  Tensor full_step(Tensor x, Tensor target);
};
struct LenetStep {
  Tensor c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b;
  graph::optim::SGD* opt = nullptr;
  Tensor full_step(Tensor x, Tensor labels);
};
}  // namespace bench
