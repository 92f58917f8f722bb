// The static forward of tests/dist/ddp_models.h.
#include "ddp_models.h"

using namespace graph;

StaticMlpImpl::StaticMlpImpl(int64_t in, int64_t hidden, int64_t out)
    : fc1(register_module("fc1", nn::Linear(in, hidden))),
      fc2(register_module("fc2", nn::Linear(hidden, hidden))),
      fc3(register_module("fc3", nn::Linear(hidden, out))) {}

[[graph::static]] Tensor StaticMlpImpl::forward(Tensor x) {
  Tensor h = relu(fc1(x));
  h = tanh(fc2(h));
  return fc3(h);
}
