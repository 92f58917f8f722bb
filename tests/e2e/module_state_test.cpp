// Modules with state in static forwards (module_state_functions.cpp), each
// against the same module run eagerly: is_training() read at every call (one
// graph in train() and eval()), buffers updated in place and written back
// (values and version bumps), nn::BatchNorm1d's cumulative averages against
// a float64 reference written here, nn::Dropout, and a float64 gradient
// check of the lowered BatchNorm2d training forward. Compiled, and under
// GRAPH_MODE=interpret (tests/e2e.cmake).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autodiff_test_support.h"
#include "graph_calls.h"
#include "module_state_functions.h"

namespace {

using e2e::compiled_mode;
using e2e::pattern;
using graph::Mode;
using graph::Tensor;

uint64_t calls(const std::string& cls) { return e2e::calls("8modstate" + std::to_string(cls.size()) + cls + "7forward"); }

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(graph::kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const std::vector<double> g = values(got), w = values(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << what << " element " << i;
}

// Runs `f` in `mode`; the graph of `cls` ran once (none eagerly).
template <class F>
Tensor in_mode(Mode mode, const std::string& cls, F&& f) {
  graph::set_mode(mode);
  const uint64_t before = calls(cls);
  Tensor y = f();
  EXPECT_EQ(calls(cls) - before, mode == Mode::Eager ? 0u : 1u) << cls << ": the graph did not run as the mode says";
  graph::set_mode(compiled_mode());
  return y;
}

TEST(ModuleState, IsTrainingIsReadAtEveryCall) {
  modstate::ModeSwitch m;
  const Tensor x = pattern({2, 3}, 0.7f, -0.5f);
  const Tensor train = in_mode(compiled_mode(), "ModeSwitchImpl", [&] { return m(x); });
  m->eval();
  const Tensor eval = in_mode(compiled_mode(), "ModeSwitchImpl", [&] { return m(x); });
  const Tensor eval_eager = in_mode(Mode::Eager, "ModeSwitchImpl", [&] { return m(x); });
  m->train();
  const Tensor train_eager = in_mode(Mode::Eager, "ModeSwitchImpl", [&] { return m(x); });
  EXPECT_EQ(values(train), values(train_eager));
  EXPECT_EQ(values(eval), values(eval_eager));
  EXPECT_EQ(values(train), values(graph::relu(x) * 2));
  EXPECT_EQ(values(eval), values(x - 1));
}

// Three calls (train, eval, train) on two modules, one compiled, one eager:
// the same buffers after each, and the same version bumps where eager makes
// one write a call; `total` (two in-place ops a call eagerly) is written once
// a call by the graph: changed in both, as a version check sees it.
TEST(ModuleState, InPlaceBufferUpdatesAreWrittenBack) {
  modstate::RunningSum s, e;
  for (int call = 0; call < 3; ++call) {
    const bool training = call != 1;
    s->train(training);
    e->train(training);
    const Tensor x = pattern({3, 4}, 0.3f + 0.1f * static_cast<float>(call), 0.2f);
    const uint64_t sv[3] = {s->count.version(), s->total.version(), s->scale.version()};
    const uint64_t ev[3] = {e->count.version(), e->total.version(), e->scale.version()};
    const Tensor ys = in_mode(compiled_mode(), "RunningSumImpl", [&] { return s(x); });
    const Tensor ye = in_mode(Mode::Eager, "RunningSumImpl", [&] { return e(x); });
    const std::string at = "call " + std::to_string(call);
    expect_near(ys, ye, 1e-6, at + ": result");
    expect_near(s->total, e->total, 1e-6, at + ": total");
    EXPECT_EQ(values(s->scale), values(e->scale)) << at;
    EXPECT_EQ(s->count.dtype(), graph::kInt64);
    EXPECT_EQ(s->count.item<int64_t>(), call + 1) << at;
    EXPECT_EQ(e->count.item<int64_t>(), call + 1) << at;
    EXPECT_EQ(s->count.version() - sv[0], e->count.version() - ev[0]) << at << ": count's version";
    EXPECT_EQ(s->count.version() - sv[0], 1u) << at;
    EXPECT_EQ(s->scale.version() - sv[2], e->scale.version() - ev[2]) << at << ": scale's version";
    EXPECT_EQ(s->scale.version() - sv[2], training ? 1u : 0u) << at << ": eval() writes no scale";
    EXPECT_EQ(e->total.version() - ev[1], 2u) << at;
    EXPECT_EQ(s->total.version() - sv[1], 1u) << at << ": one write-back";
  }
  // The reference: total = 0.5 total + column sums, from zeros.
  std::vector<double> total(4, 0.0);
  for (int call = 0; call < 3; ++call) {
    const std::vector<double> x = values(pattern({3, 4}, 0.3f + 0.1f * static_cast<float>(call), 0.2f));
    for (size_t j = 0; j < 4; ++j) total[j] = 0.5 * total[j] + x[j] + x[4 + j] + x[8 + j];
  }
  for (size_t j = 0; j < 4; ++j) EXPECT_NEAR(values(s->total)[j], total[j], 1e-5);
}

// BatchNorm1d with momentum unset: after 3 training calls the running stats
// are the averages of the batches' means and unbiased variances (a float64
// reference from the inputs), the count is 3, and eval() normalizes with them.
// Without grad: a dropout in training mode has no static gradient (its
// backward would need the forward's mask), so with grad this graph runs
// eagerly; the ResNet model's static training forward runs BatchNorm2d with
// its backward.
TEST(ModuleState, BatchNormCumulativeAverageOverThreeCalls) {
  graph::NoGradGuard no_grad;
  const int64_t C = 3;
  modstate::NormDrop s(C, 0.0), e(C, 0.0);
  std::vector<double> mean_avg(C, 0.0), var_avg(C, 0.0);
  for (int call = 0; call < 3; ++call) {
    const int64_t N = 4 + call;
    const Tensor x = pattern({N, C}, 0.37f + 0.2f * static_cast<float>(call), 0.1f * static_cast<float>(call));
    const Tensor ys = in_mode(compiled_mode(), "NormDropImpl", [&] { return s(x); });
    const Tensor ye = in_mode(Mode::Eager, "NormDropImpl", [&] { return e(x); });
    expect_near(ys, ye, 1e-5, "call " + std::to_string(call));
    const std::vector<double> xv = values(x);
    for (int64_t c = 0; c < C; ++c) {
      double m = 0, v = 0;
      for (int64_t n = 0; n < N; ++n) m += xv[n * C + c] / static_cast<double>(N);
      for (int64_t n = 0; n < N; ++n) v += (xv[n * C + c] - m) * (xv[n * C + c] - m) / static_cast<double>(N - 1);
      mean_avg[c] += m / 3;
      var_avg[c] += v / 3;
    }
  }
  EXPECT_EQ(s->bn->num_batches_tracked.item<int64_t>(), 3);
  EXPECT_EQ(e->bn->num_batches_tracked.item<int64_t>(), 3);
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_NEAR(values(s->bn->running_mean)[c], mean_avg[c], 1e-6) << c;
    EXPECT_NEAR(values(s->bn->running_var)[c], var_avg[c], 1e-6) << c;
  }
  expect_near(s->bn->running_mean, e->bn->running_mean, 1e-6, "running_mean against eager");
  expect_near(s->bn->running_var, e->bn->running_var, 1e-6, "running_var against eager");
  s->eval();
  const Tensor x = pattern({2, C}, 0.9f, 0.3f);
  const Tensor y = in_mode(compiled_mode(), "NormDropImpl", [&] { return s(x); });
  const std::vector<double> xv = values(x), yv = values(y);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < C; ++c)
      EXPECT_NEAR(yv[n * C + c], (xv[n * C + c] - mean_avg[c]) / std::sqrt(var_avg[c] + 1e-5), 1e-5);
  EXPECT_EQ(s->bn->num_batches_tracked.item<int64_t>(), 3) << "eval() counts nothing";
}

// nn::Dropout in a static forward: eval() passes x through; train() zeroes
// some elements and scales the rest by 1 / (1 - p).
TEST(ModuleState, DropoutFollowsTheModesFlag) {
  graph::NoGradGuard no_grad;  // as above
  modstate::NormDrop m(2, 0.5);
  const Tensor x = pattern({32, 2}, 0.21f, 0.4f);
  m->eval();
  const Tensor bn_eval = (x - m->bn->running_mean) / graph::sqrt(m->bn->running_var + 1e-5);
  expect_near(in_mode(compiled_mode(), "NormDropImpl", [&] { return m(x); }), bn_eval, 1e-6, "eval");
  m->train();
  const Tensor y = in_mode(compiled_mode(), "NormDropImpl", [&] { return m(x); });
  const Tensor bn_train = graph::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.0, 1e-5);
  const std::vector<double> yv = values(y), bv = values(bn_train);
  int zeros = 0;
  for (size_t i = 0; i < yv.size(); ++i) {
    if (yv[i] == 0.0) ++zeros;
    else EXPECT_NEAR(yv[i], 2 * bv[i], 1e-5) << i;
  }
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, 64);
}

// Training through nn::Dropout (its p and training flag read at run time):
// the static backward multiplies by the mask the static forward drew, which
// is eager's under one seed, so outputs and gradients equal eager's.
TEST(ModuleState, DropoutTrainsThroughTheStaticBackward) {
  modstate::NormDrop m(2, 0.5);
  const Tensor x = pattern({32, 2}, 0.21f, 0.4f);
  std::vector<std::vector<Tensor>> runs;
  for (Mode mode : {compiled_mode(), Mode::Eager}) {
    m->zero_grad();
    Tensor xi = x.detach().clone().requires_grad_();
    graph::manual_seed(5);
    const Tensor y = in_mode(mode, "NormDropImpl", [&] { return m(xi); });
    (y * pattern({32, 2}, 0.37f, 0.1f)).sum().backward();
    runs.push_back({y.detach(), xi.grad()});
    for (const Tensor& p : m->parameters()) runs.back().push_back(p.grad());
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t k = 0; k < runs[0].size(); ++k) expect_near(runs[0][k], runs[1][k], 1e-5, "value " + std::to_string(k));
  int dropped = 0;
  for (double v : values(runs[0][0])) dropped += v == 0.0;
  EXPECT_GT(dropped, 8);  // about half of the 64 outputs are dropped
  EXPECT_LT(dropped, 56);
}

// The lowered BatchNorm2d forward (the graph the plugin wrote for
// Norm2dImpl::forward) in training mode, in float64 through the interpreter:
// the autodiff pass's gradients of x, weight and bias against central finite
// differences, and the running stats it writes back.
TEST(ModuleState, BatchNorm2dTrainingGraphGradcheckInFloat64) {
  namespace fs = std::filesystem;
  std::string text;
  for (const auto& f : fs::recursive_directory_iterator(CXXGRAPH_MODULE_STATE_GRAPHS)) {
    const std::string name = f.path().filename().string();
    if (name.find(".opt.") != std::string::npos || f.path().extension() != ".graph") continue;
    std::ifstream in(f.path());
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find("%num_batches_tracked") != std::string::npos && ss.str().find("dropout") == std::string::npos)
      text = ss.str();
  }
  ASSERT_FALSE(text.empty()) << "no graph of Norm2dImpl::forward in " << CXXGRAPH_MODULE_STATE_GRAPHS;
  auto g = graph::ir::parse(text);
  using graph::IValue;
  const int64_t C = 2;
  const Tensor running_mean = graph::zeros({C}, graph::kFloat64), running_var = graph::ones({C}, graph::kFloat64);
  const Tensor count = graph::zeros({}, graph::kInt64);
  std::vector<IValue> in;
  std::vector<bool> rg;
  for (const auto& v : g->inputs()) {
    const std::string& n = v->name();
    bool grad = false;
    if (n == "x") in.emplace_back(gradcheck_support::values({3, C, 2, 2}, -1, 1, 1)), grad = true;
    else if (n == "weight") in.emplace_back(gradcheck_support::values({C}, 0.5, 1.5, 2)), grad = true;
    else if (n == "bias") in.emplace_back(gradcheck_support::values({C}, -0.5, 0.5, 3)), grad = true;
    else if (n == "is_training" || n == "track_running_stats") in.emplace_back(true);
    else if (n == "cumulative_average") in.emplace_back(false);
    else if (n == "momentum_value") in.emplace_back(0.25);
    else if (n == "eps") in.emplace_back(1e-5);
    else if (n == "num_batches_tracked") in.emplace_back(count);
    else if (n == "running_mean") in.emplace_back(running_mean);
    else if (n == "running_var") in.emplace_back(running_var);
    else FAIL() << "unexpected graph input %" << n;
    rg.push_back(grad);
  }
  const Tensor x = std::get<Tensor>(in[0]);
  const std::vector<Tensor> grad_out{gradcheck_support::values({3, C, 2, 2}, 0.5, 1.5, 9)};
  const auto pass = graph::autodiff_test::pass_grads(*g, in, rg, grad_out);
  const auto numeric = graph::autodiff_test::numeric_grads(*g, in, rg, grad_out);
  ASSERT_EQ(pass.grads.size(), numeric.size());
  for (size_t i = 0; i < numeric.size(); ++i)
    graph::autodiff_test::expect_close(pass.grads[i], numeric[i], 1e-6, "gradient " + std::to_string(i));
  // Every run (k of them, x perturbed by 1e-6 at most) wrote the buffers
  // back, each moving them a quarter of the way to the batch's statistics.
  const int64_t k = count.item<int64_t>();
  EXPECT_GT(k, 2);
  EXPECT_FALSE(running_mean.requires_grad());
  const double kept = std::pow(0.75, static_cast<double>(k));
  const Tensor d = x - graph::mean(x, graph::Shape{0, 2, 3}, true);
  expect_near(running_mean, graph::mean(x, graph::Shape{0, 2, 3}) * (1 - kept), 1e-5, "running_mean");
  expect_near(running_var, graph::sum(d * d, graph::Shape{0, 2, 3}) / 11.0 * (1 - kept) + kept, 1e-5, "running_var");
}

}  // namespace
