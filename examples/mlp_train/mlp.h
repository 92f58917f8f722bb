#pragma once
#include <graph/graph.h>

// A 2 -> 64 -> 64 -> 3 classifier whose forward is a static graph. Called
// with parameters that require grad, the compiled forward is one node on the
// eager tape and its backward is the backward graph generated at build time.
struct MlpImpl : graph::nn::Module {
  MlpImpl();
  graph::Tensor forward(graph::Tensor x);  // x [N, 2] -> logits [N, 3]

  graph::nn::Linear fc1, fc2, fc3;
};
GRAPH_MODULE(Mlp);
