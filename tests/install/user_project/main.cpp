// Exits 0 only if the compiled graph ran and matched the eager body.
#include <cmath>
#include <cstdio>

#include "layer.h"

int main() {
  using graph::Tensor;
  Tensor x = graph::tanh(graph::arange(0, 12).to(graph::kFloat32).view({3, 4}) * 0.3f - 1.0f);
  Tensor w = graph::tanh(graph::arange(0, 8).to(graph::kFloat32).view({4, 2}) * -0.2f + 0.5f);
  Tensor b = graph::tensor({0.1f, -0.2f});
  Tensor fused = layer(x, w, b);
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = layer(x, w, b);
  float diff = 0;
  Tensor d = (fused - eager).contiguous();
  for (int64_t i = 0; i < d.numel(); ++i) diff = std::fmax(diff, std::fabs(d.data_ptr<float>()[i]));
  uint64_t runs = 0;
  for (const auto* g : graph::detail::registered_graphs()) runs += g->calls.load();
  std::printf("graph runs: %llu, max |eager - static| = %g\n", static_cast<unsigned long long>(runs), diff);
  return runs == 1 && diff < 1e-6f ? 0 : 1;
}
