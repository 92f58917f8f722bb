// Runs LeNet-5's forward eagerly and as its compiled graph on a batch of
// images and prints the comparison and timings.
#include <cstdio>

#include "../common/compare.h"
#include "lenet.h"

int main() {
  graph::manual_seed(0);
  LeNet net;
  net->eval();
  graph::Tensor images = graph::randn({8, 1, 28, 28});
  graph::NoGradGuard no_grad;

  std::printf("cxxgraph LeNet-5: conv-relu-pool x2, then three linear layers; batch of 8 images\n");
  const bool ok = examples::compare_eager_static([&] { return net->forward(images); }, 1e-4);
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return ok ? 0 : 1;
}
