#include "classifier.h"

using namespace graph;

ClassifierImpl::ClassifierImpl(int64_t in, int64_t hidden, int64_t classes)
    : fc1(register_module("fc1", nn::Linear(in, hidden))), fc2(register_module("fc2", nn::Linear(hidden, classes))) {}

[[graph::static]] Tensor ClassifierImpl::forward(Tensor x, double temperature) {
  Tensor logits = fc2(gelu(fc1(x)));
  if (temperature != 1.0) logits = logits / temperature;  // an If in the graph
  return softmax(logits, -1);
}
