// Runs a GPT-style block's forward eagerly and as its compiled graph on a
// batch of token sequences and prints the comparison and timings, then trains
// it for a few Adam steps on "predict the next token" through the static
// forward and prints the losses.
#include <cstdio>
#include <vector>

#include "../common/compare.h"
#include "gpt.h"

int main() {
  graph::manual_seed(0);
  GPT gpt;
  const int64_t N = 8, T = GPTImpl::kBlock;
  // Sequences counting up from different starts (mod the vocabulary): the
  // next token is always learnable.
  std::vector<float> seq(N * T), next(N * T);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < T; ++t) {
      seq[n * T + t] = float((3 * n + t) % GPTImpl::kVocab);
      next[n * T + t] = float((3 * n + t + 1) % GPTImpl::kVocab);
    }
  const graph::Tensor ids = graph::from_vector(seq, {N, T}).to(graph::kInt64);
  const graph::Tensor targets = graph::from_vector(next, {N, T}).to(graph::kInt64);

  std::printf("cxxgraph GPT-style block: token + position embedding, 4-head causal self-attention (triu + "
              "masked_fill), GELU MLP, cross_entropy; %lld sequences of %lld tokens\n",
              static_cast<long long>(N), static_cast<long long>(T));
  bool ok;
  {
    graph::NoGradGuard no_grad;
    ok = examples::compare_eager_static([&] { return std::get<0>(gpt(ids, targets)); }, 1e-4, 20);
  }
  graph::optim::Adam opt(gpt->parameters(), graph::optim::AdamOptions(3e-3));
  float first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    graph::Tensor loss = std::get<1>(gpt(ids, targets));
    loss.backward();
    opt.step();
    last = loss.item<float>();
    if (step == 0) first = last;
    if (step % 10 == 0 || step == 29) std::printf("step %2d  loss %.4f\n", step, last);
  }
  if (!(last < 0.5f * first)) {
    std::printf("the loss DID NOT fall by half (%.4f -> %.4f)\n", first, last);
    ok = false;
  }
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return ok ? 0 : 1;
}
