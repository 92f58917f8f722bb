// scatter_add, sort / argsort / topk, norm and einsum (issue 19): what the
// PyTorch fixtures (op_fixture_test) do not show — repeated indices, dtypes,
// stability and NaN order, gradients against float64 finite differences, a
// zero norm's gradient, einsum against the ops it stands for, and bad input
// naming the op, the shapes (or the equation). Part of op_fixture_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/cpu_isa.h"
#include "graph/detail/backward_kernels.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Tensor;
using gradcheck_support::expect_error;
using gradcheck_support::gradcheck;
using gradcheck_support::values;

using gradcheck_support::doubles;
Tensor ints(std::initializer_list<int64_t> v) { return graph::tensor<int64_t>(v); }
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ScatterAddOps, RepeatedIndicesAddUpInEveryDtype) {
  const Tensor idx = ints({0, 2, 0, 1, 1, 1}).reshape({2, 3});
  const Tensor f = graph::scatter_add(graph::zeros({2, 3}), 1, idx, graph::ones({2, 3}));
  EXPECT_EQ(doubles(f), (std::vector<double>{2, 0, 1, 0, 3, 0}));
  const Tensor fives = graph::full({2, 3}, int64_t{5}, graph::kInt64);
  const Tensor i = fives.scatter_add(0, ints({1, 0}).reshape({1, 2}), ints({7, 9}).reshape({1, 2}));
  EXPECT_EQ(i.dtype(), graph::kInt64);
  EXPECT_EQ(doubles(i), (std::vector<double>{5, 14, 5, 12, 5, 5}));
  const Tensor h =
      graph::zeros({3}, graph::kFloat16).scatter_add(0, ints({2, 2}), graph::full({2}, 0.5, graph::kFloat16));
  EXPECT_EQ(h.dtype(), graph::kFloat16);
  EXPECT_EQ(doubles(h), (std::vector<double>{0, 0, 1}));
  // A strided self and src read as their values, not their storage.
  const Tensor base = values({3, 2}, -1, 1, 1);
  const Tensor t = graph::scatter_add(base.t(), 0, ints({1, 0}).reshape({1, 2}), base.t());
  std::vector<double> want = doubles(base.t());
  want[3] += doubles(base.t())[0];
  want[1] += doubles(base.t())[1];
  EXPECT_EQ(doubles(t), want);
}

TEST(ScatterAddOps, GradientsMatchFiniteDifferencesAndGather) {
  const Tensor idx = ints({2, 0, 2, 1, 0, 0}).reshape({2, 3});
  gradcheck([&](const std::vector<Tensor>& x) { return graph::scatter_add(x[0], 1, idx, x[1]) * x[0]; },
            {values({2, 4}, -1, 1, 2), values({2, 3}, -1, 1, 3)});
  // src larger than the index: its gradient is 0 where it is not read.
  const Tensor small = ints({1, 0}).reshape({1, 2});
  gradcheck([&](const std::vector<Tensor>& x) { return graph::exp(x[0].scatter_add(0, small, x[1])); },
            {values({2, 2}, -1, 1, 4), values({3, 3}, -1, 1, 5)});
  Tensor src = values({2, 3}, -1, 1, 6).requires_grad_();
  const Tensor g = values({2, 4}, 0.5, 1.5, 7);
  graph::scatter_add(graph::zeros({2, 4}, graph::kFloat64), 1, idx, src).backward(g);
  EXPECT_EQ(doubles(src.grad()), doubles(graph::gather(g, 1, idx)));
}

// An index broadcast over the dims after `dim` (graph networks' x.gather(0,
// i.unsqueeze(1).expand({-1, F}))) moves whole rows: the same values and
// gradients as the materialized index, which takes the element-wise path;
// and a broadcast index narrower than the tensor (not whole rows) still
// reads element by element.
TEST(ScatterAddOps, ExpandedRowIndicesEqualTheMaterializedIndex) {
  const Tensor rows = ints({3, 0, 3, 1, 2});
  const Tensor wide = rows.reshape({5, 1, 1}).expand({5, 2, 3}), dense = wide.contiguous();
  const Tensor x = values({4, 2, 3}, -1, 1, 8);
  EXPECT_EQ(doubles(graph::gather(x, 0, wide)), doubles(graph::gather(x, 0, dense)));
  const Tensor src = values({5, 2, 3}, -1, 1, 9), self = values({4, 2, 3}, -1, 1, 10);
  EXPECT_EQ(doubles(self.scatter_add(0, wide, src)), doubles(self.scatter_add(0, dense, src)));
  const Tensor narrow = rows.reshape({5, 1, 1}).expand({5, 2, 2});  // 2 of x's 3 columns
  EXPECT_EQ(doubles(graph::gather(x, 0, narrow)), doubles(graph::gather(x, 0, narrow.contiguous())));
  EXPECT_EQ(doubles(self.scatter_add(0, narrow, src)), doubles(self.scatter_add(0, narrow.contiguous(), src)));
  for (const Tensor& idx : {wide, narrow}) {
    gradcheck([&](const std::vector<Tensor>& in) { return graph::gather(in[0], 0, idx) * in[0].sum(); }, {x});
    gradcheck([&](const std::vector<Tensor>& in) { return graph::exp(in[0].scatter_add(0, idx, in[1])); },
              {self, src});
  }
  // The backward kernels (generated code's) read the index the same way.
  const Tensor g = values({5, 2, 3}, 0.5, 1.5, 11);
  EXPECT_EQ(doubles(graph::detail::gather_backward(g, x, wide, 0, graph::detail::kAllGrads)[0]),
            doubles(graph::detail::gather_backward(g, x, dense, 0, graph::detail::kAllGrads)[0]));
  const Tensor gs = values({4, 2, 3}, 0.5, 1.5, 12);
  EXPECT_EQ(doubles(graph::detail::scatter_add_backward(gs, self, wide, src, 0, graph::detail::kAllGrads)[2]),
            doubles(graph::gather(gs, 0, dense)));
}

TEST(ScatterAddOps, BadInputNamesTheOpAndShapes) {
  const Tensor x = graph::zeros({2, 3});
  expect_error([&] { graph::scatter_add(x, 1, ints({0, 3}).reshape({1, 2}), graph::ones({1, 2})); },
               {"scatter_add", "index 3 is out of range", "[2, 3]", "[1, 2]"});
  expect_error([&] { graph::scatter_add(x, 1, ints({-1}).reshape({1, 1}), graph::ones({1, 1})); },
               {"scatter_add", "-1"});
  expect_error([&] { graph::scatter_add(x, 1, ints({0, 1}), graph::ones({2})); }, {"scatter_add", "number of dims"});
  expect_error([&] { graph::scatter_add(x, 1, graph::zeros({1, 2}), graph::ones({1, 2})); }, {"scatter_add", "int64"});
  expect_error([&] { graph::scatter_add(x, 1, ints({0, 1}).reshape({1, 2}), graph::ones({1, 2}, graph::kFloat64)); },
               {"scatter_add", "dtype", "double"});
  expect_error([&] { graph::scatter_add(x, 1, ints({0, 1}).reshape({1, 2}), graph::ones({1, 1})); },
               {"scatter_add", "larger than src", "src shape [1, 1]"});
  expect_error([&] { graph::scatter_add(x, 0, ints({0, 1, 0, 1}).reshape({1, 4}), graph::ones({1, 4})); },
               {"scatter_add", "larger than self"});
  expect_error([&] { graph::scatter_add(x, 2, ints({0}).reshape({1, 1}), graph::ones({1, 1})); },
               {"scatter_add", "dim"});
}

TEST(SortOps, StableWithNaNLargest) {
  const Tensor x = graph::tensor({3.0, kNaN, 1.0, 3.0, -2.0, 1.0});
  auto [v, i] = graph::sort(x);
  EXPECT_EQ(doubles(i), (std::vector<double>{4, 2, 5, 0, 3, 1}));  // ties keep their order, NaN last
  EXPECT_TRUE(std::isnan(doubles(v)[5]));
  auto [vd, id] = x.sort(0, true);
  EXPECT_EQ(doubles(id), (std::vector<double>{1, 0, 3, 2, 5, 4}));  // NaN first descending, ties still stable
  EXPECT_EQ(i.dtype(), graph::kInt64);
  EXPECT_EQ(doubles(x.argsort(-1, true)), doubles(id));
  // Integers and bool sort too; along a leading dim of a strided view.
  EXPECT_EQ(doubles(graph::argsort(ints({2, 0, 2, -1}))), (std::vector<double>{3, 1, 0, 2}));
  const Tensor m = values({3, 4}, -1, 1, 8);
  auto [mv, mi] = graph::sort(m.t(), 1);
  EXPECT_EQ(doubles(mv), doubles(std::get<0>(graph::sort(m.t().contiguous(), 1))));
  EXPECT_EQ(doubles(graph::gather(m.t(), 1, mi)), doubles(mv));
}

// argsort sorts order-preserving integer keys: checked against a stable
// sort of the same values compared as doubles (NaN largest), in every dtype,
// with ties, -0.0 beside 0.0, infinities and NaN, both directions.
TEST(SortOps, KeysOrderLikeAStableComparisonSortInEveryDtype) {
  std::vector<double> base;
  for (int i = 0; i < 97; ++i) base.push_back(double((i * 37) % 11) - 5.0);  // many ties, negatives
  for (double v : {-0.0, 0.0, kNaN, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                   -0.0, kNaN, 0.0, 1.5, -1.5})
    base.push_back(v);
  for (graph::DType dt : graph::kAllDTypes) {
    const bool fp = graph::is_floating(dt);
    std::vector<double> vals = base;
    if (!fp)
      for (double& v : vals) v = std::isfinite(v) ? (dt == graph::kBool ? double(v > 0) : v) : 3.0;
    // 3 lines, a stride-0 dim.
    const Tensor x =
        graph::from_vector(std::vector<float>(vals.begin(), vals.end()), {int64_t(vals.size())}).to(dt).expand({3, -1});
    const std::vector<double> xs = doubles(x.select(0, 0));
    for (bool desc : {false, true}) {
      auto before = [&](int64_t a, int64_t b) {
        const double va = xs[size_t(a)], vb = xs[size_t(b)];
        const bool na = va != va, nb = vb != vb;
        return desc ? (na && !nb) || va > vb : (!na && nb) || va < vb;
      };
      std::vector<int64_t> want(xs.size());
      for (size_t j = 0; j < want.size(); ++j) want[j] = int64_t(j);
      std::stable_sort(want.begin(), want.end(), before);
      const Tensor got = graph::argsort(x, 1, desc);
      for (int64_t line = 0; line < 3; ++line)
        EXPECT_EQ(doubles(got.select(0, line)), std::vector<double>(want.begin(), want.end()))
            << graph::dtype_name(dt) << (desc ? " descending" : " ascending") << " line " << line;
      // Along dim 0 of the transpose: the same order, through strides.
      EXPECT_EQ(doubles(graph::argsort(x.t().contiguous(), 0, desc).select(1, 0)),
                std::vector<double>(want.begin(), want.end()));
      // topk's partial selection: the same first k, ties and NaN included.
      for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t(want.size()) - 1, int64_t(want.size())}) {
        const Tensor first = graph::detail::argsort_first(x, 1, desc, k);
        ASSERT_EQ(first.sizes(), (graph::Shape{3, k}));
        EXPECT_EQ(doubles(first.select(0, 2)), std::vector<double>(want.begin(), want.begin() + k))
            << graph::dtype_name(dt) << (desc ? " descending" : " ascending") << " k " << k;
        EXPECT_EQ(doubles(graph::detail::argsort_first(x.t().contiguous(), 0, desc, k).select(1, 1)),
                  std::vector<double>(want.begin(), want.begin() + k));
      }
    }
  }
}

TEST(SortOps, TopkValuesIndicesGradientAndErrors) {
  const Tensor x = graph::tensor({{0.5, -1.0, 2.0, 0.0}, {1.5, 3.0, -2.0, 0.25}}).to(graph::kFloat64);
  auto [v, i] = graph::topk(x, 2);
  EXPECT_EQ(doubles(v), (std::vector<double>{2.0, 0.5, 3.0, 1.5}));
  EXPECT_EQ(doubles(i), (std::vector<double>{2, 0, 1, 0}));
  auto [s, j] = x.topk(1, 0, false);
  EXPECT_EQ(doubles(s), (std::vector<double>{0.5, -1.0, -2.0, 0.0}));
  EXPECT_EQ(s.sizes(), (graph::Shape{1, 4}));
  gradcheck([](const std::vector<Tensor>& a) { return std::get<0>(graph::topk(a[0], 3, 1)) * 2.0; }, {x});
  gradcheck([](const std::vector<Tensor>& a) { return std::get<0>(graph::sort(a[0], 0, true)) * a[0]; }, {x});
  expect_error([&] { graph::topk(x, 5); }, {"topk", "k = 5", "size 4", "[2, 4]"});
  expect_error([&] { graph::topk(x, -1, 0); }, {"topk", "k = -1"});
  expect_error([&] { graph::topk(x, 1, 2); }, {"topk", "dim"});
  expect_error([&] { graph::sort(x, 3); }, {"argsort", "dim"});
  // The kernel checks k itself (a graph runs it without topk's eager check).
  expect_error([&] { graph::detail::argsort_first(x, 1, true, 5); }, {"topk", "k = 5", "size 4"});
  expect_error([&] { graph::detail::argsort_first(x, 2, true, 1); }, {"topk", "dim"});
  // A middle dim, k between 1 and the size: the indices of the k largest.
  const Tensor m = graph::tensor({1.0, 9.0, 4.0, 2.0, 3.0, 7.0}).reshape({1, 3, 2});
  auto [mv, mi] = graph::topk(m, 2, 1);
  EXPECT_EQ(mv.sizes(), (graph::Shape{1, 2, 2}));
  EXPECT_EQ(doubles(mv), (std::vector<double>{4.0, 9.0, 3.0, 7.0}));
  EXPECT_EQ(doubles(mi), (std::vector<double>{1, 0, 2, 2}));
}

TEST(NormOps, ValuesGradientsAndAZeroNorm) {
  const Tensor x = graph::tensor({{3.0, -4.0, 0.0}, {0.0, 0.0, 0.0}});
  EXPECT_EQ(doubles(graph::norm(x, 2.0, {1})), (std::vector<double>{5.0, 0.0}));
  EXPECT_EQ(doubles(graph::norm(x, 1.0, {1})), (std::vector<double>{7.0, 0.0}));
  EXPECT_EQ(doubles(graph::norm(x, INFINITY, {1}, true)), (std::vector<double>{4.0, 0.0}));
  EXPECT_EQ(doubles(graph::norm(x, 0.0, {1})), (std::vector<double>{2.0, 0.0}));
  EXPECT_EQ(graph::norm(x).item<double>(), 5.0);
  EXPECT_EQ(graph::norm(x, "fro").item<double>(), 5.0);
  EXPECT_EQ(x.norm(1.0).item<double>(), 7.0);
  // PyTorch's gradient at a zero norm is 0, for p = 2 and the others.
  for (double p : {2.0, 3.0, 0.5, 1.0, static_cast<double>(INFINITY)}) {
    Tensor z = graph::zeros({2, 3}, graph::kFloat64).requires_grad_();
    graph::norm(z, p, {1}).sum().backward();
    for (double g : doubles(z.grad())) EXPECT_EQ(g, 0.0) << "p = " << p;
  }
  for (double p : {2.0, 1.0, 3.0, 1.5}) {
    gradcheck([p](const std::vector<Tensor>& a) { return graph::norm(a[0], p, {0}, true); },
              {values({3, 2}, 0.2, 1.0, 9) * graph::tensor({1.0, -1.0})}, 1e-6);
  }
  gradcheck([](const std::vector<Tensor>& a) { return graph::linalg_vector_norm(a[0], -INFINITY, {1}); },
            {values({2, 3}, 0.1, 2.0, 10)});
  expect_error([&] { graph::norm(x, "nuc"); }, {"norm", "nuc"});
}

TEST(EinsumOps, CommonContractionsEqualTheOpsTheyStandFor) {
  const Tensor a = values({3, 4}, -1, 1, 11), b = values({4, 2}, -1, 1, 12);
  const Tensor p = values({2, 3, 4}, -1, 1, 13), q = values({2, 4, 5}, -1, 1, 14);
  const Tensor h = values({2, 2, 3, 4}, -1, 1, 15), k = values({2, 2, 5, 4}, -1, 1, 16);
  const Tensor u = values({3}, -1, 1, 17), w = values({3}, -1, 1, 18);
  auto near = [](const Tensor& got, const Tensor& want) {
    ASSERT_EQ(got.sizes(), want.sizes());
    const std::vector<double> g = doubles(got), e = doubles(want);
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], e[i], 1e-12);
  };
  near(graph::einsum("ij,jk->ik", {a, b}), graph::matmul(a, b));
  near(graph::einsum("ij,jk", {a, b}), graph::matmul(a, b));  // implicit output
  near(graph::einsum("bij,bjk->bik", {p, q}), graph::bmm(p, q));
  near(graph::einsum("bhqd,bhkd->bhqk", {h, k}), graph::matmul(h, k.transpose(2, 3)));
  near(graph::einsum("i,j->ij", {u, w}), u.unsqueeze(1) * w.unsqueeze(0));
  near(graph::einsum("ij->ji", {a}), a.t());
  near(graph::einsum("ij->i", {a}), graph::sum(a, 1));
  near(graph::einsum("i,i->", {u, w}), graph::sum(u * w));
  near(graph::einsum("ij,jk,kl->il", {a, b, values({2, 3}, -1, 1, 19)}),
       graph::matmul(graph::matmul(a, b), values({2, 3}, -1, 1, 19)));
  gradcheck([](const std::vector<Tensor>& x) { return graph::einsum("bij,bjk->bik", {x[0], x[1]}); }, {p, q});
  gradcheck([](const std::vector<Tensor>& x) { return graph::einsum("ij,j->i", {x[0], x[1]}); },
            {a, values({4}, -1, 1, 20)});
}

TEST(EinsumOps, UnsupportedOrInconsistentEquationsAreErrorsNamingThem) {
  const Tensor a = values({3, 3}, -1, 1, 21), b = values({4, 2}, -1, 1, 22);
  expect_error([&] { graph::einsum("ii->i", {a}); }, {"einsum \"ii->i\"", "repeats"});
  expect_error([&] { graph::einsum("...ij->ij", {a}); }, {"einsum", "ellipsis"});
  expect_error([&] { graph::einsum("ij,jk->ik", {a, b}); }, {"einsum \"ij,jk->ik\"", "'j'", "3 and 4"});
  expect_error([&] { graph::einsum("ij,jk->ik", {a}); }, {"einsum", "2 operands", "1 tensors"});
  expect_error([&] { graph::einsum("ijk->i", {a}); }, {"einsum", "3 letters", "[3, 3]"});
  expect_error([&] { graph::einsum("ij->iz", {a}); }, {"einsum", "'z'"});
}

}  // namespace

namespace {

// PyTorch's stable order of one line: NaN the largest, -0.0 equal to 0.0, ties
// in position order (descending too).
std::vector<int64_t> reference_order(const std::vector<double>& v, bool descending) {
  std::vector<int64_t> p(v.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>(i);
  const auto less = [](double a, double b) { return std::isnan(a) ? false : std::isnan(b) ? true : a < b; };
  std::stable_sort(p.begin(), p.end(), [&](int64_t a, int64_t b) {
    return descending ? less(v[b], v[a]) : less(v[a], v[b]);
  });
  return p;
}

// argsort and topk on lines of 1 to 65 elements, with ties, NaN and -0.0, in
// the dtypes whose keys pack into 64 bits (the AVX-512 sorting network's, for
// lines of at most 64) and float64: both instruction-set paths against the
// reference above, along the last dim and along dim 0.
TEST(SortOps, ShortLinesMatchTheStableOrderOnEveryPath) {
  const int best = graph::cpu::best_isa();
  for (int isa : {static_cast<int>(graph::cpu::kBaseline), best}) {
    graph::cpu::set_isa(isa);
    for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 50, 63, 64, 65}) {
      std::vector<double> v(static_cast<size_t>(3 * n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7919) % 11) - 5.0;  // ties
      v[0] = kNaN;
      if (n > 4) {
        v[4] = -0.0;
        v[3] = 0.0;
        v[static_cast<size_t>(n - 1)] = kNaN;
      }
      Tensor base = graph::empty({3, n}, graph::kFloat64);
      std::copy(v.begin(), v.end(), base.data_ptr<double>());
      for (graph::DType d : {graph::kFloat32, graph::kFloat16, graph::kInt32, graph::kFloat64}) {
        const Tensor x = base.to(d);
        const std::vector<double> xv = doubles(x);  // the values as the dtype holds them
        for (bool desc : {false, true}) {
          const std::vector<double> got = doubles(graph::argsort(x, -1, desc));
          const std::vector<double> got0 = doubles(graph::argsort(x.t().contiguous(), 0, desc).t().contiguous());
          const int64_t k = std::max<int64_t>(1, n / 2);
          const std::vector<double> top = doubles(std::get<1>(graph::topk(x, k, -1, desc)));
          for (int64_t l = 0; l < 3; ++l) {
            const std::vector<double> line(xv.begin() + l * n, xv.begin() + (l + 1) * n);
            const std::vector<int64_t> want = reference_order(line, desc);
            for (int64_t j = 0; j < n; ++j) {
              ASSERT_EQ(got[l * n + j], want[j]) << "n " << n << " " << graph::dtype_name(d) << " desc " << desc
                                                 << " isa " << graph::cpu::isa_name(isa) << " at " << j;
              ASSERT_EQ(got0[l * n + j], want[j]) << "dim 0, n " << n << " " << graph::dtype_name(d);
            }
            for (int64_t j = 0; j < k; ++j)
              ASSERT_EQ(top[l * k + j], want[j]) << "topk (largest = desc: the first k of the order) n " << n << " " << graph::dtype_name(d);
          }
        }
      }
    }
  }
  graph::cpu::set_isa(best);
}

// topk with k <= 8 (the AVX-512 top-8 network: registers sorted alone and
// merged keeping the lower half; float32 along the last dim in blocks of 64,
// any line length) against the reference, on both paths: short and long lines,
// many ties (the lowest position must win), scattered values and ramps (few
// or every key kept as a line goes on), NaN, -0.0 and 0.0, largest and smallest, along the last dim and dim 0, and the values at the indices.
TEST(SortOps, TopkOfAtMost8MatchesTheStableOrderOnEveryPath) {
  const int best = graph::cpu::best_isa();
  for (int isa : {static_cast<int>(graph::cpu::kBaseline), best}) {
    graph::cpu::set_isa(isa);
    for (int64_t n : {1, 5, 8, 9, 24, 64, 65, 100, 128, 129, 1000}) {
      for (int pattern : {0, 1, 2}) {
        // 11 values (ties everywhere); 1009 scattered (a few new ones kept at a
        // time on a long line); ramps down, up, down (each key a new one kept).
        std::vector<double> v(static_cast<size_t>(3 * n));
        for (size_t i = 0; i < v.size(); ++i) {
          const double ramp = (i / static_cast<size_t>(n)) % 2 == 0 ? -static_cast<double>(i) : static_cast<double>(i);
          v[i] = pattern == 0   ? static_cast<double>((i * 7919) % 11) - 5.0
                 : pattern == 1 ? static_cast<double>((i * 7919) % 1009) - 504.0
                                : ramp;
        }
        v[0] = kNaN;
        if (n > 4) {
          v[static_cast<size_t>(n + 2)] = -0.0;
          v[static_cast<size_t>(n + 1)] = 0.0;
          v[static_cast<size_t>(2 * n - 1)] = kNaN;
          v[static_cast<size_t>(3 * n - 3)] = -std::numeric_limits<double>::infinity();
        }
        Tensor base = graph::empty({3, n}, graph::kFloat64);
        std::copy(v.begin(), v.end(), base.data_ptr<double>());
        for (graph::DType d : {graph::kFloat32, graph::kFloat16, graph::kBFloat16, graph::kInt32, graph::kFloat64}) {
          const Tensor x = base.to(d);
          const std::vector<double> xv = doubles(x);
          for (bool largest : {false, true}) {
            for (int64_t k : {0, 1, 5, 8}) {
              if (k > n) continue;
              const auto [val, idx] = graph::topk(x, k, -1, largest);
              const auto [val0, idx0] = graph::topk(x.t().contiguous(), k, 0, largest);
              const std::vector<double> got = doubles(idx), got0 = doubles(idx0.t().contiguous());
              const std::vector<double> gotv = doubles(val);
              ASSERT_EQ(idx.sizes(), (graph::Shape{3, k}));
              for (int64_t l = 0; l < 3; ++l) {
                const std::vector<double> line(xv.begin() + l * n, xv.begin() + (l + 1) * n);
                const std::vector<int64_t> want = reference_order(line, largest);
                for (int64_t j = 0; j < k; ++j) {
                  const size_t at = static_cast<size_t>(l * k + j);
                  ASSERT_EQ(got[at], want[j]) << "n " << n << " k " << k << " " << graph::dtype_name(d) << " largest "
                                              << largest << " isa " << graph::cpu::isa_name(isa) << " line " << l;
                  ASSERT_EQ(got0[at], want[j]) << "dim 0, n " << n << " k " << k << " " << graph::dtype_name(d);
                  const double w = line[static_cast<size_t>(want[j])];
                  if (std::isnan(w)) ASSERT_TRUE(std::isnan(gotv[at]));
                  else ASSERT_EQ(gotv[at], w) << "value, n " << n << " k " << k;
                }
              }
            }
          }
        }
      }
    }
  }
  graph::cpu::set_isa(best);
}

// Lines of at most 64 float32 keys go two at a time through one body: every
// count of lines (a pair, pairs and a last one alone) and every length class
// (one to eight registers), ties, NaN and -0.0, against the stable order.
TEST(SortOps, TopkTakesShortLinesInPairs) {
  const int best = graph::cpu::best_isa();
  for (int isa : {static_cast<int>(graph::cpu::kBaseline), best}) {
    graph::cpu::set_isa(isa);
    for (int64_t lines : {1, 2, 4, 7}) {
      for (int64_t n : {3, 8, 16, 37, 64}) {
        std::vector<float> v(static_cast<size_t>(lines * n));
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 7919 + lines) % 23) - 11.0f;
        v[0] = std::numeric_limits<float>::quiet_NaN();
        v[v.size() - 1] = -0.0f;
        const Tensor x = graph::from_vector(v, {lines, n});
        for (bool largest : {false, true}) {
          const int64_t k = std::min<int64_t>(n, 5);
          const auto [val, idx] = graph::topk(x, k, -1, largest);
          const std::vector<double> got = doubles(idx), gotv = doubles(val);
          for (int64_t l = 0; l < lines; ++l) {
            const std::vector<double> line(v.begin() + l * n, v.begin() + (l + 1) * n);
            const std::vector<int64_t> want = reference_order(line, largest);
            for (int64_t j = 0; j < k; ++j) {
              const size_t at = static_cast<size_t>(l * k + j);
              ASSERT_EQ(got[at], want[j]) << lines << " lines of " << n << ", line " << l << ", largest " << largest
                                          << ", isa " << graph::cpu::isa_name(isa);
              const double w = line[static_cast<size_t>(want[j])];
              if (std::isnan(w)) ASSERT_TRUE(std::isnan(gotv[at]));
              else ASSERT_EQ(gotv[at], w);
            }
          }
        }
      }
    }
  }
  graph::cpu::set_isa(best);
}

}  // namespace
