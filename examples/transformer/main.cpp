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
  const bool ok = examples::compare_eager_static([&] { return block->forward(tokens); }, 1e-4);
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return ok ? 0 : 1;
}
