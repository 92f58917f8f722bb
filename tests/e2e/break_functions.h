#pragma once
// Annotated functions with graph breaks (break_functions.cpp): a statement
// directly in the body that cannot be lowered runs eagerly between static
// regions. break_test.cpp runs each as its regions and eagerly and compares.
#include <graph/graph.h>

#include <tuple>
#include <utility>

namespace breaks {
using graph::Tensor;

// The eager islands' helpers, defined in break_test.cpp: the plugin cannot
// see their bodies, so a statement calling one is a graph break. Each call
// is counted, and observe() keeps the sum of what it saw.
void observe(const Tensor& t);
Tensor shift_eagerly(const Tensor& t, float by);
double max_abs(const Tensor& t);
std::pair<Tensor, double> scaled_pair(const Tensor& t);  // {t * 2, 0.25}

Tensor print_between(Tensor x, float s);
Tensor cout_between(Tensor x);
Tensor island_assigns(Tensor x, Tensor w);
Tensor two_islands(Tensor x, int n);
Tensor island_declares(Tensor x);
Tensor island_returns(Tensor x);
Tensor nested_if(Tensor x, bool verbose);
Tensor loop_returns(Tensor x, int n);
Tensor switch_island(Tensor x, int k);
Tensor tuples_cross(Tensor x, bool shift);
Tensor constants_cross(Tensor x);
Tensor assigned_in_island(Tensor x, bool c);

struct Scaler {
  Tensor w;
  [[graph::static]] Tensor forward(Tensor x);
};

}  // namespace breaks
