// The workloads (models.h), lowered to static graphs by the plugin.
#include "models.h"

namespace bench {
using namespace graph;

[[graph::static]] Tensor triad(Tensor b, Tensor c) { return b + c * 1.5f; }

[[graph::static]] Tensor chain8(Tensor x, Tensor y) {
  Tensor t = x + y;
  t = t * 0.5f;
  t = relu(t);
  t = t - y;
  t = tanh(t);
  t = exp(t);
  t = sigmoid(t);
  return -t;
}

[[graph::static]] Tensor op_add(Tensor a, Tensor b) { return a + b; }
[[graph::static]] Tensor op_relu(Tensor a) { return relu(a); }
[[graph::static]] Tensor op_tanh(Tensor a) { return tanh(a); }
[[graph::static]] Tensor op_sum(Tensor a) { return a.sum(); }

// Reductions fused with their producers (one loop nest when static).
[[graph::static]] Tensor mse(Tensor x, Tensor y) { return ((x - y) * (x - y)).mean(); }
[[graph::static]] Tensor row_sum(Tensor x, Tensor y) { return relu(x * y + 1.0f).sum(-1); }
[[graph::static]] Tensor op_softmax(Tensor a) { return softmax(a, 0); }
[[graph::static]] Tensor op_matmul(Tensor a, Tensor b) { return matmul(a, b); }

[[graph::static]] Tensor lstm(Tensor x, Tensor h, Tensor c, Tensor wx, Tensor wh, Tensor b, int steps) {
  constexpr int H = 64;
  Tensor xw = matmul(x, wx) + b;  // the input is the same at every step
  for (int i = 0; i < steps; ++i) {
    Tensor gates = xw + matmul(h, wh);
    Tensor in = sigmoid(gates.slice(1, 0, H));
    Tensor forget = sigmoid(gates.slice(1, H, 2 * H));
    Tensor cell = tanh(gates.slice(1, 2 * H, 3 * H));
    Tensor out = sigmoid(gates.slice(1, 3 * H, 4 * H));
    c = forget * c + in * cell;
    h = out * tanh(c);
  }
  return h;
}

[[graph::static]] Tensor sgemm(Tensor a, Tensor b) { return matmul(a, b); }

[[graph::static]] Tensor mlp(Tensor x, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3) {
  Tensor h = relu(linear(x, w1, b1));
  h = relu(linear(h, w2, b2));
  return log_softmax(linear(h, w3, b3), 1);
}

[[graph::static]] Tensor mlp_loss(Tensor x, Tensor labels, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3,
                                  Tensor b3) {
  Tensor h = relu(linear(x, w1, b1));
  h = relu(linear(h, w2, b2));
  return cross_entropy(linear(h, w3, b3), labels);
}

[[graph::static]] Tensor MlpStep::loss_backward(Tensor x, Tensor labels) {
  Tensor h = relu(linear(x, w1, b1));
  h = relu(linear(h, w2, b2));
  Tensor loss = cross_entropy(linear(h, w3, b3), labels);
  loss.backward();
  return loss;
}

[[graph::static]] Tensor MlpStep::full_step(Tensor x, Tensor labels) {
  opt->zero_grad();
  Tensor h = relu(linear(x, w1, b1));
  h = relu(linear(h, w2, b2));
  Tensor loss = cross_entropy(linear(h, w3, b3), labels);
  loss.backward();
  opt->step();
  return loss;
}

[[graph::static]] Tensor transformer(Tensor x, Tensor ln1_w, Tensor ln1_b, Tensor wq, Tensor bq, Tensor wk, Tensor bk,
                                     Tensor wv, Tensor bv, Tensor wo, Tensor bo, Tensor ln2_w, Tensor ln2_b, Tensor w1,
                                     Tensor b1, Tensor w2, Tensor b2) {
  constexpr int D = 256, Heads = 4, Dh = 64;
  Tensor n1 = layer_norm(x, {D}, ln1_w, ln1_b, 1e-5);
  // [B, S, D] -> [B, heads, S, Dh]
  Tensor q = linear(n1, wq, bq).reshape({8, 64, Heads, Dh}).transpose(1, 2);
  Tensor k = linear(n1, wk, bk).reshape({8, 64, Heads, Dh}).transpose(1, 2);
  Tensor v = linear(n1, wv, bv).reshape({8, 64, Heads, Dh}).transpose(1, 2);
  Tensor probs = softmax(matmul(q, k.transpose(2, 3)) * 0.125f, 3);
  Tensor ctx = matmul(probs, v).transpose(1, 2).reshape({8, 64, D});
  Tensor r1 = x + linear(ctx, wo, bo);
  Tensor n2 = layer_norm(r1, {D}, ln2_w, ln2_b, 1e-5);
  return r1 + linear(gelu(linear(n2, w1, b1)), w2, b2);
}

[[graph::static]] Tensor lenet(Tensor x, Tensor c1w, Tensor c1b, Tensor c2w, Tensor c2b, Tensor f1w, Tensor f1b,
                               Tensor f2w, Tensor f2b, Tensor f3w, Tensor f3b) {
  Tensor h = max_pool2d(relu(conv2d(x, c1w, c1b)), {2, 2});
  h = max_pool2d(relu(conv2d(h, c2w, c2b)), {2, 2});
  h = relu(linear(h.flatten(1), f1w, f1b));
  h = relu(linear(h, f2w, f2b));
  return linear(h, f3w, f3b);
}

[[graph::static]] Tensor TransformerStep::full_step(Tensor x, Tensor target) {
  opt->zero_grad();
  Tensor y = transformer(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2);
  Tensor loss = mse_loss(y, target);
  loss.backward();
  opt->step();
  return loss;
}

[[graph::static]] Tensor LenetStep::full_step(Tensor x, Tensor labels) {
  opt->zero_grad();
  Tensor loss = cross_entropy(lenet(x, c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b), labels);
  loss.backward();
  opt->step();
  return loss;
}

}  // namespace bench
