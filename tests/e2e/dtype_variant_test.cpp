// Dtype variants (cxxgraph_static_graphs(... DTYPES float64 int64)): a call
// in a listed dtype runs that variant's generated code (its own registration,
// counted apart), with its own gradient; a call in a dtype not listed runs
// the graph specialized at run time; float32 runs the default code. Values
// against eager mode and, for gradients, central differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "dtype_variant_functions.h"
#include "graph_calls.h"

namespace {

using graph::Tensor;
using e2e::pattern;

// Completed runs of variants::`name`'s graph whose body hash ends with `suffix`
// ("" for the default code, ":f64" for the float64 variant).
uint64_t runs(const std::string& name, const std::string& suffix) {
  const std::string fragment = "8variants" + std::to_string(name.size()) + name + "E";
  const graph::detail::CompiledGraph* found = nullptr;
  for (const graph::detail::CompiledGraph* g : graph::detail::registered_graphs()) {
    const std::string hash = g->body_hash;
    const size_t colon = hash.find(':');
    if (std::string(g->mangled_name).find(fragment) != std::string::npos &&
        (colon == std::string::npos ? suffix.empty() : hash.substr(colon) == suffix)) {
      EXPECT_EQ(found, nullptr) << "two graphs for " << name << suffix;
      found = g;
    }
  }
  EXPECT_NE(found, nullptr) << "no graph for " << name << suffix;
  return found ? found->calls.load() : 0;
}

void expect_same(const Tensor& eager, const Tensor& graph_result, double tol) {
  ASSERT_EQ(eager.sizes(), graph_result.sizes());
  ASSERT_EQ(eager.dtype(), graph_result.dtype());
  const Tensor a = eager.to(graph::kFloat64).contiguous(), b = graph_result.to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i)
    EXPECT_NEAR(a.data_ptr<double>()[i], b.data_ptr<double>()[i], tol * (1 + std::fabs(a.data_ptr<double>()[i])))
        << "element " << i;
}

template <class F>
Tensor eager_of(F&& f) {
  const graph::Mode mode = graph::mode();
  graph::set_mode(graph::Mode::Eager);
  Tensor r = f();
  graph::set_mode(mode);
  return r;
}

class DtypeVariants : public ::testing::Test {
 protected:
  void SetUp() override { graph::set_mode(e2e::compiled_mode()); }
};

TEST_F(DtypeVariants, Float64CallsRunTheFloat64Code) {
  const Tensor x = pattern({4, 3}, 0.7f, -0.2f).to(graph::kFloat64), w = pattern({3, 5}, 0.3f, 0.1f).to(graph::kFloat64),
               b = pattern({5}, 0.9f, -0.4f).to(graph::kFloat64);
  const uint64_t f64 = runs("layer", ":f64"), f32 = runs("layer", "");
  const Tensor y = variants::layer(x, w, b);
  EXPECT_EQ(runs("layer", ":f64"), f64 + 1);
  EXPECT_EQ(runs("layer", ""), f32 + 1);  // the function's own count: one graph run
  EXPECT_EQ(y.dtype(), graph::kFloat64);
  expect_same(eager_of([&] { return variants::layer(x, w, b); }), y, 1e-13);
  // float32 runs the default code, not the variant.
  const Tensor y32 = variants::layer(x.to(graph::kFloat32), w.to(graph::kFloat32), b.to(graph::kFloat32));
  EXPECT_EQ(runs("layer", ":f64"), f64 + 1);
  expect_same(y.to(graph::kFloat32), y32, 1e-5);
}

TEST_F(DtypeVariants, Float64GradientsComeFromTheVariantsBackward) {
  const Tensor x = pattern({3, 4}, 0.5f, 0.3f).to(graph::kFloat64), b = pattern({2}, 0.8f, 0.1f).to(graph::kFloat64);
  Tensor w = pattern({4, 2}, 0.4f, -0.3f).to(graph::kFloat64).requires_grad_();
  const uint64_t before = runs("layer", ":f64");
  const Tensor y = variants::layer(x, w, b);
  EXPECT_EQ(runs("layer", ":f64"), before + 1);
  if (graph::mode() == graph::Mode::Static) {  // one node on the tape: the variant's generated backward
    ASSERT_TRUE(y.autograd_meta() && y.autograd_meta()->grad_fn);
    EXPECT_EQ(y.autograd_meta()->grad_fn->name.rfind("static graph (", 0), 0u) << y.autograd_meta()->grad_fn->name;
  }
  y.sum().backward();
  e2e::expect_central_differences(w.grad(), w, [&](const Tensor& v) { return variants::layer(x, v, b); });
}

// layer's mean refuses an int64 input, eagerly and in the type rules, so it
// has no int64 variant: an int64 call runs the eager body and fails as eager.
TEST_F(DtypeVariants, Int64LayerFailsAsEagerDoes) {
  const Tensor x = pattern({4, 3}, 0.7f, -0.2f).to(graph::kInt64), w = pattern({3, 5}, 0.3f, 0.1f).to(graph::kInt64),
               b = pattern({5}, 0.9f, -0.4f).to(graph::kInt64);
  auto message = [&] {
    try {
      (void)variants::layer(x, w, b);
    } catch (const graph::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const graph::Mode mode = graph::mode();
  graph::set_mode(graph::Mode::Eager);
  const std::string eager = message();
  graph::set_mode(mode);
  EXPECT_NE(eager, "no error");
  EXPECT_EQ(message(), eager);
}

TEST_F(DtypeVariants, Int64CallsRunTheInt64CodeAndInt32IsSpecialized) {
  const Tensor x = graph::arange(0, 12).view({4, 3});
  const uint64_t i64 = runs("counts", ":i64"), f32 = runs("counts", "");
  const Tensor y = variants::counts(x, 3);
  EXPECT_EQ(runs("counts", ":i64"), i64 + 1);
  EXPECT_EQ(y.dtype(), graph::kInt64);
  // 3 * {18, 22, 26} + 4 rows, plus the 10 elements above 1.
  EXPECT_EQ(y.data_ptr<int64_t>()[0], 58 + 10);
  expect_same(eager_of([&] { return variants::counts(x, 3); }), y, 0);
  // int32 has no variant: the graph specialized at run time.
  const Tensor x32 = x.to(graph::kInt32);
  const Tensor y32 = variants::counts(x32, 3);
  EXPECT_EQ(runs("counts", ":i64"), i64 + 1);
  EXPECT_EQ(runs("counts", ""), f32 + 2);
  expect_same(eager_of([&] { return variants::counts(x32, 3); }), y32, 0);
}

TEST_F(DtypeVariants, AVariantTheGraphCannotTakeIsSpecializedInstead) {
  // No variant of needs_float could be compiled (the build warned): a
  // float64 w fails the default code's guard, and the graph specialized for
  // (float32, float64) casts w as the eager body does.
  for (const graph::detail::CompiledGraph* g : graph::detail::registered_graphs())
    EXPECT_FALSE(std::string(g->mangled_name).find("11needs_float") != std::string::npos &&
                 std::string(g->body_hash).find(':') != std::string::npos)
        << g->body_hash;
  const Tensor x = pattern({2, 3}, 0.4f, 0.2f), w = pattern({3, 2}, 0.6f, -0.1f).to(graph::kFloat64);
  const uint64_t before = runs("needs_float", "");
  const Tensor y = variants::needs_float(x, w);
  EXPECT_EQ(runs("needs_float", ""), before + 1);
  EXPECT_EQ(y.dtype(), graph::kFloat32);
  expect_same(eager_of([&] { return variants::needs_float(x, w); }), y, 1e-6);
}

}  // namespace
