#pragma once
// graph::nn recurrent modules, as PyTorch defines them: GRUCell, and the
// sequence modules GRU and LSTM (multi-layer, batch_first). Included by
// graph/nn.h; LSTMCell is there.
//
//   nn::GRU gru(nn::GRUOptions(8, 16).num_layers(2));
//   auto [out, h_n] = gru(x);          // x [T, N, 8] -> out [T, N, 16], h_n [2, N, 16]
//   nn::LSTM lstm(nn::LSTMOptions(8, 16).batch_first(true));
//   auto [y, h, c] = lstm(xb);         // xb [N, T, 8]
//
// Parameters carry PyTorch's names (weight_ih_l0, weight_hh_l0, bias_ih_l0,
// bias_hh_l0, weight_ih_l1, ...) and shapes, so a PyTorch state_dict maps by
// name; all are uniform(+-1/sqrt(hidden_size)) as in PyTorch.
//
// The forwards are inline and built from public ops (linear, sigmoid, tanh,
// slice, unbind, stack, cat, dropout), so autograd comes from those ops and the [[graph::static]]
// plugin lowers them. Per layer they cost one GEMM for the input projection
// of the whole sequence ([T*N, I] x [I, G*H]) and one GEMM per time step for
// the hidden projection ([N, H] x [H, G*H]), G = 3 (GRU) or 4 (LSTM), plus the
// gates' elementwise ops: PyTorch's CPU path does the same.
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/nn.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "graph/tensor.h"

namespace graph::nn {

namespace detail {
// One GRU step from the input projection gi = W_ih x + b_ih [N, 3H]:
// r, z, n in PyTorch's order; n = tanh(gi_n + r * (W_hn h + b_hn)).
inline Tensor gru_step(const Tensor& gi, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh, int64_t H) {
  Tensor gh = linear(h, w_hh, b_hh);
  Tensor r = sigmoid(gi.slice(-1, 0, H) + gh.slice(-1, 0, H));
  Tensor z = sigmoid(gi.slice(-1, H, 2 * H) + gh.slice(-1, H, 2 * H));
  Tensor n = tanh(gi.slice(-1, 2 * H, 3 * H) + r * gh.slice(-1, 2 * H, 3 * H));
  return n + z * (h - n);  // (1 - z) * n + z * h, as PyTorch computes it
}

// Zeros [N, H] in x's dtype (x [N, I]): a masked_fill of x's first column,
// because the factories take a compile-time dtype in static graphs.
inline Tensor zero_state(const Tensor& x, int64_t H) {
  Tensor col = x.slice(-1, 0, 1);
  return masked_fill(col, ones({1}, kBool), 0.0).expand({x.size(0), H});
}

// The state of layer l from h0 [L, N, H] (a view that fails when h0 holds
// fewer layers or another N or H); zeros when h0 is undefined.
inline Tensor layer_state(const Tensor& h0, int64_t l, const Tensor& x0, int64_t H) {
  return h0.defined() ? h0.slice(0, l, l + 1).view({x0.size(0), H}) : zero_state(x0, H);
}

// The steps of a layer's direction in time order: t for the forward
// direction, T - 1 - t for the reverse one (which starts from the last step).
inline int64_t step_index(int64_t t, int64_t T, bool reverse) { return reverse ? T - 1 - t : t; }

// One direction of one GRU layer over the input projection gi [T, N, 3H]
// (W_ih x + b_ih for the whole sequence) from the state h [N, H]: the states
// in time order, stacked [T, N, H], and the last one computed.
inline std::tuple<Tensor, Tensor> gru_direction(const Tensor& gi, Tensor h, const Tensor& w_hh, const Tensor& b_hh,
                                                int64_t H, bool reverse) {
  std::vector<Tensor> gi_t = unbind(gi, 0);  // one backward stack for all steps (O(T), not O(T^2))
  const int64_t T = gi.size(0);
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < T; ++t) {
    h = gru_step(gi_t[step_index(t, T, reverse)], h, w_hh, b_hh, H);
    outs.push_back(h);
  }
  std::vector<Tensor> in_order;
  for (int64_t t = 0; t < T; ++t) in_order.push_back(outs[step_index(t, T, reverse)]);
  return {stack(in_order, 0), h};
}

// As gru_direction, for an LSTM layer (gi [T, N, 4H]) with its cell state.
inline std::tuple<Tensor, Tensor, Tensor> lstm_direction(const Tensor& gi, Tensor h, Tensor c, const Tensor& w_hh,
                                                         const Tensor& b_hh, int64_t H, bool reverse) {
  std::vector<Tensor> gi_t = unbind(gi, 0);
  const int64_t T = gi.size(0);
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < T; ++t) {
    auto [h2, c2] = lstm_step(gi_t[step_index(t, T, reverse)], h, c, w_hh, b_hh, H);
    h = h2;
    c = c2;
    outs.push_back(h);
  }
  std::vector<Tensor> in_order;
  for (int64_t t = 0; t < T; ++t) in_order.push_back(outs[step_index(t, T, reverse)]);
  return {stack(in_order, 0), h, c};
}

// A layer's output from its directions' outputs [T, N, H] (side by side when
// two), with dropout p when it feeds another layer in training mode.
inline Tensor join_directions(const std::vector<Tensor>& ys, double p, bool drop) {
  const int directions = ys.size();
  Tensor y = ys[0];
  if (directions == 2) y = cat(ys, -1);
  if (drop && p > 0.0) y = graph::dropout(y, p, true);
  return y;
}

// Throw graph::Error naming the module and the shapes (see GRAPH_EAGER_CHECK).
GRAPH_EAGER_CHECK void check_cell_input(const char* module, int64_t input_size, int64_t hidden_size, const Tensor& x,
                                        const Tensor& h, const Tensor& c);
GRAPH_EAGER_CHECK void check_rnn_input(const char* module, int64_t input_size, int64_t hidden_size, int64_t num_layers,
                                       bool batch_first, const Tensor& x, const Tensor& h0, const Tensor& c0);
}  // namespace detail

// ---- GRUCell ----------------------------------------------------------------
class GRUCellOptions {
 public:
  GRUCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  bool bias() const { return bias_; }
  GRUCellOptions& bias(bool v) { bias_ = v; return *this; }

 private:
  int64_t input_size_, hidden_size_;
  bool bias_ = true;
};

// PyTorch's GRUCell: weight_ih [3H, I], weight_hh [3H, H], bias_ih/bias_hh
// [3H], gates r, z, n. forward(x [N, I], h [N, H]) -> h' [N, H]; without h,
// from zeros.
class GRUCellImpl : public Module {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size, bool bias = true);
  explicit GRUCellImpl(const GRUCellOptions& o) : GRUCellImpl(o.input_size(), o.hidden_size(), o.bias()) {}

  Tensor forward(const Tensor& x, const Tensor& h = Tensor()) {
    detail::check_cell_input("GRUCell", input_size, hidden_size, x, h, Tensor());
    Tensor h0 = h.defined() ? h : detail::zero_state(x, hidden_size);
    return detail::gru_step(linear(x, weight_ih, bias_ih), h0, weight_hh, bias_hh, hidden_size);
  }

  int64_t input_size, hidden_size;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;  // biases undefined without bias
};
GRAPH_MODULE(GRUCell);

// ---- GRU, LSTM ------------------------------------------------------------------
// LibTorch's options: GRUOptions(input_size, hidden_size).num_layers(2)
// .bias(false).batch_first(true).dropout(0.2).bidirectional(true).
class RNNOptions {
 public:
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  int64_t input_size() const { return input_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  int64_t num_layers() const { return num_layers_; }
  RNNOptions& num_layers(int64_t v) { num_layers_ = v; return *this; }
  bool bias() const { return bias_; }
  RNNOptions& bias(bool v) { bias_ = v; return *this; }
  bool batch_first() const { return batch_first_; }
  RNNOptions& batch_first(bool v) { batch_first_ = v; return *this; }
  double dropout() const { return dropout_; }
  RNNOptions& dropout(double v) { dropout_ = v; return *this; }
  bool bidirectional() const { return bidirectional_; }
  RNNOptions& bidirectional(bool v) { bidirectional_ = v; return *this; }

 private:
  int64_t input_size_, hidden_size_, num_layers_ = 1;
  bool bias_ = true, batch_first_ = false;
  double dropout_ = 0.0;
  bool bidirectional_ = false;
};
using GRUOptions = RNNOptions;
using LSTMOptions = RNNOptions;

// The parameters of a GRU or an LSTM, one entry per layer and direction in
// each list, in PyTorch's order: weight_ih[l * num_directions + d] is
// "weight_ih_l<l>" (d = 0) or "weight_ih_l<l>_reverse" (d = 1); the bias
// lists are empty without bias. dropout_p applies to each layer's output but
// the last, in training mode.
class RNNImplBase : public Module {
 public:
  int64_t input_size, hidden_size, num_layers;
  bool bias, batch_first;
  int64_t num_directions;  // 2 when bidirectional
  double dropout_p;
  std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RNNImplBase(const char* name, const RNNOptions& options, int64_t gates);
};

// input [T, N, I] ([N, T, I] with batch_first), h0 [L*D, N, H] (zeros when
// undefined; D = num_directions) -> {output [T, N, D*H] ([N, T, D*H]),
// h_n [L*D, N, H]}. A bidirectional layer's output is the forward and the
// reverse direction's states side by side, as in PyTorch.
class GRUImpl : public RNNImplBase {
 public:
  explicit GRUImpl(const RNNOptions& options) : RNNImplBase("GRU", options, 3) {}
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(RNNOptions(input_size, hidden_size)) {}

  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = Tensor()) {
    detail::check_rnn_input("GRU", input_size, hidden_size, num_layers * num_directions, batch_first, input, h0,
                            Tensor());
    const int64_t H = hidden_size;
    Tensor x = batch_first ? input.transpose(0, 1) : input;
    std::vector<Tensor> h_n;
    for (int64_t l = 0; l < num_layers; ++l) {
      std::vector<Tensor> ys;
      for (int64_t d = 0; d < num_directions; ++d) {
        const int64_t k = l * num_directions + d;
        Tensor gi = linear(x, weight_ih[k], bias ? bias_ih[k] : Tensor());  // the whole sequence at once
        auto [y, h] = detail::gru_direction(gi, detail::layer_state(h0, k, gi.select(0, 0), H), weight_hh[k],
                                            bias ? bias_hh[k] : Tensor(), H, d == 1);
        ys.push_back(y);
        h_n.push_back(h);
      }
      x = detail::join_directions(ys, dropout_p, l + 1 < num_layers && is_training());
    }
    return {batch_first ? x.transpose(0, 1) : x, stack(h_n, 0)};
  }
};
GRAPH_MODULE(GRU);

// As GRU, with the cell state: forward(input, h0, c0) -> {output, h_n, c_n}
// (LibTorch nests {output, {h_n, c_n}}; a flat tuple here). h0 and c0 are
// both given or both undefined.
class LSTMImpl : public RNNImplBase {
 public:
  explicit LSTMImpl(const RNNOptions& options) : RNNImplBase("LSTM", options, 4) {}
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(RNNOptions(input_size, hidden_size)) {}

  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = Tensor(),
                                             const Tensor& c0 = Tensor()) {
    detail::check_rnn_input("LSTM", input_size, hidden_size, num_layers * num_directions, batch_first, input, h0, c0);
    const int64_t H = hidden_size;
    Tensor x = batch_first ? input.transpose(0, 1) : input;
    std::vector<Tensor> h_n;
    std::vector<Tensor> c_n;
    for (int64_t l = 0; l < num_layers; ++l) {
      std::vector<Tensor> ys;
      for (int64_t d = 0; d < num_directions; ++d) {
        const int64_t k = l * num_directions + d;
        Tensor gi = linear(x, weight_ih[k], bias ? bias_ih[k] : Tensor());
        Tensor x0 = gi.select(0, 0);
        auto [y, h, c] = detail::lstm_direction(gi, detail::layer_state(h0, k, x0, H), detail::layer_state(c0, k, x0, H),
                                                weight_hh[k], bias ? bias_hh[k] : Tensor(), H, d == 1);
        ys.push_back(y);
        h_n.push_back(h);
        c_n.push_back(c);
      }
      x = detail::join_directions(ys, dropout_p, l + 1 < num_layers && is_training());
    }
    return {batch_first ? x.transpose(0, 1) : x, stack(h_n, 0), stack(c_n, 0)};
  }
};
GRAPH_MODULE(LSTM);

}  // namespace graph::nn
