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

StepCnnImpl::StepCnnImpl(int64_t classes)
    : conv1(register_module("conv1", nn::Conv2d(1, 4, 3, 1, 1))),
      conv2(register_module("conv2", nn::Conv2d(4, 8, 3, 1, 1))),
      fc(register_module("fc", nn::Linear(8 * 4 * 4, classes))) {}

Tensor StepCnnImpl::forward(Tensor x) {
  x = max_pool2d(relu(conv1(x)), {2, 2});  // [N, 4, 4, 4]
  x = relu(conv2(x));                       // [N, 8, 4, 4]
  return fc(x.flatten(1));
}

[[graph::static]] Tensor StepCnnImpl::train_step(Tensor x, Tensor y) {
  opt->zero_grad();
  Tensor loss = cross_entropy(forward(x), y);
  loss.backward();
  opt->step();
  return loss;
}
