// Annotated functions fed NaN and infinities: their compiled graphs must give
// what their eager bodies give, element for element.
#include "functions.h"

namespace rel {
using namespace graph;

[[graph::static]] Tensor relu_of(Tensor x) { return relu(x); }
[[graph::static]] Tensor tanh_of(Tensor x) { return tanh(x); }
[[graph::static]] Tensor exp_of(Tensor x) { return exp(x); }
[[graph::static]] Tensor sigmoid_of(Tensor x) { return sigmoid(x); }
[[graph::static]] Tensor divide(Tensor x, Tensor y) { return x / y; }
[[graph::static]] Tensor less(Tensor x, Tensor y) { return x < y; }
[[graph::static]] Tensor not_equal(Tensor x, Tensor y) { return x != y; }
[[graph::static]] Tensor equal(Tensor x, Tensor y) { return x == y; }
[[graph::static]] Tensor total(Tensor x) { return x.sum() + x.mean(0); }

// Several ops in one fused loop, so special values pass between fused ops.
[[graph::static]] Tensor mixed_chain(Tensor x, Tensor y) {
  Tensor t = exp(x) - exp(y);
  t = t / (x - y);
  return sigmoid(relu(t) * -1.0f) + tanh(t);
}

}  // namespace rel
