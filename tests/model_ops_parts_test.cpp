// select, narrow, unbind, split, chunk, and max/min along a dim with indices
// (issue 19): what the PyTorch fixtures (op_fixture_test) do not show — the
// pieces are views, LibTorch's edge cases (empty dims, chunk giving fewer
// pieces), unbind's one backward node for all pieces (zeros where a piece gets
// no gradient), ties and NaN in max/min, finite differences, and bad input
// naming the op, the argument and the size. Part of op_fixture_test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::expect_error;
using gradcheck_support::gradcheck;
using gradcheck_support::values;

using gradcheck_support::doubles;

// [2, 3, 4] holding 0..23.
Tensor cube() { return graph::arange(24).to(graph::kFloat64).reshape({2, 3, 4}); }

std::vector<Shape> shapes(const std::vector<Tensor>& ts) {
  std::vector<Shape> out;
  for (const Tensor& t : ts) out.push_back(t.sizes());
  return out;
}

TEST(PartsOps, SelectAndNarrowAreViewsWithNegativeDimsAndIndices) {
  const Tensor x = cube();
  const Tensor s = x.select(-1, -1);  // x[:, :, 3]
  EXPECT_EQ(s.sizes(), (Shape{2, 3}));
  EXPECT_EQ(doubles(s), (std::vector<double>{3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(doubles(graph::select(x, 0, 1).select(0, 2)), (std::vector<double>{20, 21, 22, 23}));
  EXPECT_EQ(s.storage().get(), x.storage().get());  // a view
  const Tensor n = x.narrow(1, -2, 2);  // rows 1 and 2
  EXPECT_EQ(n.sizes(), (Shape{2, 2, 4}));
  EXPECT_EQ(doubles(n.select(0, 0).select(0, 0)), (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(graph::narrow(x, 2, 4, 0).sizes(), (Shape{2, 3, 0}));  // start == size, length 0
  EXPECT_EQ(n.storage().get(), x.storage().get());
}

TEST(PartsOps, UnbindSplitAndChunkFollowLibTorch) {
  const Tensor x = cube();
  const std::vector<Tensor> u = x.unbind(1);
  EXPECT_EQ(shapes(u), (std::vector<Shape>{{2, 4}, {2, 4}, {2, 4}}));
  EXPECT_EQ(doubles(u[2]), (std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(u[2].storage().get(), x.storage().get());  // views, as select
  EXPECT_EQ(graph::unbind(x).size(), 2u);
  // split: the last piece shorter; sizes may hold 0; chunk: ceil(4 / 3) = 2.
  EXPECT_EQ(shapes(x.split(3, -1)), (std::vector<Shape>{{2, 3, 3}, {2, 3, 1}}));
  EXPECT_EQ(doubles(x.split(3, -1)[1]), (std::vector<double>{3, 7, 11, 15, 19, 23}));
  EXPECT_EQ(shapes(graph::split(x, {1, 0, 2}, 1)), (std::vector<Shape>{{2, 1, 4}, {2, 0, 4}, {2, 2, 4}}));
  EXPECT_EQ(shapes(x.chunk(3, 2)), (std::vector<Shape>{{2, 3, 2}, {2, 3, 2}}));  // fewer than 3 pieces
  EXPECT_EQ(shapes(graph::chunk(graph::zeros({6}), 4)), (std::vector<Shape>{{2}, {2}, {2}}));
  // An empty dim: split gives one empty piece, chunk `chunks` of them, unbind none.
  const Tensor e = graph::zeros({0, 3});
  EXPECT_EQ(shapes(e.split(2)), (std::vector<Shape>{{0, 3}}));
  EXPECT_EQ(shapes(e.split(0)), (std::vector<Shape>{{0, 3}}));
  EXPECT_EQ(shapes(e.chunk(3)), (std::vector<Shape>{{0, 3}, {0, 3}, {0, 3}}));
  EXPECT_TRUE(e.unbind(0).empty());
}

TEST(PartsOps, UnbindHasOneBackwardNodeAndZerosWherePiecesGetNoGradient) {
  const Tensor x = cube().requires_grad_();
  const std::vector<Tensor> u = x.unbind(2);
  // One node for all four pieces: its backward is one stack, O(numel).
  ASSERT_TRUE(u[0].autograd_meta() && u[0].autograd_meta()->grad_fn);
  for (const Tensor& p : u) EXPECT_EQ(p.autograd_meta()->grad_fn, u[0].autograd_meta()->grad_fn);
  (u[1] * 2.0 + u[3]).sum().backward();
  std::vector<double> want;
  for (int i = 0; i < 6; ++i) want.insert(want.end(), {0, 2, 0, 1});
  EXPECT_EQ(doubles(x.grad()), want);
  // Without grad mode the pieces carry no history.
  graph::NoGradGuard no_grad;
  EXPECT_FALSE(x.unbind(0)[0].requires_grad());
}

TEST(PartsOps, GradientsMatchFiniteDifferences) {
  const Tensor x = values({3, 5, 2}, -1.0, 1.0, 3);
  const auto weighted = [](const std::vector<Tensor>& p) {
    std::vector<Tensor> flat;
    for (size_t k = 0; k < p.size(); ++k) flat.push_back(p[k].reshape({-1}) * static_cast<double>(k + 1));
    return graph::cat(flat);
  };
  gradcheck([](const std::vector<Tensor>& in) { return in[0].select(1, -2) * in[0].select(2, 0).slice(1, 0, 2); }, {x});
  gradcheck([](const std::vector<Tensor>& in) { return graph::narrow(in[0], 1, 1, 3).exp(); }, {x});
  gradcheck([&](const std::vector<Tensor>& in) { return weighted(graph::unbind(in[0], 1)); }, {x});
  gradcheck([&](const std::vector<Tensor>& in) { return weighted(in[0].split(2, 1)); }, {x});
  gradcheck([&](const std::vector<Tensor>& in) { return weighted(in[0].split({1, 4}, 1)); }, {x});
  gradcheck([&](const std::vector<Tensor>& in) { return weighted(graph::chunk(in[0], 2, 0)); }, {x});
  // Through an op before unbind: an unused piece gets a zero gradient.
  const Tensor y = values({4}, -1.0, 1.0, 5).requires_grad_();
  const std::vector<Tensor> parts = (y * y).unbind();
  (parts[0] * 3.0 + parts[2]).backward();
  EXPECT_EQ(doubles(y.grad())[1], 0.0);
}

TEST(PartsOps, MaxAndMinAlongADimGiveTheFirstExtremeAndItsGradientAlone) {
  const Tensor x = graph::tensor({{1.0, 3.0, 3.0}, {2.0, 2.0, 0.0}}).requires_grad_();
  auto [v, i] = x.max(1);
  EXPECT_EQ(doubles(v), (std::vector<double>{3, 2}));
  EXPECT_EQ(doubles(i), (std::vector<double>{1, 0}));  // the first of a tie
  EXPECT_EQ(i.dtype(), graph::kInt64);
  v.sum().backward();
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{0, 1, 0, 1, 0, 0}));  // not spread over the tie
  auto [m, j] = graph::min(x.detach(), 0, true);
  EXPECT_EQ(m.sizes(), (Shape{1, 3}));
  EXPECT_EQ(doubles(m), (std::vector<double>{1, 2, 0}));
  EXPECT_EQ(doubles(j), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(doubles(x.argmin(-1)), (std::vector<double>{0, 2}));
  // A NaN is the extreme of both, as in PyTorch; ints work too.
  const Tensor n = graph::tensor({{1.0f, std::nanf(""), 3.0f}});
  EXPECT_EQ(doubles(std::get<1>(n.max(1))), (std::vector<double>{1}));
  EXPECT_EQ(doubles(std::get<1>(n.min(1))), (std::vector<double>{1}));
  EXPECT_EQ(doubles(std::get<0>(graph::tensor<int64_t>({4, -7, 9}).min(0))), (std::vector<double>{-7}));
  expect_error([&] { x.max(2); }, {"dim 2"});
}

TEST(PartsOps, BadInputNamesTheOpTheArgumentAndTheSize) {
  const Tensor x = cube();
  expect_error([&] { x.select(1, 3); }, {"select", "index 3", "size 3", "[2, 3, 4]"});
  expect_error([&] { x.select(0, -3); }, {"select", "index -3", "size 2"});
  expect_error([&] { x.select(3, 0); }, {"select", "dim"});
  expect_error([&] { graph::select(graph::zeros({}), 0, 0); }, {"select", "0-d"});
  expect_error([&] { x.narrow(2, 3, 2); }, {"narrow", "exceeds", "size 4"});
  expect_error([&] { x.narrow(2, -5, 1); }, {"narrow", "start -5"});
  expect_error([&] { x.narrow(0, 0, -1); }, {"narrow", "length"});
  expect_error([&] { x.unbind(-4); }, {"unbind", "dim"});
  expect_error([&] { x.split(0); }, {"split", "split_size", "got 0"});
  expect_error([&] { x.split(-1); }, {"split", "split_size"});
  expect_error([&] { x.split({1, 2}, 2); }, {"split", "add up to 3", "size 4"});
  expect_error([&] { x.chunk(0); }, {"chunk", "chunks must be positive, got 0"});
  expect_error([&] { graph::chunk(x, 2, 5); }, {"chunk", "dim"});
}

}  // namespace
