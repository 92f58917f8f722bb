// logsumexp, var/std, nll_loss and binary_cross_entropy(_with_logits): what the
// PyTorch fixtures (op_fixture_test) do not show — overflow and infinities,
// the correction at and past the count, a large offset (two passes), the
// identities that tie the losses to cross_entropy and to each other, a
// model-style use (a logistic-regression step), and bad input naming the op
// and the shapes. Part of op_fixture_test.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Tensor;
using gradcheck_support::expect_error;

using gradcheck_support::doubles;

Tensor ints(std::initializer_list<int64_t> v) { return graph::tensor<int64_t>(v); }
// float64 copies (tensor() of double literals is float32, PyTorch's default),
// so identities hold to float64 rounding.
Tensor f64(const Tensor& t) { return t.to(graph::kFloat64); }
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ReduceOps, LogsumexpOverflowsNeitherWayAndKeepsInfinities) {
  // exp(1000) overflows even float64: the max is subtracted first.
  const Tensor x = graph::tensor({{1000.0f, 1000.0f}, {-1000.0f, -1000.0f}});
  const std::vector<double> got = doubles(graph::logsumexp(x, {1}));
  EXPECT_NEAR(got[0], 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(got[1], -1000 + std::log(2.0), 1e-3);
  // A row of -inf gives -inf (not NaN), a +inf gives +inf, as PyTorch.
  const Tensor inf = graph::tensor({{-kInf, -kInf}, {1.0, kInf}, {0.0, -kInf}});
  const std::vector<double> r = doubles(graph::logsumexp(inf, {1}));
  EXPECT_EQ(r[0], -kInf);
  EXPECT_EQ(r[1], kInf);
  EXPECT_DOUBLE_EQ(r[2], 0.0);
  // keepdim and several dims; the gradient is softmax over the reduced dims.
  const Tensor y = f64(graph::tensor({{0.5, -1.0, 2.0}, {0.0, 0.3, -0.7}})).requires_grad_();
  const Tensor all = graph::logsumexp(y, {0, 1}, true);
  EXPECT_EQ(all.sizes(), (graph::Shape{1, 1}));
  all.sum().backward();
  const std::vector<double> g = doubles(y.grad()), sm = doubles(graph::softmax(y.detach().reshape({6}), 0));
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], sm[i], 1e-12);
}

TEST(ReduceOps, VarAndStdCorrection) {
  const Tensor x = f64(graph::tensor({{1.0, 2.0, 4.0}, {3.0, 3.0, 3.0}}));
  EXPECT_EQ(doubles(graph::var(x, {1})), (std::vector<double>{7.0 / 3.0, 0.0}));
  EXPECT_EQ(doubles(graph::var(x, {1}, false)), (std::vector<double>{14.0 / 9.0, 0.0}));  // unbiased = false
  EXPECT_EQ(graph::std(x, {0}, 1.0, true).sizes(), (graph::Shape{1, 3}));
  EXPECT_NEAR(graph::std(x).item<double>(), std::sqrt(graph::var(x).item<double>()), 1e-15);
  // correction equal to the count divides by 0: inf, or nan for a zero sum.
  const std::vector<double> over = doubles(graph::var(x, {1}, 3.0));
  EXPECT_EQ(over[0], kInf);
  EXPECT_TRUE(std::isnan(over[1]));
  // Two passes: an offset of 1e8 in float64 leaves the variance exact.
  EXPECT_NEAR(doubles(graph::var(x + 1e8, {1}))[0], 7.0 / 3.0, 1e-7);
  // An empty reduction is nan (0 / max(0, -1)), as PyTorch; empty outputs stay empty.
  EXPECT_TRUE(std::isnan(graph::var(graph::zeros({0})).item<double>()));
  EXPECT_EQ(graph::var(graph::zeros({0, 3}), {1}).sizes(), (graph::Shape{0}));
}

TEST(LossOps, NllLossOfLogSoftmaxIsCrossEntropy) {
  const Tensor logits = f64(graph::tensor({{0.2, -1.0, 0.7}, {1.5, 0.1, -0.3}, {0.0, 0.4, 0.9}}));
  const Tensor target = ints({2, 0, 1});
  const Tensor lp = graph::log_softmax(logits, 1);
  EXPECT_NEAR(graph::nll_loss(lp, target).item<double>(), graph::cross_entropy(logits, target).item<double>(), 1e-12);
  const std::vector<double> none = doubles(graph::nll_loss(lp, target, Tensor(), graph::kNone));
  const std::vector<double> l = doubles(lp);
  EXPECT_EQ(none, (std::vector<double>{-l[2], -l[3], -l[7]}));
  // Weighted mean: divided by the picked weights; an ignored target weighs 0.
  const Tensor w = f64(graph::tensor({2.0, 1.0, 0.5}));
  const double want = (2.0 * -l[3] + 0.5 * -l[2]) / (2.0 + 0.5);
  EXPECT_NEAR(graph::nll_loss(lp, ints({2, 0, -100}), w).item<double>(), want, 1e-12);
  // Every target ignored: 0 / 0, nan (PyTorch too).
  EXPECT_TRUE(std::isnan(graph::nll_loss(lp, ints({-100, -100, -100})).item<double>()));
}

TEST(LossOps, NllLossBadTargetsNameTheOpAndShapes) {
  const Tensor lp = graph::log_softmax(graph::zeros({2, 3}), 1);
  expect_error([&] { graph::nll_loss(lp, ints({0, 3})); }, {"gather", "3"});      // class out of range
  expect_error([&] { graph::nll_loss(lp, ints({0, -1})); }, {"gather"});          // negative, not ignored
  expect_error([&] { graph::nll_loss(lp, graph::tensor({0.0f, 1.0f})); }, {"gather", "int64"});  // float target
  expect_error([&] { graph::nll_loss(lp, ints({0, 1}).reshape({2, 1})); }, {"gather"});  // target [N, 1]
}

TEST(LossOps, BinaryCrossEntropyAgreesWithTheLogitsForm) {
  const Tensor x = f64(graph::tensor({{-3.0, -0.5, 0.0}, {0.25, 1.0, 4.0}}));
  const Tensor t = f64(graph::tensor({{0.0, 1.0, 0.5}, {1.0, 0.2, 0.0}}));
  for (graph::Reduction r : {graph::kNone, graph::kMean, graph::kSum}) {
    const std::vector<double> a = doubles(graph::binary_cross_entropy(graph::sigmoid(x), t, r));
    const std::vector<double> b = doubles(graph::binary_cross_entropy_with_logits(x, t, r));
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
  }
  // Saturated probabilities: each log clamped at -100, the loss finite.
  EXPECT_DOUBLE_EQ(graph::binary_cross_entropy(graph::tensor({0.0, 1.0}), graph::tensor({1.0, 0.0}), graph::kSum)
                       .item<double>(),
                   200.0);
  // Large logits: no overflow in float32, the loss is |x| where wrong, ~0 where right.
  const std::vector<double> big = doubles(graph::binary_cross_entropy_with_logits(
      graph::tensor({200.0f, -200.0f, 200.0f}), graph::tensor({0.0f, 1.0f, 1.0f}), graph::kNone));
  EXPECT_EQ(big, (std::vector<double>{200.0, 200.0, 0.0}));
  // pos_weight scales the positive term: with t = 1 the loss is pw * softplus(-x).
  const Tensor pw = f64(graph::tensor({3.0}));
  EXPECT_NEAR(graph::binary_cross_entropy_with_logits(f64(graph::tensor({0.0})), f64(graph::tensor({1.0})), graph::kSum, pw)
                  .item<double>(),
              3.0 * std::log(2.0), 1e-12);
}

TEST(LossOps, BinaryCrossEntropyTargetsMustMatchTheInput) {
  const Tensor p = graph::full({2, 3}, 0.5);
  expect_error([&] { graph::binary_cross_entropy(p, graph::full({3}, 1.0)); }, {"reshape", "[2, 3]", "size 3"});
  expect_error([&] { graph::binary_cross_entropy_with_logits(p, graph::full({2, 1}, 1.0)); }, {"reshape"});
  // A target [N, 1] for an input [N] is read in the input's shape (no [N, N]).
  EXPECT_EQ(graph::binary_cross_entropy(graph::full({4}, 0.5), graph::ones({4, 1}), graph::kNone).sizes(),
            (graph::Shape{4}));
}

// A model-style use: logistic regression on a separable set, by hand-written
// SGD on binary_cross_entropy_with_logits; the loss falls and the gradient is
// X^T (sigmoid(Xw) - y) / N, the textbook one.
TEST(LossOps, LogisticRegressionStep) {
  const Tensor X = f64(graph::tensor({{1.0, 2.0}, {2.0, 1.0}, {-1.0, -2.0}, {-2.0, -0.5}}));
  const Tensor y = f64(graph::tensor({1.0, 1.0, 0.0, 0.0}));
  Tensor w = f64(graph::tensor({-0.3, 0.1})).requires_grad_();
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    Tensor loss = graph::binary_cross_entropy_with_logits(graph::matmul(X, w), y);
    loss.backward();
    if (step == 0) {
      const std::vector<double> g = doubles(w.grad());
      const Tensor want = graph::matmul(X.t(), graph::sigmoid(graph::matmul(X, w.detach())) - y) / 4.0;
      const std::vector<double> wv = doubles(want);
      EXPECT_NEAR(g[0], wv[0], 1e-12);
      EXPECT_NEAR(g[1], wv[1], 1e-12);
      first = loss.item<double>();
    }
    last = loss.item<double>();
    w = (w.detach() - w.grad() * 0.5).requires_grad_();
  }
  EXPECT_LT(last, first * 0.2);
}

}  // namespace
