// Helpers shared by the e2e_test sources (e2e_test.cpp, break_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <graph/graph.h>

namespace e2e {

// Deterministic inputs in [-1, 1] without a random generator.
inline graph::Tensor pattern(graph::Shape shape, float scale, float shift) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  graph::Tensor t = graph::arange(0, n).to(graph::kFloat32).view(shape);
  return graph::tanh(t * scale + shift);
}

// Same shape and dtype, and every element within tol * (1 + |want|).
inline void expect_close(const graph::Tensor& want, const graph::Tensor& got, float tol = 1e-5f) {
  ASSERT_EQ(want.sizes(), got.sizes());
  ASSERT_EQ(want.dtype(), got.dtype());
  graph::Tensor a = want.to(graph::kFloat32).contiguous(), b = got.to(graph::kFloat32).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    float x = a.data_ptr<float>()[i], y = b.data_ptr<float>()[i];
    ASSERT_NEAR(x, y, tol * (1 + std::fabs(x))) << "element " << i;
  }
}

// How often the compiled graph registered under `mangled` has run.
inline uint64_t calls(const std::string& mangled) { return graph::detail::graph_calls(mangled); }

// Static, or Interpret when CTest runs the suite with GRAPH_MODE=interpret:
// then every "compiled graph" runs on the interpreter.
inline graph::Mode compiled_mode() {
  const char* m = std::getenv("GRAPH_MODE");
  return m && std::string(m) == "interpret" ? graph::Mode::Interpret : graph::Mode::Static;
}

}  // namespace e2e
