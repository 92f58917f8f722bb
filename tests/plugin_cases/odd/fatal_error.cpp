// A fatal error (a missing header) stops Clang early: the plugin writes
// nothing and does not crash on the partial translation unit.
#include <graph/graph.h>
#include "no_such_header.h"  // expect@10: fatal error: 'no_such_header.h' file not found

using namespace graph;

[[graph::static]] Tensor after_fatal_error(Tensor x) {
  return relu(x);
}
