// batch_norm and nn::BatchNorm1d/2d: values against a naive reference in
// double (PyTorch's own values are in tests/fixtures/ops.txt), the running
// stats' update, gradients against central finite differences in float64
// (training and eval), the backward kernel against autograd, the modules'
// state, and errors that name the op and the shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "graph/detail/backward_kernels.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::gradcheck;
using gradcheck_support::values;

std::vector<double> vec(const Tensor& t) {
  const Tensor c = t.detach().to(graph::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const auto g = vec(got), w = vec(want);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
}

using gradcheck_support::expect_error;

// Per-channel statistics of x [N, C, ...] by plain loops in double:
// {mean, biased variance}.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const Tensor& x) {
  const auto v = vec(x);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  std::vector<double> mean(C, 0), var(C, 0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) mean[c] += v[(n * C + c) * S + s];
    mean[c] /= static_cast<double>(N * S);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t s = 0; s < S; ++s) var[c] += std::pow(v[(n * C + c) * S + s] - mean[c], 2);
    var[c] /= static_cast<double>(N * S);
  }
  return {mean, var};
}

// (x - mean) / sqrt(var + eps) * w + b per channel.
Tensor ref_normalize(const Tensor& x, const std::vector<double>& mean, const std::vector<double>& var,
                     const Tensor& w, const Tensor& b, double eps) {
  auto v = vec(x);
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  const auto wv = w.defined() ? vec(w) : std::vector<double>(C, 1.0), bv = b.defined() ? vec(b) : std::vector<double>(C, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double& e = v[(n * C + c) * S + s];
        e = (e - mean[c]) / std::sqrt(var[c] + eps) * wv[c] + bv[c];
      }
  Tensor out = graph::empty(x.sizes(), graph::kFloat64);
  std::copy(v.begin(), v.end(), out.data_ptr<double>());
  return out;
}

Tensor dvec(const std::vector<double>& v) {
  Tensor t = graph::empty({static_cast<int64_t>(v.size())}, graph::kFloat64);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

TEST(BatchNorm, TrainingUsesBatchStatsAndUpdatesRunningStats) {
  for (const Shape& shape : {Shape{6, 3}, Shape{4, 3, 5}, Shape{2, 3, 4, 5}}) {
    const Tensor x = values(shape, -2, 2, 1), w = values({3}, 0.5, 1.5, 2), b = values({3}, -1, 1, 3);
    Tensor rm = values({3}, -1, 1, 4), rv = values({3}, 0.5, 2, 5);
    const auto rm0 = vec(rm), rv0 = vec(rv);
    const auto [mean, var] = channel_stats(x);
    expect_close(graph::batch_norm(x, rm, rv, w, b, true, 0.25, 1e-3), ref_normalize(x, mean, var, w, b, 1e-3), 1e-12);
    const double M = static_cast<double>(x.numel() / 3);
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(vec(rm)[c], 0.75 * rm0[c] + 0.25 * mean[c], 1e-12);
      EXPECT_NEAR(vec(rv)[c], 0.75 * rv0[c] + 0.25 * var[c] * M / (M - 1), 1e-12);  // unbiased
    }
    // float32: the same values, the stats updated in float32.
    Tensor rm32 = dvec(rm0).to(graph::kFloat32), rv32 = dvec(rv0).to(graph::kFloat32);
    const Tensor y32 = graph::batch_norm(x.to(graph::kFloat32), rm32, rv32, w.to(graph::kFloat32),
                                         b.to(graph::kFloat32), true, 0.25, 1e-3);
    EXPECT_EQ(y32.dtype(), graph::kFloat32);
    expect_close(y32, ref_normalize(x, mean, var, w, b, 1e-3), 1e-5);
    expect_close(rm32, rm, 1e-6);
    expect_close(rv32, rv, 1e-6);
  }
}

TEST(BatchNorm, EvalUsesRunningStatsAndLeavesThem) {
  const Tensor x = values({4, 3, 2, 2}, -2, 2, 6), rm = values({3}, -1, 1, 7), rv = values({3}, 0.5, 2, 8);
  const auto rm0 = vec(rm), rv0 = vec(rv);
  expect_close(graph::batch_norm(x, rm, rv), ref_normalize(x, rm0, rv0, Tensor(), Tensor(), 1e-5), 1e-12);
  EXPECT_EQ(vec(rm), rm0);
  EXPECT_EQ(vec(rv), rv0);
  // Training without running stats: batch statistics, nothing to update.
  const auto [mean, var] = channel_stats(x);
  expect_close(graph::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true),
               ref_normalize(x, mean, var, Tensor(), Tensor(), 1e-5), 1e-12);
  // float16 computes in float32 and rounds.
  const Tensor y16 = graph::batch_norm(x.to(graph::kFloat16), rm, rv);
  EXPECT_EQ(y16.dtype(), graph::kFloat16);
  expect_close(y16, ref_normalize(x, rm0, rv0, Tensor(), Tensor(), 1e-5), 2e-3);
}

TEST(BatchNorm, GradcheckTrainingAndEval) {
  const Tensor rm = values({3}, -1, 1, 9), rv = values({3}, 0.5, 2, 10);
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 2, 3}}) {
    const std::vector<Tensor> in = {values(shape, -2, 2, 11), values({3}, 0.5, 1.5, 12), values({3}, -1, 1, 13)};
    gradcheck([](const auto& t) { return graph::batch_norm(t[0], Tensor(), Tensor(), t[1], t[2], true); }, in);
    gradcheck([&](const auto& t) { return graph::batch_norm(t[0], rm, rv, t[1], t[2], false, 0.1, 1e-3); }, in);
  }
  // Without affine, and a non-contiguous input.
  gradcheck([](const auto& t) { return graph::batch_norm(t[0].transpose(0, 1), Tensor(), Tensor(), Tensor(), Tensor(), true); },
            {values({3, 4}, -2, 2, 14)});
}

// The backward kernel (the static graphs' gradient) equals eager autograd.
TEST(BatchNorm, BackwardKernelMatchesAutograd) {
  const Tensor rm = values({3}, -1, 1, 15), rv = values({3}, 0.5, 2, 16);
  for (bool training : {true, false}) {
    Tensor x = values({4, 3, 3}, -2, 2, 17).requires_grad_(), w = values({3}, 0.5, 1.5, 18).requires_grad_(),
           b = values({3}, -1, 1, 19).requires_grad_();
    const Tensor g = values({4, 3, 3}, 0.5, 1.5, 20);
    graph::batch_norm(x, training ? Tensor() : rm, training ? Tensor() : rv, w, b, training, 0.1, 1e-4).backward(g);
    const auto r = graph::detail::batch_norm_backward(g, x.detach(), training ? Tensor() : rm, training ? Tensor() : rv,
                                                      w.detach(), b.detach(), training, 1e-4, graph::detail::kAllGrads);
    ASSERT_EQ(r.size(), 5u);
    expect_close(r[0], x.grad(), 1e-12);
    EXPECT_FALSE(r[1].defined());
    EXPECT_FALSE(r[2].defined());
    expect_close(r[3], w.grad(), 1e-12);
    expect_close(r[4], b.grad(), 1e-12);
    // Only the wanted gradients.
    const auto only_x = graph::detail::batch_norm_backward(g, x.detach(), rm, rv, w.detach(), b.detach(), training, 1e-4, 1u);
    EXPECT_TRUE(only_x[0].defined());
    EXPECT_FALSE(only_x[3].defined());
    EXPECT_FALSE(only_x[4].defined());
  }
}

TEST(BatchNorm, Errors) {
  const Tensor x = graph::zeros({2, 3, 4}), c3 = graph::ones({3}), c4 = graph::ones({4});
  expect_error([&] { graph::batch_norm(x, c4, c4); }, {"batch_norm:", "running_mean", "[3]", "[2, 3, 4]"});
  expect_error([&] { graph::batch_norm(x, c3, c3, c4); }, {"batch_norm:", "weight", "[3]", "[2, 3, 4]", "[4]"});
  expect_error([&] { graph::batch_norm(x, c3, c3, c3, graph::ones({3, 1})); }, {"batch_norm:", "bias", "[3, 1]"});
  expect_error([&] { graph::batch_norm(graph::zeros({3}), c3, c3); }, {"batch_norm:", "at least 2 dims", "[3]"});
  expect_error([&] { graph::batch_norm(graph::zeros({2, 3}, graph::kInt64), c3, c3); }, {"batch_norm:", "long"});
  expect_error([&] { graph::batch_norm(x, Tensor(), Tensor()); }, {"batch_norm:", "evaluation mode"});
  expect_error([&] { graph::batch_norm(graph::zeros({1, 3}), c3, c3, Tensor(), Tensor(), true); },
               {"batch_norm:", "more than 1 value per channel", "[1, 3]"});
  expect_error([&] { graph::batch_norm(Tensor(), c3, c3); }, {"batch_norm"});
  expect_error(
      [&] { graph::detail::batch_norm_backward(graph::zeros({2, 3}), x, c3, c3, Tensor(), Tensor(), false, 1e-5, 1u); },
      {"batch_norm_backward:", "[2, 3, 4]", "[2, 3]"});
}

TEST(BatchNormModule, ParametersBuffersAndTrainEval) {
  graph::nn::BatchNorm2d bn(3);
  std::vector<std::string> names;
  for (const auto& [n, t] : bn->named_parameters()) names.push_back(n);
  for (const auto& [n, t] : bn->named_buffers()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(vec(bn->running_var), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(bn->num_batches_tracked.dtype(), graph::kInt64);

  const Tensor x = values({2, 3, 2, 2}, -2, 2, 21).to(graph::kFloat32);
  const auto [mean, var] = channel_stats(x);
  expect_close(bn(x), ref_normalize(x, mean, var, Tensor(), Tensor(), 1e-5), 1e-5);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(vec(bn->running_mean)[c], 0.1 * mean[c], 1e-6);
    EXPECT_NEAR(vec(bn->running_var)[c], 0.9 + 0.1 * var[c] * 8 / 7, 1e-6);
  }
  bn->eval();
  const Tensor rm = bn->running_mean.clone(), rv = bn->running_var.clone();
  expect_close(bn(x), ref_normalize(x, vec(rm), vec(rv), Tensor(), Tensor(), 1e-5), 1e-5);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(vec(bn->running_mean), vec(rm));

  // Gradients reach weight and bias.
  bn->train();
  bn(x.clone().requires_grad_()).sum().backward();
  EXPECT_TRUE(bn->weight.grad().defined());
  EXPECT_TRUE(bn->bias.grad().defined());
}

TEST(BatchNormModule, OptionsCumulativeMomentumAndNoTracking) {
  // momentum unset: the running stats are the plain average of the batches'.
  graph::nn::BatchNorm1d bn(graph::nn::BatchNorm1dOptions(2).momentum(std::nullopt).affine(false));
  EXPECT_TRUE(bn->named_parameters().empty());
  const Tensor a = values({4, 2}, -2, 2, 22), b = values({3, 2, 5}, -2, 2, 23);
  bn(a);
  bn(b);
  const auto sa = channel_stats(a), sb = channel_stats(b);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(vec(bn->running_mean)[c], (sa.first[c] + sb.first[c]) / 2, 1e-6);  // float32 buffers
    EXPECT_NEAR(vec(bn->running_var)[c], (sa.second[c] * 4 / 3 + sb.second[c] * 15 / 14) / 2, 1e-6);  // unbiased
  }
  // track_running_stats(false): batch statistics in eval too, no buffers.
  graph::nn::BatchNorm1d plain(graph::nn::BatchNorm1dOptions(2).track_running_stats(false).eps(1e-3));
  EXPECT_TRUE(plain->named_buffers().empty());
  plain->eval();
  expect_close(plain(a), ref_normalize(a, sa.first, sa.second, Tensor(), Tensor(), 1e-3), 1e-6);
}

TEST(BatchNormModule, SaveLoadAndErrors) {
  graph::nn::BatchNorm2d bn(graph::nn::BatchNorm2dOptions(3).momentum(0.5));
  bn(values({2, 3, 2, 2}, -2, 2, 24).to(graph::kFloat32));
  const std::string path = testing::TempDir() + "/batch_norm_state.bin";
  graph::nn::save(*bn, path);
  graph::nn::BatchNorm2d other(3);
  graph::nn::load(*other, path);
  std::remove(path.c_str());
  EXPECT_EQ(vec(other->running_mean), vec(bn->running_mean));
  EXPECT_EQ(vec(other->running_var), vec(bn->running_var));
  EXPECT_EQ(other->num_batches_tracked.item<int64_t>(), 1);

  expect_error([&] { bn(graph::zeros({2, 3, 4})); }, {"BatchNorm2d:", "4D", "3D", "[2, 3, 4]"});
  expect_error([&] { bn(graph::zeros({2, 4, 2, 2})); }, {"BatchNorm2d:", "3 channels", "[2, 4, 2, 2]"});
  graph::nn::BatchNorm1d bn1(3);
  expect_error([&] { bn1(graph::zeros({2, 3, 4, 5})); }, {"BatchNorm1d:", "2D or 3D", "4D"});
  expect_error([] { graph::nn::BatchNorm1d bad(0); }, {"BatchNorm1d", "num_features"});
}

// graph::trace records eval-mode batch_norm as one node, and refuses to
// freeze the running-stat update of training mode into a graph.
TEST(BatchNorm, TraceRecordsEvalAndRefusesTheRunningStatUpdate) {
  const Tensor x = values({4, 3}, -2, 2, 25), rm = values({3}, -1, 1, 26), rv = values({3}, 0.5, 2, 27);
  const graph::TracedGraph eval = graph::trace(
      [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{graph::batch_norm(in[0], rm, rv)}; }, {x});
  EXPECT_NE(graph::ir::print(*eval.graph).find("batch_norm{"), std::string::npos);
  expect_close(eval.run({x})[0], graph::batch_norm(x, rm, rv), 1e-12);
  Tensor rm2 = rm.clone(), rv2 = rv.clone();
  expect_error(
      [&] {
        graph::trace([&](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{graph::batch_norm(in[0], rm2, rv2, Tensor(), Tensor(), true)};
        }, {x});
      },
      {"batch_norm (updating running stats)"});
}

}  // namespace
