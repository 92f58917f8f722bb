// A Transformer encoder block with a [[graph::static]] forward, written with
// the modules as in LibTorch: nn::MultiheadAttention (its forward reshapes to
// sizes read at run time and takes an optional mask, undefined here),
// nn::LayerNorm (its normalized_shape a run-time attribute) and nn::Linear.
#include "encoder.h"

using namespace graph;

EncoderBlockImpl::EncoderBlockImpl()
    : attn(register_module("attn", nn::MultiheadAttention(kModel, kHeads))),
      ffn1(register_module("ffn1", nn::Linear(kModel, kHidden))),
      ffn2(register_module("ffn2", nn::Linear(kHidden, kModel))),
      norm1(register_module("norm1", nn::LayerNorm(Shape{kModel}))),
      norm2(register_module("norm2", nn::LayerNorm(Shape{kModel}))) {}

[[graph::static]] Tensor EncoderBlockImpl::forward(Tensor x) {
  // x [L, kModel]: one sequence, a batch of one for the batch-first attention
  Tensor attended = attn(x.unsqueeze(0)).squeeze(0);
  x = norm1(x + attended);
  return norm2(x + ffn2(gelu(ffn1(x))));
}
