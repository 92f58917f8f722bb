// The model suite's temporal CNN (model_functions.h).
#include "model_functions.h"

namespace models {
using namespace graph;

TemporalCNNImpl::TemporalCNNImpl(int64_t in, int64_t channels, int64_t kernel, int64_t out)
    : kernel(kernel),
      inp(register_module("inp", nn::Conv1d(in, channels, 1))),
      c1(register_module("c1", nn::Conv1d(nn::Conv1dOptions(channels, channels, kernel).dilation(1)))),
      c2(register_module("c2", nn::Conv1d(nn::Conv1dOptions(channels, channels, kernel).dilation(2)))),
      c4(register_module("c4", nn::Conv1d(nn::Conv1dOptions(channels, channels, kernel).dilation(4)))),
      readout(register_module("readout", nn::Linear(channels, out))) {}

[[graph::static]] std::tuple<Tensor, Tensor> TemporalCNNImpl::forward(const Tensor& x, const Tensor& target) {
  Tensor h = inp(x);
  // Left padding of (kernel - 1) * dilation keeps each step from seeing later ones.
  h = h + relu(c1(pad(h, {(kernel - 1) * 1, 0})));
  h = h + relu(c2(pad(h, {(kernel - 1) * 2, 0})));
  h = h + relu(c4(pad(h, {(kernel - 1) * 4, 0})));
  Tensor y = readout(h.select(2, -1));
  return {y, mse_loss(y, target)};
}

}  // namespace models
