#pragma once
// Annotated functions for rnn_test.cpp: modules whose forward is
// [[graph::static]] and uses nn::GRUCell (in a loop over time steps),
// nn::GRU and nn::LSTM, and the model suite's 2-layer GRU language model.
// Built with -Werror=graph-fallback (tests/rnn.cmake).
#include <graph/graph.h>

#include <tuple>

namespace rnn {
using graph::Tensor;

// h <- cell(x_t, h) for each step of xs [T, N, I]; returns the last h [N, H].
struct CellLoopImpl : graph::nn::Module {
  CellLoopImpl(int64_t in, int64_t hidden);
  Tensor forward(const Tensor& xs, Tensor h);
  graph::nn::GRUCell cell;
};
GRAPH_MODULE(CellLoop);

struct GRUNetImpl : graph::nn::Module {
  explicit GRUNetImpl(const graph::nn::GRUOptions& o);
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& h0);
  graph::nn::GRU gru;
};
GRAPH_MODULE(GRUNet);

struct LSTMNetImpl : graph::nn::Module {
  explicit LSTMNetImpl(const graph::nn::LSTMOptions& o);
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& x, const Tensor& h0, const Tensor& c0);
  graph::nn::LSTM lstm;
};
GRAPH_MODULE(LSTMNet);

// The model suite's "2-layer GRU language model": embedding -> 2-layer GRU
// -> linear -> cross_entropy. ids, targets: int64 [T, N]; returns the loss.
struct GRULMImpl : graph::nn::Module {
  GRULMImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers);
  Tensor forward(const Tensor& ids, const Tensor& targets);
  graph::nn::Embedding emb;
  graph::nn::GRU gru;
  graph::nn::Linear head;
};
GRAPH_MODULE(GRULM);

}  // namespace rnn
