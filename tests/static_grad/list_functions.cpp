// Annotated functions for list_grad_test.cpp (see list_functions.h).
#include "list_functions.h"

namespace lg {
using namespace graph;

[[graph::static]] Tensor cat_braced(const Tensor& a, const Tensor& b) {
  Tensor c = cat({a * 2.0, b}, 0);
  return (c * c).sum();
}

[[graph::static]] Tensor stack_loop(const Tensor& w, const Tensor& x) {
  std::vector<Tensor> parts;
  for (int i = 0; i < 3; ++i) parts.push_back(x * w);
  Tensor s = stack(parts, 0);
  return s.sum() + (w * w).sum();
}

[[graph::static]] Tensor cat_in_if(const Tensor& a, const Tensor& b, bool flag) {
  Tensor y;
  if (flag) {
    y = cat({tanh(a), b * b}, 1);
  } else {
    y = stack({a, b * 3.0}, 0).sum(0);
  }
  return y * 1.5;
}

[[graph::static]] Tensor cat_in_loop(const Tensor& a, const Tensor& b, int steps) {
  Tensor h = a;
  for (int i = 0; i < steps; ++i) {
    Tensor both = cat({h, b}, 0);
    h = tanh(both.slice(0, 0, 2) * both.slice(0, 2, 4) + 0.5);
  }
  return h;
}

[[graph::static]] Tensor list_read_reversed(const Tensor& w, const Tensor& x, int n) {
  std::vector<Tensor> parts;
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    h = sigmoid(h * w + 0.1);
    parts.push_back(h);
  }
  Tensor acc = x * 0.0;
  for (int i = 0; i < n; ++i) acc = acc * 0.5 + parts[n - 1 - i] * (i + 1);
  return acc;
}

[[graph::static]] std::vector<Tensor> list_result(const Tensor& x) {
  std::vector<Tensor> r;
  r.push_back(x * 2.0);
  r.push_back(exp(x));
  return r;
}

BiTaggerImpl::BiTaggerImpl(int64_t vocab, int64_t embed, int64_t hidden_size, int64_t tags)
    : emb(register_module("emb", nn::Embedding(vocab, embed))),
      fx(register_module("fx", nn::Linear(embed, 4 * hidden_size))),
      fh(register_module("fh", nn::Linear(hidden_size, 4 * hidden_size))),
      bx(register_module("bx", nn::Linear(embed, 4 * hidden_size))),
      bh(register_module("bh", nn::Linear(hidden_size, 4 * hidden_size))),
      head(register_module("head", nn::Linear(2 * hidden_size, tags))),
      hidden(hidden_size) {}

[[graph::static]] Tensor BiTaggerImpl::forward(const Tensor& ids) {
  const int64_t H = hidden;
  Tensor e = emb->forward(ids);  // [T, embed]
  const int64_t T = e.size(0);
  std::vector<Tensor> fwd_outs;
  std::vector<Tensor> bwd_outs;
  Tensor h = zeros({1, H});
  Tensor c = zeros({1, H});
  for (int64_t t = 0; t < T; ++t) {
    Tensor g = fx->forward(e.slice(0, t, t + 1)) + fh->forward(h);
    c = sigmoid(g.slice(1, H, 2 * H)) * c + sigmoid(g.slice(1, 0, H)) * tanh(g.slice(1, 2 * H, 3 * H));
    h = sigmoid(g.slice(1, 3 * H, 4 * H)) * tanh(c);
    fwd_outs.push_back(h);
  }
  h = zeros({1, H});
  c = zeros({1, H});
  for (int64_t t = T - 1; t >= 0; --t) {
    Tensor g = bx->forward(e.slice(0, t, t + 1)) + bh->forward(h);
    c = sigmoid(g.slice(1, H, 2 * H)) * c + sigmoid(g.slice(1, 0, H)) * tanh(g.slice(1, 2 * H, 3 * H));
    h = sigmoid(g.slice(1, 3 * H, 4 * H)) * tanh(c);
    bwd_outs.push_back(h);
  }
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < T; ++t) steps.push_back(cat({fwd_outs[t], bwd_outs[T - 1 - t]}, 1));
  Tensor all = stack(steps, 0).squeeze(1);  // [T, 2H]
  return head->forward(all);
}

}  // namespace lg
