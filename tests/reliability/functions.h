#pragma once
// Annotated functions for the reliability tests: called from many threads
// (concurrency_functions.cpp), failing inside their graphs
// (error_functions.cpp), and fed NaN and infinity (number_functions.cpp).
#include <graph/graph.h>

namespace rel {
using graph::Tensor;

// concurrency_functions.cpp
Tensor layer(Tensor x, Tensor W, Tensor b);
Tensor iterate(Tensor x, int n);
Tensor first_call_a(Tensor x);
Tensor first_call_b(Tensor x);

// error_functions.cpp: each fails on the line marked "@<function name>".
Tensor bad_matmul(Tensor a, Tensor b);
Tensor bad_broadcast(Tensor x, Tensor y);
Tensor bad_broadcast_partial(Tensor x, Tensor y);
Tensor disjoint_shapes(Tensor x, Tensor y, Tensor z);  // not an error
Tensor bad_dtype(Tensor x, Tensor w);
Tensor ambiguous_if(Tensor x);
Tensor ambiguous_while(Tensor x);

// number_functions.cpp
Tensor relu_of(Tensor x);
Tensor tanh_of(Tensor x);
Tensor exp_of(Tensor x);
Tensor sigmoid_of(Tensor x);
Tensor divide(Tensor x, Tensor y);
Tensor less(Tensor x, Tensor y);
Tensor not_equal(Tensor x, Tensor y);
Tensor equal(Tensor x, Tensor y);
Tensor total(Tensor x);
Tensor mixed_chain(Tensor x, Tensor y);
}  // namespace rel
