// Static train steps (train_step_functions.cpp, lowered by the plugin): a
// member function holding a loss, loss.backward() and, in `train_step`, the
// optimizer's zero_grad() and step() (in the same graph).
#pragma once

#include <graph/graph.h>
#include <graph/optim.h>

namespace ts {

struct MLPImpl : graph::nn::Module {
  MLPImpl(int64_t in, int64_t hidden, int64_t out);
  graph::Tensor forward(graph::Tensor x) { return fc2(graph::relu(fc1(x))); }
  // cross_entropy(forward(x), y), its backward into the parameters' .grad.
  graph::Tensor loss_step(graph::Tensor x, graph::Tensor y);
  // The whole step: opt->zero_grad(), loss_step's body, opt->step().
  graph::Tensor train_step(graph::Tensor x, graph::Tensor y);
  // The same with `if (do_step) opt->step();` (a graph break, warned).
  graph::Tensor step_in_if(graph::Tensor x, graph::Tensor y, bool do_step);
  // mse_loss(forward(x), y) and its backward (float64 finite differences).
  graph::Tensor mse_step(graph::Tensor x, graph::Tensor y);
  graph::nn::Linear fc1, fc2;
  graph::optim::Optimizer* opt = nullptr;
};
GRAPH_MODULE(MLP);

}  // namespace ts
