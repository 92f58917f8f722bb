// The elementwise ops added for real models (sin, cos, log1p, expm1, softplus,
// clamp_min, clamp_max, leaky_relu, elu, and clamp/hardtanh built from them):
// what the PyTorch fixtures (op_fixture_test) do not show — method forms,
// PyTorch's default parameters, dtypes of integral inputs and bounds, NaN,
// and bad input naming the op and the shapes. Part of op_fixture_test.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Tensor;

using gradcheck_support::doubles;

void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_EQ(doubles(got), doubles(want));
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const graph::Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    return;
  }
  ADD_FAILURE() << "no error; expected one naming " << parts.front();
}

Tensor mixed() { return graph::tensor({-2.5f, -0.5f, 0.f, 0.25f, 3.f}); }

TEST(ModelOps, MethodFormsAreTheFunctions) {
  const Tensor x = mixed();
  expect_same(x.sin(), graph::sin(x));
  expect_same(x.cos(), graph::cos(x));
  expect_same(x.expm1(), graph::expm1(x));
  expect_same(x.softplus(), graph::softplus(x));
  expect_same(x.abs().log1p(), graph::log1p(graph::abs(x)));
  expect_same(x.exp(), graph::exp(x));  // every unary op of the table has one
  expect_same(x.clamp_min(0.1), graph::clamp_min(x, 0.1));
  expect_same(x.clamp_max(0.1), graph::clamp_max(x, 0.1));
  expect_same(x.clamp(-1, 1), graph::clamp(x, -1, 1));
}

TEST(ModelOps, PyTorchDefaults) {
  const Tensor x = mixed();
  expect_same(graph::leaky_relu(x), graph::leaky_relu(x, 0.01));
  expect_same(graph::elu(x), graph::elu(x, 1.0));
  expect_same(graph::hardtanh(x), graph::clamp(x, -1.0, 1.0));
  EXPECT_EQ(doubles(graph::leaky_relu(x, 0.5)), (std::vector<double>{-1.25, -0.25, 0, 0.25, 3}));
  EXPECT_EQ(doubles(graph::hardtanh(x)), (std::vector<double>{-1, -0.5, 0, 0.25, 1}));
  // softplus is x itself above PyTorch's threshold of 20.
  EXPECT_EQ(graph::softplus(graph::tensor({30.f})).item<float>(), 30.f);
}

TEST(ModelOps, DtypesOfIntegralInputsAndBounds) {
  const Tensor i = graph::tensor({-3, 0, 5});
  const Tensor c = graph::clamp(i, -1, 2);  // int bounds keep int64, as in PyTorch
  EXPECT_EQ(c.dtype(), graph::kInt64);
  EXPECT_EQ(doubles(c), (std::vector<double>{-1, 0, 2}));
  const Tensor f = graph::clamp_max(i, 0.5);  // a float bound promotes
  EXPECT_EQ(f.dtype(), graph::kFloat32);
  EXPECT_EQ(doubles(f), (std::vector<double>{-3, 0, 0.5}));
  EXPECT_EQ(graph::sin(i).dtype(), graph::kFloat32);
  EXPECT_EQ(graph::elu(i).dtype(), graph::kFloat32);
  EXPECT_EQ(graph::softplus(graph::tensor({1.0, 2.0}).to(graph::kFloat64)).dtype(), graph::kFloat64);
  Tensor in_place = graph::tensor({-3, 0, 5});
  in_place.clamp_(0, 1);  // stays an int64 tensor
  EXPECT_EQ(doubles(in_place), (std::vector<double>{0, 0, 1}));
}

TEST(ModelOps, ClampPropagatesNaNAndHighBoundWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<double> v = doubles(graph::clamp(graph::tensor({nan, 2.f}), -1, 1));
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 1);
  EXPECT_TRUE(std::isnan(doubles(graph::clamp_min(graph::tensor({1.f}), nan))[0]));
  // lo > hi: every element is hi (PyTorch's min(max(x, lo), hi)).
  EXPECT_EQ(doubles(graph::clamp(mixed(), 2, 1)), (std::vector<double>(5, 1.0)));
}

TEST(ModelOps, GradientsAtTheKinksFollowPyTorch) {
  Tensor x = graph::tensor({-1.f, 0.f, 1.f}).requires_grad_();
  graph::clamp(x, -1, 1).sum().backward();  // both bounds included
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{1, 1, 1}));
  Tensor y = graph::tensor({-1.f, 0.f, 1.f}).requires_grad_();
  graph::leaky_relu(y, 0.2).sum().backward();  // 0 takes the negative slope
  EXPECT_EQ(doubles(y.grad()), (std::vector<double>{0.2f, 0.2f, 1}));
}

TEST(ModelOps, BadInputNamesTheOpAndShapes) {
  const Tensor a = graph::zeros({2, 3});
  expect_error([&] { graph::clamp_min(a, graph::zeros({4})); }, {"clamp_min: shapes [2, 3] and [4] cannot be broadcast"});
  expect_error([&] { graph::clamp_max(a, graph::zeros({2, 2})); }, {"clamp_max", "[2, 3]", "[2, 2]"});
  expect_error([&] { graph::leaky_relu(a, graph::zeros({5})); }, {"leaky_relu", "[2, 3]", "[5]"});
  expect_error([] { graph::sin(Tensor()); }, {"sin", "undefined"});
  expect_error([] { graph::elu(Tensor()); }, {"elu", "undefined"});
  expect_error([] { Tensor().clamp(0, 1); }, {"clamp_min", "undefined"});
}

}  // namespace
