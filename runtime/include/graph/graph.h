#pragma once
// cxxgraph: eager tensors you can debug line by line, and static graphs with
// fused kernels where you ask for them.
//
//   #include <graph/graph.h>
//   using graph::Tensor;
//
//   [[graph::static]] Tensor add_and_relu(Tensor y, Tensor b) {
//     return graph::relu(y + b);      // one fused loop when built with the plugin
//   }
//
//   int main() {
//     Tensor y = graph::full({4, 4}, -0.5f), b = graph::ones({4});
//     Tensor eager = graph::relu(y + b);   // runs op by op
//     Tensor fused = add_and_relu(y, b);   // runs the compiled graph
//   }
//
// Build with cxxgraph_static_graphs(<target>) (see README). Without the plugin
// the attribute is ignored and everything runs eagerly.
#include "graph/error.h"
#include "graph/autograd.h"
#include "graph/nn.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "graph/optim.h"
#include "graph/static.h"
#include "graph/tensor.h"
#include "graph/trace.h"
