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

[[graph::static]] Tensor runtime_shape(Tensor x, Tensor y) {  // lowers
  return x.reshape(y.sizes()).view(x.sizes()).expand(y.sizes());  // reshape{shape="@1"}(x, tensor_sizes(y))
}

// Local int lists: another tensor's sizes edited element by element, a
// std::vector<int64_t>, a helper taking `const Shape&`.
static Tensor reshape_to(Tensor x, const Shape& s) { return x.reshape(s); }

[[graph::static]] Tensor local_shapes(Tensor x, Tensor y, int k) {  // lowers
  auto s = y.sizes();
  const int n = s.size();
  s[0] = s.at(n - 1) * k;
  s[n - 1] = -1;
  Shape t = s;
  t[0] = 2;
  std::vector<int64_t> dims = {1, 0};
  return reshape_to(x, s).permute(dims) + x.reshape(t).sum(0) * t[1];
}

[[graph::static]] Tensor shape_through_control_flow(Tensor x, int k) {  // lowers
  auto s = x.sizes();
  if (k > 0) s[0] = -1;  // an If output: the edited or the original list
  for (int i = 1; i < k; ++i) s[1] *= 1;  // a Loop-carried list
  return x.reshape(s);
}

[[graph::static]] Tensor factory_sizes(Tensor x, Tensor y, int n) {  // lowers
  return x * ones(y.sizes()) + full({n, x.size(-1)}, 0.5) + zeros(x.sizes(), kFloat32);  // full_dyn
}

[[graph::static]] Tensor factory_dtype(Tensor x) {
  return zeros(x.sizes(), x.dtype());  // expect@29: the dtype of 'zeros' must be a compile-time constant
}

Shape opaque_dims();

[[graph::static]] Tensor opaque_shape(Tensor x) {
  Shape s = opaque_dims();  // expect@9: this int list cannot be lowered: build it from a tensor's 'sizes()'
  return x.reshape(s);
}

[[graph::static]] Tensor growing_shape(Tensor x) {
  Shape s = x.sizes();
  s.push_back(1);  // expect@5: the call to 'push_back' on an int list cannot be lowered
  return x.reshape(s);
}

[[graph::static]] Tensor float_in_shape(Tensor x, double f) {  // lowers
  Shape s = x.sizes();
  s[0] = f;  // truncates: float_to_int
  return x.reshape(s);
}

[[graph::static]] Tensor runtime_slice(Tensor x, int n) {  // lowers
  return x.slice(0, 0, n);
}

[[graph::static]] Tensor runtime_keepdim(Tensor x, bool k) {  // lowers
  return x.sum(1, k);
}

[[graph::static]] Tensor float_dim(Tensor x, double d) {  // lowers
  return softmax(x, d);  // the dim truncates: float_to_int, then a run-time attribute
}

[[graph::static]] Tensor not_an_op(Tensor x) {
  return x.clone();  // expect@12: the call to 'graph::Tensor::clone' cannot be lowered: it is not a graph op
}

// The parts of a tensor (ops.h): select, narrow, split and chunk inline (their
// methods too, `*this` the object), unbind the list_unbind primitive; the
// pieces a list read by index or a range-for, with a run-time length.
[[graph::static]] Tensor parts(Tensor x, int i) {  // lowers
  Tensor y = x.select(0, i) + select(x, -1, 0).sum() + narrow(x, 1, 0, 2).sum() + x.narrow(0, i, 1).sum();
  for (const Tensor& p : x.split(2, 1)) y = y + p.sum();
  return y + unbind(x, 1)[0].sum() + x.unbind()[i].sum() + x.chunk(3)[0].sum() + split(x, {1, 2}, 1)[1].sum();
}

[[graph::static]] Tensor parts_count(Tensor x) {
  return x * static_cast<double>(x.unbind().size());  // expect@34: the conversion from 'size_type' to 'double' cannot be lowered yet
}
