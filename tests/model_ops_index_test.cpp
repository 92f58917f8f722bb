// index_select, gather, cumsum and bmm: what the PyTorch fixtures
// (op_fixture_test) do not show — method forms, strided inputs, repeated
// indices adding up in the gradient, empty tensors, dtypes, a model-style use
// (picking the log-probabilities of targets, positions from a cumsum of a
// mask, batched attention scores), and bad input naming the op and the
// shapes. Part of op_fixture_test.
#include <gtest/gtest.h>

#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Tensor;

using gradcheck_support::doubles;

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts,
                  std::source_location at = std::source_location::current()) {
  try {
    f();
  } catch (const graph::Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " (line " << at.line() << ")";
    return;
  }
  ADD_FAILURE() << "no error at line " << at.line() << "; expected one naming " << parts.front();
}

Tensor ints(std::initializer_list<int64_t> v) { return graph::tensor<int64_t>(v); }

TEST(IndexOps, IndexSelectValuesAndStridedInput) {
  const Tensor x = graph::arange(0, 12).reshape({3, 4});  // int64
  EXPECT_EQ(doubles(x.index_select(1, ints({3, 0, 3}))), (std::vector<double>{3, 0, 3, 7, 4, 7, 11, 8, 11}));
  EXPECT_EQ(doubles(graph::index_select(x, 0, ints({2}))), (std::vector<double>{8, 9, 10, 11}));
  // A transposed (strided) input, and an int32 index, as PyTorch accepts.
  EXPECT_EQ(doubles(x.t().index_select(0, graph::tensor<int32_t>({1}))), (std::vector<double>{1, 5, 9}));
  EXPECT_EQ(x.index_select(0, graph::zeros({0}, graph::kInt64)).sizes(), (graph::Shape{0, 4}));
  EXPECT_EQ(x.index_select(1, ints({1})).dtype(), graph::kInt64);
}

TEST(IndexOps, GatherValuesAlongEitherDim) {
  const Tensor x = graph::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  const Tensor i = graph::tensor<int64_t>({{2, 2, 0, 1}, {0, 1, 1, 1}});
  EXPECT_EQ(doubles(x.gather(1, i)), (std::vector<double>{3, 3, 1, 2, 4, 5, 5, 5}));
  // The index may be smaller than the input in the other dims.
  const Tensor j = graph::tensor<int64_t>({{1, 0}});
  EXPECT_EQ(graph::gather(x, 0, j).sizes(), (graph::Shape{1, 2}));
  EXPECT_EQ(doubles(graph::gather(x, 0, j)), (std::vector<double>{4, 2}));
  EXPECT_EQ(doubles(x.t().gather(-1, j.t())), (std::vector<double>{4, 2}));
}

TEST(IndexOps, RepeatedIndicesAddUpInTheGradient) {
  Tensor x = graph::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).requires_grad_();
  (x.index_select(1, ints({2, 2, 0})) * 3.0).sum().backward();
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{3, 0, 6, 3, 0, 6}));
  Tensor y = graph::tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}).requires_grad_();
  y.gather(1, graph::tensor<int64_t>({{1, 1, 1}, {0, 2, 0}})).sum().backward();
  EXPECT_EQ(y.grad().dtype(), graph::kFloat32);
  EXPECT_EQ(doubles(y.grad()), (std::vector<double>{0, 3, 0, 2, 0, 1}));
}

TEST(IndexOps, CumsumDtypesAndGradient) {
  EXPECT_EQ(doubles(graph::tensor({true, false, true, true}).cumsum(0)), (std::vector<double>{1, 1, 2, 3}));
  EXPECT_EQ(graph::tensor({true, false}).cumsum(0).dtype(), graph::kInt64);
  EXPECT_EQ(graph::tensor<int32_t>({1, 2}).cumsum(0).dtype(), graph::kInt64);
  EXPECT_EQ(graph::zeros({2}, graph::kFloat16).cumsum(0).dtype(), graph::kFloat16);
  const Tensor x = graph::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(doubles(graph::cumsum(x, 0)), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(doubles(x.t().cumsum(1)), (std::vector<double>{1, 5, 2, 7, 3, 9}));
  EXPECT_EQ(doubles(graph::full({}, 2.5).cumsum(0)), (std::vector<double>{2.5}));
  EXPECT_EQ(graph::zeros({2, 0}).cumsum(1).sizes(), (graph::Shape{2, 0}));
  Tensor w = graph::tensor({1.0, 2.0, 3.0}).requires_grad_();
  (w.cumsum(0) * graph::tensor({1.0, 10.0, 100.0})).sum().backward();
  EXPECT_EQ(doubles(w.grad()), (std::vector<double>{111, 110, 100}));  // the reverse cumsum of grad
}

TEST(IndexOps, BmmMatchesPerBatchMatmul) {
  const Tensor a = graph::arange(0, 12).to(graph::kFloat64).reshape({2, 2, 3});
  const Tensor b = graph::arange(0, 12).to(graph::kFloat64).reshape({2, 3, 2}) * 0.5;
  const Tensor c = graph::bmm(a, b);
  EXPECT_EQ(c.sizes(), (graph::Shape{2, 2, 2}));
  for (int64_t i = 0; i < 2; ++i)
    EXPECT_EQ(doubles(c.slice(0, i, i + 1).squeeze(0)),
              doubles(graph::matmul(a.slice(0, i, i + 1).squeeze(0), b.slice(0, i, i + 1).squeeze(0))));
  EXPECT_EQ(doubles(a.bmm(a.transpose(1, 2))), doubles(graph::matmul(a, a.transpose(1, 2))));
}

// What a model does with them: a classifier's log-probabilities of the
// targets (gather), positions of the real tokens of a padded batch (cumsum of
// a mask), attention scores over a batch (bmm).
TEST(IndexOps, ModelStyleUses) {
  Tensor logits = graph::tensor({{0.5, 1.5, -1.0}, {2.0, 0.0, 1.0}}).requires_grad_();
  const Tensor targets = ints({1, 0});
  const Tensor nll = -graph::log_softmax(logits, 1).gather(1, targets.unsqueeze(1)).mean();
  const Tensor ce = graph::cross_entropy(logits, targets);
  EXPECT_NEAR(nll.item<double>(), ce.item<double>(), 1e-6);
  nll.backward();
  const Tensor p = graph::softmax(logits.detach(), 1);
  const std::vector<double> want{doubles(p)[0] / 2, (doubles(p)[1] - 1) / 2, doubles(p)[2] / 2,
                                 (doubles(p)[3] - 1) / 2, doubles(p)[4] / 2, doubles(p)[5] / 2};
  const std::vector<double> got = doubles(logits.grad());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;  // log_softmax and softmax round differently
  const Tensor mask = graph::tensor({{true, true, false}, {true, false, false}});
  EXPECT_EQ(doubles(mask.cumsum(1) - 1), (std::vector<double>{0, 1, 1, 0, 0, 0}));
  const Tensor q = graph::ones({2, 3, 4}), k = graph::ones({2, 5, 4});
  EXPECT_EQ(graph::bmm(q, k.transpose(1, 2)).sizes(), (graph::Shape{2, 3, 5}));
}

TEST(IndexOps, BadInputNamesTheOpAndShapes) {
  const Tensor x = graph::zeros({2, 3});
  expect_error([&] { x.index_select(1, ints({3})); }, {"index_select", "index 3 is out of range", "size 3", "[2, 3]"});
  expect_error([&] { x.index_select(0, ints({-1})); }, {"index_select", "index -1 is out of range"});
  expect_error([&] { x.index_select(0, graph::zeros({1})); }, {"index_select", "int64", "float"});
  expect_error([&] { x.index_select(0, graph::zeros({1, 1}, graph::kInt64)); }, {"index_select", "1-D", "[1, 1]"});
  expect_error([&] { x.index_select(2, ints({0})); }, {"index_select", "dim 2 is out of range", "[2, 3]"});
  expect_error([&] { x.gather(1, ints({0})); }, {"gather", "number of dims", "[2, 3]", "[1]"});
  expect_error([&] { x.gather(1, graph::zeros({2, 1}, graph::kInt32)); }, {"gather", "int64", "got int"});
  expect_error([&] { x.gather(1, graph::tensor<int64_t>({{0, 5}})); }, {"gather", "index 5 is out of range", "[1, 2]"});
  expect_error([&] { x.gather(1, graph::zeros({3, 1}, graph::kInt64)); }, {"gather", "larger than the input in dim 0"});
  expect_error([] { graph::zeros({}).gather(0, graph::zeros({}, graph::kInt64)); }, {"gather", "at least 1 dim"});
  expect_error([&] { x.cumsum(2); }, {"cumsum", "dim 2 is out of range", "[2, 3]"});
  expect_error([] { Tensor().cumsum(0); }, {"cumsum", "undefined"});
  expect_error([&] { graph::bmm(x, x); }, {"bmm", "3-D", "[2, 3]"});
  expect_error([] { graph::bmm(graph::zeros({2, 2, 3}), graph::zeros({3, 3, 2})); }, {"bmm", "batch sizes differ"});
  expect_error([] { graph::bmm(graph::zeros({2, 2, 3}), graph::zeros({2, 2, 2})); }, {"bmm", "inner dims differ"});
  expect_error([] { graph::bmm(graph::zeros({1, 2, 2}), graph::zeros({1, 2, 2}, graph::kFloat64)); },
               {"bmm", "one dtype", "double"});
}

}  // namespace
