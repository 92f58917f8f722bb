// The static forwards of module_state_functions.h.
#include "module_state_functions.h"

namespace modstate {
using namespace graph;

[[graph::static]] Tensor ModeSwitchImpl::forward(const Tensor& x) {
  if (is_training()) return relu(x) * 2;
  return x - 1;
}

RunningSumImpl::RunningSumImpl()
    : nn::Module("RunningSum"), total(zeros({4})), scale(ones({4})), count(zeros({}, kInt64)) {
  register_buffer("total", &total);
  register_buffer("scale", &scale);
  register_buffer("count", &count);
}

[[graph::static]] Tensor RunningSumImpl::forward(const Tensor& x) {
  count.add_(1);
  total.mul_(0.5);
  total.add_(x.sum(0));
  if (is_training()) scale.copy_(x.mean(0));
  return x * scale + total + count.item<int64_t>();
}

NormDropImpl::NormDropImpl(int64_t channels, double p)
    : nn::Module("NormDrop"),
      bn(register_module("bn", nn::BatchNorm1d(nn::BatchNorm1dOptions(channels).momentum(std::nullopt)))),
      drop(register_module("drop", nn::Dropout(p))) {}

[[graph::static]] Tensor NormDropImpl::forward(const Tensor& x) { return drop(bn(x)); }

Norm2dImpl::Norm2dImpl(int64_t channels) : nn::Module("Norm2d"), bn(register_module("bn", nn::BatchNorm2d(channels))) {}

[[graph::static]] Tensor Norm2dImpl::forward(const Tensor& x) { return bn(x); }

}  // namespace modstate
