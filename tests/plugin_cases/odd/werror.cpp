// -Werror=graph-fallback: every fallback is an error, and a file with errors
// gets no outputs at all.
// flags: -Werror=graph-fallback
#include <graph/graph.h>

#include <cstdio>

using namespace graph;

[[graph::static]] Tensor fine(Tensor x) { return relu(x); }

[[graph::static]] Tensor falls_back(Tensor x) {
  std::puts("hi");  // expect@3: error: the call to 'puts' cannot be lowered: it is not a graph op; it runs eagerly before a static region
  return x;
}

// A break around a nested statement is an error too.
[[graph::static]] Tensor nested_break(Tensor x, bool verbose) {
  Tensor y = x * 2;
  if (verbose) std::puts("y");  // expect@16: error: the call to 'puts' cannot be lowered: it is not a graph op; the 'if' statement at line 20 that contains it runs eagerly between two static regions
  return y + x;
}
