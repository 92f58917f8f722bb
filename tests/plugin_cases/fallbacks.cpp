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

[[graph::static]] Tensor uses_try(Tensor x) {
  try {  // expect@3: 'try' blocks cannot be lowered
    x = x + 1;
  } catch (...) {
  }
  return x;
}

[[graph::static]] Tensor unsigned_dim(Tensor x, double d) {
  return softmax(x, static_cast<unsigned>(d));  // expect@21: the conversion from 'unsigned int' to 'int64_t' cannot be lowered yet
}

[[graph::static]] Tensor pointer_param(Tensor x, const float* p) {  // expect@63: parameter 'p' has type 'const float *'
  return x;
}

[[graph::static]] Tensor* pointer_result(Tensor x) {  // expect@19: the result must be a 'graph::Tensor', not 'Tensor *'
  return nullptr;
}

[[graph::static]] Tensor global_int(Tensor x) {
  return x * counter;  // expect@14: 'counter' is not a local, a parameter or a global tensor
}

[[graph::static]] Tensor narrowing(Tensor x, int64_t a) {
  short q = static_cast<short>(a);  // expect@32: the conversion from 'int64_t' to 'short' may change the value
  return x * q;
}

[[graph::static]] Tensor maybe_unassigned(Tensor x, bool flag) {
  Tensor y;
  if (flag) {
    y = x;
  }
  return y;  // expect@10: 'y' is used here but is not assigned on every path
}

[[graph::static]] Tensor dynamic_shape(Tensor x, Tensor y) {
  return x.reshape(y.sizes());  // lowers: reshape{shape="@1"}(x, tensor_sizes(y))
}

Shape opaque_shape();

[[graph::static]] Tensor opaque_dynamic_shape(Tensor x) {
  return x.reshape(opaque_shape());  // expect@20: the argument 'shape' of 'reshape' must be a constant, a host scalar
}

// Lowerable: no warning.
[[graph::static]] Tensor fine(Tensor x) {
  return relu(x);
}

// Training with running stats updates them in place: eager, with a warning.
[[graph::static]] Tensor batch_norm_training(Tensor x, Tensor rm, Tensor rv) {
  return batch_norm(x, rm, rv, Tensor(), Tensor(), true);  // expect@10: 'batch_norm' in training mode updates 'running_mean'
}

[[graph::static]] Tensor batch_norm_host_training(Tensor x, Tensor rm, Tensor rv, bool training) {
  return batch_norm(x, rm, rv, Tensor(), Tensor(), training);  // expect@10: which a graph cannot express
}
