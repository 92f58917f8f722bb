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

// Nested in an `if`: the whole `if` is the island; it reads and assigns y.
[[graph::static]] Tensor nested_if(Tensor x, bool verbose) {
  Tensor y = relu(x) * 2;
  double scale = 0.5;
  if (verbose) {
    observe(y);
    y = y + 1;
    scale = 2.0;
  }
  return y * x * scale;
}

// Nested in a loop: the loop is the island; it may return from the function.
[[graph::static]] Tensor loop_returns(Tensor x, int n) {
  Tensor y = x * 0.5f;
  for (int i = 0; i < n; ++i) {
    y = shift_eagerly(y, 1.0f);
    if (i == 2) return y * 10;
  }
  return y + x;
}

// Nested in a `switch`, followed by a block: one eager stretch.
[[graph::static]] Tensor switch_island(Tensor x, int k) {
  Tensor y = exp(x) - 1;
  int extra = 0;
  switch (k) {
    case 0:
      observe(y);
      y = y * 3;
      break;
    case 1:
      return shift_eagerly(y, 4.0f);
    default:
      extra = k;
  }
  {
    Tensor z = shift_eagerly(y, 0.25f);
    y = z * 2;
  }
  return y + x * extra;
}

// Tuples, pairs and structured bindings crossing breaks both ways: defined in
// a region and read in the island and after it, defined in the island and
// read by the next region, assigned in a nested island.
[[graph::static]] Tensor tuples_cross(Tensor x, bool shift) {
  std::tuple<Tensor, int> t{relu(x), 3};
  auto [a, b] = std::make_pair(x * 2, 1.5);
  observe(a);
  std::pair<Tensor, double> p = scaled_pair(a);
  Tensor c = p.first * p.second + std::get<0>(t);
  if (shift) t = std::make_tuple(shift_eagerly(std::get<0>(t), 1.0f), 4);
  return std::get<0>(t) * std::get<1>(t) + a * b + c;
}

// Constants used in constant expressions after a break stay constants.
[[graph::static]] Tensor constants_cross(Tensor x) {
  constexpr int kIndex = 1;
  static const int kScale = 3;
  const int kTwice = kScale * 2;
  std::tuple<Tensor, Tensor> t{x, x * 2};
  observe(x);
  static_assert(kIndex == 1 && kTwice == 6, "constants after a break");
  return std::get<kIndex>(t) * kScale + std::get<kTwice - 6>(t);
}

// Declared before the island, assigned on each path of it, read after it.
[[graph::static]] Tensor assigned_in_island(Tensor x, bool c) {
  Tensor y;
  int n = 3;
  if (c) {
    y = shift_eagerly(x, 1.0f) * n;
  } else {
    y = x - n;
  }
  return y * x;
}

}  // namespace breaks
