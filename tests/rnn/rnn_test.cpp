// nn::GRUCell, nn::GRU and nn::LSTM: eager values and gradients against
// PyTorch (tests/fixtures/rnn.txt, float64 reference; checked in float32 and
// float64), float64 finite differences, parameter names, bad input and
// options. The static forwards (rnn_functions.cpp) are in rnn_static_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../support/gradcheck.h"
#include "rnn_fixture.h"

namespace {

using graph::Tensor;
using gradcheck_support::expect_error;
using rnn_fixture::Case;
namespace nn = graph::nn;

struct Tolerance {
  graph::DType dtype;
  double tol;
};
const Tolerance kDtypes[] = {{graph::kFloat32, 2e-5}, {graph::kFloat64, 1e-10}};

// Leaves (requiring grad) for the case's inputs named in `names`.
std::vector<Tensor> leaves(const Case& c, const std::vector<std::string>& names, graph::DType dtype) {
  std::vector<Tensor> out;
  for (const std::string& n : names) out.push_back(c.tensor("input:" + n, dtype).requires_grad_());
  return out;
}

// sum_k (outputs_k * upstream_k) as in make_rnn_fixtures.py.
Tensor objective(const Case& c, const std::vector<std::pair<std::string, Tensor>>& outputs) {
  Tensor loss;
  for (auto& [n, t] : outputs) {
    Tensor term = (t * c.tensor("upstream:" + n, t.dtype())).sum();
    loss = loss.defined() ? loss + term : term;
  }
  return loss;
}

void expect_outputs(const Case& c, const std::vector<std::pair<std::string, Tensor>>& outputs, double tol) {
  for (auto& [n, t] : outputs) rnn_fixture::expect_near(t, c.at("output:" + n), tol, n);
}

void expect_grads(const Case& c, const nn::Module& m, const std::vector<std::string>& inputs,
                  const std::vector<Tensor>& in, double tol, const std::string& prefix = "") {
  for (auto& [name, p] : m.named_parameters())
    rnn_fixture::expect_near(p.grad(), c.at("grad:" + name.substr(prefix.size())), tol, "grad of " + name);
  for (size_t k = 0; k < inputs.size(); ++k)
    rnn_fixture::expect_near(in[k].grad(), c.at("grad:" + inputs[k]), tol, "grad of " + inputs[k]);
}

TEST(GRUCell, MatchesPyTorchWithGradients) {
  const Case& c = rnn_fixture::get("gru_cell");
  for (const Tolerance& d : kDtypes) {
    SCOPED_TRACE(graph::dtype_name(d.dtype));
    nn::GRUCell cell(c.attr("I"), c.attr("H"));
    cell->to(d.dtype);
    rnn_fixture::load_params(*cell, c);
    std::vector<Tensor> in = leaves(c, {"x", "h"}, d.dtype);
    Tensor h1 = cell(in[0], in[1]);
    expect_outputs(c, {{"h1", h1}}, d.tol);
    objective(c, {{"h1", h1}}).backward();
    expect_grads(c, *cell, {"x", "h"}, in, d.tol);
  }
}

TEST(GRUCell, ParametersAndDefaults) {
  nn::GRUCell cell(nn::GRUCellOptions(3, 4).bias(false));
  auto named = cell->named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "weight_ih");
  EXPECT_EQ(named[0].second.sizes(), (graph::Shape{12, 3}));
  EXPECT_EQ(named[1].first, "weight_hh");
  EXPECT_EQ(named[1].second.sizes(), (graph::Shape{12, 4}));
  // PyTorch's init: uniform(-1/sqrt(H), 1/sqrt(H)), here 1/16.
  nn::GRUCell big(64, 256);
  for (auto& [n, p] : big->named_parameters()) {
    const float m = graph::amax(p.abs()).item<float>();
    EXPECT_LE(m, 1.0f / 16.0f) << n;
    EXPECT_GT(m, 0.9f / 16.0f) << n;
  }
  // Without h: from zeros, which equals passing zeros.
  Tensor x = gradcheck_support::values({2, 3}, -1, 1, 3).to(graph::kFloat32);
  nn::GRUCell with_bias(3, 4);
  Tensor a = with_bias(x), b = with_bias(x, graph::zeros({2, 4}));
  EXPECT_EQ(graph::amax((a - b).abs()).item<float>(), 0.0f);
  EXPECT_EQ(a.dtype(), graph::kFloat32);
}

// The sequence cases of rnn.txt, eagerly.
void check_sequence(const std::string& name, bool lstm) {
  const Case& c = rnn_fixture::get(name);
  const bool with_state = c.tensors.count("input:h0") != 0;
  std::vector<std::string> inputs{"x"};
  if (with_state) inputs.push_back("h0");
  if (with_state && lstm) inputs.push_back("c0");
  for (const Tolerance& d : kDtypes) {
    SCOPED_TRACE(name + " " + std::string(graph::dtype_name(d.dtype)));
    const nn::RNNOptions o = rnn_fixture::options(c);
    std::vector<Tensor> in = leaves(c, inputs, d.dtype);
    const Tensor h0 = with_state ? in[1] : Tensor();
    std::vector<std::pair<std::string, Tensor>> outs;
    std::shared_ptr<nn::Module> keep;
    if (lstm) {
      nn::LSTM m(o);
      m->to(d.dtype);
      rnn_fixture::load_params(*m, c);
      auto [y, h_n, c_n] = m(in[0], h0, with_state ? in[2] : Tensor());
      outs = {{"output", y}, {"h_n", h_n}, {"c_n", c_n}};
      keep = m.ptr();
    } else {
      nn::GRU m(o);
      m->to(d.dtype);
      rnn_fixture::load_params(*m, c);
      auto [y, h_n] = m(in[0], h0);
      outs = {{"output", y}, {"h_n", h_n}};
      keep = m.ptr();
    }
    expect_outputs(c, outs, d.tol);
    objective(c, outs).backward();
    expect_grads(c, *keep, inputs, in, d.tol);
  }
}

TEST(GRU, TwoLayersMatchPyTorch) { check_sequence("gru_2layer", false); }
TEST(GRU, TwoLayersBatchFirstMatchPyTorch) { check_sequence("gru_2layer_batch_first", false); }
TEST(GRU, TwoLayersFromZeroStateMatchPyTorch) { check_sequence("gru_2layer_zero_state", false); }
TEST(LSTM, TwoLayersMatchPyTorch) { check_sequence("lstm_2layer", true); }
TEST(LSTM, TwoLayersBatchFirstMatchPyTorch) { check_sequence("lstm_2layer_batch_first", true); }
TEST(LSTM, TwoLayersFromZeroStateMatchPyTorch) { check_sequence("lstm_2layer_zero_state", true); }
TEST(GRU, BidirectionalMatchesPyTorch) { check_sequence("gru_2layer_bidirectional", false); }
TEST(GRU, BidirectionalFromZeroStateMatchesPyTorch) { check_sequence("gru_2layer_bidirectional_zero_state", false); }
TEST(LSTM, BidirectionalBatchFirstMatchesPyTorch) { check_sequence("lstm_2layer_bidirectional_batch_first", true); }
// dropout 1 in training mode zeroes the first layer's output: the second
// layer runs on zeros, and the first gets gradients only through h_n.
TEST(GRU, DropoutOneBetweenLayersMatchesPyTorch) { check_sequence("gru_2layer_dropout1", false); }
TEST(LSTM, BidirectionalWithDropoutOneMatchesPyTorch) { check_sequence("lstm_2layer_bidirectional_dropout1", true); }

// Dropout between layers only in training mode, only between layers, and
// scaled by 1 / (1 - p) as graph::dropout does.
TEST(RNN, DropoutBetweenLayersIsRandomOnlyInTraining) {
  Tensor x = gradcheck_support::values({6, 3, 4}, -1, 1, 12).to(graph::kFloat32);
  nn::GRU plain(nn::GRUOptions(4, 5).num_layers(2).bidirectional(true));
  nn::GRU dropped(nn::GRUOptions(4, 5).num_layers(2).bidirectional(true).dropout(0.5));
  auto from = plain->named_parameters();
  auto to = dropped->named_parameters();
  ASSERT_EQ(from.size(), to.size());
  {
    graph::NoGradGuard g;
    for (size_t i = 0; i < from.size(); ++i) to[i].second.copy_(from[i].second);
  }
  auto max_diff = [](const Tensor& a, const Tensor& b) { return graph::amax((a - b).abs()).item<float>(); };
  dropped->eval();
  auto [y_eval, h_eval] = dropped(x);
  auto [y_plain, h_plain] = plain(x);
  EXPECT_EQ(max_diff(y_eval, y_plain), 0.0f);
  EXPECT_EQ(y_eval.sizes(), (graph::Shape{6, 3, 10}));
  EXPECT_EQ(h_eval.sizes(), (graph::Shape{4, 3, 5}));
  dropped->train();
  auto [y1, h1] = dropped(x);
  auto [y2, h2] = dropped(x);
  EXPECT_GT(max_diff(y1, y_plain), 1e-3f);
  EXPECT_GT(max_diff(y1, y2), 1e-3f);  // a new mask per call
  // The first layer's final states (h_n[0], h_n[1]) come before any dropout.
  EXPECT_EQ(max_diff(h1.slice(0, 0, 2), h_plain.slice(0, 0, 2)), 0.0f);
  // One layer: nothing between layers, so nothing dropped.
  nn::LSTM one(nn::LSTMOptions(4, 5).dropout(0.5));
  auto [a, ha, ca] = one(x);
  one->eval();
  auto [b, hb, cb] = one(x);
  EXPECT_EQ(max_diff(a, b), 0.0f);
}

TEST(RNN, ParameterNamesAndShapesArePyTorchs) {
  const Case& c = rnn_fixture::get("lstm_2layer");
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  auto named = lstm->named_parameters();
  ASSERT_EQ(named.size(), c.params.size());
  for (size_t i = 0; i < named.size(); ++i) {
    EXPECT_EQ(named[i].first, c.params[i]);
    EXPECT_EQ(named[i].second.sizes(), c.at("param:" + c.params[i]).shape) << c.params[i];
    EXPECT_TRUE(named[i].second.requires_grad());
  }
  nn::GRU nobias(nn::GRUOptions(3, 5).num_layers(3).bias(false));
  std::vector<std::string> names;
  for (auto& [n, p] : nobias->named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "weight_ih_l1", "weight_hh_l1",
                                             "weight_ih_l2", "weight_hh_l2"}));
  EXPECT_EQ(nobias->weight_ih[1].sizes(), (graph::Shape{15, 5}));
  // Bidirectional: each layer's "_reverse" set after the forward one; the
  // second layer reads both directions' outputs.
  const Case& b = rnn_fixture::get("lstm_2layer_bidirectional_batch_first");
  nn::LSTM bi(rnn_fixture::options(b));
  auto bnamed = bi->named_parameters();
  ASSERT_EQ(bnamed.size(), b.params.size());
  for (size_t i = 0; i < bnamed.size(); ++i) {
    EXPECT_EQ(bnamed[i].first, b.params[i]);
    EXPECT_EQ(bnamed[i].second.sizes(), b.at("param:" + b.params[i]).shape) << b.params[i];
  }
  EXPECT_EQ(bi->weight_ih[3].sizes(), (graph::Shape{16, 8}));  // weight_ih_l1_reverse
}

TEST(RNN, GRUWithoutBiasFromZeros) {
  // Without bias and without h0, one step of a 1-layer GRU by hand.
  nn::GRU gru(nn::GRUOptions(2, 3).bias(false));
  Tensor x = gradcheck_support::values({1, 2, 2}, -1, 1, 5).to(graph::kFloat32);
  auto [y, h_n] = gru(x);
  Tensor gi = graph::linear(x.squeeze(0), gru->weight_ih[0]);
  Tensor r = graph::sigmoid(gi.slice(1, 0, 3)), z = graph::sigmoid(gi.slice(1, 3, 6));
  Tensor n = graph::tanh(gi.slice(1, 6, 9));  // W_hn h = 0
  Tensor want = (1.0 - z) * n;
  (void)r;
  EXPECT_LT(graph::amax((y.squeeze(0) - want).abs()).item<float>(), 1e-6f);
  EXPECT_LT(graph::amax((h_n.squeeze(0) - want).abs()).item<float>(), 1e-6f);
}

TEST(RNN, FiniteDifferencesInFloat64) {
  using gradcheck_support::gradcheck;
  using gradcheck_support::values;
  nn::GRU gru(nn::GRUOptions(2, 3).num_layers(2));
  gru->to(graph::kFloat64);
  gradcheck([&](const std::vector<Tensor>& in) { return std::get<0>(gru(in[0], in[1])); },
            {values({3, 2, 2}, -1, 1, 1), values({2, 2, 3}, -1, 1, 2)});
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).batch_first(true));
  lstm->to(graph::kFloat64);
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        auto [y, h, c] = lstm(in[0], in[1], in[2]);
        return y.sum(1) + h.sum(0) + c.sum(0);
      },
      {values({2, 3, 2}, -1, 1, 3), values({2, 2, 3}, -1, 1, 4), values({2, 2, 3}, -1, 1, 5)});
  nn::LSTM bi(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true));
  bi->to(graph::kFloat64);
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        auto [y, h, c] = bi(in[0], in[1], in[2]);
        return y.sum(2) + h.sum(0).sum(1) + c.sum(0).sum(1);
      },
      {values({3, 2, 2}, -1, 1, 13), values({4, 2, 3}, -1, 1, 14), values({4, 2, 3}, -1, 1, 15)});
  nn::GRUCell cell(2, 3);
  cell->to(graph::kFloat64);
  gradcheck([&](const std::vector<Tensor>& in) { return cell(in[0], in[1]); },
            {values({2, 2}, -1, 1, 6), values({2, 3}, -1, 1, 7)});
  // The parameters' gradients too: through a parameter passed as an input.
  gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor gi = graph::linear(in[0], in[1], cell->bias_ih);
        return nn::detail::gru_step(gi, in[2], in[3], cell->bias_hh, 3);
      },
      {values({2, 2}, -1, 1, 8), values({9, 2}, -1, 1, 9), values({2, 3}, -1, 1, 10), values({9, 3}, -1, 1, 11)});
}

TEST(RNN, BadInputNamesTheModuleAndShapes) {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2));
  const Tensor x = graph::zeros({5, 2, 3});
  expect_error([&] { gru(graph::zeros({5, 2, 4})); }, {"GRU: expected an input of shape [T, N, 3]", "got [5, 2, 4]"});
  expect_error([&] { gru(graph::zeros({5, 3})); }, {"GRU:", "got [5, 3]", "unbatched"});
  expect_error([&] { gru(graph::zeros({0, 2, 3})); }, {"GRU:", "[0, 2, 3]", "no time steps"});
  expect_error([&] { gru(x, graph::zeros({1, 2, 4})); },
               {"GRU: expected h0 of shape [2, 2, 4]", "input of shape [5, 2, 3]", "got [1, 2, 4]"});
  nn::LSTM lstm(nn::LSTMOptions(3, 4).batch_first(true));
  expect_error([&] { lstm(graph::zeros({2, 5, 3}), graph::zeros({1, 5, 4}), graph::zeros({1, 2, 4})); },
               {"LSTM: expected h0 of shape [1, 2, 4]", "got [1, 5, 4]"});
  expect_error([&] { lstm(graph::zeros({2, 5, 3}), graph::zeros({1, 2, 4})); }, {"LSTM: h0 and c0 must be given together"});
  expect_error([&] { lstm(graph::zeros({2, 5, 2})); }, {"LSTM: expected an input of shape [N, T, 3] (batch_first)"});
  nn::GRUCell cell(3, 4);
  expect_error([&] { cell(graph::zeros({2, 5})); }, {"GRUCell: expected an input of shape [N, 3], got [2, 5]"});
  expect_error([&] { cell(graph::zeros({2, 3}), graph::zeros({2, 5})); },
               {"GRUCell: expected a hidden state of shape [2, 4]", "got [2, 5]"});
  expect_error([&] { cell(graph::zeros({3})); }, {"GRUCell:", "got [3]"});
}

TEST(RNN, BadOptionsAreClearErrors) {
  expect_error([] { nn::GRU(nn::GRUOptions(3, 4).num_layers(2).dropout(1.5)); },
               {"GRU: dropout should be a number in range [0, 1]", "got 1.5"});
  expect_error([] { nn::LSTM(nn::LSTMOptions(3, 4).dropout(-0.1)); }, {"LSTM: dropout should be", "got -0.1"});
  nn::GRU bi(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  expect_error([&] { bi(graph::zeros({5, 2, 3}), graph::zeros({2, 2, 4})); },
               {"GRU: expected h0 of shape [4, 2, 4] [num_layers * num_directions, N, hidden_size]", "got [2, 2, 4]"});
  expect_error([] { nn::GRU(nn::GRUOptions(3, 4).num_layers(0)); }, {"GRU: num_layers must be positive, got 0"});
  expect_error([] { nn::GRUCell(0, 4); }, {"GRUCell: input_size must be positive"});
}

}  // namespace
