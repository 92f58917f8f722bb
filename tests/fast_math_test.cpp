// graph::math::exp / tanh / log / log1p / expm1 / erf (graph/fast_math.h) against the
// library functions: float32 within 2 ulp of the correctly rounded result
// (std:: in double, rounded to float) over a sweep of bit patterns in
// [-100, 100] and the float extremes; float64 within 2 ulp of std:: (log1p:
// 3); special values exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "graph/fast_math.h"

namespace {

// Distance in units in the last place: floats ordered as integers.
int64_t ordered(float f) {
  const int32_t i = std::bit_cast<int32_t>(f);
  return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
}
int64_t ordered(double f) {
  const int64_t i = std::bit_cast<int64_t>(f);
  return i < 0 ? -(i & 0x7fffffffffffffffLL) : i;
}
template <class T>
int64_t ulps(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : int64_t{1} << 40;
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// Every 97th bit pattern of [0, 100] and of [-100, 0], plus the float range
// outside it (every 9973rd pattern) so overflow, underflow and subnormal
// results are covered too.
std::vector<float> float_inputs() {
  std::vector<float> xs;
  const uint32_t hundred = std::bit_cast<uint32_t>(100.0f), inf = 0x7f800000u;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t u = 0; u <= hundred; u += 97) xs.push_back(std::bit_cast<float>(sign | u));
    for (uint32_t u = hundred; u < inf; u += 9973) xs.push_back(std::bit_cast<float>(sign | u));
  }
  return xs;
}

template <class F, class Ref>
void sweep_float(const char* name, F f, Ref ref, int64_t limit = 2) {
  int64_t worst = 0;
  float worst_x = 0;
  for (float x : float_inputs()) {
    const float want = static_cast<float>(ref(static_cast<double>(x)));
    const float got = f(x);
    const int64_t d = ulps(got, want);
    if (d > worst) worst = d, worst_x = x;
  }
  EXPECT_LE(worst, limit) << name << "(" << worst_x << ") = " << f(worst_x) << ", want "
                      << static_cast<float>(ref(static_cast<double>(worst_x)));
  std::printf("float %s: max %lld ulp\n", name, static_cast<long long>(worst));
}

template <class F, class Ref>
void sweep_double(const char* name, F f, Ref ref, double lo, double hi, int64_t limit = 2) {
  int64_t worst = 0;
  double worst_x = 0;
  const int steps = 2000003;
  for (int i = 0; i <= steps; ++i) {
    const double x = lo + (hi - lo) * i / steps;
    for (double y : {x, x * 1e-3, x * 1e-9}) {
      const int64_t d = ulps(f(y), ref(y));
      if (d > worst) worst = d, worst_x = y;
    }
  }
  EXPECT_LE(worst, limit) << name << "(" << worst_x << ")";
  std::printf("double %s: max %lld ulp\n", name, static_cast<long long>(worst));
}

TEST(FastMath, ExpFloatWithin2Ulp) {
  sweep_float("exp", [](float x) { return graph::math::exp(x); }, [](double x) { return std::exp(x); });
}

TEST(FastMath, TanhFloatWithin2Ulp) {
  sweep_float("tanh", [](float x) { return graph::math::tanh(x); }, [](double x) { return std::tanh(x); });
}

TEST(FastMath, ExpDoubleWithin2Ulp) {
  sweep_double("exp", [](double x) { return graph::math::exp(x); }, [](double x) { return std::exp(x); }, -760, 720);
}

TEST(FastMath, TanhDoubleWithin2Ulp) {
  sweep_double("tanh", [](double x) { return graph::math::tanh(x); }, [](double x) { return std::tanh(x); }, -25, 25);
}

TEST(FastMath, LogFloatWithin2Ulp) {
  sweep_float("log", [](float x) { return graph::math::log(x); }, [](double x) { return std::log(x); });
  sweep_float("log1p", [](float x) { return graph::math::log1p(x); }, [](double x) { return std::log1p(x); });
}

// expm1 = (u - 1) x / log(u): near 0 it keeps x's digits, where exp(x) - 1
// would lose them. Every 7th float pattern gave 2 ulp at worst, and the
// double sweep 2 (3 allowed: three roundings over exp's and log's).
TEST(FastMath, Expm1Within2Ulp) {
  sweep_float("expm1", [](float x) { return graph::math::expm1(x); }, [](double x) { return std::expm1(x); });
  sweep_double("expm1", [](double x) { return graph::math::expm1(x); }, [](double x) { return std::expm1(x); }, -40,
               700, 3);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, std::numeric_limits<float>::denorm_min()})
    EXPECT_EQ(std::bit_cast<uint32_t>(graph::math::expm1(x)), std::bit_cast<uint32_t>(x)) << x;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(graph::math::expm1(inf), inf);
  EXPECT_EQ(graph::math::expm1(-inf), -1.0f);
  EXPECT_EQ(graph::math::expm1(-200.0f), -1.0f);
  EXPECT_EQ(graph::math::expm1(100.0f), inf);
  EXPECT_TRUE(std::isnan(graph::math::expm1(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(graph::math::expm1(-1000.0), -1.0);
}

// erf: float within 3 ulp (its fits are 2.5 ulp at worst, near |x| = 1);
// double is libm's. Specials: +-0 keep their sign, +-inf give +-1, NaN NaN.
TEST(FastMath, ErfFloatWithin3Ulp) {
  sweep_float("erf", [](float x) { return graph::math::erf(x); }, [](double x) { return std::erf(x); }, 3);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(graph::math::erf(inf), 1.0f);
  EXPECT_EQ(graph::math::erf(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(graph::math::erf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::signbit(graph::math::erf(-0.0f)));
  EXPECT_EQ(graph::math::erf(0.0f), 0.0f);
  EXPECT_EQ(graph::math::erf(3.0), std::erf(3.0));
}

TEST(FastMath, LogDoubleWithin2Ulp) {
  sweep_double("log", [](double x) { return graph::math::log(x); }, [](double x) { return std::log(x); }, 0, 1e6);
  sweep_double("log", [](double x) { return graph::math::log(x); }, [](double x) { return std::log(x); }, 0.5, 2);
  // log(u) * x / (u - 1) rounds three times: 2.4 ulp at worst in a sample
  // of 2e7 random doubles (against a long double reference).
  sweep_double("log1p", [](double x) { return graph::math::log1p(x); }, [](double x) { return std::log1p(x); }, -0.999,
               10, 3);
}

// Subnormal inputs and the float range's ends: log is within 1 ulp there too.
TEST(FastMath, LogOfSubnormalsAndExtremes) {
  // Steps of 1.37x, at least one representable value (x * 1.37 rounds back to
  // x at the bottom of the subnormals).
  for (float x = std::numeric_limits<float>::denorm_min(); x < 1e-36f; x = std::max(x * 1.37f, std::nextafter(x, 1.0f)))
    EXPECT_LE(ulps(graph::math::log(x), static_cast<float>(std::log(static_cast<double>(x)))), 1) << "log(" << x << ")";
  for (double x = std::numeric_limits<double>::denorm_min(); x < 1e-300; x = std::max(x * 1.37, std::nextafter(x, 1.0)))
    EXPECT_LE(ulps(graph::math::log(x), std::log(x)), 2) << "log(" << x << ")";
  EXPECT_LE(ulps(graph::math::log(std::numeric_limits<float>::max()), 88.7228394f), 1);
  EXPECT_LE(ulps(graph::math::log(std::numeric_limits<double>::max()), std::log(std::numeric_limits<double>::max())), 1);
}

template <class T>
void check_specials() {
  using L = std::numeric_limits<T>;
  const T inf = L::infinity(), nan = L::quiet_NaN();
  EXPECT_EQ(graph::math::exp(inf), inf);
  EXPECT_EQ(graph::math::exp(-inf), T(0));
  EXPECT_TRUE(std::isnan(graph::math::exp(nan)));
  EXPECT_EQ(graph::math::exp(T(0)), T(1));
  EXPECT_EQ(graph::math::exp(-T(0)), T(1));
  EXPECT_EQ(graph::math::exp(T(1000)), inf);      // overflow
  EXPECT_EQ(graph::math::exp(T(-1000)), T(0));    // underflow
  EXPECT_EQ(graph::math::exp(L::max()), inf);
  EXPECT_EQ(graph::math::exp(L::lowest()), T(0));
  EXPECT_EQ(graph::math::exp(L::denorm_min()), T(1));
  EXPECT_EQ(graph::math::tanh(inf), T(1));
  EXPECT_EQ(graph::math::tanh(-inf), T(-1));
  EXPECT_TRUE(std::isnan(graph::math::tanh(nan)));
  EXPECT_TRUE(std::isnan(graph::math::tanh(-nan)));
  EXPECT_EQ(graph::math::tanh(T(0)), T(0));
  EXPECT_TRUE(std::signbit(graph::math::tanh(-T(0))));
  EXPECT_FALSE(std::signbit(graph::math::tanh(T(0))));
  EXPECT_EQ(graph::math::tanh(T(50)), T(1));
  EXPECT_EQ(graph::math::tanh(T(-50)), T(-1));
  EXPECT_EQ(graph::math::tanh(L::max()), T(1));
  EXPECT_EQ(graph::math::tanh(L::denorm_min()), L::denorm_min());
  EXPECT_EQ(graph::math::tanh(-L::denorm_min()), -L::denorm_min());
  EXPECT_EQ(graph::math::tanh(L::min()), L::min());
  EXPECT_EQ(graph::math::log(T(0)), -inf);
  EXPECT_EQ(graph::math::log(-T(0)), -inf);
  EXPECT_TRUE(std::isnan(graph::math::log(T(-1))));
  EXPECT_TRUE(std::isnan(graph::math::log(-inf)));
  EXPECT_TRUE(std::isnan(graph::math::log(nan)));
  EXPECT_EQ(graph::math::log(inf), inf);
  EXPECT_EQ(graph::math::log(T(1)), T(0));
  EXPECT_EQ(graph::math::log1p(T(0)), T(0));
  EXPECT_TRUE(std::signbit(graph::math::log1p(-T(0))));
  EXPECT_EQ(graph::math::log1p(T(-1)), -inf);
  EXPECT_TRUE(std::isnan(graph::math::log1p(T(-2))));
  EXPECT_TRUE(std::isnan(graph::math::log1p(nan)));
  EXPECT_EQ(graph::math::log1p(inf), inf);
  EXPECT_EQ(graph::math::log1p(L::denorm_min()), L::denorm_min());  // tiny x: x itself
}

TEST(FastMath, SpecialValuesFloat) { check_specials<float>(); }
TEST(FastMath, SpecialValuesDouble) { check_specials<double>(); }

// Every float near the overflow edge, the start of subnormal results and the
// underflow to 0: within 2 ulp, and inf exactly where the rounded result is.
TEST(FastMath, FloatRangeEdges) {
  for (float edge : {88.7228394f, -87.3365479f, -103.278931f, -103.972084f}) {
    float x = edge;
    for (int i = 0; i < 2000; ++i) x = std::nextafter(x, -1000.0f);
    for (int i = 0; i < 4000; ++i, x = std::nextafter(x, 1000.0f)) {
      const float want = static_cast<float>(std::exp(static_cast<double>(x)));
      const float got = graph::math::exp(x);
      EXPECT_LE(ulps(got, want), 2) << "exp(" << x << ")";
      EXPECT_EQ(std::isinf(got), std::isinf(want)) << "exp(" << x << ")";
    }
  }
}

}  // namespace
