// graph::nn recurrent modules: constructors (PyTorch's parameter names and
// init) and the eager input checks. Forward functions are inline in nn_rnn.h.
#include <cmath>
#include <string>

#include "graph/nn.h"

namespace graph::nn {

namespace {
void check_positive(const char* module, const char* what, int64_t v) {
  if (v <= 0) throw Error(std::string(module) + ": " + what + " must be positive, got " + std::to_string(v));
}

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
                  " [num_layers, N, hidden_size] for an input of shape " + sizes_of(x) + ", got " + sizes_of(*s));
}

}  // namespace detail

GRUCellImpl::GRUCellImpl(int64_t input, int64_t hidden, bool with_bias)
    : Module("GRUCell"), input_size(input), hidden_size(hidden) {
  check_positive("GRUCell", "input_size", input);
  check_positive("GRUCell", "hidden_size", hidden);
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden));
  weight_ih = detail::uniform({3 * hidden, input}, bound);
  weight_hh = detail::uniform({3 * hidden, hidden}, bound);
  register_parameter("weight_ih", &weight_ih);
  register_parameter("weight_hh", &weight_hh);
  if (with_bias) {
    bias_ih = detail::uniform({3 * hidden}, bound);
    bias_hh = detail::uniform({3 * hidden}, bound);
    register_parameter("bias_ih", &bias_ih);
    register_parameter("bias_hh", &bias_hh);
  }
}

RNNImplBase::RNNImplBase(const char* name, const RNNOptions& o, int64_t gates)
    : Module(name),
      input_size(o.input_size()),
      hidden_size(o.hidden_size()),
      num_layers(o.num_layers()),
      bias(o.bias()),
      batch_first(o.batch_first()) {
  const std::string m(name);
  check_positive(name, "input_size", input_size);
  check_positive(name, "hidden_size", hidden_size);
  check_positive(name, "num_layers", num_layers);
  if (o.dropout() != 0.0)
    throw Error(m + ": dropout between layers is not implemented (got dropout " + std::to_string(o.dropout()) +
                "); use dropout 0");
  if (o.bidirectional()) throw Error(m + ": bidirectional is not implemented; run a second " + m + " on the reversed input");
  // Sized once: the parameter table points into these vectors.
  weight_ih.resize(num_layers);
  weight_hh.resize(num_layers);
  if (bias) {
    bias_ih.resize(num_layers);
    bias_hh.resize(num_layers);
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  const int64_t G = gates * hidden_size;
  // PyTorch's order: weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, weight_ih_l1, ...
  for (int64_t l = 0; l < num_layers; ++l) {
    const std::string s = "_l" + std::to_string(l);
    weight_ih[l] = detail::uniform({G, l == 0 ? input_size : hidden_size}, bound);
    weight_hh[l] = detail::uniform({G, hidden_size}, bound);
    register_parameter("weight_ih" + s, &weight_ih[l]);
    register_parameter("weight_hh" + s, &weight_hh[l]);
    if (bias) {
      bias_ih[l] = detail::uniform({G}, bound);
      bias_hh[l] = detail::uniform({G}, bound);
      register_parameter("bias_ih" + s, &bias_ih[l]);
      register_parameter("bias_hh" + s, &bias_hh[l]);
    }
  }
}

}  // namespace graph::nn
