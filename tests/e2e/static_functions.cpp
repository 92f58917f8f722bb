// Annotated functions for the end-to-end tests (see static_functions.h).
#include "static_functions.h"

#include <cstdio>

namespace e2e {
using namespace graph;

Tensor G_W1, G_W2, G_b;

[[graph::static]] Tensor seed_model(Tensor X, int flag, Tensor W1, Tensor W2, Tensor b) {
  Tensor Y = flag > 0 ? matmul(W1, X) : matmul(W2, X);
  return relu(Y + b);
}

[[graph::static]] Tensor seed_model_globals(Tensor X, int flag) {
  Tensor Y;
  if (flag > 0) {
    Y = matmul(G_W1, X);
  } else {
    Y = matmul(G_W2, X);
  }
  Y = Y + G_b;
  Y = relu(Y);
  return Y;
}

[[graph::static]] Tensor rnn_step(Tensor x, Tensor prev_h, Tensor W_h, Tensor w_x) {
  Tensor h2h = matmul(W_h, prev_h.t());
  if (h2h.sum() > w_x.sum()) {
    Tensor i2h = matmul(w_x, x.t());
    h2h = h2h + i2h;
  }
  return tanh(h2h);
}

// Attention written out, heads split by views: the pipeline's fuse_attention
// makes it one scaled_dot_product_attention (the shapes are static, so the
// scale 0.25 is checked against 1/sqrt(16)).
[[graph::static]] Tensor attend(Tensor q, Tensor k, Tensor v, Tensor mask) {
  Tensor q4 = q.reshape({2, 5, 3, 16}).transpose(1, 2);
  Tensor k4 = k.reshape({2, 7, 3, 16}).transpose(1, 2);
  Tensor v4 = v.reshape({2, 7, 3, 8}).transpose(1, 2);
  Tensor probs = softmax(matmul(q4, k4.transpose(2, 3)) * 0.25f + mask.reshape({5, 7}), 3);
  return matmul(probs, v4);
}

// Eight elementwise ops with broadcasting: one fused loop.
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

[[graph::static]] Tensor for_loop(Tensor x, int n) {
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    h = tanh(h * 0.9f + 0.1f);
  }
  return h;
}

[[graph::static]] Tensor while_loop(Tensor x) {
  Tensor h = x;
  int steps = 0;
  while (h.sum() > 1.0f) {
    h = h * 0.5f;
    steps += 1;
  }
  return h + steps;
}

[[graph::static]] Tensor if_scalar(Tensor x, bool flag) {
  Tensor y = x;
  if (flag) {
    y = y * 2;
  } else {
    y = y - 1;
  }
  return y;
}

[[graph::static]] Tensor if_else_assign(Tensor x, double threshold) {
  Tensor s = x.mean();
  double scale = 1.0;
  if (s > threshold) {
    scale = 0.25;
  }
  return x * scale;
}

[[graph::static]] Tensor reductions(Tensor x) {
  Tensor rows = x.sum(1);
  Tensor cols = x.mean(0, true);
  return (rows.sum() + cols) * 2.0f - x.mean();
}

[[graph::static]] Tensor above_row_mean(Tensor x) {
  Tensor m = x.mean(1, true);
  return x > m;
}

[[graph::static]] Tensor nested_control(Tensor x, int n) {
  Tensor acc = x.sum() * 0.0f;
  int i = 0;
  while (i < n) {
    if (i > 1) {
      acc = acc + x.sum() * i;
    } else {
      acc = acc - 1;
    }
    i = i + 1;
  }
  return acc;
}

// Not lowerable (I/O): the plugin warns, fflush runs eagerly (a graph break)
// and the `return` is a static region.
[[graph::static]] Tensor falls_back(Tensor x) {
  std::fflush(stdout);
  return x + 1;
}

// ---- issue 5 ---------------------------------------------------------------

[[graph::static]] Tensor views_and_attrs(Tensor x) {
  Tensor y = x.transpose(0, 1).reshape({-1, 2});
  Tensor z = y.unsqueeze(0).expand({2, -1, -1}).flatten(0, 1);
  Tensor s = softmax(z, 1) + log_softmax(z, -1) + z.slice(0, 1, 5, 2).sum(0, true);
  return s + x.amax({0, 1}) + x.permute({1, 0}).flatten().squeeze().sum();
}

[[graph::static]] Tensor nn_functional(Tensor x, Tensor w, Tensor b) {
  Tensor y = linear(x, w, b);
  Tensor n = layer_norm(y, {4}, Tensor(), Tensor(), 1e-5);
  return where(n > 0, n, y * 0.5);
}

[[graph::static]] Tensor early_exits(Tensor x, int n) {
  if (n < 0) return -x;
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    h += x * 0.5;
    if (h.sum() > 20) return h * 2;
  }
  return h;
}

[[graph::static]] Tensor break_continue(Tensor x, int n) {
  Tensor h = x;
  int i = 0;
  for (i = 0; i < n; ++i) {
    if (i == 1) continue;
    h = h + i;
    if (i > 3 && h.sum() > 0) break;
  }
  return h * i;
}

[[graph::static]] Tensor sum_list(const std::vector<Tensor>& xs, Tensor init) {
  Tensor acc = init;
  for (const Tensor& t : xs) acc += t;
  return acc;
}

[[graph::static]] std::vector<Tensor> running_sums(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  Tensor acc = xs[0] * 0;
  for (const Tensor& t : xs) {
    acc = acc + t;
    out.push_back(acc);
  }
  out.push_back(cat(out, 0));
  return out;
}

[[graph::static]] std::tuple<Tensor, Tensor, int> tuple_result(Tensor x, int n) {
  if (n > 2) return {x, -x, n};
  return std::make_tuple(relu(x), x * n, n + 1);
}

// The prologue lends by-value tensors to the graph (static.h: run): an
// output that is the argument itself, or a view of it, must own its storage
// as eager's does.
[[graph::static]] std::tuple<Tensor, Tensor, Tensor> lend_aliases(Tensor x, const Tensor& y) {
  return {x, x.transpose(0, 1), x * y};
}

MLPImpl::MLPImpl()
    : fc1(register_module("fc1", nn::Linear(4, 8))), fc2(register_module("fc2", nn::Linear(8, 3))) {}

[[graph::static]] Tensor MLPImpl::forward(Tensor x) {
  Tensor h = relu(fc1->forward(x));
  return fc2(h) * scale;
}

}  // namespace e2e
