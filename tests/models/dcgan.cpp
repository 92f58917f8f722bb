// The model suite's DCGAN generator (model_functions.h).
#include "model_functions.h"

namespace models {
using namespace graph;

namespace {
nn::ConvTranspose2d up(int64_t in, int64_t out, int64_t stride, int64_t padding, bool bias = false) {
  return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(in, out, 4).stride(stride).padding(padding).bias(bias));
}
}  // namespace

DCGANGeneratorImpl::DCGANGeneratorImpl(int64_t nz, int64_t g)
    : ct1(register_module("ct1", up(nz, 4 * g, 1, 0))),
      bn1(register_module("bn1", nn::BatchNorm2d(4 * g))),
      ct2(register_module("ct2", up(4 * g, 2 * g, 2, 1))),
      bn2(register_module("bn2", nn::BatchNorm2d(2 * g))),
      ct3(register_module("ct3", up(2 * g, g, 2, 1))),
      bn3(register_module("bn3", nn::BatchNorm2d(g))),
      ct4(register_module("ct4", up(g, 3, 2, 1, /*bias=*/true))) {}

[[graph::static]] std::tuple<Tensor, Tensor> DCGANGeneratorImpl::forward(const Tensor& z, bool training) {
  Tensor h = relu(batch_norm_2d(ct1(z), bn1->weight, bn1->bias, bn1->running_mean, bn1->running_var, training));
  h = relu(batch_norm_2d(ct2(h), bn2->weight, bn2->bias, bn2->running_mean, bn2->running_var, training));
  h = relu(batch_norm_2d(ct3(h), bn3->weight, bn3->bias, bn3->running_mean, bn3->running_var, training));
  Tensor img = tanh(ct4(h));
  return {img, (img * img).mean()};
}

}  // namespace models
