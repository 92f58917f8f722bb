// masked_fill, where with a host scalar operand, triu and tril: what the
// PyTorch fixtures (op_fixture_test) do not show — method forms and
// defaults, dtypes of the fill, NaN and infinities, gradients through the
// mask, a causal attention mask built from triu, and bad input naming the op
// and the shapes. Part of op_fixture_test.
#include <gtest/gtest.h>

#include <algorithm>
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

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const graph::Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    return;
  }
  ADD_FAILURE() << "no error; expected one naming " << parts.front();
}

const double kInf = std::numeric_limits<double>::infinity();

TEST(SelectOps, MaskedFillKeepsNaNAndInfinityOutsideTheMask) {
  const double nan = std::nan("");
  const Tensor x = graph::tensor({1.0, nan, kInf, -2.0});
  const Tensor m = graph::tensor({true, false, false, true});
  const std::vector<double> got = doubles(x.masked_fill(m, -kInf));
  EXPECT_EQ(got[0], -kInf);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], kInf);
  EXPECT_EQ(got[3], -kInf);
  // The function and the method are one op; a NaN fill is written as is.
  EXPECT_TRUE(std::isnan(doubles(graph::masked_fill(x, m, nan))[0]));
}

TEST(SelectOps, FillDtypes) {
  const Tensor m = graph::tensor({true, false});
  const Tensor i = graph::tensor<int64_t>({5, 6});
  // masked_fill keeps x's dtype (a float fill is truncated, as in PyTorch) ...
  EXPECT_EQ(i.masked_fill(m, 2.75).dtype(), graph::kInt64);
  EXPECT_EQ(doubles(i.masked_fill(m, 2.75)), (std::vector<double>{2, 6}));
  EXPECT_EQ(graph::zeros({2}, graph::kFloat16).masked_fill(m, 3).dtype(), graph::kFloat16);
  // ... where raises it to the scalar's category (PyTorch's wrapped numbers).
  const Tensor w = graph::where(m, i, 0.5);
  EXPECT_EQ(w.dtype(), graph::kFloat32);
  EXPECT_EQ(doubles(w), (std::vector<double>{5, 0.5}));
  EXPECT_EQ(graph::where(m, 7, i).dtype(), graph::kInt64);
  EXPECT_EQ(doubles(graph::where(m, 7, i)), (std::vector<double>{7, 6}));
  EXPECT_EQ(graph::where(m, graph::tensor({true, true}), 2).dtype(), graph::kInt64);
  EXPECT_EQ(graph::where(m, graph::zeros({2}, graph::kBFloat16), 1.5).dtype(), graph::kBFloat16);
  EXPECT_EQ(doubles(graph::tensor({true, false}).masked_fill(graph::tensor({false, true}), true)),
            (std::vector<double>{1, 1}));
}

TEST(SelectOps, MaskAndInputBroadcast) {
  const Tensor x = graph::tensor({1.f, 2.f, 3.f});           // [3]
  const Tensor m = graph::tensor({{true}, {false}});          // [2, 1]
  const Tensor y = x.masked_fill(m, 0);
  EXPECT_EQ(y.sizes(), (graph::Shape{2, 3}));
  EXPECT_EQ(doubles(y), (std::vector<double>{0, 0, 0, 1, 2, 3}));
  const Tensor w = graph::where(m, x, -1);
  EXPECT_EQ(doubles(w), (std::vector<double>{1, 2, 3, -1, -1, -1}));
}

// Each value operand dense or one broadcast value, over dense and strided
// runs (the fast paths and the general loop), against a loop over doubles.
TEST(SelectOps, DenseAndBroadcastOperandsInEveryCombination) {
  const Tensor x = graph::randn({5, 7}), y = graph::randn({5, 7}), mask = graph::gt(graph::randn({5, 7}), 0.0);
  const Tensor one_x = graph::full({1, 1}, 2.5), one_y = graph::full({1, 1}, -1.5);
  for (bool strided : {false, true}) {
    const Tensor m = strided ? mask.t().contiguous().t() : mask;  // column-major mask: a strided run
    for (const Tensor& a : {x, one_x})
      for (const Tensor& b : {y, one_y}) {
        const std::vector<double> got = doubles(graph::where(m, a, b));
        const std::vector<double> ms = doubles(mask), as = doubles(a.expand({5, 7}).contiguous()),
                                  bs = doubles(b.expand({5, 7}).contiguous());
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(got[i], ms[i] != 0 ? as[i] : bs[i]) << "element " << i << (strided ? " strided" : "");
      }
    const std::vector<double> filled = doubles(graph::masked_fill(x, m, 0.25)), xs = doubles(x), ms = doubles(mask);
    for (size_t i = 0; i < filled.size(); ++i) ASSERT_EQ(filled[i], ms[i] != 0 ? 0.25 : xs[i]);
  }
}

Tensor doubles_tensor(const std::vector<double>& v) {
  Tensor t = graph::empty({static_cast<int64_t>(v.size())}, graph::kFloat64);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

// The dense runs choose by bit masks (vectorized): in every dtype and on runs
// of 1-37 elements (vector bodies and remainders), each element's bytes are
// exactly a's or b's, NaN, -0.0 and infinities included.
TEST(SelectOps, DenseRunsCopyTheChosenBitsInEveryDtype) {
  const double nan = std::nan("");
  for (int64_t n = 1; n <= 37; n += 3) {
    std::vector<double> av(static_cast<size_t>(n)), bv(static_cast<size_t>(n));
    std::vector<bool> mv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i);
      av[k] = i % 5 == 0 ? nan : i % 5 == 1 ? -0.0 : i % 5 == 2 ? -kInf : 1.5 * static_cast<double>(i);
      bv[k] = i % 3 == 0 ? 0.0 : i % 3 == 1 ? kInf : -2.25 * static_cast<double>(i);
      mv[k] = (i * 7 + n) % 3 == 0;
    }
    Tensor m = graph::empty({n}, graph::kBool);
    for (int64_t i = 0; i < n; ++i) m.data_ptr<bool>()[i] = mv[static_cast<size_t>(i)];
    for (graph::DType d : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kBFloat16, graph::kInt32,
                           graph::kInt64, graph::kBool}) {
      const Tensor a = doubles_tensor(av).to(d), b = doubles_tensor(bv).to(d);
      for (bool broadcast_b : {false, true}) {
        const Tensor bb = broadcast_b ? b.slice(0, 0, 1) : b;  // [1]: one value along the run
        const Tensor out = graph::where(m, a, bb);
        ASSERT_EQ(out.dtype(), d);
        const size_t es = graph::element_size(d);
        const auto* o = static_cast<const unsigned char*>(out.raw_data());
        const auto* pa = static_cast<const unsigned char*>(a.raw_data());
        const auto* pb = static_cast<const unsigned char*>(bb.raw_data());
        for (int64_t i = 0; i < n; ++i) {
          const size_t at = static_cast<size_t>(i) * es;
          const unsigned char* want = mv[static_cast<size_t>(i)] ? pa + at : pb + (broadcast_b ? 0 : at);
          ASSERT_TRUE(std::equal(o + at, o + at + es, want))
              << graph::dtype_name(d) << " n " << n << " element " << i << (broadcast_b ? " broadcast b" : "");
        }
      }
    }
  }
}

TEST(SelectOps, GradientsFlowWhereTheInputIsKept) {
  Tensor x = graph::tensor({1.f, 2.f, 3.f}).requires_grad_();
  const Tensor m = graph::tensor({{true, false, false}, {true, true, false}});
  x.masked_fill(m, 9).sum().backward();  // broadcast [3] -> [2, 3]: summed back
  EXPECT_EQ(doubles(x.grad()), (std::vector<double>{0, 1, 2}));
  Tensor y = graph::tensor({1.f, 2.f, 3.f}).requires_grad_();
  (graph::where(m, y, 0.0) * 2.0).sum().backward();
  EXPECT_EQ(doubles(y.grad()), (std::vector<double>{4, 2, 0}));
  Tensor z = graph::tensor({{1.0, 2.0}, {3.0, 4.0}}).requires_grad_();
  (z.triu(1) + graph::tril(z) * 3.0).sum().backward();
  EXPECT_EQ(doubles(z.grad()), (std::vector<double>{3, 1, 3, 3}));
}

TEST(SelectOps, TriangleDiagonals) {
  const Tensor x = graph::arange(1, 13).reshape({3, 4});
  EXPECT_EQ(doubles(x.triu()), (std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(doubles(graph::triu(x, 2)), (std::vector<double>{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(doubles(x.tril(-1)), (std::vector<double>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  EXPECT_EQ(doubles(graph::tril(x, 5)), doubles(x));        // past the last diagonal: everything
  EXPECT_EQ(doubles(graph::triu(x, -7)), doubles(x));
  EXPECT_EQ(doubles(graph::triu(x.t(), 1)), doubles(graph::triu(x.t().contiguous(), 1)));  // a strided input
  EXPECT_EQ(graph::triu(graph::zeros({2, 0, 3})).sizes(), (graph::Shape{2, 0, 3}));
}

// The GPT block's causal mask: scores above the diagonal set to -inf before
// softmax, the mask built from triu of a bool tensor.
TEST(SelectOps, CausalMaskFromTriu) {
  const Tensor scores = graph::zeros({3, 3});
  const Tensor mask = graph::triu(graph::ones({3, 3}, graph::kBool), 1);
  EXPECT_EQ(mask.dtype(), graph::kBool);
  const Tensor p = graph::softmax(scores.masked_fill(mask, -kInf), -1);
  const std::vector<double> v = doubles(p);
  const std::vector<double> want{1, 0, 0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-7) << i;
}

TEST(SelectOps, BadInputNamesTheOpAndShapes) {
  const Tensor a = graph::zeros({2, 3});
  expect_error([&] { a.masked_fill(graph::zeros({2, 3}), 1); }, {"masked_fill", "mask must be bool", "float", "[2, 3]"});
  expect_error([&] { a.masked_fill(graph::ones({4}, graph::kBool), 1); }, {"masked_fill", "[2, 3]", "[4]"});
  expect_error([&] { graph::where(a, a, 1.0); }, {"where", "condition must be bool"});
  expect_error([&] { graph::where(graph::ones({5}, graph::kBool), 2, a); }, {"where", "[5]", "[2, 3]"});
  expect_error([] { Tensor().masked_fill(graph::ones({1}, graph::kBool), 0); }, {"masked_fill", "undefined"});
  expect_error([] { graph::triu(graph::zeros({4})); }, {"triu", "at least 2 dims", "[4]"});
  expect_error([] { graph::zeros({}).tril(); }, {"tril", "at least 2 dims", "[]"});
}

}  // namespace
