// graph::nn recurrent modules: constructors (PyTorch's parameter names and
// init) and the eager input checks. Forward functions are inline in nn_rnn.h.
#include <cmath>
#include <string>

#include "graph/nn.h"

namespace graph::nn {

using detail::check_positive;

namespace {
std::string sizes_of(const Tensor& t) { return shape_str(t.sizes()); }
}  // namespace

namespace detail {

void check_cell_input(const char* module, int64_t input_size, int64_t hidden_size, const Tensor& x, const Tensor& h,
                      const Tensor& c) {
  const std::string m(module);
  if (!x.defined()) throw Error(m + ": the input is undefined");
  if (x.dim() != 2 || x.size(1) != input_size)
    throw Error(m + ": expected an input of shape [N, " + std::to_string(input_size) + "], got " + sizes_of(x));
  const Shape want{x.size(0), hidden_size};
  for (const Tensor* s : {&h, &c})
    if (s->defined() && s->sizes() != want)
      throw Error(m + ": expected a " + (s == &h ? "hidden" : "cell") + " state of shape " + shape_str(want) +
                  " for an input of shape " + sizes_of(x) + ", got " + sizes_of(*s));
}

void check_rnn_input(const char* module, int64_t input_size, int64_t hidden_size, int64_t num_layers, bool batch_first,
                     const Tensor& x, const Tensor& h0, const Tensor& c0) {
  const std::string m(module);
  const char* layout = batch_first ? "[N, T, " : "[T, N, ";
  if (!x.defined()) throw Error(m + ": the input is undefined");
  if (x.dim() != 3 || x.size(2) != input_size)
    throw Error(m + ": expected an input of shape " + layout + std::to_string(input_size) + "]" +
                (batch_first ? " (batch_first)" : "") + ", got " + sizes_of(x) +
                (x.dim() == 2 ? " (unbatched inputs are not supported: add a batch dim)" : ""));
  if (x.size(0) == 0 || x.size(1) == 0) throw Error(m + ": the input " + sizes_of(x) + " has no time steps or no batch");
  const Shape want{num_layers, x.size(batch_first ? 0 : 1), hidden_size};
  if (m == "LSTM" && h0.defined() != c0.defined())
    throw Error(m + ": h0 and c0 must be given together (or neither, for zeros)");
  for (const Tensor* s : {&h0, &c0})
    if (s->defined() && s->sizes() != want)
      throw Error(m + ": expected " + (s == &h0 ? "h0" : "c0") + " of shape " + shape_str(want) +
                  " [num_layers * num_directions, N, hidden_size] for an input of shape " + sizes_of(x) + ", got " + sizes_of(*s));
}

}  // namespace detail

GRUCellImpl::GRUCellImpl(int64_t input, int64_t hidden, bool with_bias)
    : Module("GRUCell"), input_size(input), hidden_size(hidden) {
  check_positive("GRUCell", "input_size", input);
  check_positive("GRUCell", "hidden_size", hidden);
  detail::init_cell_weights(*this, "", 3, input, hidden, with_bias, {&weight_ih, &weight_hh, &bias_ih, &bias_hh});
}

RNNImplBase::RNNImplBase(const char* name, const RNNOptions& o, int64_t gates)
    : Module(name),
      input_size(o.input_size()),
      hidden_size(o.hidden_size()),
      num_layers(o.num_layers()),
      bias(o.bias()),
      batch_first(o.batch_first()),
      num_directions(o.bidirectional() ? 2 : 1),
      dropout_p(o.dropout()) {
  const std::string m(name);
  check_positive(name, "input_size", input_size);
  check_positive(name, "hidden_size", hidden_size);
  check_positive(name, "num_layers", num_layers);
  if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
    throw Error(m + ": dropout should be a number in range [0, 1] representing the probability of an element being "
                    "zeroed, got " + std::to_string(dropout_p));
  // Sized once: the parameter table points into these vectors.
  const int64_t n = num_layers * num_directions;
  weight_ih.resize(n);
  weight_hh.resize(n);
  if (bias) {
    bias_ih.resize(n);
    bias_hh.resize(n);
  }
  // PyTorch's order: weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, weight_ih_l0_reverse, ..., weight_ih_l1, ...
  for (int64_t l = 0; l < num_layers; ++l)
    for (int64_t d = 0; d < num_directions; ++d) {
      const int64_t k = l * num_directions + d;
      detail::init_cell_weights(*this, "_l" + std::to_string(l) + (d == 1 ? "_reverse" : ""), gates,
                                l == 0 ? input_size : num_directions * hidden_size, hidden_size, bias,
                                {&weight_ih[k], &weight_hh[k], bias ? &bias_ih[k] : nullptr,
                                 bias ? &bias_hh[k] : nullptr});
    }
}

}  // namespace graph::nn
