// The model suite's GPT-style block (model_functions.h).
#include <cmath>

#include "model_functions.h"

namespace models {
using namespace graph;

GPTBlockImpl::GPTBlockImpl(int64_t vocab, int64_t block_size, int64_t channels, int64_t heads)
    : heads(heads),
      attn_scale(1.0 / std::sqrt(static_cast<double>(channels / heads))),
      tok(register_module("tok", nn::Embedding(vocab, channels))),
      pos(register_module("pos", nn::Embedding(block_size, channels))),
      ln1(register_module("ln1", nn::LayerNorm(Shape{channels}))),
      qkv(register_module("qkv", nn::Linear(channels, 3 * channels))),
      proj(register_module("proj", nn::Linear(channels, channels))),
      ln2(register_module("ln2", nn::LayerNorm(Shape{channels}))),
      fc(register_module("fc", nn::Linear(channels, 4 * channels))),
      fc2(register_module("fc2", nn::Linear(4 * channels, channels))),
      ln_f(register_module("ln_f", nn::LayerNorm(Shape{channels}))),
      head(register_module("head", nn::Linear(channels, vocab))) {}

[[graph::static]] std::tuple<Tensor, Tensor> GPTBlockImpl::forward(const Tensor& ids, const Tensor& targets) {
  const int64_t N = ids.size(0), T = ids.size(1), C = tok->weight.size(1), D = C / heads;
  Tensor x = tok(ids) + pos(arange(T));
  Tensor qkv_out = qkv(ln1(x));
  Tensor q = qkv_out.slice(2, 0, C).reshape({N, T, heads, D}).transpose(1, 2);  // [N, H, T, D]
  Tensor k = qkv_out.slice(2, C, 2 * C).reshape({N, T, heads, D}).transpose(1, 2);
  Tensor v = qkv_out.slice(2, 2 * C, 3 * C).reshape({N, T, heads, D}).transpose(1, 2);
  Tensor att = matmul(q, k.transpose(-2, -1)) * attn_scale;
  const Tensor mask = triu(ones({T, T}, kBool), 1);  // true above the diagonal: the future
  att = softmax(att.masked_fill(mask, -INFINITY), -1);
  Tensor y = matmul(att, v).transpose(1, 2).reshape({N, T, C});
  x = x + proj(y);
  x = x + fc2(gelu(fc(ln2(x))));
  Tensor logits = head(ln_f(x));
  return {logits, cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}))};
}

}  // namespace models
