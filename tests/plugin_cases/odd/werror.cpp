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
