#pragma once
// The model suite's graph model (issue 19): one message-passing layer over an
// int64 edge list [2, E] — each edge's message is a linear layer of its
// source node's features (gather), summed into its target node (scatter_add)
// on top of a linear map of the node itself — then a mean readout.
#include <graph/graph.h>

namespace model_graph {
using graph::Tensor;

struct MPNNImpl : graph::nn::Module {
  MPNNImpl(int64_t features, int64_t hidden, int64_t classes);
  // x [N, F] float, edges [2, E] int64 (row 0 sources, row 1 targets) -> [C].
  Tensor forward(const Tensor& x, const Tensor& edges);
  graph::nn::Linear msg, self_lin, readout;
};
GRAPH_MODULE(MPNN);

}  // namespace model_graph
