// Lowerable control flow, checked structurally by plugin_test.
#include <graph/graph.h>

using namespace graph;

[[graph::static]] Tensor branchy(Tensor x, bool c) {
  Tensor a = x;
  int b = 1;
  if (c) {
    a = a * 2;
    b = 3;
  } else {
    a = -a;
  }
  return a + b;
}

[[graph::static]] Tensor counted(Tensor x, int n) {
  Tensor acc = x;
  int k = 0;
  for (int i = 0; i < n; ++i) {
    acc = acc + x;
    k = k + i;
  }
  return acc * k;
}
