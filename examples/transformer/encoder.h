#pragma once
#include <graph/graph.h>

// A Transformer encoder block (post-norm, as PyTorch's TransformerEncoderLayer):
//   x = layer_norm(x + self_attention(x)); x = layer_norm(x + ffn(x))
// over one sequence x [L, kModel]. Its forward is a static graph.
struct EncoderBlockImpl : graph::nn::Module {
  static constexpr int64_t kModel = 64, kHeads = 4, kHidden = 256;
  EncoderBlockImpl();
  graph::Tensor forward(graph::Tensor x);

  graph::nn::MultiheadAttention attn;
  graph::nn::Linear ffn1, ffn2;
  graph::nn::LayerNorm norm1, norm2;
};
GRAPH_MODULE(EncoderBlock);
