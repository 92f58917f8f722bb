// End to end for the conversions the plugin lowers (conversion_functions.cpp,
// issue 20): each function runs as its compiled graph (asserting the graph
// ran) and as its eager body on the same inputs; results agree exactly in
// dtype and shape, in value within float rounding. Gradients through casts
// are compared with eager autograd; bad bounds are errors from the graph.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "conversion_functions.h"
#include "graph_calls.h"

namespace {

using graph::Tensor;

using e2e::pattern;

void expect_same(const Tensor& eager, const Tensor& fused, double tol = 1e-6) {
  ASSERT_EQ(eager.sizes(), fused.sizes());
  ASSERT_EQ(eager.dtype(), fused.dtype());
  Tensor a = eager.to(graph::kFloat64).contiguous(), b = fused.to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = b.data_ptr<double>()[i];
    ASSERT_NEAR(x, y, tol * (1 + std::fabs(x))) << "element " << i;
  }
}

// Completed runs of the graph of conv::`name` (its mangled name holds "4conv<len><name>E").
uint64_t calls(const std::string& name) { return e2e::calls("4conv" + std::to_string(name.size()) + name + "E"); }

using e2e::compiled_mode;

// `f` as the compiled graph (which must run once), then eagerly; returns
// the compiled result after comparing the two.
template <class F>
Tensor static_vs_eager(const std::string& fragment, F&& f, double tol = 1e-6) {
  graph::set_mode(compiled_mode());
  const uint64_t before = calls(fragment);
  Tensor fused = f();
  EXPECT_EQ(calls(fragment), before + 1) << fragment << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = f();
  graph::set_mode(compiled_mode());
  expect_same(eager, fused, tol);
  return fused;
}

TEST(Conversions, ToDtypeMatchesEager) {
  const Tensor x = pattern({3, 4}, 0.9f, -0.4f);
  EXPECT_EQ(static_vs_eager("to_double", [&] { return conv::to_double(x); }).dtype(), graph::kFloat64);
  static_vs_eager("mask_to_float", [&] { return conv::mask_to_float(x); });
  Tensor ints = static_vs_eager("to_integral", [&] { return conv::to_integral(x); }, 0);
  EXPECT_EQ(ints.dtype(), graph::kInt64);
  // x * 4 in (-4, 4) truncates toward zero; x != 0 is 1.
  const Tensor want = (x * 4).to(graph::kInt64) + 1;
  graph::set_mode(graph::Mode::Eager);
  expect_same(want, ints, 0);
  graph::set_mode(compiled_mode());
  // x.to(its own dtype) is x, as in eager code.
  static_vs_eager("to_same_dtype", [&] { return conv::to_same_dtype(x); });
}

TEST(Conversions, CastGradientsComeBackInTheInputDtype) {
  auto grads = [](graph::Mode mode) {
    graph::set_mode(mode);
    Tensor w = pattern({2, 3}, 0.7f, -0.2f), b = pattern({2, 3}, 0.4f, 0.3f);
    w.requires_grad_();
    b.requires_grad_();
    Tensor y = conv::cast_grad(w, b);
    y.backward();
    graph::set_mode(compiled_mode());
    return std::make_pair(w.grad(), b.grad());
  };
  const uint64_t before = calls("cast_grad");
  auto [ws, bs] = grads(compiled_mode());
  EXPECT_EQ(calls("cast_grad"), before + 1);
  auto [we, be] = grads(graph::Mode::Eager);
  ASSERT_TRUE(ws.defined() && bs.defined());
  EXPECT_EQ(ws.dtype(), graph::kFloat32);
  expect_same(we, ws, 1e-5);
  expect_same(be, bs, 1e-5);
}

TEST(Conversions, ContiguousCopiesAView) {
  const Tensor x = pattern({3, 4}, 0.5f, 0.1f);
  Tensor y = static_vs_eager("contiguous_t", [&] { return conv::contiguous_t(x); });
  EXPECT_TRUE(y.is_contiguous());
  EXPECT_EQ(y.sizes(), (graph::Shape{4, 3}));
}

TEST(Conversions, HostIntsAndFloats) {
  const Tensor x = pattern({3, 2}, 0.6f, -0.3f);
  for (int n : {0, 3, -5})
    for (double d : {2.75, -2.75, 0.4})
      static_vs_eager("host_casts", [&] { return conv::host_casts(x, n, d); });
}

TEST(Conversions, ArangeWithRunTimeBounds) {
  const Tensor x = pattern({2, 5}, 0.3f, 0.2f);
  for (int n : {1, 4, 7})
    for (double step : {0.5, 1.25}) static_vs_eager("aranges", [&] { return conv::aranges(x, n, step); });
  Tensor r = static_vs_eager("arange_ints", [&] { return conv::arange_ints(pattern({5, 1}, 1, 0), 2); }, 0);
  EXPECT_EQ(r.dtype(), graph::kInt64);
  EXPECT_EQ(r.sizes(), (graph::Shape{3}));
  EXPECT_EQ(r.data_ptr<int64_t>()[2], 10);  // 2 * {1, 3, 5}
  // A zero step is the eager error, raised inside the graph.
  graph::set_mode(compiled_mode());
  try {
    conv::arange_ints(x, 0);
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("step must be nonzero"), std::string::npos) << e.what();
  }
}

TEST(Conversions, FactoriesWithRunTimeSizesInIfsAndLoops) {
  const Tensor x = pattern({2, 3}, 0.5f, -0.1f);
  for (int n : {0, 1, 2, 4})
    static_vs_eager("sizes_in_loops", [&] { return conv::sizes_in_loops(x, n); });
}

// Graphs take every dtype: the generated code is built for float32 tensors,
// and a call with other dtypes runs the same graph specialized for them at
// run time (on the interpreter), not the eager body: the graph's call count
// rises, and the result has eager's dtype and values.
TEST(AnyDtype, Float64CallsRunTheGraphSpecialized) {
  const Tensor x = pattern({4, 3}, 0.7f, -0.2f).to(graph::kFloat64), w = pattern({3, 5}, 0.3f, 0.1f).to(graph::kFloat64),
               b = pattern({5}, 0.9f, -0.4f).to(graph::kFloat64);
  for (int call = 0; call < 2; ++call) {  // the second call reuses the specialization
    Tensor y = static_vs_eager("mlp_any", [&] { return conv::mlp_any(x, w, b); }, 1e-12);
    EXPECT_EQ(y.dtype(), graph::kFloat64);
  }
  // float32 still runs the generated code; mixed dtypes promote as eagerly.
  static_vs_eager("mlp_any", [&] { return conv::mlp_any(x.to(graph::kFloat32), w.to(graph::kFloat32),
                                                         b.to(graph::kFloat32)); });
  EXPECT_EQ(static_vs_eager("mlp_any", [&] { return conv::mlp_any(x, w, b.to(graph::kFloat32)); }).dtype(),
            graph::kFloat64);
}

// A call with the dtypes of the specialization the last call used still goes
// through its guard: an undefined tensor runs the eager body (whose error has
// no graph location), never the specialized graph (whose error would name it).
TEST(AnyDtype, ARepeatedSpecializationStillChecksItsGuard) {
  graph::set_mode(compiled_mode());
  const Tensor x = pattern({4, 3}, 0.7f, -0.2f).to(graph::kFloat64), w = pattern({3, 5}, 0.3f, 0.1f).to(graph::kFloat64),
               b = pattern({5}, 0.9f, -0.4f);
  const uint64_t before = calls("mlp_any");
  conv::mlp_any(x, w, b);  // (float64, float64, float32): specialized
  EXPECT_EQ(calls("mlp_any"), before + 1);
  try {
    conv::mlp_any(x, w, Tensor());  // the same dtypes as far as the guard rows go
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("expected a defined tensor"), std::string::npos) << what;
    EXPECT_EQ(what.find("in graph 'mlp_any'"), std::string::npos) << what;
  }
  EXPECT_EQ(calls("mlp_any"), before + 1);
}

TEST(AnyDtype, Float64GradientsMatchCentralDifferences) {
  graph::set_mode(compiled_mode());
  const Tensor x = pattern({3, 4}, 0.5f, 0.3f).to(graph::kFloat64), b = pattern({2}, 0.8f, 0.1f).to(graph::kFloat64);
  Tensor w = pattern({4, 2}, 0.4f, -0.3f).to(graph::kFloat64).requires_grad_();
  const uint64_t before = calls("mlp_any");
  conv::mlp_any(x, w, b).sum().backward();
  EXPECT_EQ(calls("mlp_any"), before + 1);
  e2e::expect_central_differences(w.grad(), w, [&](const Tensor& v) { return conv::mlp_any(x, v, b); });
}

TEST(AnyDtype, IntegerCallsRunTheGraphSpecialized) {
  const Tensor x = graph::arange(0, 12).view({4, 3});  // int64
  Tensor y = static_vs_eager("int_math", [&] { return conv::int_math(x, 3); }, 0);
  EXPECT_EQ(y.dtype(), graph::kInt64);
  // (3x + 1) summed over rows: 3 * {18, 22, 26} + 4, plus 9 elements > 2, plus max 34, minus 4 rows.
  EXPECT_EQ(y.data_ptr<int64_t>()[0], 58 + 9 + 34 - 4);
  Tensor y32 = static_vs_eager("int_math", [&] { return conv::int_math(x.to(graph::kInt32), 3); }, 0);
  EXPECT_EQ(y32.dtype(), graph::kInt64);  // int32 * an int64 host int stays int32; the int64 sum promotes
}

TEST(AnyDtype, ReducedFloatsAndBoolRunTheGraphSpecialized) {
  const Tensor x = pattern({4, 3}, 0.7f, -0.2f), w = pattern({3, 5}, 0.3f, 0.1f), b = pattern({5}, 0.9f, -0.4f);
  for (graph::DType d : {graph::kBFloat16, graph::kFloat16}) {
    SCOPED_TRACE(std::string(graph::dtype_name(d)));
    Tensor y = static_vs_eager("mlp_any", [&] { return conv::mlp_any(x.to(d), w.to(d), b.to(d)); }, 0);
    EXPECT_EQ(y.dtype(), d);
  }
  // bool * int64 host int is int64, as eagerly.
  const Tensor mask = graph::arange(0, 12).view({4, 3}) > 4;
  Tensor m = static_vs_eager("int_math", [&] { return conv::int_math(mask, 3); }, 0);
  EXPECT_EQ(m.dtype(), graph::kInt64);
}

// Dtypes the graph cannot take (matmul of an int64 and a float32 tensor):
// the specialization fails once, and the eager body runs and raises its own
// error (GRAPH_EXPLAIN says why: conversion_any_dtype_explain).
TEST(AnyDtype, DtypesTheGraphCannotTakeRunTheEagerBody) {
  graph::set_mode(compiled_mode());
  const Tensor x = graph::arange(0, 6).view({2, 3}), w = pattern({3, 2}, 0.3f, 0.1f);
  const uint64_t before = calls("matmul_only");
  for (int call = 0; call < 2; ++call) EXPECT_THROW(conv::matmul_only(x, w), graph::Error);
  EXPECT_EQ(calls("matmul_only"), before);
}

}  // namespace
