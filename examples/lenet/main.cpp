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
  // CXXGRAPH_EXAMPLE_DEVICE=cuda: the eager CPU result first, then the
  // model and the input on the GPU, compared there and with the CPU's.
  graph::Tensor cpu_reference;
  if (examples::example_device() == graph::kCUDA) {
    graph::set_mode(graph::Mode::Eager);
    cpu_reference = net->forward(images);
    net->to(graph::kCUDA);
    images = images.to(graph::kCUDA);
    std::printf("on cuda, beside the eager result on the CPU\n");
  }
  const bool ok = examples::compare_eager_static([&] { return net->forward(images); }, 1e-4, 20, cpu_reference);
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return ok ? 0 : 1;
}
