#pragma once
// Helpers shared by the reliability tests.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <graph/graph.h>

namespace rel {

// Completed runs of the compiled graph of <ns>::<fn> (found by the mangled
// name's "3rel<len><fn>" part), to prove a call did not fall back to eager.
inline uint64_t graph_runs(std::string_view fn, std::string_view ns = "rel") {
  const std::string key =
      std::to_string(ns.size()) + std::string(ns) + std::to_string(fn.size()) + std::string(fn);
  uint64_t n = 0;
  for (const auto* g : graph::detail::registered_graphs())
    if (std::string_view(g->mangled_name).find(key) != std::string_view::npos) n += g->calls.load();
  return n;
}

// A float32 tensor of `shape` with values uniform in [lo, hi), reproducible by seed.
inline graph::Tensor random_tensor(const graph::Shape& shape, unsigned seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return graph::from_vector(v, shape);
}

// The elements of a float32 or bool tensor, as floats, in row-major order.
inline std::vector<float> values(const graph::Tensor& t) {
  const graph::Tensor c = t.to(graph::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// Same value: equal (with the sign of zero), or both NaN.
inline bool same_value(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

}  // namespace rel
