// Annotated functions that fail inside their compiled graphs. The failing
// line of each carries the marker "@<function name>": the tests find that
// line here and expect it in the error message.
#include "functions.h"

namespace rel {
using namespace graph;

[[graph::static]] Tensor bad_matmul(Tensor a, Tensor b) {
  Tensor c = relu(a);
  return matmul(c, b) * 2.0f;  // @bad_matmul
}

// The failing op is the third of one fused loop: the error names it and its
// line, not the loop's first op.
[[graph::static]] Tensor bad_broadcast(Tensor x, Tensor y) {
  Tensor t = x * 2.0f;
  t = relu(t);
  t = t + y;  // @bad_broadcast
  return tanh(t);
}

// The fused loop has two outputs, `a` reading only x: when shapes disagree
// it runs op by op, and the op that fails names itself.
[[graph::static]] Tensor bad_broadcast_partial(Tensor x, Tensor y) {
  Tensor a = relu(x);
  Tensor b = a * y;  // @bad_broadcast_partial
  return matmul(a, b.t());
}

// Not an error: one fused loop whose two outputs have shapes ([2] and [3])
// that do not broadcast with each other, while each op's operands do.
[[graph::static]] Tensor disjoint_shapes(Tensor x, Tensor y, Tensor z) {
  Tensor a = relu(x);
  Tensor r1 = a + y;
  Tensor r2 = a * z;
  return r1.sum() + r2.sum();
}

// matmul of a bool mask: a dtype error.
[[graph::static]] Tensor bad_dtype(Tensor x, Tensor w) {
  Tensor mask = x > 0.0f;
  return matmul(mask, w);  // @bad_dtype
}

// `if` on a tensor with more than one element.
[[graph::static]] Tensor ambiguous_if(Tensor x) {
  Tensor y = x;
  if (x > 0.0f) {  // @ambiguous_if
    y = y + 1.0f;
  }
  return y;
}

[[graph::static]] Tensor ambiguous_while(Tensor x) {
  Tensor y = x;
  while (y < 10.0f) {  // @ambiguous_while
    y = y * 2.0f;
  }
  return y;
}

}  // namespace rel
