// Each function uses one construct the plugin cannot lower yet. A comment
// `// expect: <text>` on a line means: a -Wgraph-fallback warning at that
// line (column given by `@col`) whose message contains <text>.
#include <graph/graph.h>

#include <cstdio>

using namespace graph;

int counter;

[[graph::static]] Tensor io(Tensor x) {
  std::printf("hi\n");  // expect@3: the call to 'printf' cannot be lowered: it is not a graph op
  return x;
}

[[graph::static]] Tensor loop_break(Tensor x, int n) {
  for (int i = 0; i < n; ++i) {
    break;  // expect@5: 'break' cannot be lowered yet
  }
  return x;
}

[[graph::static]] Tensor early_return(Tensor x, bool flag) {
  if (flag) return x;  // expect@13: an early 'return' cannot be lowered yet
  return -x;
}

[[graph::static]] Tensor pointer_param(Tensor x, const float* p) {  // expect@63: parameter 'p' has type 'const float *'
  return x;
}

[[graph::static]] int scalar_result(Tensor x) {  // expect@19: the result must be a 'graph::Tensor', not 'int'
  return 1;
}

[[graph::static]] Tensor global_int(Tensor x) {
  return x * counter;  // expect@14: 'counter' is not a local, a parameter or a global tensor
}

[[graph::static]] Tensor int_division(Tensor x, int a, int b) {
  int q = a / b;  // expect@13: integer division of host scalars cannot be lowered yet
  return x * q;
}

[[graph::static]] Tensor maybe_unassigned(Tensor x, bool flag) {
  Tensor y;
  if (flag) {
    y = x;
  }
  return y;  // expect@10: 'y' may be used before it is assigned on every path
}

[[graph::static]] Tensor dynamic_dim(Tensor x, int d) {
  return x.sum(d);  // expect@16: the dim of 'sum' must be a constant
}

// Lowerable: no warning.
[[graph::static]] Tensor fine(Tensor x) {
  return relu(x);
}
