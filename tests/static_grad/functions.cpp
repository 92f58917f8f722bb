// Annotated functions for the mixed-execution tests (see functions.h).
#include "functions.h"

namespace sg {
using namespace graph;

Tensor G_scale;

[[graph::static]] Tensor add_relu(Tensor x, Tensor y) { return relu(x + y) * y; }

[[graph::static]] Tensor affine_global(Tensor x, Tensor w) { return tanh(matmul(x, w) * G_scale); }

[[graph::static]] Tensor if_flag(Tensor x, Tensor w, bool flag) {
  Tensor y;
  if (flag) {
    y = sigmoid(matmul(x, w));
  } else {
    y = exp(x * 0.5f).sum(1, true) * w.sum();
  }
  return y;
}

[[graph::static]] Tensor if_tensor(Tensor x) {
  Tensor y = x.sum() > 0.0f ? x * x : -x * 3.0f;
  return y + x;
}

[[graph::static]] Tensor rnn_loop(Tensor x, Tensor w, int steps) {
  Tensor h = x;
  for (int i = 0; i < steps; ++i) {
    h = tanh(matmul(h, w) + x);
  }
  return h;
}

[[graph::static]] Tensor while_halve(Tensor x) {
  Tensor h = x;
  while ((h * h).sum() > 1.0f) {
    h = h * 0.5f + sigmoid(h) * 0.01f;
  }
  return h;
}

[[graph::static]] std::pair<Tensor, Tensor> two_outputs(Tensor x, Tensor y) {
  Tensor p = x * y;
  return {p, exp(x) + p};
}

[[graph::static]] std::tuple<Tensor, Tensor, int> tuple_outputs(Tensor x, int n) {
  return {x * 2.0f, (x * x).sum(), n + 1};
}

[[graph::static]] Tensor with_dropout(Tensor x) { return dropout(x * 2.0f, 0.5, true); }

[[graph::static]] Tensor attention_dropout(Tensor q) { return scaled_dot_product_attention(q, q, q, Tensor(), 0.5); }

[[graph::static]] Tensor keep_int(Tensor x, Tensor idx) { return x * idx; }

MLPImpl::MLPImpl(int64_t in, int64_t hidden, int64_t out)
    : fc1(register_module("fc1", nn::Linear(in, hidden))),
      fc2(register_module("fc2", nn::Linear(hidden, hidden))),
      fc3(register_module("fc3", nn::Linear(hidden, out))) {}

[[graph::static]] Tensor MLPImpl::forward(Tensor x) {
  Tensor h = relu(fc1->forward(x));
  h = tanh(fc2->forward(h));
  return fc3->forward(h);
}

LSTMImpl::LSTMImpl(int64_t in, int64_t hidden, int64_t out)
    : xi(register_module("xi", nn::Linear(in, hidden))),
      xf(register_module("xf", nn::Linear(in, hidden))),
      xg(register_module("xg", nn::Linear(in, hidden))),
      xo(register_module("xo", nn::Linear(in, hidden))),
      hi(register_module("hi", nn::Linear(hidden, hidden))),
      hf(register_module("hf", nn::Linear(hidden, hidden))),
      hg(register_module("hg", nn::Linear(hidden, hidden))),
      ho(register_module("ho", nn::Linear(hidden, hidden))),
      head(register_module("head", nn::Linear(hidden, out))) {}

[[graph::static]] Tensor LSTMImpl::forward(const std::vector<Tensor>& xs, Tensor h0, Tensor c0) {
  Tensor h = h0;
  Tensor c = c0;
  for (const Tensor& x : xs) {
    Tensor i = sigmoid(xi->forward(x) + hi->forward(h));
    Tensor f = sigmoid(xf->forward(x) + hf->forward(h));
    Tensor g = tanh(xg->forward(x) + hg->forward(h));
    Tensor o = sigmoid(xo->forward(x) + ho->forward(h));
    c = f * c + i * g;
    h = o * tanh(c);
  }
  return head->forward(h);
}

AttnBlockImpl::AttnBlockImpl()
    : attn(register_module("attn", nn::MultiheadAttention(8, 2))),
      ln(register_module("ln", nn::LayerNorm(graph::Shape{8}, 1e-4))) {}

[[graph::static]] Tensor AttnBlockImpl::forward(Tensor x) { return ln(x + attn(x)); }

ConvBlockImpl::ConvBlockImpl()
    : conv1(register_module("conv1", nn::Conv2d(2, 3, 3, /*stride=*/2, /*padding=*/1))),
      conv2(register_module("conv2", nn::Conv2d(3, 2, nn::Size2{3, 1}, /*stride=*/nn::Size2{1, 2},
                                                /*padding=*/nn::Size2{1, 0}))) {}

[[graph::static]] Tensor ConvBlockImpl::forward(Tensor x) { return conv2(relu(conv1(x))); }

[[graph::static]] Tensor embed_loss(Tensor table, Tensor idx, Tensor proj, Tensor target) {
  return cross_entropy(matmul(tanh(embedding(table, idx)), proj), target);
}

// The benchmark's MLP train-step loss (bench/models.cpp: mlp_loss), smaller.
[[graph::static]] Tensor mlp_ce_loss(Tensor x, Tensor labels, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3,
                                     Tensor b3) {
  Tensor h = relu(linear(x, w1, b1));
  h = relu(linear(h, w2, b2));
  return cross_entropy(linear(h, w3, b3), labels);
}

// Views, softmax and where over attributes known only at run time: another
// tensor's sizes, a local Shape edited element by element, a local
// std::vector<int64_t>, host ints.
[[graph::static]] Tensor reshape_like(Tensor x, Tensor like) { return tanh(x.reshape(like.sizes())) * like; }

[[graph::static]] Tensor shape_edits(Tensor x, Tensor y, int64_t d) {
  auto s = x.sizes();  // x [2, 6] -> s = [3, -1]
  s[0] = s[1] / 2;
  s[1] = -1;
  std::vector<int64_t> dims = {1, 0};
  Tensor a = x.view(s).permute(dims).transpose(d, 1 - d);  // [3, 4]
  Tensor r = y.slice(0, 0, 1).expand(y.sizes());
  Tensor p = softmax(a * 2.0f, d) + log_softmax(y, d);
  return where(a > r, p * r, sigmoid(a) * y) + full(y.sizes(), 0.5) * a;
}

}  // namespace sg
