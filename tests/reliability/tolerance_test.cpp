// Fused code against eager execution on the end-to-end functions
// (tests/e2e/static_functions.cpp, compiled into this test too), on random
// inputs of several sizes: every element must satisfy
//   |graph - eager| <= kTolerance * (1 + |eager|),
// the tolerance docs/testing.md states. Both run the same graph::scalar bodies in
// float, so in practice they agree exactly; the margin is for compilers that
// contract a*b+c into an FMA in one path and not the other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "../e2e/static_functions.h"
#include "support.h"

namespace {

using graph::Tensor;

constexpr float kTolerance = 1e-5f;

// The largest |graph - eager| / (1 + |eager|) over all elements, after
// checking that the compiled graph ran.
double worst_difference(const char* fn, const std::function<Tensor()>& f) {
  graph::set_mode(graph::Mode::Static);
  const uint64_t before = rel::graph_runs(fn, "e2e");
  Tensor fused = f();
  EXPECT_EQ(rel::graph_runs(fn, "e2e"), before + 1) << fn << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = f();
  graph::set_mode(graph::Mode::Static);
  EXPECT_EQ(fused.sizes(), eager.sizes()) << fn;
  const std::vector<float> a = rel::values(fused), b = rel::values(eager);
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs(double{a[i]} - b[i]) / (1 + std::fabs(double{b[i]})));
  return worst;
}

TEST(FusedVsEager, EndToEndFunctionsWithinTolerance) {
  double worst = 0;
  std::string where;
  auto check = [&](const char* fn, const std::function<Tensor()>& f) {
    const double d = worst_difference(fn, f);
    if (d >= worst) worst = d, where = fn;
  };
  for (int64_t n : {1, 7, 64, 257}) {
    const unsigned s = static_cast<unsigned>(n) * 10;
    Tensor X = rel::random_tensor({3, n}, s), W1 = rel::random_tensor({4, 3}, s + 1),
           W2 = rel::random_tensor({4, 3}, s + 2), b = rel::random_tensor({4, 1}, s + 3);
    for (int flag : {1, 0}) check("seed_model", [&] { return e2e::seed_model(X, flag, W1, W2, b); });
    e2e::G_W1 = W1, e2e::G_W2 = W2, e2e::G_b = b;
    check("seed_model_globals", [&] { return e2e::seed_model_globals(X, 1); });
    Tensor x = rel::random_tensor({1, n}, s + 4), h = rel::random_tensor({1, 6}, s + 5);
    Tensor W_h = rel::random_tensor({6, 6}, s + 6), w_x = rel::random_tensor({6, n}, s + 7);
    check("rnn_step", [&] { return e2e::rnn_step(x, h, W_h, w_x); });
    Tensor m = rel::random_tensor({5, n}, s + 8), v = rel::random_tensor({n}, s + 9);
    check("chain8", [&] { return e2e::chain8(m, v); });
    check("chain8", [&] { return e2e::chain8(rel::random_tensor({n, 5}, s + 10).t(), v); });
    check("for_loop", [&] { return e2e::for_loop(m, 6); });
    check("while_loop", [&] { return e2e::while_loop(m * m); });
    check("if_scalar", [&] { return e2e::if_scalar(m, n % 2 == 0); });
    check("if_else_assign", [&] { return e2e::if_else_assign(m, 0.0); });
    check("reductions", [&] { return e2e::reductions(m); });
    check("above_row_mean", [&] { return e2e::above_row_mean(m); });
    check("nested_control", [&] { return e2e::nested_control(m, 5); });
  }
  RecordProperty("worst_relative_difference", std::to_string(worst));
  std::printf("worst |graph - eager| / (1 + |eager|): %g (%s)\n", worst, where.c_str());
  EXPECT_LE(worst, kTolerance) << "in " << where;
}

}  // namespace
