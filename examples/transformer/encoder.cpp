// A Transformer encoder block with a [[graph::static]] forward.
//
// Attention is written out with scaled_dot_product_attention over the heads
// of one sequence, the heads split by reshapes to constant shapes
// ({-1, kHeads, kHeadDim}), and layer_norm called with a constant shape. The
// modules' own forwards would make the whole function fall back to eager
// (clang 19 + plugin, as of this writing):
//   attn->forward(x)  nn.h: warning: this expression (CXXTemporaryObjectExpr)
//                     cannot be lowered [-Wgraph-fallback]   (its default
//                     attn_mask = Tensor(); it also reshapes to sizes read at
//                     run time)
//   norm1(x)          nn.h: warning: the argument 'normalized_shape' of
//                     'layer_norm' must be a compile-time constant
// The parameters still live in (and are initialized by) those modules.
#include "encoder.h"

using namespace graph;

EncoderBlockImpl::EncoderBlockImpl()
    : q_proj(register_module("q_proj", nn::Linear(kModel, kModel))),
      k_proj(register_module("k_proj", nn::Linear(kModel, kModel))),
      v_proj(register_module("v_proj", nn::Linear(kModel, kModel))),
      out_proj(register_module("out_proj", nn::Linear(kModel, kModel))),
      ffn1(register_module("ffn1", nn::Linear(kModel, kHidden))),
      ffn2(register_module("ffn2", nn::Linear(kHidden, kModel))),
      norm1(register_module("norm1", nn::LayerNorm(Shape{kModel}))),
      norm2(register_module("norm2", nn::LayerNorm(Shape{kModel}))) {}

[[graph::static]] Tensor EncoderBlockImpl::forward(Tensor x) {
  // [L, kModel] -> [kHeads, L, kHeadDim]
  Tensor q = q_proj(x).reshape({-1, kHeads, kHeadDim}).transpose(0, 1);
  Tensor k = k_proj(x).reshape({-1, kHeads, kHeadDim}).transpose(0, 1);
  Tensor v = v_proj(x).reshape({-1, kHeads, kHeadDim}).transpose(0, 1);
  Tensor attended = scaled_dot_product_attention(q, k, v).transpose(0, 1).reshape({-1, kModel});
  x = layer_norm(x + out_proj(attended), {kModel}, norm1->weight, norm1->bias, 1e-5);
  Tensor hidden = ffn2(gelu(ffn1(x)));
  return layer_norm(x + hidden, {kModel}, norm2->weight, norm2->bias, 1e-5);
}
