#pragma once
// The models tests/dist/ddp_test.cpp trains: the same MLP with an eager
// forward, with a [[graph::static]] one (ddp_models.cpp, compiled by the
// plugin: its backward is the generated static backward), and with a whole
// static train step.
#include <graph/graph.h>
#include <graph/optim.h>

struct MlpImpl : graph::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out)
      : fc1(register_module("fc1", graph::nn::Linear(in, hidden))),
        fc2(register_module("fc2", graph::nn::Linear(hidden, hidden))),
        fc3(register_module("fc3", graph::nn::Linear(hidden, out))) {}
  graph::Tensor forward(graph::Tensor x) { return fc3(graph::tanh(fc2(graph::relu(fc1(x))))); }
  graph::nn::Linear fc1, fc2, fc3;
};
GRAPH_MODULE(Mlp);

struct StaticMlpImpl : graph::nn::Module {
  StaticMlpImpl(int64_t in, int64_t hidden, int64_t out);
  graph::Tensor forward(graph::Tensor x);  // [[graph::static]]
  graph::nn::Linear fc1, fc2, fc3;
};
GRAPH_MODULE(StaticMlp);

// The MLP with an eager forward and a whole static train step: zero_grad,
// forward, cross-entropy, backward and step in one [[graph::static]] member.
struct StepMlpImpl : graph::nn::Module {
  StepMlpImpl(int64_t in, int64_t hidden, int64_t out);
  graph::Tensor forward(graph::Tensor x);
  graph::Tensor train_step(graph::Tensor x, graph::Tensor y);  // [[graph::static]]
  graph::nn::Linear fc1, fc2, fc3;
  graph::optim::SGD* opt = nullptr;
};
GRAPH_MODULE(StepMlp);

// A small CNN on [N, 1, 8, 8] images: conv 3x3 (4 channels) -> relu ->
// max_pool 2 -> conv 3x3 (8 channels) -> relu -> flatten -> linear. An eager
// forward and a whole static train step, as StepMlp.
struct StepCnnImpl : graph::nn::Module {
  explicit StepCnnImpl(int64_t classes);
  graph::Tensor forward(graph::Tensor x);
  graph::Tensor train_step(graph::Tensor x, graph::Tensor y);  // [[graph::static]]
  graph::nn::Conv2d conv1, conv2;
  graph::nn::Linear fc;
  graph::optim::SGD* opt = nullptr;
};
GRAPH_MODULE(StepCnn);
