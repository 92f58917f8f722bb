#pragma once
// Annotated functions compiled by the plugin for the end-to-end tests. Each
// is also called eagerly (graph::set_mode(Mode::Eager)) and compared.
#include <graph/graph.h>

#include <tuple>
#include <vector>

namespace e2e {
using graph::Tensor;

extern Tensor G_W1, G_W2, G_b;  // globals read by seed_model_globals

Tensor seed_model(Tensor X, int flag, Tensor W1, Tensor W2, Tensor b);
Tensor seed_model_globals(Tensor X, int flag);
Tensor rnn_step(Tensor x, Tensor prev_h, Tensor W_h, Tensor w_x);
Tensor chain8(Tensor x, Tensor y);
Tensor attend(Tensor q, Tensor k, Tensor v, Tensor mask);
Tensor for_loop(Tensor x, int n);
Tensor while_loop(Tensor x);
Tensor if_scalar(Tensor x, bool flag);
Tensor if_else_assign(Tensor x, double threshold);
Tensor reductions(Tensor x);
Tensor above_row_mean(Tensor x);
Tensor nested_control(Tensor x, int n);
Tensor falls_back(Tensor x);

// Issue 5: views and attribute ops, early exits, lists, tuples, modules.
Tensor views_and_attrs(Tensor x);
Tensor nn_functional(Tensor x, Tensor w, Tensor b);
Tensor early_exits(Tensor x, int n);
Tensor break_continue(Tensor x, int n);
Tensor sum_list(const std::vector<Tensor>& xs, Tensor init);
std::vector<Tensor> running_sums(const std::vector<Tensor>& xs);
std::tuple<Tensor, Tensor, int> tuple_result(Tensor x, int n);
std::tuple<Tensor, Tensor, Tensor> lend_aliases(Tensor x, const Tensor& y);

struct MLPImpl : graph::nn::Module {
  MLPImpl();
  Tensor forward(Tensor x);
  graph::nn::Linear fc1, fc2;
  double scale = 1.5;
};
}  // namespace e2e
