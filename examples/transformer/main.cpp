// Runs a Transformer encoder block's forward eagerly and as its compiled
// graph on one sequence and prints the comparison and timings.
#include <cstdio>

#include "../common/compare.h"
#include "encoder.h"

int main() {
  graph::manual_seed(0);
  EncoderBlock block;
  block->eval();
  graph::Tensor tokens = graph::randn({32, EncoderBlockImpl::kModel});
  graph::NoGradGuard no_grad;

  std::printf("cxxgraph Transformer encoder block: 4-head self-attention + layer_norm, GELU FFN + layer_norm; "
              "a sequence of 32 tokens of width 64\n");
  // CXXGRAPH_EXAMPLE_DEVICE=cuda: the eager CPU result first, then the
  // model and the input on the GPU, compared there and with the CPU's.
  graph::Tensor cpu_reference;
  if (examples::example_device() == graph::kCUDA) {
    graph::set_mode(graph::Mode::Eager);
    cpu_reference = block->forward(tokens);
    block->to(graph::kCUDA);
    tokens = tokens.to(graph::kCUDA);
    std::printf("on cuda, beside the eager result on the CPU\n");
  }
  const bool ok = examples::compare_eager_static([&] { return block->forward(tokens); }, 1e-4, 20, cpu_reference);
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return ok ? 0 : 1;
}
