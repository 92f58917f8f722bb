// Annotated functions for rnn_test.cpp (see rnn_functions.h).
#include "rnn_functions.h"

namespace rnn {
using namespace graph;

CellLoopImpl::CellLoopImpl(int64_t in, int64_t hidden) : cell(register_module("cell", nn::GRUCell(in, hidden))) {}

[[graph::static]] Tensor CellLoopImpl::forward(const Tensor& xs, Tensor h) {
  const int64_t T = xs.size(0);
  for (int64_t t = 0; t < T; ++t) h = cell(xs.slice(0, t, t + 1).squeeze(0), h);
  return h;
}

GRUNetImpl::GRUNetImpl(const nn::GRUOptions& o) : gru(register_module("gru", nn::GRU(o))) {}

[[graph::static]] std::tuple<Tensor, Tensor> GRUNetImpl::forward(const Tensor& x, const Tensor& h0) {
  return gru(x, h0);
}

LSTMNetImpl::LSTMNetImpl(const nn::LSTMOptions& o) : lstm(register_module("lstm", nn::LSTM(o))) {}

[[graph::static]] std::tuple<Tensor, Tensor, Tensor> LSTMNetImpl::forward(const Tensor& x, const Tensor& h0,
                                                                          const Tensor& c0) {
  return lstm(x, h0, c0);
}

GRULMImpl::GRULMImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers)
    : emb(register_module("emb", nn::Embedding(vocab, embed))),
      gru(register_module("gru", nn::GRU(nn::GRUOptions(embed, hidden).num_layers(layers)))),
      head(register_module("head", nn::Linear(hidden, vocab))) {}

[[graph::static]] Tensor GRULMImpl::forward(const Tensor& ids, const Tensor& targets) {
  auto [y, h_n] = gru(emb(ids));
  Tensor logits = head(y);
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

}  // namespace rnn
