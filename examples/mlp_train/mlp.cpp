// The classifier's forward, compiled to a static graph (and its backward).
// The loss stays outside: cross_entropy runs eagerly on the logits, so the
// graph is the model alone and any loss can be tried without a rebuild.
#include "mlp.h"

using namespace graph;

MlpImpl::MlpImpl()
    : fc1(register_module("fc1", nn::Linear(2, 64))),
      fc2(register_module("fc2", nn::Linear(64, 64))),
      fc3(register_module("fc3", nn::Linear(64, 3))) {}

[[graph::static]] Tensor MlpImpl::forward(Tensor x) {
  Tensor h = relu(fc1(x));
  h = tanh(fc2(h));
  return fc3(h);
}
