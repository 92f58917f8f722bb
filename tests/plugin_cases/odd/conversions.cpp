// Conversions and factories that used to run eagerly (issue 20): dtype casts
// (`x.to(kFloat64)`, a mask made float), `contiguous()`, host int/float
// conversions, `arange` and `zeros`/`ones`/`full` with sizes known at run
// time, inside `if`s and loops. What each lowers to is checked by the
// Lowering tests of plugin_corpus_test.cpp.
#include <graph/graph.h>

#include <cstdint>

using namespace graph;

// ---- Tensor::to(DType): the op `to{dtype}` --------------------------------

[[graph::static]] Tensor to_double(Tensor x) {  // lowers
  return x.to(graph::kFloat64) * 2;
}

[[graph::static]] Tensor mask_to_float(Tensor x) {  // lowers
  Tensor mask = (x > 0).to(kFloat32);
  return x * mask;
}

[[graph::static]] Tensor to_int_and_back(Tensor x) {  // lowers
  return x.to(kInt64).to(kFloat32) + x.to(kBool).to(kInt32);
}

constexpr DType kWide = kFloat64;

[[graph::static]] Tensor to_constexpr_dtype(Tensor x) {  // lowers
  return x.to(kWide);
}

[[graph::static]] Tensor to_runtime_dtype(Tensor x, Tensor y) {
  return x.to(y.dtype());  // expect@17: the dtype of 'to' must be a compile-time constant
}

[[graph::static]] Tensor to_device(Tensor x) {
  return x.to(kCPU);  // expect@12: the call to 'graph::Tensor::to' cannot be lowered: it is not a graph op
}

// ---- contiguous(): the op `contiguous` ------------------------------------

[[graph::static]] Tensor contiguous_view(Tensor x) {  // lowers
  return x.t().contiguous() + 1;
}

// ---- host conversions: int_to_float, float_to_int -------------------------

[[graph::static]] Tensor int_to_double(Tensor x, int n) {  // lowers
  return x * static_cast<double>(n) + x / static_cast<float>(x.size(0));
}

[[graph::static]] Tensor double_to_int(Tensor x, double d) {  // lowers
  const int64_t k = static_cast<int64_t>(d);  // truncates toward zero
  int j = d * 2;                              // implicit, truncating too
  return x + k + j;
}

[[graph::static]] Tensor implicit_promotions(Tensor x, int n) {  // lowers
  double h = n;          // int -> double
  h += n / 2;            // an integer division, then promoted
  return x * h + n * 0.5 + x * (n / 4.0);
}

// (A graph break: the declaration runs eagerly, the return is a static region.)
[[graph::static]] Tensor narrowing_is_refused(Tensor x, int64_t n) {  // lowers: narrowing_is_refused.region1
  int m = static_cast<int>(n);  // expect@28: the conversion from 'int64_t' to 'int' may change the value
  return x * m;
}

// ---- arange: arange_dyn ----------------------------------------------------

[[graph::static]] Tensor arange_size(Tensor x) {  // lowers
  return x + arange(x.size(0)).to(kFloat32);
}

[[graph::static]] Tensor arange_step(Tensor x, int n, double step) {  // lowers
  return x.sum() + arange(0, n, 2).sum() + arange(0.5, n, step).sum();
}

[[graph::static]] Tensor arange_in_loop(Tensor x, int n) {  // lowers
  Tensor y = x;
  for (int i = 1; i <= n; ++i) y = y + arange(i).sum();
  return y;
}

[[graph::static]] Tensor arange_on_device(Tensor x) {
  return x + arange(0, 4, 1, kCPU);  // expect@14: the call to 'graph::arange' cannot be lowered: it is not a graph op
}

// ---- zeros, ones, full with run-time sizes in ifs and loops: full_dyn -----

[[graph::static]] Tensor factories_in_branches(Tensor x, int n) {  // lowers
  Tensor y = x;
  if (n > 2) y = y + zeros({n, x.size(1)}).sum(0);
  else y = y - ones({x.size(1)}, kFloat64).to(kFloat32);
  for (int i = 1; i < n; ++i) y = y + full({i, x.size(1)}, 0.5 * i).sum(0);
  return y;
}
