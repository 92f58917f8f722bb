// GRAPH_EAGER_CHECK (graph/tensor.h): a void argument check called as a
// statement runs eagerly and is left out of the graph; the same annotation
// on a function that returns a value does not hide the call (a graph break).
#include <graph/graph.h>

using namespace graph;

GRAPH_EAGER_CHECK void check_two_dims(const Tensor& x);
GRAPH_EAGER_CHECK int checked_count(const Tensor& x);

[[graph::static]] Tensor checked_relu(Tensor x) {  // lowers
  check_two_dims(x);
  return relu(x);
}

[[graph::static]] Tensor checked_in_a_loop(Tensor x, int n) {  // lowers
  for (int i = 0; i < n; ++i) {
    check_two_dims(x);
    x = x * 2;
  }
  return x;
}

[[graph::static]] Tensor module_check(Tensor x) {  // lowers
  nn::detail::check_cell_input("GRUCell", 3, 4, x, Tensor(), Tensor());
  return x + 1;
}

[[graph::static]] Tensor not_void(Tensor x) {
  int n = checked_count(x);  // expect@11: the call to 'checked_count' cannot be lowered
  return x * n;  // lowers: not_void.region1
}
