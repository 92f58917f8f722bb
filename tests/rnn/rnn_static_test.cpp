// Static forwards using nn::GRUCell (a loop over time steps), nn::GRU and
// nn::LSTM (rnn_functions.cpp, lowered with -Werror=graph-fallback): their
// values and gradients equal eager's and PyTorch's (tests/fixtures/rnn.txt),
// and the model suite's 2-layer GRU language model. Run compiled and, by
// ctest's rnn_interpret, interpreted (GRAPH_MODE=interpret).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "../e2e/graph_calls.h"
#include "rnn_fixture.h"
#include "rnn_functions.h"

namespace {

using graph::Mode;
using graph::Tensor;
using rnn_fixture::Case;
namespace nn = graph::nn;

using e2e::calls;
using e2e::compiled_mode;
using e2e::pattern;

// One call of `run` in `mode`: its outputs, then the gradients (of the
// parameters, then of `inputs`) after backward() of sum(out_k * w_k).
struct CallResult {
  std::vector<Tensor> outputs, grads;
  uint64_t graph_runs = 0;
};

using Forward = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

CallResult run_in(Mode mode, const char* fragment, nn::Module& m, const std::vector<Tensor>& inputs, const Forward& f,
        const std::vector<Tensor>& upstream) {
  graph::set_mode(mode);
  m.zero_grad();
  std::vector<Tensor> in;
  for (const Tensor& t : inputs) in.push_back(t.detach().clone().requires_grad_());
  const uint64_t before = calls(fragment);
  CallResult r;
  r.outputs = f(in);
  r.graph_runs = calls(fragment) - before;
  Tensor loss;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    Tensor term = (r.outputs[k] * upstream[k]).sum();
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
  for (const Tensor& p : m.parameters()) r.grads.push_back(p.grad());
  for (const Tensor& t : in) r.grads.push_back(t.grad());
  graph::set_mode(Mode::Static);
  return r;
}

void expect_same(const CallResult& a, const CallResult& b, double tol) {
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t k = 0; k < a.outputs.size(); ++k)
    rnn_fixture::expect_near(a.outputs[k], b.outputs[k], tol, "output " + std::to_string(k));
  for (size_t k = 0; k < a.grads.size(); ++k)
    rnn_fixture::expect_near(a.grads[k], b.grads[k], tol, "gradient " + std::to_string(k));
}

TEST(RNNStatic, GRUCellLoopEqualsEagerThroughTheStaticBackward) {
  const Mode mode = compiled_mode();
  rnn::CellLoop net(3, 4);
  const std::vector<Tensor> in{pattern({5, 2, 3}, 0.37f, -0.5f), pattern({2, 4}, 0.61f, 0.2f)};
  const std::vector<Tensor> up{pattern({2, 4}, 0.29f, 0.1f) + 1.0};
  auto f = [&](const std::vector<Tensor>& x) { return std::vector<Tensor>{net(x[0], x[1])}; };
  CallResult s = run_in(mode, "CellLoopImpl7forward", *net, in, f, up);
  CallResult e = run_in(Mode::Eager, "CellLoopImpl7forward", *net, in, f, up);
  EXPECT_EQ(s.graph_runs, 1u) << "the graph (and its backward) did not run";
  EXPECT_EQ(e.graph_runs, 0u);
  expect_same(s, e, 1e-5);
}

// A fixture's sequence case through a module with a static forward:
// without grad the graph runs and matches PyTorch; with grad, outputs and
// gradients match PyTorch and the eager run.
void check_sequence(const std::string& name, bool lstm) {
  const Mode mode = compiled_mode();
  const Case& c = rnn_fixture::get(name);
  const nn::RNNOptions o = rnn_fixture::options(c);
  std::vector<std::string> names{"x", "h0"};
  std::vector<std::string> outs{"output", "h_n"};
  if (lstm) names.push_back("c0"), outs.push_back("c_n");
  std::vector<Tensor> in, up;
  for (const std::string& n : names) in.push_back(c.tensor("input:" + n, graph::kFloat32));
  for (const std::string& n : outs) up.push_back(c.tensor("upstream:" + n, graph::kFloat32));
  std::shared_ptr<nn::Module> m;
  Forward f;
  const char* fragment = lstm ? "LSTMNetImpl7forward" : "GRUNetImpl7forward";
  if (lstm) {
    rnn::LSTMNet net(o);
    f = [net](const std::vector<Tensor>& x) {
      auto [y, h, cn] = net(x[0], x[1], x[2]);
      return std::vector<Tensor>{y, h, cn};
    };
    m = net.ptr();
  } else {
    rnn::GRUNet net(o);
    f = [net](const std::vector<Tensor>& x) {
      auto [y, h] = net(x[0], x[1]);
      return std::vector<Tensor>{y, h};
    };
    m = net.ptr();
  }
  rnn_fixture::load_params(*m, c, lstm ? "lstm." : "gru.");
  {
    graph::NoGradGuard g;
    graph::set_mode(mode);
    const uint64_t before = calls(fragment);
    std::vector<Tensor> y = f(in);
    EXPECT_EQ(calls(fragment) - before, 1u) << "the graph did not run";
    graph::set_mode(Mode::Static);
    for (size_t k = 0; k < outs.size(); ++k) rnn_fixture::expect_near(y[k], c.at("output:" + outs[k]), 2e-5, outs[k]);
  }
  CallResult s = run_in(mode, fragment, *m, in, f, up);
  CallResult e = run_in(Mode::Eager, fragment, *m, in, f, up);
  expect_same(s, e, 1e-5);  // grad calls run eagerly: a Loop in a Loop (docs/gradients.md)
  size_t k = 0;
  for (auto& [pname, p] : m->named_parameters())
    rnn_fixture::expect_near(s.grads[k++], c.at("grad:" + pname.substr(pname.find('.') + 1)), 2e-5, "grad of " + pname);
  for (const std::string& n : names) rnn_fixture::expect_near(s.grads[k++], c.at("grad:" + n), 2e-5, "grad of " + n);
}

TEST(RNNStatic, GRUMatchesPyTorchAndEager) { check_sequence("gru_2layer", false); }
TEST(RNNStatic, GRUBatchFirstMatchesPyTorchAndEager) { check_sequence("gru_2layer_batch_first", false); }
TEST(RNNStatic, LSTMMatchesPyTorchAndEager) { check_sequence("lstm_2layer", true); }
TEST(RNNStatic, LSTMBatchFirstMatchesPyTorchAndEager) { check_sequence("lstm_2layer_batch_first", true); }
TEST(RNNStatic, BidirectionalGRUMatchesPyTorchAndEager) { check_sequence("gru_2layer_bidirectional", false); }
TEST(RNNStatic, BidirectionalLSTMMatchesPyTorchAndEager) {
  check_sequence("lstm_2layer_bidirectional_batch_first", true);
}
// Dropout between layers reads the module's training flag inside the graph.
TEST(RNNStatic, DropoutBetweenLayersMatchesPyTorchAndEager) {
  check_sequence("gru_2layer_dropout1", false);
  check_sequence("lstm_2layer_bidirectional_dropout1", true);
}

// In a graph the module's eager check is left out (GRAPH_EAGER_CHECK): the
// ops report bad shapes with the module's source line, never a wrong result.
TEST(RNNStatic, BadInputInAGraphIsAnErrorWithTheSourceLine) {
  graph::set_mode(compiled_mode());
  rnn::GRUNet net(nn::GRUOptions(3, 4).num_layers(2));
  graph::NoGradGuard g;
  auto expect_error = [](const std::function<void()>& f, const std::string& piece) {
    try {
      f();
      ADD_FAILURE() << "expected an error containing " << piece;
    } catch (const graph::Error& e) {
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("nn_rnn.h:"), std::string::npos) << e.what();
    }
  };
  const uint64_t before = calls("GRUNetImpl7forward");
  expect_error([&] { net(graph::zeros({5, 2, 4}), graph::zeros({2, 2, 4})); }, "linear");
  expect_error([&] { net(graph::zeros({5, 2, 3}), graph::zeros({1, 2, 4})); }, "reshape: shape [2, 4] is invalid for input of size 0");
  expect_error([&] { net(graph::zeros({5, 2, 3}), graph::zeros({2, 3, 4})); }, "invalid for input of size 12");
  EXPECT_EQ(calls("GRUNetImpl7forward"), before);
  graph::set_mode(Mode::Static);
}

// The model suite's "2-layer GRU language model": embedding -> 2-layer GRU
// -> linear -> cross_entropy, its forward static, against PyTorch's loss and
// parameter gradients after one backward.
TEST(ModelSuite, GRULanguageModelMatchesPyTorch) {
  const Mode mode = compiled_mode();
  const Case& c = rnn_fixture::get("gru_lm");
  rnn::GRULM lm(c.attr("V"), c.attr("E"), c.attr("H"), c.attr("L"));
  rnn_fixture::load_params(*lm, c);
  const Tensor ids = c.tensor("input:ids", graph::kInt64), targets = c.tensor("input:targets", graph::kInt64);
  const char* fragment = "GRULMImpl7forward";
  {
    graph::NoGradGuard g;
    graph::set_mode(mode);
    const uint64_t before = calls(fragment);
    Tensor loss = lm(ids, targets);
    EXPECT_EQ(calls(fragment) - before, 1u) << "the graph did not run";
    graph::set_mode(Mode::Static);
    rnn_fixture::expect_near(loss, c.at("output:loss"), 1e-5, "loss");
  }
  std::vector<std::vector<Tensor>> grads;
  for (Mode m : {mode, Mode::Eager}) {
    graph::set_mode(m);
    lm->zero_grad();
    Tensor loss = lm(ids, targets);
    loss.backward();
    graph::set_mode(Mode::Static);
    rnn_fixture::expect_near(loss, c.at("output:loss"), 1e-5, "loss");
    grads.emplace_back();
    for (auto& [name, p] : lm->named_parameters()) {
      rnn_fixture::expect_near(p.grad(), c.at("grad:" + name), 2e-5, "grad of " + name);
      grads.back().push_back(p.grad());
    }
  }
  for (size_t k = 0; k < grads[0].size(); ++k)
    rnn_fixture::expect_near(grads[0][k], grads[1][k], 1e-5, "static vs eager gradient " + std::to_string(k));
}

}  // namespace
