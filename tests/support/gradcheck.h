#pragma once
// Shared by the gradient tests: deterministic float64 inputs, a gradcheck
// comparing backward() with central finite differences, and expect_error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace gradcheck_support {

using graph::Shape;
using graph::Tensor;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// A tensor's values in order, as doubles (for EXPECT_EQ against a list).
inline std::vector<double> doubles(const Tensor& t) {
  const Tensor c = t.to(graph::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Deterministic float64 values in [lo, hi).
inline Tensor values(const Shape& shape, double lo, double hi, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor t = graph::empty(shape, graph::kFloat64);
  double* p = t.data_ptr<double>();
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
  return t;
}

// Runs f, expects a graph::Error whose message contains every piece.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& pieces) {
  try {
    f();
    ADD_FAILURE() << "expected graph::Error containing '" << pieces.at(0) << "'";
  } catch (const graph::Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : pieces) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

// Weighted sum of f's output, so every output element matters differently.
inline double objective(const Fn& f, const std::vector<Tensor>& in, const Tensor& weights) {
  graph::NoGradGuard g;
  return (f(in) * weights).sum().item<double>();
}

// Compares d objective / d inputs from backward() with central differences.
// Inputs listed in `fixed` (by position) are passed as they are (indices,
// masks) and not checked.
inline void gradcheck(const Fn& f, std::vector<Tensor> inputs, double tol = 1e-6, std::vector<size_t> fixed = {}) {
  auto is_fixed = [&](size_t k) { return std::find(fixed.begin(), fixed.end(), k) != fixed.end(); };
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!is_fixed(k)) inputs[k] = inputs[k].clone().requires_grad_();
  Tensor out = f(inputs);
  const Tensor weights = values(out.sizes(), 0.5, 1.5, 99);
  (out * weights).sum().backward();
  const double eps = 1e-6;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (is_fixed(k)) continue;
    Tensor analytic = inputs[k].grad();
    ASSERT_TRUE(analytic.defined()) << "input " << k << " got no gradient";
    ASSERT_EQ(analytic.sizes(), inputs[k].sizes());
    Tensor probe = inputs[k].detach().clone();
    std::vector<Tensor> in = inputs;
    in[k] = probe;
    double* p = probe.data_ptr<double>();
    const Tensor a = analytic.contiguous();
    for (int64_t i = 0; i < probe.numel(); ++i) {
      const double keep = p[i];
      p[i] = keep + eps;
      const double up = objective(f, in, weights);
      p[i] = keep - eps;
      const double down = objective(f, in, weights);
      p[i] = keep;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(a.data_ptr<double>()[i], numeric, tol * (1 + std::fabs(numeric)))
          << "input " << k << " element " << i;
    }
  }
}

}  // namespace gradcheck_support
