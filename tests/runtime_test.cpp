// Eager CPU runtime: values, not just absence of crashes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph/cpu_isa.h"
#include "graph/scalar_ops.h"
#include "graph/parallel.h"
#include "graph/cpu_loop.h"
#include "graph/graph.h"
#include "../runtime/src/packed_gemm.h"

namespace {

using graph::Error;
using graph::Shape;
using graph::Tensor;

// Runs `f`, expecting graph::Error whose message contains every `parts` entry.
template <class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(what.find(p), std::string::npos)
          << "message \"" << what << "\" lacks \"" << p << "\"";
    return;
  }
  ADD_FAILURE() << "expected graph::Error";
}

std::vector<float> values(const Tensor& t) {
  Tensor c = t.contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

std::vector<int64_t> ivalues(const Tensor& t) {
  Tensor c = t.contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

std::vector<bool> bvalues(const Tensor& t) {
  Tensor c = t.contiguous();
  const bool* p = c.data_ptr<bool>();
  return std::vector<bool>(p, p + c.numel());
}

// ---- factories ------------------------------------------------------------

TEST(Factories, ZerosOnesFull) {
  Tensor z = graph::zeros({2, 3});
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.strides(), (Shape{3, 1}));
  EXPECT_EQ(values(z), std::vector<float>(6, 0.f));
  EXPECT_EQ(ivalues(graph::ones({3}, graph::kInt64)), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(values(graph::full({2}, 2.5)), (std::vector<float>{2.5f, 2.5f}));
  EXPECT_EQ(bvalues(graph::full({2}, 3, graph::kBool)), (std::vector<bool>{true, true}));
  EXPECT_EQ(graph::empty({4, 0}).numel(), 0);
}

TEST(Factories, EmptyShapesWhoseStridesWouldOverflowAreErrors) {
  // No elements, but contiguous strides of 2^107: found by the saved-graph fuzzer.
  EXPECT_THROW(graph::empty({0, int64_t{1} << 51, int64_t{1} << 56}), Error);
  EXPECT_EQ(graph::empty({0, 1 << 20, 1 << 20}).numel(), 0);
}

TEST(Factories, StorageIsAligned) {
  Tensor t = graph::empty({3});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
}

TEST(Factories, Arange) {
  Tensor a = graph::arange(5);
  EXPECT_EQ(a.dtype(), graph::kInt64);
  EXPECT_EQ(ivalues(a), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ivalues(graph::arange(10, 0, -3)), (std::vector<int64_t>{10, 7, 4, 1}));
  Tensor f = graph::arange(0, 1, 0.25);
  EXPECT_EQ(f.dtype(), graph::kFloat32);
  EXPECT_EQ(values(f), (std::vector<float>{0.f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(graph::arange(2.0).dtype(), graph::kFloat32);
  expect_error([] { graph::arange(0, 5, 0); }, {"arange", "step"});
}

TEST(Factories, TensorLiterals) {
  Tensor i = graph::tensor({1, 2, 3});
  EXPECT_EQ(i.dtype(), graph::kInt64);
  EXPECT_EQ(ivalues(i), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(graph::tensor({1.5, 2.0}).dtype(), graph::kFloat32);
  EXPECT_EQ(graph::tensor({1L}).dtype(), graph::kInt64);
  EXPECT_EQ(graph::tensor({1LL}).dtype(), graph::kInt64);
  EXPECT_EQ(bvalues(graph::tensor({true, false})), (std::vector<bool>{true, false}));
  Tensor m = graph::tensor({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  EXPECT_EQ(m.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values(m), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  expect_error([] { graph::tensor({{1, 2}, {3}}); }, {"tensor", "ragged", "row 1"});
}

TEST(Factories, FromVector) {
  Tensor t = graph::from_vector({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(t.sizes(), (Shape{3, 2}));
  EXPECT_EQ(values(t.t().contiguous()), (std::vector<float>{1, 3, 5, 2, 4, 6}));
  expect_error([] { graph::from_vector({1, 2, 3}, {2, 2}); }, {"from_vector", "[2, 2]"});
}

// ---- geometry and views ---------------------------------------------------

TEST(Tensor, SizeStrideNegativeDims) {
  Tensor t = graph::zeros({2, 3, 4});
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.stride(-2), 4);
  EXPECT_EQ(t.numel(), 24);
  expect_error([&] { t.size(3); }, {"size", "3", "[2, 3, 4]"});
  expect_error([&] { t.stride(-4); }, {"stride", "-4"});
}

TEST(Tensor, ContiguityIgnoresSizeOneDims) {
  Tensor t(graph::empty({4}).storage(), 0, {1, 4}, {99, 1}, graph::kFloat32);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(graph::zeros({2, 3}).t().is_contiguous());
}

TEST(Views, TransposeSharesStorage) {
  Tensor a = graph::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor at = a.t();
  EXPECT_EQ(at.sizes(), (Shape{3, 2}));
  EXPECT_EQ(at.strides(), (Shape{1, 3}));
  EXPECT_EQ(at.storage(), a.storage());
  // Write through the view, read through the original.
  at.data_ptr<float>()[1 * at.stride(0) + 0 * at.stride(1)] = 42.f;  // at[1][0] == a[0][1]
  EXPECT_EQ(a.data_ptr<float>()[1], 42.f);
  EXPECT_EQ(values(at), (std::vector<float>{1, 4, 42, 5, 3, 6}));
  EXPECT_EQ(graph::arange(3).t().sizes(), (Shape{3}));
  expect_error([] { graph::zeros({2, 2, 2}).t(); }, {"t:", "[2, 2, 2]"});
  EXPECT_EQ(graph::zeros({2, 3, 4}).transpose(0, -1).strides(), (Shape{1, 4, 12}));
}

TEST(Views, Slice) {
  Tensor a = graph::arange(20).view({4, 5});
  Tensor s = a.slice(1, 1, 5, 2);  // columns 1 and 3
  EXPECT_EQ(s.sizes(), (Shape{4, 2}));
  EXPECT_EQ(s.strides(), (Shape{5, 2}));
  EXPECT_EQ(s.storage_offset(), 1);
  EXPECT_EQ(ivalues(s), (std::vector<int64_t>{1, 3, 6, 8, 11, 13, 16, 18}));
  // PyTorch clamping: negative start counts from the end, bounds clip.
  EXPECT_EQ(ivalues(a.slice(0, -2, 100)),
            (std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
  EXPECT_EQ(a.slice(0, 3, 1).size(0), 0);
  // Writes through the slice are visible in the original.
  s.data_ptr<int64_t>()[s.stride(0)] = -1;  // s[1][0] == a[1][1]
  EXPECT_EQ(a.data_ptr<int64_t>()[6], -1);
  expect_error([&] { a.slice(0, 0, 2, 0); }, {"slice", "step"});
  expect_error([&] { a.slice(2, 0, 1); }, {"slice", "[4, 5]"});
}

TEST(Views, Expand) {
  Tensor col = graph::tensor({1.f, 2.f, 3.f}).view({3, 1});
  Tensor e = col.expand({2, 3, 4});
  EXPECT_EQ(e.sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));
  EXPECT_EQ(e.storage(), col.storage());
  std::vector<float> v = values(e);
  EXPECT_EQ(v[0], 1.f);
  EXPECT_EQ(v[5], 2.f);
  EXPECT_EQ(v[12 + 11], 3.f);
  EXPECT_EQ(col.expand({-1, 2}).sizes(), (Shape{3, 2}));
  expect_error([&] { col.expand({4, 2}); }, {"expand", "[3, 1]", "[4, 2]"});
}

TEST(Views, ViewAndReshape) {
  Tensor a = graph::arange(6);
  Tensor v = a.view({2, -1});
  EXPECT_EQ(v.sizes(), (Shape{2, 3}));
  EXPECT_EQ(v.storage(), a.storage());
  Tensor r = v.t().reshape({-1});  // not contiguous: copies
  EXPECT_NE(r.storage(), a.storage());
  EXPECT_EQ(ivalues(r), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(v.reshape({3, 2}).storage(), a.storage());
  expect_error([&] { v.t().view({6}); }, {"view", "contiguous", "reshape"});
  expect_error([&] { a.view({4, -1}); }, {"view", "[4, -1]", "6"});
  expect_error([&] { a.view({-1, -1}); }, {"view", "-1"});
}

TEST(Tensor, CloneContiguousTo) {
  Tensor a = graph::from_vector({1.5f, -2.7f, 0.f, 3.f}, {2, 2});
  Tensor c = a.clone();
  EXPECT_NE(c.storage(), a.storage());
  c.data_ptr<float>()[0] = 9.f;
  EXPECT_EQ(a.data_ptr<float>()[0], 1.5f);
  EXPECT_EQ(a.contiguous().storage(), a.storage());
  EXPECT_TRUE(a.t().contiguous().is_contiguous());
  EXPECT_EQ(ivalues(a.to(graph::kInt64)), (std::vector<int64_t>{1, -2, 0, 3}));
  EXPECT_EQ(bvalues(a.to(graph::kBool)), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ(a.to(graph::kFloat32).storage(), a.storage());
}

TEST(Tensor, ItemAndBool) {
  EXPECT_EQ(graph::full({}, 3.5).item<float>(), 3.5f);
  EXPECT_EQ(graph::full({1, 1}, 7, graph::kInt64).item<int64_t>(), 7);
  EXPECT_EQ(graph::full({1}, 7, graph::kInt64).item<double>(), 7.0);
  EXPECT_EQ(graph::full({}, 2.9).item<int>(), 2);
  EXPECT_TRUE(graph::tensor({true}).item<bool>());
  EXPECT_TRUE(static_cast<bool>(graph::full({}, 0.5)));
  EXPECT_FALSE(static_cast<bool>(graph::zeros({1}, graph::kInt64)));
  expect_error([] { graph::zeros({2, 3}).item<float>(); }, {"item", "[2, 3]"});
  expect_error([] { (void)static_cast<bool>(graph::zeros({2})); }, {"ambiguous", "[2]"});
  expect_error([] { graph::zeros({2}, graph::kInt64).data_ptr<float>(); },
               {"data_ptr: tensor is long, not float"});
}

TEST(Tensor, Printing) {
  Tensor a = graph::from_vector({1, 2, 3, 4}, {2, 2});
  std::ostringstream os;
  os << a;
  EXPECT_NE(os.str().find("1.0000"), std::string::npos);
  EXPECT_NE(os.str().find("shape=[2, 2]"), std::string::npos);
  EXPECT_NE(os.str().find("dtype=float"), std::string::npos);
  EXPECT_NE(graph::tensor({true}).to_string().find("true"), std::string::npos);
  EXPECT_EQ(graph::shape_str({2, 3}), "[2, 3]");
  EXPECT_EQ(graph::contiguous_strides({2, 3, 4}), (Shape{12, 4, 1}));
}

// ---- elementwise ----------------------------------------------------------

TEST(Elementwise, BroadcastValues) {
  Tensor a = graph::from_vector({1, 2, 3}, {3, 1});
  Tensor b = graph::from_vector({10, 20, 30, 40}, {1, 4});
  Tensor c = a + b;
  EXPECT_EQ(c.sizes(), (Shape{3, 4}));
  EXPECT_EQ(values(c), (std::vector<float>{11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}));
  EXPECT_EQ(graph::cpu::broadcast_shapes("x", {{5, 1, 3}, {4, 1}}), (Shape{5, 4, 3}));
}

TEST(Elementwise, StridedOperands) {
  Tensor a = graph::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = graph::from_vector({1, 2, 3, 4, 5, 6}, {3, 2});
  EXPECT_EQ(values(a.t() * b), (std::vector<float>{1, 8, 6, 20, 15, 36}));
  EXPECT_EQ(values(a.slice(1, 0, 3, 2) - 1), (std::vector<float>{0, 2, 3, 5}));
  EXPECT_EQ(values(graph::tensor({1.f, 2.f}).expand({3, 2}) * 2),
            (std::vector<float>{2, 4, 2, 4, 2, 4}));
}

TEST(Elementwise, UnaryOps) {
  Tensor x = graph::from_vector({-1.f, 0.f, 2.f}, {3});
  EXPECT_EQ(values(graph::relu(x)), (std::vector<float>{0, 0, 2}));
  EXPECT_EQ(values(-x), (std::vector<float>{1, -0.f, -2}));
  std::vector<float> s = values(graph::sigmoid(x));
  EXPECT_NEAR(s[0], 1 / (1 + std::exp(1.f)), 1e-6);
  EXPECT_NEAR(values(graph::exp(x))[2], std::exp(2.f), 1e-5);
  EXPECT_NEAR(values(graph::tanh(x))[0], std::tanh(-1.f), 1e-6);
  EXPECT_EQ(bvalues(!graph::tensor({true, false})), (std::vector<bool>{false, true}));
  EXPECT_EQ(bvalues(graph::logical_not(x)), (std::vector<bool>{false, true, false}));
  Tensor ti = graph::tanh(graph::tensor({0, 1}));
  EXPECT_EQ(ti.dtype(), graph::kFloat32);
  EXPECT_NEAR(values(ti)[1], std::tanh(1.f), 1e-6);
  EXPECT_EQ(ivalues(graph::relu(graph::tensor({-3, 4}))), (std::vector<int64_t>{0, 4}));
}

TEST(Elementwise, ScalarPromotion) {
  Tensor i = graph::tensor({1, 2, 3});
  Tensor f = i + 1.5;
  EXPECT_EQ(f.dtype(), graph::kFloat32);
  EXPECT_EQ(values(f), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  Tensor j = i + 2;
  EXPECT_EQ(j.dtype(), graph::kInt64);
  EXPECT_EQ(ivalues(j), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ((graph::tensor({1.f}) + 2).dtype(), graph::kFloat32);
  Tensor q = i / graph::tensor({2, 2, 2});
  EXPECT_EQ(q.dtype(), graph::kFloat32);
  EXPECT_EQ(values(q), (std::vector<float>{0.5f, 1.f, 1.5f}));
  EXPECT_EQ(values(6 / i), (std::vector<float>{6, 3, 2}));
  EXPECT_EQ(ivalues(10 - i), (std::vector<int64_t>{9, 8, 7}));
  EXPECT_EQ((i * true).dtype(), graph::kInt64);  // a bool scalar never promotes
  Tensor mixed = i + graph::tensor({0.5f, 0.5f, 0.5f});
  EXPECT_EQ(mixed.dtype(), graph::kFloat32);
  EXPECT_EQ(values(mixed), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  Tensor bb = graph::tensor({true, false}) + graph::tensor({true, true});
  EXPECT_EQ(bb.dtype(), graph::kBool);
  EXPECT_EQ(bvalues(bb), (std::vector<bool>{true, true}));
}

TEST(Elementwise, ComparisonsGiveBool) {
  Tensor a = graph::tensor({1, 5, 3});
  Tensor lt = a < 3;
  EXPECT_EQ(lt.dtype(), graph::kBool);
  EXPECT_EQ(bvalues(lt), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(bvalues(a >= graph::tensor({1.f, 6.f, 2.5f})), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(bvalues(a == 5), (std::vector<bool>{false, true, false}));
  EXPECT_EQ(bvalues(a != 5), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(bvalues(2.5 <= a), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(bvalues(a > a.view({3, 1})).size(), 9u);
}

TEST(Elementwise, Errors) {
  Tensor a = graph::zeros({2, 3});
  expect_error([&] { graph::add(a, graph::zeros({4})); },
               {"add: shapes [2, 3] and [4] cannot be broadcast"});
  expect_error([&] { a* graph::zeros({3, 3}); }, {"mul", "[2, 3]", "[3, 3]"});
  expect_error([] { -graph::tensor({true}); }, {"neg", "bool"});
  expect_error([] { graph::tensor({true}) - graph::tensor({1}); }, {"sub", "bool"});
  expect_error([] { graph::tensor({1}) - true; }, {"sub", "bool"});
  expect_error([] { graph::relu(Tensor()); }, {"relu", "undefined"});
  expect_error([&] { a + Tensor(); }, {"add", "undefined"});
  expect_error([] { Tensor().sum(); }, {"sum", "undefined"});
}

// ---- reductions -----------------------------------------------------------

TEST(Reduce, SumWholeAndDim) {
  Tensor a = graph::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor s = a.sum();
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 21.f);
  EXPECT_EQ(values(a.sum(0)), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(values(a.sum(-1)), (std::vector<float>{6, 15}));
  Tensor k = a.sum(1, true);
  EXPECT_EQ(k.sizes(), (Shape{2, 1}));
  EXPECT_EQ(values(k), (std::vector<float>{6, 15}));
  EXPECT_EQ(values(a.t().sum(1)), (std::vector<float>{5, 7, 9}));  // strided input
  EXPECT_EQ(graph::sum(graph::tensor({1, 2, 3})).dtype(), graph::kInt64);
  EXPECT_EQ(graph::sum(graph::tensor({1, 2, 3})).item<int64_t>(), 6);
  Tensor bs = graph::tensor({true, true, false}).sum();
  EXPECT_EQ(bs.dtype(), graph::kInt64);
  EXPECT_EQ(bs.item<int64_t>(), 2);
  EXPECT_EQ(graph::zeros({0}).sum().item<float>(), 0.f);
  expect_error([&] { a.sum(2); }, {"sum", "dim 2", "[2, 3]"});
}

TEST(Reduce, SumIsAccurate) {
  // 2^24 + many ones: a float accumulator would stall at 2^24.
  Tensor a = graph::ones({1 << 20}) * 0.1f;
  EXPECT_NEAR(a.sum().item<double>(), 104857.6, 0.05);
}

TEST(Reduce, Mean) {
  Tensor a = graph::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_FLOAT_EQ(a.mean().item<float>(), 3.5f);
  EXPECT_EQ(values(a.mean(0)), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  Tensor k = graph::mean(a, -1, true);
  EXPECT_EQ(k.sizes(), (Shape{2, 1}));
  EXPECT_EQ(values(k), (std::vector<float>{2, 5}));
  EXPECT_TRUE(std::isnan(graph::zeros({0}).mean().item<float>()));
  expect_error([] { graph::tensor({1, 2}).mean(); }, {"mean: expected a floating dtype, got long"});
}

// graph/reduce_order.h, written out independently: lanes of 16 per 64K
// chunk, the lanes combined 8, 4, 2, 1 apart, the chunks added in order.
double documented_sum(const std::vector<float>& v) {
  double acc = 0;
  for (size_t c = 0; c < v.size(); c += 65536) {
    double lane[16] = {};
    for (size_t i = c; i < std::min(v.size(), c + 65536); ++i) lane[(i - c) % 16] += v[i];
    for (int w = 8; w >= 1; w /= 2)
      for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
    acc += lane[0];
  }
  return acc;
}

// Values whose double sum depends on the order: big values that cancel.
std::vector<float> order_sensitive(size_t n, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(std::sin(0.37 * (i + 1) + seed) * 2.0);
    if (i % 7 == 3) v[i] = static_cast<float>(((i / 7) % 2 ? -1e12 : 1e12) * (1 + (i / 14) % 3));
  }
  return v;
}

TEST(Reduce, DenseSumFollowsTheDocumentedOrder) {
  for (size_t n : {size_t{1}, size_t{15}, size_t{17}, size_t{1000}, size_t{65536}, size_t{65537}, size_t{200005}}) {
    const std::vector<float> v = order_sensitive(n, static_cast<int>(n % 5));
    const Tensor x = graph::from_vector(v, {static_cast<int64_t>(n)});
    const double want = documented_sum(v);
    const float got = x.sum().item<float>();
    EXPECT_EQ(got, static_cast<float>(want)) << n;
    const Tensor xd = x.to(graph::kFloat64);
    EXPECT_EQ(xd.sum().item<double>(), want) << n;  // the accumulator itself, no rounding to float
    // Rows of a trailing reduction: each row is its own dense run.
    const Tensor rows = graph::from_vector(order_sensitive(3 * n, 1), {3, static_cast<int64_t>(n)}).to(graph::kFloat64);
    const Tensor rs = rows.sum(-1);
    for (int64_t r = 0; r < 3; ++r) {
      const double* p = rows.data_ptr<double>() + r * static_cast<int64_t>(n);
      std::vector<float> row(p, p + n);  // exact: the values came from floats
      EXPECT_EQ(rs.data_ptr<double>()[r], documented_sum(row)) << n << " row " << r;
    }
  }
}

TEST(Reduce, SameBitsOnEveryIsaAndThreadCount) {
  const std::vector<float> v = order_sensitive(3 * 65536 + 7, 2);
  const Tensor x = graph::from_vector(v, {static_cast<int64_t>(v.size())});
  const float want = x.sum().item<float>(), want_max = graph::amax(x).item<float>();
  const int best = graph::cpu::best_isa();
  for (int isa = graph::cpu::kBaseline; isa <= best; ++isa) {
    graph::cpu::set_isa(isa);
    EXPECT_EQ(x.sum().item<float>(), want) << graph::cpu::isa_name(isa);
    EXPECT_EQ(graph::amax(x).item<float>(), want_max) << graph::cpu::isa_name(isa);
  }
  graph::cpu::set_isa(best);
  // Inside a parallel_for chunk the reduction runs on one thread.
  float one = want;
  graph::cpu::parallel_for(2, 1, [&](int64_t b, int64_t) {
    if (b == 0) one = x.sum().item<float>();
  });
  EXPECT_EQ(one, want);
}

TEST(Reduce, MaxMinNanInfAndIntegers) {
  std::vector<float> v(70000, 1.0f);
  v[12345] = std::numeric_limits<float>::infinity();
  v[5] = -std::numeric_limits<float>::infinity();
  Tensor x = graph::from_vector(v, {70000});
  EXPECT_EQ(graph::amax(x).item<float>(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(graph::amin(x).item<float>(), -std::numeric_limits<float>::infinity());
  for (size_t at : {size_t{0}, size_t{17}, size_t{65536}, size_t{69999}}) {
    std::vector<float> w = v;
    w[at] = std::nanf("");
    const Tensor y = graph::from_vector(w, {70000});
    EXPECT_TRUE(std::isnan(graph::amax(y).item<float>())) << at;
    EXPECT_TRUE(std::isnan(graph::amin(y).item<float>())) << at;
    EXPECT_TRUE(std::isnan(y.sum().item<float>())) << at;
    EXPECT_TRUE(std::isnan(graph::amax(y.reshape({7, 10000}), {-1}).data_ptr<float>()[at / 10000])) << at;
  }
  // Integers: sums wrap like int64, max/min are exact.
  const Tensor big = graph::tensor({std::numeric_limits<int64_t>::max(), int64_t{1}});
  EXPECT_EQ(big.sum().item<int64_t>(), std::numeric_limits<int64_t>::min());
  const Tensor ints = graph::arange(100000);
  EXPECT_EQ(ints.sum().item<int64_t>(), int64_t{99999} * 100000 / 2);
  EXPECT_EQ(graph::amax(ints).item<int64_t>(), 99999);
  EXPECT_EQ(graph::amin(ints).item<int64_t>(), 0);
  EXPECT_EQ(graph::gt(ints, 50000).sum().item<int64_t>(), 49999);
}

// ---- matmul ---------------------------------------------------------------

std::vector<float> naive_matmul(const Tensor& a, const Tensor& b) {
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  std::vector<float> av = values(a), bv = values(b), out(n * m, 0.f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(av[i * k + p]) * bv[p * m + j];
      out[i * m + j] = static_cast<float>(s);
    }
  return out;
}

Tensor random_matrix(int64_t r, int64_t c, std::mt19937& gen) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(r * c);
  for (float& x : v) x = dist(gen);
  return graph::from_vector(v, {r, c});
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "at " << i;
}

TEST(Matmul, HandComputed) {
  Tensor a = graph::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = graph::from_vector({7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor c = graph::matmul(a, b);
  EXPECT_EQ(c.sizes(), (Shape{2, 2}));
  EXPECT_EQ(values(c), (std::vector<float>{58, 64, 139, 154}));
}

TEST(Matmul, RandomAgainstNaive) {
  std::mt19937 gen(42);
  Tensor a = random_matrix(17, 33, gen), b = random_matrix(33, 9, gen);
  expect_near(values(graph::matmul(a, b)), naive_matmul(a, b));
  // Transposed operands go to BLAS as CblasTrans views.
  Tensor at = random_matrix(33, 17, gen).t(), bt = random_matrix(9, 33, gen).t();
  expect_near(values(graph::matmul(at, b)), naive_matmul(at, b));
  expect_near(values(graph::matmul(a, bt)), naive_matmul(a, bt));
  expect_near(values(graph::matmul(at, bt)), naive_matmul(at, bt));
  // Row slices (leading dimension > cols) and stepped slices (copied).
  Tensor wide = random_matrix(17, 40, gen);
  Tensor sliced = wide.slice(1, 3, 36);
  expect_near(values(graph::matmul(sliced, b)), naive_matmul(sliced, b));
  Tensor stepped = random_matrix(17, 66, gen).slice(1, 0, 66, 2);
  expect_near(values(graph::matmul(stepped, b)), naive_matmul(stepped, b));
  Tensor bcast = graph::tensor({1.f, 2.f, 3.f}).view({3, 1}).expand({3, 4});
  expect_near(values(graph::matmul(graph::ones({2, 3}), bcast)), std::vector<float>(8, 6.f));
}

}  // namespace
namespace graph::detail {
int set_small_matmul_isa(int isa);  // matmul.cpp
}  // namespace graph::detail
namespace {

// The small-product kernels (matmul.cpp: products of up to 32^3
// multiply-adds skip BLAS): the i-p-j kernel for row-major b, the dot kernel
// for a transposed b (b.stride(0) == 1, as linear's weight.t()), the strided
// kernel otherwise; float and double, against a long double reference with
// an error bound of the sum's length times the rounding unit.
template <class T>
std::vector<T> dense_values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

template <class T>
void expect_matmul_matches_reference(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor out = graph::matmul(a, b);
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  ASSERT_EQ(out.sizes(), (Shape{n, m})) << what;
  const std::vector<T> av = dense_values<T>(a), bv = dense_values<T>(b), got = dense_values<T>(out);
  const long double unit = std::numeric_limits<T>::epsilon();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      long double s = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        s += static_cast<long double>(av[i * k + p]) * bv[p * m + j];
        mag += std::fabs(static_cast<long double>(av[i * k + p]) * bv[p * m + j]);
      }
      const long double bound = (k + 1) * unit * mag + std::numeric_limits<T>::min();
      ASSERT_LE(std::fabs(got[i * m + j] - s), bound) << what << " at [" << i << ", " << j << "]";
    }
}

template <class T>
void check_small_kernels(graph::DType dtype) {
  const char* name = dtype == graph::kFloat64 ? "double" : "float";
  // (n, k, m): m below, at and past the vector widths and column blocks
  // (4, 8, 16, 32, 64), k = 1, k below and past the dot kernel's 16 lanes,
  // and one long sum at the size limit (1 x 2047 x 16 <= 32^3).
  const std::vector<std::array<int64_t, 3>> shapes = {
      {1, 1, 1},  {1, 1, 67}, {3, 1, 5},   {1, 64, 256}, {2, 64, 64}, {1, 15, 70},  {1, 16, 1},
      {5, 17, 9}, {4, 33, 65}, {7, 31, 129}, {1, 300, 3},  {1, 2047, 16}, {3, 100, 100}, {2, 48, 63}};
  for (const auto& [n, k, m] : shapes) {
    const std::string at = std::string(name) + " " + std::to_string(n) + "x" + std::to_string(k) + "x" +
                           std::to_string(m);
    const Tensor a = graph::rand({n, k}, dtype) * 2 - 1;
    expect_matmul_matches_reference<T>(a, graph::rand({k, m}, dtype) * 2 - 1, at + " row-major b");
    expect_matmul_matches_reference<T>(a, (graph::rand({m, k}, dtype) * 2 - 1).t(), at + " transposed b");
    expect_matmul_matches_reference<T>(a, (graph::rand({k, 2 * m}, dtype) * 2 - 1).slice(1, 0, 2 * m, 2),
                                       at + " stepped b");
    const Tensor at_ = (graph::rand({k, n}, dtype) * 2 - 1).t();
    expect_matmul_matches_reference<T>(at_, (graph::rand({m, k}, dtype) * 2 - 1).t(), at + " transposed a, b");
    const Tensor a_step = (graph::rand({n, 2 * k}, dtype) * 2 - 1).slice(1, 1, 2 * k, 2);
    expect_matmul_matches_reference<T>(a_step, (graph::rand({m, k}, dtype) * 2 - 1).t(), at + " stepped a");
  }
}

TEST(Matmul, SmallKernelsFloatAgainstReference) { check_small_kernels<float>(graph::kFloat32); }
TEST(Matmul, SmallKernelsDoubleAgainstReference) { check_small_kernels<double>(graph::kFloat64); }

// Each instruction set's variant (those this CPU has) gives the same bits:
// same multiplies and adds in the same order, no fused multiply-add.
TEST(Matmul, SmallKernelsSameOnEveryInstructionSet) {
  const int best = graph::detail::set_small_matmul_isa(2);
  struct Case {
    Tensor a, b;
  };
  std::vector<Case> cases;
  for (graph::DType dtype : {graph::kFloat32, graph::kFloat64})
    for (const auto& [n, k, m] : std::vector<std::array<int64_t, 3>>{{1, 64, 256}, {3, 37, 70}, {2, 300, 9}}) {
      const Tensor a = graph::randn({n, k}, dtype);
      cases.push_back({a, graph::randn({k, m}, dtype)});
      cases.push_back({a, graph::randn({m, k}, dtype).t()});
      cases.push_back({a, graph::randn({k, 2 * m}, dtype).slice(1, 0, 2 * m, 2)});
    }
  std::vector<Tensor> want;
  for (const Case& c : cases) want.push_back(graph::matmul(c.a, c.b));
  for (int isa = best - 1; isa >= 0; --isa) {
    ASSERT_EQ(graph::detail::set_small_matmul_isa(isa), isa);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Tensor got = graph::matmul(cases[i].a, cases[i].b);
      const Tensor g = got.contiguous(), w = want[i].contiguous();
      ASSERT_EQ(g.sizes(), w.sizes());
      const size_t bytes = g.numel() * (g.dtype() == graph::kFloat64 ? sizeof(double) : sizeof(float));
      EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), bytes), 0)
          << "instruction set " << isa << ", case " << i;
    }
    check_small_kernels<float>(graph::kFloat32);
    check_small_kernels<double>(graph::kFloat64);
  }
  graph::detail::set_small_matmul_isa(best);
}

// The eager elementwise kernels' instruction-set variants (graph/cpu_isa.h):
// every float and double op of the table, on odd lengths (vector loops and
// scalar tails), with a broadcast scalar on either side and on strided
// operands, gives the baseline variant's bits on each variant this CPU has.
TEST(Elementwise, SameBitsOnEveryInstructionSet) {
  using Unary = Tensor (*)(const Tensor&);
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  using BinaryTS = Tensor (*)(const Tensor&, graph::Scalar);
  using BinaryST = Tensor (*)(graph::Scalar, const Tensor&);
  const std::vector<std::pair<std::string, Unary>> unary = {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad) {#name, static_cast<Unary>(graph::name)},
#include "graph/ops.def"
  };
  const std::vector<std::pair<std::string, std::tuple<Binary, BinaryTS, BinaryST>>> binary = {
#define GRAPH_BINARY_OP(name, rule, cost, body, ga, gb) \
  {#name, {static_cast<Binary>(graph::name), static_cast<BinaryTS>(graph::name), static_cast<BinaryST>(graph::name)}},
#include "graph/ops.def"
  };
  // Every result of every op on every input, in a fixed order.
  const auto run_all = [&] {
    std::vector<Tensor> out;
    for (graph::DType dtype : {graph::kFloat32, graph::kFloat64})
      for (int64_t n : {1, 3, 7, 15, 17, 33, 65, 1029}) {
        // Values in about [-3, 3], zeros, and an inf and a NaN among them.
        const Tensor x = graph::mul(graph::randn({n}, dtype), 1.5), y = graph::add(graph::randn({n}, dtype), 0.25);
        const auto set = [](const Tensor& t, int64_t i, double v) {
          if (t.dtype() == graph::kFloat32) t.data_ptr<float>()[i] = static_cast<float>(v);
          else t.data_ptr<double>()[i] = v;
        };
        if (n > 3) {
          set(x, 1, 0.0);
          set(x, 2, std::numeric_limits<double>::infinity());
          set(y, 3, std::numeric_limits<double>::quiet_NaN());
        }
        const Tensor xs = graph::randn({n, 2}, dtype).t();                    // strided
        const Tensor ys = graph::randn({2 * n}, dtype).slice(0, 0, 2 * n, 2);  // strided
        for (const auto& op : unary) {
          out.push_back(op.second(x));
          out.push_back(op.second(xs));
        }
        for (const auto& op : binary) {
          const auto& f = op.second;
          out.push_back(std::get<0>(f)(x, y));
          out.push_back(std::get<1>(f)(x, 0.75));
          out.push_back(std::get<2>(f)(-1.25, y));
          out.push_back(std::get<0>(f)(xs.slice(0, 0, 1), ys));  // [1, n] with [n]
        }
      }
    return out;
  };
  const int best = graph::cpu::best_isa();
  graph::manual_seed(7);
  graph::cpu::set_isa(graph::cpu::kBaseline);
  const std::vector<Tensor> want = run_all();
  for (int isa = graph::cpu::kBaseline + 1; isa <= best; ++isa) {
    ASSERT_EQ(graph::cpu::set_isa(isa), isa);
    graph::manual_seed(7);
    const std::vector<Tensor> got = run_all();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      const Tensor g = got[i].contiguous(), w = want[i].contiguous();
      ASSERT_EQ(g.sizes(), w.sizes());
      ASSERT_EQ(g.dtype(), w.dtype());
      EXPECT_EQ(std::memcmp(g.raw_data(), w.raw_data(), g.numel() * graph::element_size(g.dtype())), 0)
          << graph::cpu::isa_name(isa) << ", result " << i;
    }
  }
  graph::cpu::set_isa(best);
}

// The eager elementwise kernels split big tensors across cores
// (parallel_for, chunks of kElementwiseGrain): every element of every chunk,
// on the dense, broadcast-value, broadcast-row and transposed paths, equals
// the scalar op applied to that element alone.
TEST(Elementwise, ParallelChunksCoverEveryElement) {
  const int64_t n = 3 * graph::cpu::kElementwiseGrain + 1001;  // several chunks and a ragged last one
  graph::manual_seed(11);
  const Tensor a = graph::randn({n}), b = graph::randn({n});
  const Tensor row = graph::randn({3});
  const Tensor tall = graph::randn({n / 3, 3}), wide = graph::randn({3, n / 3}).t();  // wide: strided
  const auto check = [](const Tensor& got, const auto& want, const char* what) {
    const Tensor g = got.contiguous();
    const float* p = g.data_ptr<float>();
    int64_t bad = 0;
    for (int64_t i = 0; i < g.numel(); ++i) {
      const float w = want(i);
      if (std::memcmp(&p[i], &w, sizeof w) != 0 && ++bad <= 3)
        ADD_FAILURE() << what << ": element " << i << " is " << p[i] << ", want " << w;
    }
    EXPECT_EQ(bad, 0) << what;
  };
  const float* pa = a.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  const float* pr = row.data_ptr<float>();
  const Tensor tc = tall.contiguous(), wc = wide.contiguous();
  const float* pt = tc.data_ptr<float>();
  const float* pw = wc.data_ptr<float>();
  using graph::scalar::add;
  using graph::scalar::mul;
  using graph::scalar::sub;
  check(graph::add(a, b), [&](int64_t i) { return add<float>(pa[i], pb[i]); }, "dense + dense");
  check(graph::mul(a, 0.75), [&](int64_t i) { return mul<float>(pa[i], 0.75f); }, "dense * value");
  check(graph::sub(-1.5, b), [&](int64_t i) { return sub<float>(-1.5f, pb[i]); }, "value - dense");
  check(graph::exp(a), [&](int64_t i) { return graph::scalar::exp<float>(pa[i]); }, "exp dense");
  check(graph::add(tall, row), [&](int64_t i) { return add<float>(pt[i], pr[i % 3]); }, "broadcast row");
  check(graph::tanh(wide), [&](int64_t i) { return graph::scalar::tanh<float>(pw[i]); }, "tanh transposed");
  check(graph::mul(wide, tall), [&](int64_t i) { return mul<float>(pw[i], pt[i]); }, "transposed * dense");
  const Tensor mask = graph::gt(a, 0.0), mc = mask.contiguous();
  const bool* pm = mc.data_ptr<bool>();
  check(graph::where(mask, a, b), [&](int64_t i) { return pm[i] ? pa[i] : pb[i]; }, "where");
}

// The dot kernel (a transposed b) over k below, at and past its 16 lanes,
// with products whose sums are exact in any order: the exact dot product.
TEST(Matmul, SmallDotKernelExactSums) {
  for (int64_t k : {16, 17, 31, 32, 47, 100}) {
    std::vector<float> av(k), wv(3 * k);
    for (int64_t p = 0; p < k; ++p) {
      av[p] = static_cast<float>(p % 7) - 3.f;
      for (int64_t j = 0; j < 3; ++j) wv[j * k + p] = static_cast<float>((p + j) % 5) * 0.5f;
    }
    const Tensor a = graph::from_vector(av, {1, k}), w = graph::from_vector(wv, {3, k});
    const std::vector<float> got = values(graph::matmul(a, w.t()));
    for (int64_t j = 0; j < 3; ++j) {
      float want = 0;  // small integers and halves: every order gives this
      for (int64_t p = 0; p < k; ++p) want += av[p] * wv[j * k + p];
      EXPECT_EQ(got[j], want) << "k = " << k << ", column " << j;
    }
  }
}

TEST(Matmul, EmptyInnerDimIsZeros) {
  Tensor c = graph::matmul(graph::empty({2, 0}), graph::empty({0, 3}));
  EXPECT_EQ(c.sizes(), (Shape{2, 3}));
  EXPECT_EQ(values(c), std::vector<float>(6, 0.f));
  EXPECT_EQ(graph::matmul(graph::empty({0, 4}), graph::empty({4, 3})).sizes(), (Shape{0, 3}));
}

TEST(Matmul, Errors) {
  expect_error(
      [] {
        graph::matmul(graph::zeros({2, 3}), graph::zeros({4, 5}));
      },
      {"matmul: shapes [2, 3] and [4, 5] cannot be multiplied"});
  expect_error(
      [] {
        graph::matmul(graph::zeros({2, 3, 4}), graph::zeros({2, 5, 5}));
      },
      {"matmul: shapes [2, 3, 4] and [2, 5, 5] cannot be multiplied"});
  expect_error(
      [] {
        graph::matmul(graph::zeros({2, 3, 4}), graph::zeros({3, 4, 5}));
      },
      {"matmul", "[2]", "[3]", "broadcast"});
  expect_error([] { graph::matmul(graph::zeros({}), graph::zeros({4, 5})); }, {"matmul", "at least 1 dim"});
  expect_error(
      [] {
        graph::matmul(graph::zeros({2, 3}, graph::kInt64), graph::zeros({3, 2}));
      },
      {"matmul", "one dtype", "long", "float", "[2, 3]"});
  expect_error([] { graph::matmul(Tensor(), graph::zeros({3, 2})); }, {"matmul", "undefined"});
}

}  // namespace

// ---- in-place ops and the version counter ------------------------------------

namespace {

TEST(Version, EveryInPlaceOpBumpsItOutOfPlaceOpsDoNot) {
  Tensor t = graph::from_vector({1, -2, 3, -4}, {2, 2});
  const Tensor view = t.t();  // views share the storage's counter
  uint64_t v = t.version();
  EXPECT_EQ(v, 0u);
  const auto bumped = [&](const char* what) {
    EXPECT_EQ(t.version(), v + 1) << what;
    EXPECT_EQ(view.version(), t.version()) << what;
    v = t.version();
  };
  // Out-of-place ops, views and reads leave it alone.
  Tensor u = t + 1;
  u = graph::relu(t) * t;
  u = t.slice(0, 0, 1).contiguous();
  u = t.clone();
  (void)t.sum().item<float>();
  EXPECT_EQ(t.version(), v);
  EXPECT_EQ(u.version(), 0u);  // a new tensor starts at 0

  t.add_(graph::from_vector({1, 1}, {2}));  // broadcast operand
  bumped("add_");
  EXPECT_EQ(values(t), (std::vector<float>{2, -1, 4, -3}));
  t.sub_(0.5);
  bumped("sub_");
  EXPECT_EQ(values(t), (std::vector<float>{1.5, -1.5, 3.5, -3.5}));
  t.mul_(graph::from_vector({2, -2, 2, -2}, {2, 2}));
  bumped("mul_");
  EXPECT_EQ(values(t), (std::vector<float>{3, 3, 7, 7}));
  t.div_(4);
  bumped("div_");
  EXPECT_EQ(values(t), (std::vector<float>{0.75, 0.75, 1.75, 1.75}));
  t.clamp_(0, 1);
  bumped("clamp_");
  EXPECT_EQ(values(t), (std::vector<float>{0.75, 0.75, 1, 1}));
  t.copy_(graph::from_vector({5, 6}, {2}));  // broadcast rows
  bumped("copy_");
  EXPECT_EQ(values(t), (std::vector<float>{5, 6, 5, 6}));
  t.fill_(2.5);
  bumped("fill_");
  EXPECT_EQ(values(t), (std::vector<float>{2.5, 2.5, 2.5, 2.5}));
  t.zero_();
  bumped("zero_");
  EXPECT_EQ(values(t), (std::vector<float>{0, 0, 0, 0}));
  // Through a view: the base sees the write and the shared counter moves.
  view.slice(0, 1, 2).fill_(7);  // column 1 of t
  bumped("fill_ of a view");
  EXPECT_EQ(values(t), (std::vector<float>{0, 7, 0, 7}));
  // Writes through a mutable data_ptr are not tracked; bump_version says so.
  t.data_ptr<float>()[0] = 1;
  EXPECT_EQ(t.version(), v);
  t.bump_version();
  bumped("bump_version");
  EXPECT_EQ(Tensor().version(), 0u);
}

TEST(Version, InPlaceOpsMatchOutOfPlaceOnesBitForBit) {
  const Tensor a = graph::randn({5, 7}), b = graph::randn({5, 7});
  Tensor x = a.clone();
  x.add_(b).mul_(a).div_(b).sub_(0.3).clamp_(-1.5, 2.0);
  const Tensor want = graph::clamp(graph::div(graph::mul(a + b, a), b) - 0.3, -1.5, 2.0);
  EXPECT_EQ(values(x), values(want));
  // A copy from an overlapping view of itself reads the source first.
  Tensor s = graph::from_vector({1, 2, 3, 4}, {2, 2});
  s.copy_(s.t());
  EXPECT_EQ(values(s), (std::vector<float>{1, 3, 2, 4}));
  // Integer tensors, and an integral result into a float tensor.
  Tensor i = graph::arange(0, 4, 1);
  i.mul_(3);
  EXPECT_EQ(ivalues(i), (std::vector<int64_t>{0, 3, 6, 9}));
  Tensor f = graph::zeros({4});
  f.copy_(i);
  EXPECT_EQ(values(f), (std::vector<float>{0, 3, 6, 9}));
}

TEST(Version, InPlaceErrors) {
  Tensor t = graph::zeros({2, 3});
  const uint64_t v = t.version();
  expect_error([&] { t.add_(graph::zeros({4, 2, 3})); }, {"add_", "[4, 2, 3]", "[2, 3]"});
  expect_error([&] { t.copy_(graph::zeros({4})); }, {"copy_", "[4]", "does not broadcast", "[2, 3]"});
  expect_error([&] { Tensor i = graph::zeros({2}, graph::kInt64); i.add_(0.5); }, {"add_", "float", "cannot be written"});
  expect_error([&] { graph::zeros({3}).expand({2, 3}).fill_(1); }, {"fill_", "expanded"});
  expect_error([&] { Tensor().zero_(); }, {"fill_", "undefined"});
  Tensor p = graph::ones({2}).requires_grad_();
  expect_error([&] { p.mul_(2); }, {"mul_", "requires grad"});
  EXPECT_EQ(t.version(), v);  // nothing was written
  {
    graph::NoGradGuard no_grad;  // what optimizers do
    p.mul_(2);
  }
  EXPECT_EQ(values(p.detach()), (std::vector<float>{2, 2}));
  EXPECT_EQ(p.version(), 1u);
}

}  // namespace

// ---- the packed-weight GEMM's epilogues (runtime/src/packed_gemm.h) ----------

namespace {

TEST(PackedLinear, BiasAndReluPostOpsMatchEagerAndDouble) {
  const int64_t rows = 48, k = 70, m = 40;
  const Tensor x = graph::randn({rows, k}), w = graph::randn({m, k}) * 0.2, b = graph::randn({m});
  for (bool relu : {false, true})
    for (bool bias : {false, true}) {
      Tensor out = graph::full({rows, m}, 123.0);  // every element must be written
      ASSERT_TRUE(graph::cpu::packed_linear(x, w, bias ? b : Tensor(), relu ? graph::cpu::PostOp::Relu : graph::cpu::PostOp::None, out));
      Tensor eager = graph::linear(x, w, bias ? b : Tensor());
      if (relu) eager = graph::relu(eager);
      const std::vector<float> got = values(out), want = values(eager), xs = values(x), ws = values(w),
                               bs = values(b);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < m; ++j) {
          double s = bias ? bs[j] : 0.0;
          for (int64_t q = 0; q < k; ++q) s += double(xs[i * k + q]) * ws[j * k + q];
          if (relu) s = std::max(s, 0.0);
          const size_t e = static_cast<size_t>(i * m + j);
          ASSERT_NEAR(got[e], s, 2e-5 * (1 + std::fabs(s))) << "relu " << relu << " bias " << bias << " at " << e;
          ASSERT_NEAR(got[e], want[e], 2e-5 * (1 + std::fabs(s)));
          if (relu) {
            ASSERT_GE(got[e], 0.0f);
          }
        }
    }
  // Layouts it does not take: the caller's plain GEMM runs instead.
  Tensor out = graph::zeros({rows, m});
  EXPECT_FALSE(graph::cpu::packed_linear(x, graph::randn({m, 2 * k}).slice(1, 0, 2 * k, 2), b, graph::cpu::PostOp::None, out));
  EXPECT_FALSE(graph::cpu::packed_linear(x.slice(0, 0, 2), w, b, graph::cpu::PostOp::None, out.slice(0, 0, 2)));  // 2 rows: sgemm's
}

TEST(PackedLinear, GeluErfPostOpMatchesDouble) {
  const int64_t rows = 48, k = 70, m = 40;
  const Tensor x = graph::randn({rows, k}), w = graph::randn({m, k}) * 0.2, b = graph::randn({m});
  for (bool bias : {false, true}) {
    Tensor out = graph::full({rows, m}, 123.0);  // every element must be written
    ASSERT_TRUE(graph::cpu::packed_linear(x, w, bias ? b : Tensor(), graph::cpu::PostOp::GeluErf, out));
    const std::vector<float> got = values(out), want = values(graph::gelu(graph::linear(x, w, bias ? b : Tensor())));
    const std::vector<float> xs = values(x), ws = values(w), bs = values(b);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = bias ? bs[j] : 0.0;
        for (int64_t q = 0; q < k; ++q) s += double(xs[i * k + q]) * ws[j * k + q];
        s = s * 0.5 * (1.0 + std::erf(s / std::sqrt(2.0)));  // exact GELU, PyTorch's default
        const size_t e = static_cast<size_t>(i * m + j);
        ASSERT_NEAR(got[e], s, 2e-5 * (1 + std::fabs(s))) << "bias " << bias << " at " << e;
        ASSERT_NEAR(got[e], want[e], 2e-5 * (1 + std::fabs(s)));
      }
  }
}

}  // namespace
