// Calls the static forward as any function, then the same call eagerly, and
// prints both, their largest difference, whether the compiled graph ran, the
// median time per call both ways and where the generated sources are.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <graph/graph.h>

#include "classifier.h"

#ifndef CXXGRAPH_GENERATED_DIR
#define CXXGRAPH_GENERATED_DIR "<build>/cxxgraph/classifier"
#endif

// Median microseconds of 50 calls of `fn` in `mode`.
template <class F>
double median_us(graph::Mode mode, F&& fn) {
  graph::set_mode(mode);
  std::vector<double> us;
  for (int i = 0; i < 50; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(us.begin(), us.begin() + 25, us.end());
  return us[25];
}

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
  std::printf("first row, eager:  %s\nfirst row, static: %s\nmax |eager - static| = %g (tolerance 1e-5): %s\n",
              eager.slice(0, 0, 1).to_string().c_str(), fused.slice(0, 0, 1).to_string().c_str(), max_diff,
              max_diff <= 1e-5f ? "OK" : "TOO LARGE");
  uint64_t runs = 0;
  for (const auto* g : graph::detail::registered_graphs()) {
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
    runs += g->calls.load();
  }
  const double eager_us = median_us(graph::Mode::Eager, [&] { net->forward(x, 2.0); });
  const double static_us = median_us(graph::Mode::Static, [&] { net->forward(x, 2.0); });
  std::printf("time per call (median of 50): eager %.1f us, static %.1f us\n", eager_us, static_us);
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return max_diff <= 1e-5f && runs > 0 ? 0 : 1;
}
