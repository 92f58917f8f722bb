#include "gpt.h"

#include <cmath>

using namespace graph;

GPTImpl::GPTImpl()
    : attn_scale(1.0 / std::sqrt(double(kChannels / kHeads))),
      tok(register_module("tok", nn::Embedding(kVocab, kChannels))),
      pos(register_module("pos", nn::Embedding(kBlock, kChannels))),
      ln1(register_module("ln1", nn::LayerNorm(Shape{kChannels}))),
      ln2(register_module("ln2", nn::LayerNorm(Shape{kChannels}))),
      ln_f(register_module("ln_f", nn::LayerNorm(Shape{kChannels}))),
      qkv(register_module("qkv", nn::Linear(kChannels, 3 * kChannels))),
      proj(register_module("proj", nn::Linear(kChannels, kChannels))),
      fc(register_module("fc", nn::Linear(kChannels, 4 * kChannels))),
      fc2(register_module("fc2", nn::Linear(4 * kChannels, kChannels))),
      head(register_module("head", nn::Linear(kChannels, kVocab))) {}

[[graph::static]] std::tuple<Tensor, Tensor> GPTImpl::forward(const Tensor& ids, const Tensor& targets) {
  constexpr int64_t C = kChannels, H = kHeads, D = C / H;
  const int64_t N = ids.size(0), T = ids.size(1);
  Tensor x = tok(ids) + pos(arange(T));
  Tensor qkv_out = qkv(ln1(x));
  Tensor q = qkv_out.slice(2, 0, C).reshape({N, T, H, D}).transpose(1, 2);  // [N, H, T, D]
  Tensor k = qkv_out.slice(2, C, 2 * C).reshape({N, T, H, D}).transpose(1, 2);
  Tensor v = qkv_out.slice(2, 2 * C, 3 * C).reshape({N, T, H, D}).transpose(1, 2);
  Tensor att = matmul(q, k.transpose(-2, -1)) * attn_scale;
  att = softmax(att.masked_fill(triu(ones({T, T}, kBool), 1), -INFINITY), -1);  // no look at later tokens
  x = x + proj(matmul(att, v).transpose(1, 2).reshape({N, T, C}));
  x = x + fc2(gelu(fc(ln2(x))));
  Tensor logits = head(ln_f(x));
  return {logits, cross_entropy(logits.reshape({-1, kVocab}), targets.reshape({-1}))};
}
