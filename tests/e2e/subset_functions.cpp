// Annotated functions for the C++-subset end-to-end tests (subset_functions.h).
#include "subset_functions.h"

namespace subset {
using namespace graph;

// ---- tuples ------------------------------------------------------------------
// A user LSTM cell (hidden size 4), not annotated itself: inlined into callers.
static std::tuple<Tensor, Tensor> lstm_cell(Tensor x, Tensor h, Tensor c, Tensor W, Tensor U, Tensor b) {
  Tensor gates = matmul(x, W) + matmul(h, U) + b;
  Tensor i = sigmoid(gates.slice(1, 0, 4));
  Tensor f = sigmoid(gates.slice(1, 4, 8));
  Tensor g = tanh(gates.slice(1, 8, 12));
  Tensor o = sigmoid(gates.slice(1, 12, 16));
  Tensor c2 = f * c + i * g;
  return {o * tanh(c2), c2};
}

[[graph::static]] Tensor lstm_steps(Tensor x0, Tensor x1, Tensor h, Tensor c, Tensor W, Tensor U, Tensor b) {
  auto [h1, c1] = lstm_cell(x0, h, c, W, U, b);
  std::tie(h, c) = lstm_cell(x1, h1, c1, W, U, b);
  auto t = lstm_cell(x0, h, c, W, U, b);
  return std::get<0>(t) + std::get<1>(t) * 0.5;
}

[[graph::static]] std::pair<Tensor, Tensor> lstm_sequence(const std::vector<Tensor>& xs, Tensor h, Tensor c, Tensor W,
                                                          Tensor U, Tensor b) {
  for (const Tensor& x : xs) {
    auto [h2, c2] = lstm_cell(x, h, c, W, U, b);
    h = h2;
    c = c2;
  }
  return {h, c};
}

[[graph::static]] Tensor tuple_branches(Tensor x, int k) {
  std::pair<Tensor, Tensor> p{x, x * 2};
  if (k > 0) p = {p.second, p.first};
  const auto& [a, b] = p;
  const Tensor& first = p.first;
  return a - b * 3 + first;
}

[[graph::static]] std::tuple<Tensor, int> tuple_param(std::pair<Tensor, int> p, Tensor x) {
  std::tuple<Tensor, int> out = std::make_tuple(p.first * x, p.second + 1);
  std::get<1>(out) *= 2;
  return out;
}

LSTMNetImpl::LSTMNetImpl()
    : cell(register_module("cell", nn::LSTMCell(3, 4))), head(register_module("head", nn::Linear(4, 2, false))) {}

[[graph::static]] std::pair<Tensor, Tensor> LSTMNetImpl::forward(Tensor x, Tensor h, Tensor c) {
  auto [h2, c2] = cell(x, {h, c});
  return {head(h2), c2};
}

// ---- optional tensors ----------------------------------------------------------
[[graph::static]] Tensor maybe_bias(Tensor x, Tensor bias) {
  Tensor y = x * 2;
  if (bias.defined()) y = y + bias;
  return relu(y);
}

[[graph::static]] Tensor bias_on_one_path(Tensor x, Tensor w, bool use) {
  Tensor b;
  if (use) b = w.sum(1);
  Tensor y = linear(x, w, b);
  return b.defined() ? y : -y;
}

NoBiasImpl::NoBiasImpl() : fc(register_module("fc", nn::Linear(4, 3, false))) {}

[[graph::static]] Tensor NoBiasImpl::forward(Tensor x) { return relu(fc(x)) + 1; }

// ---- shapes as host ints -------------------------------------------------------
[[graph::static]] Tensor flatten_batch(Tensor x) {
  int64_t n = x.size(0);
  Tensor y = x.view({n, -1});
  return y * (x.dim() + x.numel() / n) + x.sizes()[1];
}

[[graph::static]] Tensor halves(Tensor x) {
  int64_t h = x.size(-1) / 2;
  return x.slice(-1, 0, h) - x.slice(-1, h, 2 * h);
}

[[graph::static]] Tensor size_out_of_range(Tensor x) { return x * x.size(5); }

// ---- statements ------------------------------------------------------------------
[[graph::static]] Tensor int_ops(Tensor x, int a, int b) {
  int q = a / b;
  int r = a % b;
  q /= 2;
  r %= 3;
  return x * q + r;
}

// int <-> double conversions: explicit, implicit, and a truncating one.
[[graph::static]] Tensor conversions(Tensor x, int n, double d) {
  double mean = static_cast<double>(x.numel()) / n;  // int -> double, then a double division
  double half = n / 2;                                // int division, then an implicit conversion
  int t = static_cast<int>(d * 3);                    // truncates toward zero
  int64_t k = d;                                      // implicit, truncating
  return x * mean + half + t * 10 + k * 100;
}

[[graph::static]] Tensor pick(Tensor x, int k) {
  Tensor y;
  switch (k) {
    case 0:
      y = relu(x);
      break;
    case 1:
    case 2:
      y = x * k;
      break;
    case 3:
      x = x + 1;
      [[fallthrough]];
    default:
      y = -x;
  }
  return y;
}

[[graph::static]] Tensor switch_fallthrough(Tensor x, int k) {
  switch (k) {
    case 1:
      x = x * 2;
      [[fallthrough]];
    case 2:
      x = x + 1;
  }
  return x;
}

[[graph::static]] Tensor switch_in_loop(Tensor x, int n) {
  for (int i = 0; i < n; ++i) {
    switch (i % 3) {
      case 0:
        x = x + 1;
        break;
      case 1:
        x = x * 2;
        break;
      default:
        if (x.sum() > 100) return x;
        x = -x;
    }
  }
  return x;
}

[[graph::static]] Tensor do_while(Tensor x, int n) {
  int i = 0;
  do {
    x = x * 2;
    ++i;
    if (i == 2) continue;
    x = x - 1;
  } while (i < n);
  return x;
}

// ---- attributes known at run time -----------------------------------------------
[[graph::static]] Tensor runtime_attrs(Tensor x, int64_t d, double eps, int64_t s) {
  Tensor y = layer_norm(x, {x.size(-1)}, Tensor(), Tensor(), eps);  // a braced list of host ints
  Tensor z = softmax(y, d) + log_softmax(y, -1);                     // a host int dim
  return z.sum(d, s > 0) * s;                                          // a host bool keepdim
}

// Int lists the graph computes: run-time list attributes of reshape, view,
// expand and permute (tensor_sizes, shape_get/shape_set, make_shape).
[[graph::static]] Tensor reshape_like(Tensor x, Tensor like) { return x.reshape(like.sizes()) + like; }

[[graph::static]] Tensor view_expand(Tensor x, Tensor like) { return x.view(x.sizes()).expand(like.sizes()) * like; }

// A helper taking an int list, inlined into local_shape.
const int kLocalShapeReshapeLine = __LINE__ + 1;
static Tensor reshape_to(Tensor x, const Shape& s) { return x.reshape(s); }

[[graph::static]] Tensor local_shape(Tensor x, int64_t k) {
  auto s = x.sizes();
  int n = s.size();
  s[0] = s[0] * k;
  s[n - 1] = -1;
  std::vector<int64_t> dims = {1, 0};
  Tensor y = reshape_to(x, s);  // a wrong k: the error names reshape_to's line
  return y.permute(dims) * s.at(0);
}

[[graph::static]] Tensor shape_branches(Tensor x, int k) {
  auto s = x.sizes();
  if (k > 0) s[0] = -1;                    // an If output
  for (int i = 1; i < k; ++i) s[1] /= 2;   // a Loop-carried list
  return x.reshape(s).sum(0);
}

[[graph::static]] Tensor shape_params(Tensor x, const Shape& s, std::vector<int64_t> dims) {
  return x.reshape(s).permute(dims) * static_cast<int64_t>(dims.size());
}

// Factories with sizes known at run time: full_dyn.
[[graph::static]] Tensor factories(Tensor x, double v, int64_t n) {
  auto s = x.sizes();
  Tensor a = x + ones(s) * 2;
  Tensor b = full({n, x.size(1)}, v);
  Tensor c = zeros(x.sizes(), kInt64) + 1;
  return a.sum(0) + b.sum(0) + c.sum(0);
}

[[graph::static]] Tensor permute_ints(Tensor x, int64_t a) { return x.permute({a, 1 - a, 2}).sum(-1); }

NormNetImpl::NormNetImpl()
    : fc(register_module("fc", nn::Linear(3, 4))), ln(register_module("ln", nn::LayerNorm(graph::Shape{4}, 1e-3))) {}

[[graph::static]] Tensor NormNetImpl::forward(Tensor x) { return ln(fc(x)); }

ConvNetImpl::ConvNetImpl()
    : conv1(register_module("conv1", nn::Conv2d(2, 3, 3, /*stride=*/2, /*padding=*/1))),
      conv2(register_module("conv2", nn::Conv2d(3, 2, nn::Size2{3, 1}, /*stride=*/nn::Size2{1, 2}, /*padding=*/nn::Size2{1, 0}))) {}

[[graph::static]] Tensor ConvNetImpl::forward(Tensor x) { return conv2(relu(conv1(x))); }

AttnNetImpl::AttnNetImpl()
    : with_bias(register_module("with_bias", nn::MultiheadAttention(8, 2))),
      without_bias(register_module("without_bias", nn::MultiheadAttention(8, 4, /*bias=*/false))) {}

[[graph::static]] Tensor AttnNetImpl::forward(Tensor x) {
  return with_bias(x) + without_bias->forward(x, x, x, Tensor(), /*is_causal=*/true);
}
}  // namespace subset
