// Views and ops with attributes: the Tensor parameters of a GRAPH_OP
// declaration are inputs, every other parameter is the attribute of the same
// name: a compile-time constant, or a host value read at run time (a scalar,
// a braced list of host ints, a list member).
#include <graph/graph.h>

using namespace graph;

constexpr int kDim = 1;

[[graph::static]] Tensor transposes(Tensor x) {  // lowers
  return x.transpose(0, 1).t().permute({1, 0}) + x.t();
}

[[graph::static]] Tensor reshapes(Tensor x) {  // lowers
  Tensor y = x.reshape({-1}).view({2, -1});
  return y.unsqueeze(0).expand({3, -1, -1}).flatten(1).flatten().squeeze();
}

[[graph::static]] Tensor slices(Tensor x) {  // lowers
  return x.slice(1, 0, 2) * x.slice(kDim, 1, 3, 1) + x.slice(-1, 0, 4, 2).squeeze(0);
}

[[graph::static]] Tensor reductions_with_attributes(Tensor x) {  // lowers
  Tensor a = x.amax({kDim}, true) - amin(x, {0, 1});
  Tensor b = argmax(x, 1, true) + x.sum(Shape{0}) + mean(x, {0, 1}, false) + x.argmax(0);
  return softmax(x, kDim) + log_softmax(x, -1) + a + b.sum();
}

[[graph::static]] Tensor nn_ops(Tensor x, Tensor w, Tensor b, Tensor g) {  // lowers
  Tensor y = linear(x, w, b) + linear(x, w);
  Tensor n = layer_norm(y, {4}, g, b, 1e-6) + layer_norm(y, {4});
  return where(n > 0, n, y) + mse_loss(n, y);
}

[[graph::static]] Tensor conv_and_pool(Tensor x, Tensor w) {  // lowers
  Tensor y = conv2d(x, w, Tensor(), {1, 1}, {1, 1});
  return max_pool2d(y, {2, 2}) + avg_pool2d(y, {2, 2}, {2, 2}, {0, 0});
}

[[graph::static]] Tensor runtime_dim(Tensor x, int d) {  // lowers
  return softmax(x, d);  // an attribute read at run time: softmax{dim="@1"}(x, d)
}

[[graph::static]] Tensor runtime_shape(Tensor x, Tensor y) {
  return x.reshape(y.sizes());  // expect@20: the argument 'shape' of 'reshape' must be a constant, a host scalar, a braced list of host integers or a member holding the list (read at each call)
}

[[graph::static]] Tensor runtime_slice(Tensor x, int n) {  // lowers
  return x.slice(0, 0, n);
}

[[graph::static]] Tensor runtime_keepdim(Tensor x, bool k) {  // lowers
  return x.sum(1, k);
}

[[graph::static]] Tensor float_dim(Tensor x, double d) {
  return softmax(x, d);  // expect@21: the conversion from 'double' to 'int64_t' cannot be lowered yet
}

[[graph::static]] Tensor not_an_op(Tensor x) {
  return x.contiguous();  // expect@12: the call to 'graph::Tensor::contiguous' cannot be lowered: it is not a graph op
}
