// The functions of host_read_functions.h; built with -Werror=graph-fallback,
// so each lowers whole.
#include "host_read_functions.h"

#include <cmath>

namespace hostread {
using namespace graph;

// A greedy decoder's shape (the seq2seq model of issue 19): the next token is
// the argmax of the state, read on the host, and the loop runs until it is
// `eos` or `max_steps` tokens were made. Returns the sum of the states and,
// in its last element, the number of steps.
[[graph::static]] Tensor greedy_decode(Tensor h0, Tensor w, Tensor emb, int64_t eos, int64_t max_steps) {
  Tensor h = h0;
  Tensor total = zeros_like(h0);
  int64_t tok = 0;
  int64_t steps = 0;
  while (tok != eos && steps < max_steps) {
    h = tanh(emb.select(0, tok) + matmul(h, w));
    tok = h.argmax(0).item<int64_t>();
    total = total + h;
    ++steps;
  }
  return cat({total, full({1}, static_cast<double>(steps))}, 0);
}

[[graph::static]] Tensor normalize_by_item(Tensor x) {
  const double norm = std::sqrt((x * x).sum().item<double>());
  const float mx = x.abs().max().item<float>();
  return x / (norm + 1e-6) + x * mx;
}

[[graph::static]] Tensor host_math(Tensor x, double d, int n) {
  const double s = std::sqrt(d) + std::exp(static_cast<double>(n)) - std::log(d + 1.0);
  return x * s + std::pow(d, 2.0) + std::abs(-n) + std::fabs(-d) + std::pow(n, 2) + std::tanh(d) + std::fmax(d, 0.5);
}

[[graph::static]] Tensor pow_clamp(Tensor x, Tensor e) { return x.pow(2) + x.abs().pow(e) + x.clamp(-0.5, 0.25); }

// item() of a tensor with more than one element is an error, from the graph.
[[graph::static]] Tensor item_of_many(Tensor x) { return x * x.item<double>(); }

}  // namespace hostread
