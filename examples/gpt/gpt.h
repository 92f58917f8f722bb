#pragma once
#include <graph/graph.h>

#include <tuple>

// A GPT-style language model (one block; tests/models has the same model
// checked against PyTorch): token + position embedding, pre-norm causal
// self-attention whose mask is built from triu and masked_fill, a GELU MLP,
// residuals, a final layer norm and a linear head. ids, targets: int64
// [N, T]; forward returns the logits [N, T, vocab] and the cross-entropy
// loss. Its forward is a static graph.
struct GPTImpl : graph::nn::Module {
  static constexpr int64_t kVocab = 32, kBlock = 16, kChannels = 32, kHeads = 4;
  GPTImpl();
  std::tuple<graph::Tensor, graph::Tensor> forward(const graph::Tensor& ids, const graph::Tensor& targets);

  double attn_scale;  // 1 / sqrt(head size), a member: std::sqrt does not lower in a graph
  graph::nn::Embedding tok, pos;
  graph::nn::LayerNorm ln1, ln2, ln_f;
  graph::nn::Linear qkv, proj, fc, fc2, head;
};
GRAPH_MODULE(GPT);
