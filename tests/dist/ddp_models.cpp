// The static forward and the static train step of tests/dist/ddp_models.h.
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

StepMlpImpl::StepMlpImpl(int64_t in, int64_t hidden, int64_t out)
    : fc1(register_module("fc1", nn::Linear(in, hidden))),
      fc2(register_module("fc2", nn::Linear(hidden, hidden))),
      fc3(register_module("fc3", nn::Linear(hidden, out))) {}

Tensor StepMlpImpl::forward(Tensor x) { return fc3(tanh(fc2(relu(fc1(x))))); }

[[graph::static]] Tensor StepMlpImpl::train_step(Tensor x, Tensor y) {
  opt->zero_grad();
  Tensor loss = cross_entropy(forward(x), y);
  loss.backward();
  opt->step();
  return loss;
}
