// Included by attributes.cpp: an annotated function defined in a header
// cannot be rewritten in one source file.
#pragma once
#include <graph/graph.h>

[[graph::static]] inline graph::Tensor defined_in_header(graph::Tensor x) {  // expect@40: annotated functions defined in headers cannot be rewritten yet
  return graph::relu(x);
}

// Declared here, defined (and lowered) in attributes.cpp.
[[graph::static]] graph::Tensor declared_in_header(graph::Tensor x);
