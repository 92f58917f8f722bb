// nn_functional.h's decompositions and their modules (GroupNorm, Conv1d,
// AdaptiveAvgPool2d): what the PyTorch fixtures (op_fixture_test) do not
// show — identities with other ops, the modules' parameters and options,
// float64 finite differences, and bad input naming the op and the shapes.
// Part of op_fixture_test.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "graph/detail/backward_kernels.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::expect_error;
namespace nn = graph::nn;

using gradcheck_support::doubles;

void expect_near(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const std::vector<double> x = doubles(a), y = doubles(b);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], tol) << "element " << i;
}

Tensor f64(const Tensor& t) { return t.to(graph::kFloat64); }

TEST(NnDecompositions, GroupNormIsLayerNormOrInstanceNormAtTheEnds) {
  graph::manual_seed(3);
  const Tensor x = f64(graph::randn({2, 4, 3, 2}));
  // One group: layer_norm over every dim but the batch.
  expect_near(graph::group_norm(x, 1), graph::layer_norm(x, {4, 3, 2}), 1e-12);
  // A group per channel: instance norm, each [H, W] plane normalized alone.
  const Tensor planes = x.reshape({8, 6});
  expect_near(graph::group_norm(x, 4).reshape({8, 6}), graph::layer_norm(planes, {6}), 1e-12);
  // The affine part is per channel.
  const Tensor w = f64(graph::tensor({1.0, 2.0, -1.0, 0.5})), b = f64(graph::tensor({0.0, 1.0, 2.0, 3.0}));
  const Tensor want = graph::group_norm(x, 2) * w.reshape({1, 4, 1, 1}) + b.reshape({1, 4, 1, 1});
  expect_near(graph::group_norm(x, 2, w, b), want, 1e-12);
  // [N, C] inputs (no positions) work too.
  EXPECT_EQ(graph::group_norm(f64(graph::randn({3, 4})), 2).sizes(), (Shape{3, 4}));
}

TEST(NnDecompositions, GradientsMatchFiniteDifferences) {
  using gradcheck_support::gradcheck;
  using V = std::vector<Tensor>;
  const auto r = [](Shape s, int seed) { return gradcheck_support::values(s, -1.0, 1.0, seed); };
  gradcheck([](const V& v) { return graph::group_norm(v[0], 2, v[1], v[2], 1e-3); }, {r({2, 4, 5}, 1), r({4}, 2), r({4}, 3)},
            1e-5);
  gradcheck([](const V& v) { return graph::conv1d(v[0], v[1], v[2], 2, 1); }, {r({2, 4, 5}, 4), r({3, 4, 3}, 5), r({3}, 6)});
  gradcheck([](const V& v) { return graph::pad(v[0], {1, -1, 2, 0}, 3.0); }, {r({2, 3, 4}, 7)});
  gradcheck([](const V& v) { return graph::adaptive_avg_pool2d(v[0], {1, 2}); }, {r({1, 2, 4, 6}, 8)});
  gradcheck([](const V& v) { return graph::avg_pool1d(v[0], 3, 2, 1); }, {r({1, 2, 7}, 9)});
  gradcheck([](const V& v) { return graph::adaptive_avg_pool2d(v[0], {3, 2}); }, {r({1, 2, 5, 4}, 10)});
  gradcheck([](const V& v) { return graph::adaptive_max_pool2d(v[0], {3, 2}); }, {r({1, 2, 5, 4}, 11)});
  gradcheck([](const V& v) { return graph::interpolate(v[0], {5, 3}, graph::kBilinear); }, {r({1, 2, 3, 4}, 12)});
  gradcheck([](const V& v) { return graph::interpolate_scale(v[0], 1.5); }, {r({1, 2, 3, 4}, 13)});
}

TEST(NnDecompositions, Conv1dIsConv2dOnAHeightOneImage) {
  graph::manual_seed(5);
  const Tensor x = graph::randn({2, 4, 9}), w = graph::randn({6, 2, 3}), b = graph::randn({6});
  const Tensor want = graph::conv2d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2}, {0, 1}, {1, 2}, 2).squeeze(2);
  expect_near(graph::conv1d(x, w, b, 2, 1, 2, 2), want, 0);
  // Pools: stride 0 (the default) means the kernel size.
  const Tensor p = graph::tensor({1.0f, 5.0f, 2.0f, 3.0f, 0.0f, -1.0f}).reshape({1, 1, 6});
  EXPECT_EQ(doubles(graph::max_pool1d(p, 2)), (std::vector<double>{5.0, 3.0, 0.0}));
  expect_near(graph::avg_pool1d(p, 3), graph::tensor({8.0f / 3, 2.0f / 3}).reshape({1, 1, 2}), 1e-6);
}

TEST(NnDecompositions, AdaptiveAvgPoolAveragesBlocks) {
  const Tensor x = graph::arange(0, 24, 1).to(graph::kFloat32).reshape({1, 1, 4, 6});
  // Blocks of 2 x 3: means of {0,1,2,6,7,8}, {3,4,5,9,10,11}, ...
  EXPECT_EQ(doubles(graph::adaptive_avg_pool2d(x, {2, 2})), (std::vector<double>{4.0, 7.0, 16.0, 19.0}));
  EXPECT_EQ(doubles(graph::adaptive_avg_pool2d(x, {1, 1})), (std::vector<double>{11.5}));
  nn::AdaptiveAvgPool2d pool(1);
  EXPECT_EQ(pool(x).sizes(), (Shape{1, 1, 1, 1}));
}

TEST(NnDecompositions, AdaptiveAvgPoolBadInputIsAClearError) {
  const Tensor x = graph::zeros({1, 2, 4, 4});
  expect_error([&] { graph::adaptive_avg_pool2d(x, {0, 2}); }, {"adaptive_avg_pool2d", "output_size", "positive", "[0, 2]"});
  expect_error([&] { graph::adaptive_avg_pool2d(x, {1, 2, 3}); }, {"adaptive_avg_pool2d", "1 or 2 elements", "[1, 2, 4, 4]"});
  expect_error([] { graph::adaptive_avg_pool2d(graph::zeros({4, 4}), {2, 2}); }, {"adaptive_avg_pool2d", "3-D", "[4, 4]"});
  expect_error([] { graph::adaptive_avg_pool2d(graph::zeros({1, 4, 4}, graph::kInt64), {2}); },
               {"adaptive_avg_pool2d", "floating", "long"});
  expect_error([] { graph::adaptive_avg_pool2d(graph::zeros({1, 0, 4}), {2}); }, {"adaptive_avg_pool2d", "non-empty"});
  // The backward kernel checks the gradient's shape.
  expect_error([&] { graph::detail::adaptive_avg_pool2d_backward(graph::zeros({1, 2, 3, 3}), x, {2, 2}); },
               {"adaptive_avg_pool2d_backward", "[1, 2, 3, 3]", "[1, 2, 2, 2]"});
  // One size for both dims; the unbatched form.
  EXPECT_EQ(graph::adaptive_avg_pool2d(x, {3}).sizes(), (Shape{1, 2, 3, 3}));
  EXPECT_EQ(graph::adaptive_avg_pool2d(graph::ones({2, 5, 3}), {2, 2}).sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(doubles(graph::adaptive_avg_pool2d(graph::ones({2, 5, 3}), {2, 2})), std::vector<double>(8, 1.0));
}

TEST(NnDecompositions, AdaptivePoolsOverlapWindowsAsPyTorch) {
  // 5 rows into 2 windows: rows [0, 3) and [2, 5), PyTorch's floor/ceil bounds.
  const Tensor x = graph::arange(0, 20, 1).to(graph::kFloat32).reshape({1, 1, 5, 4});
  expect_near(graph::adaptive_avg_pool2d(x, {2, 2}), graph::tensor({4.5f, 6.5f, 12.5f, 14.5f}).reshape({1, 1, 2, 2}), 1e-6);
  EXPECT_EQ(doubles(graph::adaptive_max_pool2d(x, {2, 2})), (std::vector<double>{9.0, 11.0, 17.0, 19.0}));
  EXPECT_EQ(doubles(nn::AdaptiveMaxPool2d(nn::Size2{1, 2})(x)), (std::vector<double>{17.0, 19.0}));
  // Nearest from 4 to 3 columns: sources floor(j * 4 / 3) = 0, 1, 2.
  EXPECT_EQ(doubles(graph::interpolate(x.slice(2, 0, 1).flatten(2), {3})), (std::vector<double>{0.0, 1.0, 2.0}));
  // Linear from 2 to 4 (half-pixel centres): 0, 0.25, 0.75, 1 of the way.
  expect_near(graph::interpolate(graph::tensor({0.0f, 4.0f}).reshape({1, 1, 2}), {4}, graph::kLinear),
              graph::tensor({0.0f, 1.0f, 3.0f, 4.0f}).reshape({1, 1, 4}), 1e-6);
}

TEST(NnDecompositions, PadOneHotAndTheLikeFactories) {
  const Tensor x = graph::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  EXPECT_EQ(doubles(graph::pad(x, {1, 0, 0, 1}, -1.0)),
            (std::vector<double>{-1, 1, 2, -1, 3, 4, -1, -1, -1}));
  EXPECT_EQ(doubles(graph::pad(x, {0, -1})), (std::vector<double>{1, 3}));  // negative: crops
  const Tensor i = graph::tensor<int64_t>({2, 0});
  const Tensor oh = graph::one_hot(i, 3);
  EXPECT_EQ(oh.dtype(), graph::kInt64);
  EXPECT_EQ(doubles(oh), (std::vector<double>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(graph::one_hot(i).sizes(), (Shape{2, 3}));  // max + 1 classes
  // *_like keep the shape and dtype; full_like converts the value to it.
  const Tensor n = graph::tensor<int64_t>({5, 6, 7});
  EXPECT_EQ(graph::full_like(n, 2.7).dtype(), graph::kInt64);
  EXPECT_EQ(doubles(graph::full_like(n, 2.7)), (std::vector<double>{2, 2, 2}));
  EXPECT_EQ(doubles(graph::ones_like(x)), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(doubles(graph::zeros_like(f64(x))), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(graph::ones_like(graph::full({}, 2.0)).sizes(), Shape{});  // 0-d stays 0-d
  const Tensor r = graph::rand_like(f64(x)), g = graph::randn_like(x);
  EXPECT_EQ(r.dtype(), graph::kFloat64);
  EXPECT_EQ(g.sizes(), x.sizes());
  for (double v : doubles(r)) EXPECT_TRUE(v >= 0 && v < 1);
}

TEST(NnDecompositions, RandomLikeDrawsWhatRandDrawsUnderOneSeed) {
  const Tensor x = graph::zeros({3, 5}), x64 = graph::zeros({4}, graph::kFloat64);
  graph::manual_seed(11);
  const Tensor a = graph::rand_like(x), b = graph::randn_like(x64);
  graph::manual_seed(11);
  const Tensor c = graph::rand({3, 5}), d = graph::randn({4}, graph::kFloat64);
  EXPECT_EQ(doubles(a), doubles(c));
  EXPECT_EQ(doubles(b), doubles(d));
  EXPECT_EQ(b.dtype(), graph::kFloat64);
  EXPECT_NE(doubles(graph::rand_like(x)), doubles(c));  // the generator moved on
  expect_error([] { graph::rand_like(graph::zeros({2}, graph::kInt64)); }, {"rand_like", "float or double", "long", "[2]"});
  expect_error([] { graph::randn_like(graph::zeros({2}, graph::kFloat16)); }, {"randn_like", "half"});
}

TEST(NnModules, GroupNormConv1dAndAdaptivePoolParameters) {
  nn::GroupNorm gn(2, 6);
  EXPECT_EQ(gn->named_parameters().size(), 2u);
  EXPECT_EQ(gn->weight.sizes(), (Shape{6}));
  EXPECT_TRUE(nn::GroupNorm(3, 6, 1e-5, false)->parameters().empty());
  const Tensor x = graph::randn({2, 6, 5});
  expect_near(gn(x), graph::group_norm(x, 2, graph::ones({6}), graph::zeros({6})), 0);

  nn::Conv1d conv(nn::Conv1dOptions(4, 6, 3).stride(2).padding(1).groups(2).bias(false));
  EXPECT_EQ(conv->weight.sizes(), (Shape{6, 2, 3}));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(conv(graph::randn({2, 4, 9})).sizes(), (Shape{2, 6, 5}));
  nn::Conv1d plain(3, 5, 2);
  EXPECT_EQ(plain->named_parameters().size(), 2u);
  EXPECT_EQ(plain(graph::randn({1, 3, 4})).sizes(), (Shape{1, 5, 3}));
}

TEST(NnModules, BadConstructionNamesTheModuleAndSizes) {
  expect_error([] { nn::GroupNorm(4, 6); }, {"GroupNorm", "num_channels (6)", "num_groups (4)"});
  expect_error([] { nn::GroupNorm(0, 6); }, {"GroupNorm", "num_groups", "positive"});
  expect_error([] { nn::Conv1d(nn::Conv1dOptions(4, 6, 3).groups(4)); }, {"Conv1d", "divisible by groups (4)"});
  expect_error([] { nn::Conv1d(nn::Conv1dOptions(4, 6, 0)); }, {"Conv1d", "kernel_size"});
  expect_error([] { nn::AdaptiveAvgPool2d(nn::Size2{2, 0}); }, {"AdaptiveAvgPool2d", "output_size"});
}

TEST(NnDecompositions, BadInputNamesTheOpAndShapes) {
  // Channels the groups do not divide: the reshape to [N, groups, C / groups * L].
  expect_error([] { graph::group_norm(graph::zeros({2, 6, 4}), 4); }, {"reshape", "[2, 4, 4]", "size 48"});
  // A module whose channel count differs from the input's: its weight's multiply.
  expect_error([] { nn::GroupNorm(2, 4)(graph::zeros({2, 6, 3})); }, {"mul", "[4, 1]"});
  // interpolate: a rank, mode or size it cannot take, align_corners with nearest.
  expect_error([] { graph::interpolate(graph::zeros({2, 3}), {4}); }, {"interpolate", "3-D", "[2, 3]"});
  expect_error([] { graph::interpolate(graph::zeros({1, 2, 3}), {4}, graph::kBilinear); }, {"interpolate", "bilinear", "4-D"});
  expect_error([] { graph::interpolate(graph::zeros({1, 2, 3, 3}), {4, 4}, graph::kLinear); }, {"interpolate", "linear", "3-D"});
  expect_error([] { graph::interpolate(graph::zeros({1, 2, 3, 3}), {4}); }, {"interpolate", "2 positive output sizes", "[4]"});
  expect_error([] { graph::interpolate(graph::zeros({1, 2, 3, 3}), {4, 0}); }, {"interpolate", "positive", "[4, 0]"});
  expect_error([] { graph::interpolate(graph::zeros({1, 2, 3}), {4}, graph::kNearest, true); }, {"interpolate", "align_corners"});
  expect_error([] { graph::interpolate_scale(graph::zeros({1, 2, 3}), 0.2); }, {"interpolate", "empty output"});
  expect_error([] { graph::interpolate_scale(graph::zeros({1, 2, 3}), -2.0); }, {"interpolate", "positive scale_factor"});
  expect_error([] { graph::interpolate(graph::zeros({1, 2, 3}, graph::kInt64), {4}, graph::kLinear); }, {"interpolate", "floating", "long"});
  // conv1d of a 2-d input or a mismatched weight: conv2d's check, on the height-1 view.
  expect_error([] { graph::conv1d(graph::zeros({4, 9}), graph::zeros({6, 4, 3})); }, {"conv2d"});
  expect_error([] { graph::conv1d(graph::zeros({1, 4, 9}), graph::zeros({6, 3, 3})); }, {"conv2d"});
  // one_hot: an index out of range, a negative class count, float indices.
  expect_error([] { graph::one_hot(graph::tensor<int64_t>({0, 3}), 3); }, {"index_select", "3"});
  expect_error([] { graph::one_hot(graph::tensor<int64_t>({0}), -1); }, {"arange"});
  expect_error([] { graph::one_hot(graph::tensor({0.0f, 1.0f})); }, {"one_hot", "int64", "float"});
  // pad: more pairs than dims, a crop past the size, an odd count; the
  // backward kernel's gradient of the wrong shape.
  expect_error([] { graph::pad(graph::zeros({3}), {1, 1, 1, 1}); }, {"pad", "2 pairs", "[3]"});
  expect_error([] { graph::pad(graph::zeros({3}), {-2, -2}); }, {"pad", "input size 3", "-2", "negative"});
  expect_error([] { graph::pad(graph::zeros({3}), {1}); }, {"pad", "pairs", "got 1 amounts"});
  expect_error([] { graph::pad(Tensor(), {1, 1}); }, {"pad"});
  expect_error([] { graph::detail::pad_backward(graph::zeros({4}), graph::zeros({3}), {1, 2}); },
               {"pad_backward", "[4]", "[6]"});
}

// pad as its own kernel: five pairs (any number up to the rank), crops to an
// empty dim, an empty input padded, int and bool fills, a strided view, and
// the gradient through crops and pads against finite differences.
TEST(NnDecompositions, PadKernelEdgesAndGradient) {
  const Tensor x = graph::arange(6).reshape({1, 1, 2, 3, 1}).to(graph::kFloat64);
  const Tensor y = graph::pad(x, {0, 1, 1, 0, 0, 0, 0, 0, 1, 1}, 9.0);
  EXPECT_EQ(y.sizes(), (Shape{3, 1, 2, 4, 2}));
  EXPECT_EQ(doubles(graph::sum(y))[0], 15.0 + 9.0 * (48 - 6));
  EXPECT_EQ(graph::pad(graph::zeros({2, 3}), {-2, -1}).sizes(), (Shape{2, 0}));
  EXPECT_EQ(doubles(graph::pad(graph::zeros({0}), {1, 1}, 2.0)), (std::vector<double>{2.0, 2.0}));
  const Tensor i = graph::pad(graph::arange(3), {1, 0}, 7);
  EXPECT_EQ(i.dtype(), graph::kInt64);
  EXPECT_EQ(doubles(i), (std::vector<double>{7, 0, 1, 2}));
  EXPECT_EQ(doubles(graph::pad(graph::ones({1}, graph::kBool), {0, 1}, false)), (std::vector<double>{1, 0}));
  const Tensor m = graph::arange(12).reshape({3, 4}).to(graph::kFloat32);
  EXPECT_EQ(doubles(graph::pad(m.t(), {-1, 1}, -1.0).select(0, 1)), (std::vector<double>{5, 9, -1}));  // m[:, 1] = 1 5 9
  gradcheck_support::gradcheck([](const std::vector<Tensor>& a) { return graph::pad(a[0], {2, -1, -1, 1}, 0.5) * 3.0; },
                               {gradcheck_support::values({3, 4}, -1.0, 1.0, 77)});
}

}  // namespace
