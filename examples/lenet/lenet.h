#pragma once
#include <graph/graph.h>

// LeNet-5 for 1x28x28 images: conv(1->6, 5x5, pad 2) relu pool, conv(6->16,
// 5x5) relu pool, then 400 -> 120 -> 84 -> 10. Its forward is a static graph.
struct LeNetImpl : graph::nn::Module {
  LeNetImpl();
  graph::Tensor forward(graph::Tensor x);  // x [N, 1, 28, 28] -> logits [N, 10]

  graph::nn::Conv2d conv1, conv2;
  graph::nn::Linear fc1, fc2, fc3;
};
GRAPH_MODULE(LeNet);
