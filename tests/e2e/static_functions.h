#pragma once
// Annotated functions compiled by the plugin for the end-to-end tests. Each
// is also called eagerly (graph::set_mode(Mode::Eager)) and compared.
#include <graph/graph.h>

namespace e2e {
using graph::Tensor;

extern Tensor G_W1, G_W2, G_b;  // globals read by seed_model_globals

Tensor seed_model(Tensor X, int flag, Tensor W1, Tensor W2, Tensor b);
Tensor seed_model_globals(Tensor X, int flag);
Tensor rnn_step(Tensor x, Tensor prev_h, Tensor W_h, Tensor w_x);
Tensor chain8(Tensor x, Tensor y);
Tensor for_loop(Tensor x, int n);
Tensor while_loop(Tensor x);
Tensor if_scalar(Tensor x, bool flag);
Tensor if_else_assign(Tensor x, double threshold);
Tensor reductions(Tensor x);
Tensor above_row_mean(Tensor x);
Tensor nested_control(Tensor x, int n);
Tensor falls_back(Tensor x);
}  // namespace e2e
