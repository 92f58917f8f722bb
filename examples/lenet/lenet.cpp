// LeNet-5 with a [[graph::static]] forward.
//
// The parameters live in the usual nn modules (and are initialized by them);
// the forward calls the functional conv2d with constant stride and padding
// rather than conv1->forward(x): Conv2d keeps them as run-time `Shape`
// members, and a graph needs attributes known at build time. With
// conv1->forward(x) the generator says
//   nn.h: warning: the argument 'stride' of 'conv2d' must be a compile-time
//   constant (a literal or a constexpr value) [-Wgraph-fallback]
// and the whole forward runs eagerly.
#include "lenet.h"

using namespace graph;

LeNetImpl::LeNetImpl()
    : conv1(register_module("conv1", nn::Conv2d(1, 6, 5, 1, 2))),
      conv2(register_module("conv2", nn::Conv2d(6, 16, 5))),
      fc1(register_module("fc1", nn::Linear(16 * 5 * 5, 120))),
      fc2(register_module("fc2", nn::Linear(120, 84))),
      fc3(register_module("fc3", nn::Linear(84, 10))) {}

[[graph::static]] Tensor LeNetImpl::forward(Tensor x) {
  x = max_pool2d(relu(conv2d(x, conv1->weight, conv1->bias, {1, 1}, {2, 2})), {2, 2});  // [N, 6, 14, 14]
  x = max_pool2d(relu(conv2d(x, conv2->weight, conv2->bias)), {2, 2});                  // [N, 16, 5, 5]
  x = x.flatten(1);
  x = relu(fc1(x));
  x = relu(fc2(x));
  return fc3(x);
}
