// LibTorch-style option builders (GRAPH_ARG, graph/arg.h) for the nn modules
// and the optimizers, and nn::ConvTranspose2d built from its options.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
namespace nn = graph::nn;
namespace optim = graph::optim;
using gradcheck_support::expect_error;

double max_abs(const Tensor& t) { return graph::amax(graph::abs(t.detach())).to(graph::kFloat64).item<double>(); }

TEST(Options, LinearBuilder) {
  const nn::LinearOptions o = nn::LinearOptions(5, 3).bias(false);
  EXPECT_EQ(o.in_features(), 5);
  EXPECT_EQ(o.out_features(), 3);
  EXPECT_FALSE(o.bias());
  nn::Linear fc(o);
  EXPECT_EQ(fc->weight.sizes(), (Shape{3, 5}));
  EXPECT_FALSE(fc->bias.defined());
  EXPECT_EQ(fc->named_parameters().size(), 1u);
  nn::Linear with_bias(nn::LinearOptions(5, 3));
  EXPECT_EQ(with_bias->named_parameters().size(), 2u);
}

TEST(Options, Conv2dBuilder) {
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, 3).stride(2).padding(1).dilation({1, 2}).groups(2).bias(false));
  EXPECT_EQ(conv->weight.sizes(), (Shape{6, 2, 3, 3}));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(conv->stride, (Shape{2, 2}));
  EXPECT_EQ(conv->padding, (Shape{1, 1}));
  EXPECT_EQ(conv->dilation, (Shape{1, 2}));
  EXPECT_EQ(conv->groups, 2);
  const Tensor x = graph::randn({1, 4, 7, 7});
  const Tensor want = graph::conv2d(x, conv->weight, Tensor(), {2, 2}, {1, 1}, {1, 2}, 2);
  EXPECT_EQ(max_abs(conv(x) - want), 0.0);
  // The getters of a copy, and the default values.
  const nn::Conv2dOptions d(1, 2, {3, 5});
  EXPECT_EQ(Shape(d.kernel_size()), (Shape{3, 5}));
  EXPECT_EQ(Shape(d.stride()), (Shape{1, 1}));
  EXPECT_EQ(d.groups(), 1);
  EXPECT_TRUE(d.bias());
}

// torch.nn.ConvTranspose2d's shapes and default init: weight and bias
// uniform(+-1/sqrt(fan_in)), fan_in = out / groups * kH * kW.
TEST(ConvTranspose2dModule, ShapesInitAndForward) {
  graph::manual_seed(3);
  nn::ConvTranspose2d up(nn::ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).groups(2));
  EXPECT_EQ(up->weight.sizes(), (Shape{4, 3, 3, 3}));
  ASSERT_TRUE(up->bias.defined());
  EXPECT_EQ(up->bias.sizes(), (Shape{6}));
  const double bound = 1.0 / std::sqrt(3.0 * 9.0);
  EXPECT_LE(max_abs(up->weight), bound);
  EXPECT_GT(max_abs(up->weight), 0.8 * bound);  // spread over the range, not a constant
  EXPECT_LE(max_abs(up->bias), bound);
  const auto names = up->named_parameters();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].first, "weight");
  EXPECT_EQ(names[1].first, "bias");
  const Tensor x = graph::randn({2, 4, 5, 5});
  const Tensor y = up(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 6, 10, 10}));  // (5 - 1) * 2 - 2 + 3 + 1
  const Tensor want = graph::conv_transpose2d(x, up->weight, up->bias, {2, 2}, {1, 1}, {1, 1}, 2, {1, 1});
  EXPECT_EQ(max_abs(y - want), 0.0);
  y.sum().backward();
  EXPECT_TRUE(up->weight.grad().defined());
  EXPECT_NEAR(up->bias.grad().select(0, 0).item<float>(), 2 * 10 * 10, 1e-3);  // d(sum)/d(bias) = N * Ho * Wo

  nn::ConvTranspose2d plain(3, 2, 4);  // the positional form
  EXPECT_EQ(plain->weight.sizes(), (Shape{3, 2, 4, 4}));
  EXPECT_EQ(plain(graph::randn({1, 3, 1, 1})).sizes(), (Shape{1, 2, 4, 4}));
}

TEST(ConvTranspose2dModule, Errors) {
  expect_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 6, 3).groups(4)); },
               {"ConvTranspose2d:", "divisible by groups (4)"});
  expect_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(4, 6, 3).stride(2).output_padding(2)); },
               {"ConvTranspose2d:", "output_padding [2, 2]", "stride [2, 2]"});
  expect_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(0, 6, 3)); }, {"ConvTranspose2d:", "in_channels"});
  expect_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 6, 0)); }, {"ConvTranspose2d:", "kernel_size"});
  nn::ConvTranspose2d up(2, 3, 3);
  expect_error([&] { up(graph::randn({1, 3, 4, 4})); }, {"conv_transpose2d:", "[1, 3, 4, 4]", "[2, 3, 3, 3]"});
}

TEST(Options, SGDBuilder) {
  optim::SGDOptions o = optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-2);
  EXPECT_EQ(o.lr(), 0.1);
  EXPECT_EQ(o.momentum(), 0.9);
  EXPECT_EQ(o.weight_decay(), 1e-2);
  EXPECT_EQ(o.dampening(), 0.0);
  EXPECT_FALSE(o.nesterov());
  // One step: d = g + wd * p; the first momentum buffer is d; p -= lr * d.
  Tensor p = graph::full({2}, 2.0, graph::kFloat64).requires_grad_();
  optim::SGD opt({p}, o);
  (p * p).sum().backward();  // g = 2p = 4
  opt.step();
  EXPECT_NEAR(p.select(0, 0).item<double>(), 2.0 - 0.1 * (4.0 + 0.01 * 2.0), 1e-15);
  opt.options().lr(0.5);  // changed between steps
  EXPECT_EQ(opt.options().lr(), 0.5);
}

TEST(Options, AdamBuilder) {
  const optim::AdamOptions o = optim::AdamOptions(2e-4).betas({0.5, 0.999}).eps(1e-6).amsgrad(true);
  EXPECT_EQ(o.lr(), 2e-4);
  EXPECT_EQ(o.betas().first, 0.5);
  EXPECT_EQ(o.betas().second, 0.999);
  EXPECT_EQ(o.eps(), 1e-6);
  EXPECT_TRUE(o.amsgrad());
  EXPECT_EQ(optim::AdamOptions().lr(), 1e-3);  // PyTorch's defaults
  EXPECT_EQ(optim::AdamOptions().betas().first, 0.9);
  // Adam's first step moves each element by lr (m / sqrt(v) = sign(g)).
  Tensor p = graph::full({3}, 1.0, graph::kFloat64).requires_grad_();
  optim::Adam opt({p}, optim::AdamOptions(0.01).betas({0.5, 0.999}));
  (p * 3.0).sum().backward();
  opt.step();
  EXPECT_NEAR(p.select(0, 0).item<double>(), 1.0 - 0.01, 1e-9);
  expect_error([&] { optim::Adam({p}, optim::AdamOptions().betas({1.0, 0.9})); }, {"beta parameter at index 0"});
}

}  // namespace
