#pragma once
#include <graph/graph.h>

// A two-layer classifier head: softmax(linear(gelu(linear(x)))) with an
// optional temperature, as a static graph.
struct ClassifierImpl : graph::nn::Module {
  ClassifierImpl(int64_t in, int64_t hidden, int64_t classes);
  graph::Tensor forward(graph::Tensor x, double temperature);

  graph::nn::Linear fc1, fc2;
};
GRAPH_MODULE(Classifier);
