// The static part of the example: MindSpore's ms_function example in C++.
#include "add_and_relu.h"

using namespace graph;

[[graph::static]] Tensor add_and_relu(Tensor x, Tensor y) {
  x = x + y;
  x = relu(x);
  return x;
}
