#pragma once
#include <graph/graph.h>

// One step of the seed's RNN: x [1, I], prev_h [1, H], W_h [H, H], w_x [H, I]
// -> the new hidden state [H, 1].
graph::Tensor rnn_step(graph::Tensor x, graph::Tensor prev_h, graph::Tensor W_h, graph::Tensor w_x);
