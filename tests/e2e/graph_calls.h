#pragma once
// Helpers of the e2e_subset_test sources: deterministic inputs, which
// compiled graph ran, and in which mode the compiled side runs
// (GRAPH_MODE=interpret: the interpreter).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <graph/graph.h>

namespace e2e {

// Deterministic float32 values in (-1, 1).
inline graph::Tensor pattern(graph::Shape shape, float scale, float shift) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return graph::tanh(graph::arange(0, n).to(graph::kFloat32).view(shape) * scale + shift);
}

// Completed graph runs of the annotated function whose mangled name contains
// `fragment` (exactly one must be registered).
inline uint64_t calls(const std::string& fragment) {
  const graph::detail::CompiledGraph* found = nullptr;
  for (const graph::detail::CompiledGraph* g : graph::detail::registered_graphs())
    if (std::string(g->mangled_name).find(fragment) != std::string::npos) {
      EXPECT_EQ(found, nullptr) << "two graphs match " << fragment;
      found = g;
    }
  EXPECT_NE(found, nullptr) << "no graph registered for " << fragment;
  return found ? found->calls.load() : 0;
}

// Each element of `grad` (float64, the gradient of sum(f(w)) at w) against
// central differences of sum(f(v)) with one element of v = w moved by +-h.
template <class F>
void expect_central_differences(const graph::Tensor& grad, const graph::Tensor& w, F&& f, double tol = 1e-7) {
  ASSERT_TRUE(grad.defined());
  ASSERT_EQ(grad.dtype(), graph::kFloat64);
  graph::autograd::NoGradGuard no_grad;
  graph::Tensor v = w.detach().clone();
  const graph::Tensor g = grad.contiguous();
  for (int64_t i = 0; i < v.numel(); ++i) {
    double* p = v.data_ptr<double>() + i;
    const double keep = *p, h = 1e-6;
    *p = keep + h;
    const double up = f(v).sum().template item<double>();
    *p = keep - h;
    const double down = f(v).sum().template item<double>();
    *p = keep;
    EXPECT_NEAR(g.data_ptr<double>()[i], (up - down) / (2 * h), tol) << "element " << i;
  }
}

inline graph::Mode compiled_mode() {
  const char* m = std::getenv("GRAPH_MODE");
  return m && std::string(m) == "interpret" ? graph::Mode::Interpret : graph::Mode::Static;
}

}  // namespace e2e
