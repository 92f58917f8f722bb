// Calls the static forward as any function, then the same call eagerly, and
// prints both, their largest difference and whether the compiled graph ran.
#include <cmath>
#include <cstdio>

#include <graph/graph.h>

#include "classifier.h"

int main() {
  graph::manual_seed(0);
  Classifier net(16, 32, 4);
  graph::Tensor x = graph::randn({5, 16});
  graph::NoGradGuard no_grad;

  graph::Tensor fused = net->forward(x, 2.0);  // the compiled graph
  graph::set_mode(graph::Mode::Eager);
  graph::Tensor eager = net->forward(x, 2.0);  // the body as written

  float max_diff = 0;
  graph::Tensor d = (fused - eager).contiguous();
  for (int64_t i = 0; i < d.numel(); ++i) max_diff = std::fmax(max_diff, std::fabs(d.data_ptr<float>()[i]));
  std::printf("first row, eager:  %s\nfirst row, static: %s\nmax |eager - static| = %g\n",
              eager.slice(0, 0, 1).to_string().c_str(), fused.slice(0, 0, 1).to_string().c_str(), max_diff);
  uint64_t runs = 0;
  for (const auto* g : graph::detail::registered_graphs()) {
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
    runs += g->calls.load();
  }
  return max_diff <= 1e-5f && runs > 0 ? 0 : 1;
}
