// End to end for values read from tensors on the host (item<T>()), host math
// and the method forms x.pow / x.clamp (host_read_functions.cpp): each
// function runs as its compiled graph (asserting the graph ran) and as its
// eager body; the decoder and the host math are also checked against plain
// C++ loops written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph_calls.h"
#include "host_read_functions.h"

namespace {

using e2e::compiled_mode;
using e2e::pattern;
using graph::Tensor;

uint64_t calls(const std::string& name) { return e2e::calls("8hostread" + std::to_string(name.size()) + name + "E"); }

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(graph::kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

void expect_near(const std::vector<double>& want, const Tensor& got, double tol) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(want.size(), g.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(want[i], g[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

// `f` as the compiled graph (which must run once), then eagerly; the two agree.
template <class F>
Tensor static_vs_eager(const std::string& name, F&& f, double tol = 1e-6) {
  graph::set_mode(compiled_mode());
  const uint64_t before = calls(name);
  Tensor fused = f();
  EXPECT_EQ(calls(name), before + 1) << name << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = f();
  graph::set_mode(compiled_mode());
  EXPECT_EQ(eager.dtype(), fused.dtype());
  EXPECT_EQ(eager.sizes(), fused.sizes());
  expect_near(values(eager), fused, tol);
  return fused;
}

// The decoder in plain C++, float64: the states' sum, then the step count.
std::vector<double> decode_reference(const Tensor& h0, const Tensor& w, const Tensor& emb, int64_t eos, int64_t max_steps) {
  const std::vector<double> hv = values(h0), wv = values(w), ev = values(emb);
  const size_t H = hv.size();
  std::vector<double> h = hv, total(H, 0.0);
  int64_t tok = 0, steps = 0;
  while (tok != eos && steps < max_steps) {
    std::vector<double> next(H);
    for (size_t j = 0; j < H; ++j) {
      double s = ev[static_cast<size_t>(tok) * H + j];
      for (size_t i = 0; i < H; ++i) s += h[i] * wv[i * H + j];
      next[j] = std::tanh(s);
    }
    h = next;
    tok = 0;
    for (size_t j = 1; j < H; ++j)
      if (h[j] > h[static_cast<size_t>(tok)]) tok = static_cast<int64_t>(j);
    for (size_t j = 0; j < H; ++j) total[j] += h[j];
    ++steps;
  }
  total.push_back(static_cast<double>(steps));
  return total;
}

TEST(HostReads, GreedyDecodeStopsWhereTheDataSays) {
  // Spread values (pattern's tanh saturates), so no two states tie for the argmax.
  auto wave = [](graph::Shape s, double k) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return graph::sin(graph::arange(0, n).to(graph::kFloat32) * k).view(s);
  };
  const Tensor h0 = wave({5}, 2.1), w = wave({5, 5}, 1.3) * 0.8, emb = wave({5, 5}, 0.7) * 1.5;
  std::vector<double> seen_steps;
  for (int64_t eos : {0, 1, 2, 3, 4})
    for (int64_t max_steps : {0, 1, 6, 20}) {
      Tensor r = static_vs_eager("greedy_decode", [&] { return hostread::greedy_decode(h0, w, emb, eos, max_steps); }, 1e-5);
      expect_near(decode_reference(h0, w, emb, eos, max_steps), r, 1e-5);
      seen_steps.push_back(values(r).back());
    }
  // The loop's trip count follows the tokens: some runs stop before max_steps.
  EXPECT_NE(std::find_if(seen_steps.begin(), seen_steps.end(), [](double s) { return s > 0 && s < 6; }),
            seen_steps.end());
}

TEST(HostReads, ItemFeedsHostMathAndItsGradientIsAConstant) {
  const Tensor x0 = pattern({3, 4}, 0.8f, -0.5f);
  Tensor r = static_vs_eager("normalize_by_item", [&] { return hostread::normalize_by_item(x0); });
  const std::vector<double> xv = values(x0);
  double ss = 0, mx = 0;
  for (double v : xv) ss += v * v, mx = std::max(mx, std::fabs(v));
  std::vector<double> want;
  for (double v : xv) want.push_back(v / (std::sqrt(ss) + 1e-6) + v * mx);
  expect_near(want, r, 1e-5);
  // Gradients: the values read by item are constants, in the graph as eagerly.
  auto grad = [&](graph::Mode mode) {
    graph::set_mode(mode);
    Tensor x = x0.clone().requires_grad_();
    hostread::normalize_by_item(x).sum().backward();
    graph::set_mode(compiled_mode());
    return x.grad();
  };
  const uint64_t before = calls("normalize_by_item");
  Tensor gs = grad(compiled_mode());
  EXPECT_EQ(calls("normalize_by_item"), before + 1);
  std::vector<double> want_grad(xv.size(), 1.0 / (std::sqrt(ss) + 1e-6) + mx);
  expect_near(want_grad, gs, 1e-5);
  expect_near(values(grad(graph::Mode::Eager)), gs, 1e-6);
}

TEST(HostReads, HostMathMatchesTheCLibrary) {
  const Tensor x = pattern({2, 3}, 0.4f, 0.1f);
  for (double d : {0.25, 2.0, 9.5})
    for (int n : {0, 1, 3}) {
      Tensor r = static_vs_eager("host_math", [&] { return hostread::host_math(x, d, n); }, 1e-12);
      const double s = std::sqrt(d) + std::exp(static_cast<double>(n)) - std::log(d + 1.0);
      const double c = std::pow(d, 2.0) + std::abs(-n) + std::fabs(-d) + std::pow(n, 2) + std::tanh(d) + std::fmax(d, 0.5);
      std::vector<double> want;
      for (double v : values(x)) want.push_back(static_cast<float>(v) * s + c);
      expect_near(want, r, 1e-6);
    }
}

TEST(HostReads, PowAndClampMethodsLowerWithTheirGradients) {
  const Tensor x0 = pattern({3, 3}, 0.9f, -0.1f), e = pattern({3, 3}, 0.3f, 1.0f) + 1.0;
  static_vs_eager("pow_clamp", [&] { return hostread::pow_clamp(x0, e); });
  auto grad = [&](graph::Mode mode) {
    graph::set_mode(mode);
    Tensor x = x0.clone().requires_grad_();
    hostread::pow_clamp(x, e).sum().backward();
    graph::set_mode(compiled_mode());
    return x.grad();
  };
  Tensor gs = grad(compiled_mode());
  // d/dx: 2x + e |x|^(e-1) sign(x) + [-0.5 <= x <= 0.25]
  std::vector<double> want;
  const std::vector<double> xv = values(x0), ev = values(e);
  for (size_t i = 0; i < xv.size(); ++i) {
    const double v = static_cast<float>(xv[i]);
    want.push_back(2 * v + ev[i] * std::pow(std::fabs(v), ev[i] - 1) * (v > 0 ? 1 : -1) + (v >= -0.5 && v <= 0.25 ? 1 : 0));
  }
  expect_near(want, gs, 1e-4);
  expect_near(values(grad(graph::Mode::Eager)), gs, 1e-6);
}

TEST(HostReads, ItemOfManyElementsIsAnErrorAtItsLine) {
  graph::set_mode(compiled_mode());
  try {
    hostread::item_of_many(pattern({2, 2}, 0.5f, 0.0f));
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("item: a tensor with 4 elements cannot be converted to a scalar"), std::string::npos) << what;
    EXPECT_NE(what.find("host_read_functions.cpp:"), std::string::npos) << what;
  }
  EXPECT_FLOAT_EQ(hostread::item_of_many(Tensor(graph::full({1}, 3.0))).item<float>(), 9.0f);
}

}  // namespace
