// NaN and infinities pass through compiled graphs exactly as through the
// eager ops (same values, same NaN positions, same sign of zero), and the
// IEEE results that C++ defines hold: tanh(inf) = 1, exp overflows to inf,
// 0/0 is NaN, and every ordered comparison with NaN is false.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "functions.h"
#include "support.h"

namespace {

using graph::Tensor;

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kMax = std::numeric_limits<float>::max();
constexpr float kDenorm = std::numeric_limits<float>::denorm_min();

// Special values and ordinary ones next to them; exp(89) overflows float.
const std::vector<float> kSpecials = {kNan, kInf, -kInf, 0.0f, -0.0f, 1.0f, -1.0f, 88.0f, 89.0f, -104.0f, kDenorm, kMax};

Tensor specials() { return graph::from_vector(kSpecials, {static_cast<int64_t>(kSpecials.size())}); }

// Runs f as the compiled graph of rel::<fn> (checking that it ran) and as its
// eager body; the results must agree element for element.
template <class F>
std::vector<float> static_equals_eager(const char* fn, F f) {
  graph::set_mode(graph::Mode::Static);
  const uint64_t before = rel::graph_runs(fn);
  Tensor fused = f();
  EXPECT_EQ(rel::graph_runs(fn), before + 1) << fn << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = f();
  graph::set_mode(graph::Mode::Static);
  EXPECT_EQ(fused.sizes(), eager.sizes()) << fn;
  EXPECT_EQ(fused.dtype(), eager.dtype()) << fn;
  const std::vector<float> a = rel::values(fused), b = rel::values(eager);
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    EXPECT_TRUE(rel::same_value(a[i], b[i])) << fn << " element " << i << ": graph " << a[i] << ", eager " << b[i];
  return a;
}

TEST(SpecialValues, UnaryOpsMatchEager) {
  const Tensor x = specials();
  static_equals_eager("relu_of", [&] { return rel::relu_of(x); });
  std::vector<float> t = static_equals_eager("tanh_of", [&] { return rel::tanh_of(x); });
  std::vector<float> e = static_equals_eager("exp_of", [&] { return rel::exp_of(x); });
  std::vector<float> s = static_equals_eager("sigmoid_of", [&] { return rel::sigmoid_of(x); });
  EXPECT_TRUE(std::isnan(t[0]) && std::isnan(e[0]) && std::isnan(s[0])) << "NaN stays NaN";
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_EQ(e[1], kInf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[8], kInf) << "exp(89) overflows float";
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_EQ(s[2], 0.0f);
}

TEST(SpecialValues, DivisionMatchesEager) {
  const Tensor x = specials();
  const Tensor zeros = graph::zeros({static_cast<int64_t>(kSpecials.size())});
  std::vector<float> q = static_equals_eager("divide", [&] { return rel::divide(x, zeros); });
  EXPECT_TRUE(std::isnan(q[3])) << "0/0";
  EXPECT_EQ(q[5], kInf) << "1/0";
  EXPECT_EQ(q[6], -kInf) << "-1/0";
  // Every pair of specials, through broadcasting.
  const Tensor col = x.view({static_cast<int64_t>(kSpecials.size()), 1});
  std::vector<float> all = static_equals_eager("divide", [&] { return rel::divide(col, x); });
  EXPECT_TRUE(std::isnan(all[1 * kSpecials.size() + 1])) << "inf/inf";
}

TEST(SpecialValues, ComparisonsWithNanAreFalse) {
  const Tensor col = specials().view({static_cast<int64_t>(kSpecials.size()), 1});
  const Tensor row = specials();
  std::vector<float> lt = static_equals_eager("less", [&] { return rel::less(col, row); });
  std::vector<float> eq = static_equals_eager("equal", [&] { return rel::equal(col, row); });
  std::vector<float> ne = static_equals_eager("not_equal", [&] { return rel::not_equal(col, row); });
  const size_t n = kSpecials.size();
  for (size_t i = 0; i < n; ++i) {
    // Row 0 and column 0 hold NaN.
    EXPECT_EQ(lt[i], 0.0f);
    EXPECT_EQ(lt[i * n], 0.0f);
    EXPECT_EQ(eq[i], 0.0f);
    EXPECT_EQ(eq[i * n], 0.0f);
    EXPECT_EQ(ne[i], 1.0f);
    EXPECT_EQ(ne[i * n], 1.0f);
  }
  EXPECT_EQ(eq[3 * n + 4], 1.0f) << "0 == -0";
  EXPECT_EQ(lt[2 * n + 1], 1.0f) << "-inf < inf";
}

TEST(SpecialValues, ReductionsPropagate) {
  std::vector<float> inf_minus_inf = static_equals_eager("total", [&] {
    return rel::total(graph::from_vector({1.0f, kInf, -kInf}, {3}));
  });
  EXPECT_TRUE(std::isnan(inf_minus_inf[0]));
  std::vector<float> overflow = static_equals_eager("total", [&] { return rel::total(graph::from_vector({kMax, kMax}, {2})); });
  EXPECT_EQ(overflow[0], kInf);
}

// Special values flowing between ops inside one fused loop, on the dense
// path and on the strided one (a transposed input).
TEST(SpecialValues, FusedChainMatchesEager) {
  const int64_t n = static_cast<int64_t>(kSpecials.size());
  const Tensor col = specials().view({n, 1});
  const Tensor row = specials();
  static_equals_eager("mixed_chain", [&] { return rel::mixed_chain(col, row); });
  const Tensor square = graph::from_vector(std::vector<float>(kSpecials.size() * kSpecials.size(), 1.0f), {n, n}) * col;
  static_equals_eager("mixed_chain", [&] { return rel::mixed_chain(square.t(), square); });
}

}  // namespace
