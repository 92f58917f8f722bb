#include "layer.h"

#include "layer_config.h"

using namespace graph;

[[graph::static]] Tensor layer(Tensor x, Tensor w, Tensor b) {
  Tensor y = matmul(x, w) + b;
  return relu(y) - relu(-y) * kLeak;
}
