#pragma once
// Helpers the examples share: deterministic inputs and the largest
// difference between two results.
#include <cmath>

#include <graph/graph.h>

namespace examples {

// Values in (-1, 1) that differ per element, without a random generator.
inline graph::Tensor pattern(graph::Shape shape, float scale, float shift) {
  graph::Tensor t = graph::arange(0, shape[0] * shape[1]).to(graph::kFloat32).view(shape);
  return graph::tanh(t * scale + shift);
}

inline float max_abs_diff(const graph::Tensor& a, const graph::Tensor& b) {
  graph::Tensor d = (a - b).contiguous();
  float m = 0;
  for (int64_t i = 0; i < d.numel(); ++i) m = std::fmax(m, std::fabs(d.data_ptr<float>()[i]));
  return m;
}

}  // namespace examples
