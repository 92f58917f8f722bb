// Host values read from tensors (`item<T>()`), host math on them
// (`std::sqrt`, `std::exp`, `std::pow`, ...) and the method forms `x.pow(e)`
// and `x.clamp(lo, hi)` (issues 19 and 20). What each lowers to is checked by
// Lowering.HostReadsAndHostMath in plugin_corpus_test.cpp.
#include <graph/graph.h>

#include <cmath>
#include <cstdint>

using namespace graph;

// ---- item<T>(): the primitive `item` ----------------------------------------

[[graph::static]] Tensor item_scales(Tensor x) {  // lowers
  const double m = x.max().item<double>();
  const int64_t k = x.argmax(0).item<int64_t>();
  return x / m + k;
}

// A data-dependent loop: a host `while` on a value read from the tensor.
[[graph::static]] Tensor item_while(Tensor x) {  // lowers
  Tensor h = x;
  int64_t steps = 0;
  while (h.sum().item<double>() < 100.0 && steps < 10) {
    h = h * 2;
    ++steps;
  }
  return h + steps;
}

[[graph::static]] Tensor item_bool(Tensor x) {  // lowers
  if ((x.sum() > 0).item<bool>()) return x;
  return -x;
}

// ---- host math: the op table's elementwise ops on host scalars --------------

[[graph::static]] Tensor host_sqrt_exp(Tensor x, double d, int n) {  // lowers
  const double s = std::sqrt(d);
  return x * s + std::exp(static_cast<double>(n)) - std::log(d + 1.0);
}

[[graph::static]] Tensor host_pow_abs(Tensor x, double d, int64_t n) {  // lowers
  return x * std::pow(d, 2.0) + std::abs(n) + std::fabs(d) + std::pow(n, 2);
}

[[graph::static]] Tensor host_math_of_item(Tensor x) {  // lowers
  const double norm = std::sqrt((x * x).sum().item<double>());
  return x / (norm + 1e-6);
}

[[graph::static]] Tensor host_float_overload(Tensor x, float f) {
  return x * std::sqrt(f);  // expect@14: 'std::sqrt' of a 'float' computes in single precision
}

// ---- method forms ------------------------------------------------------------

[[graph::static]] Tensor pow_clamp_methods(Tensor x, Tensor e) {  // lowers
  return x.pow(2) + x.pow(e) + x.clamp(-1, 1);
}
