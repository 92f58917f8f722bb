// The static forward of the model suite's message-passing network (mpnn.h),
// lowered with -Werror=graph-fallback (tests/model_graph.cmake).
#include "mpnn.h"

namespace model_graph {
namespace nn = graph::nn;

MPNNImpl::MPNNImpl(int64_t features, int64_t hidden, int64_t classes)
    : msg(register_module("msg", nn::Linear(features, hidden))),
      self_lin(register_module("self_lin", nn::Linear(features, hidden))),
      readout(register_module("readout", nn::Linear(hidden, classes))) {}

[[graph::static]] Tensor MPNNImpl::forward(const Tensor& x, const Tensor& edges) {
  Tensor src = edges.select(0, 0), dst = edges.select(0, 1);
  Tensor xs = gather(x, 0, src.unsqueeze(1).expand({-1, x.size(1)}));  // [E, F]: each edge's source
  Tensor m = relu(msg(xs));                                               // [E, H]
  Tensor h = tanh(self_lin(x).scatter_add(0, dst.unsqueeze(1).expand({-1, m.size(1)}), m));  // [N, H]
  return readout(h.mean(0));
}

}  // namespace model_graph
