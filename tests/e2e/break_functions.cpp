// Annotated functions with graph breaks (break_functions.h). The plugin
// warns at each eager statement (-Wgraph-fallback: "... it runs eagerly
// between two static regions"); the regions are compiled graphs.
#include "break_functions.h"

#include <cstdio>
#include <iostream>

namespace breaks {
using namespace graph;

// printf between two regions; y crosses the break.
[[graph::static]] Tensor print_between(Tensor x, float s) {
  Tensor y = relu(x) * s + 1;
  std::printf("graph break: y has %lld elements\n", static_cast<long long>(y.numel()));
  Tensor z = tanh(y) * x;
  return z * 2 - y;
}

// std::cout (an operator<< call) between two regions.
[[graph::static]] Tensor cout_between(Tensor x) {
  Tensor y = exp(x) - 1;
  std::cout << "graph break: cout between regions" << std::endl;
  return y * x + y;
}

// The island assigns a tensor the next region reads.
[[graph::static]] Tensor island_assigns(Tensor x, Tensor w) {
  Tensor y = matmul(x, w);
  y = shift_eagerly(y, 0.5f);
  int k = 3;
  k = k + 1;
  return relu(y) * k;
}

// Two islands, three regions; a parameter assigned in a region crosses the
// second break.
[[graph::static]] Tensor two_islands(Tensor x, int n) {
  Tensor a = sigmoid(x) * n;
  observe(a);
  Tensor b = a * a + x;
  n = n + 1;
  observe(b);
  return b - a * n;
}

// Islands declare a tensor and a scalar the last region reads.
[[graph::static]] Tensor island_declares(Tensor x) {
  Tensor y = x * 3;
  Tensor shifted = shift_eagerly(y, -1.0f);
  double m = max_abs(y);
  return shifted / m + y;
}

// The function returns from the island.
[[graph::static]] Tensor island_returns(Tensor x) {
  Tensor y = relu(x) + 1;
  return shift_eagerly(y, 2.0f) * x;
}

// A member function: the regions read the member through `this`.
[[graph::static]] Tensor Scaler::forward(Tensor x) {
  Tensor y = x * w;
  observe(y);
  return y + w;
}

}  // namespace breaks
