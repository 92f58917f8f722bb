#pragma once
// Fused float32 attention on the CPU (attention_cpu.cpp): softmax(q k^T *
// scale + mask) v, blocked over queries and keys with an online softmax, so
// the [L, S] probabilities of a head never exist at once.
#include "graph/tensor.h"

namespace graph::cpu {

// q [..., L, E], k [..., S, E], v [..., S, Ev]: float32 CPU tensors whose
// batch dims broadcast to `batch`; attn_mask undefined, or bool (true keeps)
// or float32 (added), broadcastable to batch + [L, S]; is_causal keeps keys
// j <= i (top-left aligned). L, S, E, Ev > 0. Returns batch + [L, Ev],
// contiguous. A row with every key masked gives NaN, as the math path.
Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, bool is_causal,
                       double scale, const Shape& batch);

}  // namespace graph::cpu
