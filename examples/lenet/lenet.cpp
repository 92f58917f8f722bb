// LeNet-5 with a [[graph::static]] forward, written as in LibTorch: the
// modules' own forwards (conv1(x), fc1(x)). Conv2d keeps its stride and
// padding as `Shape` members; the graph reads them at each call (run-time
// attributes, docs/user-guide.md, "What [[graph::static]] accepts today"), so a change
// to conv1->padding after construction is seen by the next call.
#include "lenet.h"

using namespace graph;

LeNetImpl::LeNetImpl()
    : conv1(register_module("conv1", nn::Conv2d(1, 6, 5, 1, 2))),
      conv2(register_module("conv2", nn::Conv2d(6, 16, 5))),
      fc1(register_module("fc1", nn::Linear(16 * 5 * 5, 120))),
      fc2(register_module("fc2", nn::Linear(120, 84))),
      fc3(register_module("fc3", nn::Linear(84, 10))) {}

[[graph::static]] Tensor LeNetImpl::forward(Tensor x) {
  x = max_pool2d(relu(conv1(x)), {2, 2});  // [N, 6, 14, 14]
  x = max_pool2d(relu(conv2(x)), {2, 2});  // [N, 16, 5, 5]
  x = x.flatten(1);
  x = relu(fc1(x));
  x = relu(fc2(x));
  return fc3(x);
}
