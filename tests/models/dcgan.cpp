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

[[graph::static]] std::tuple<Tensor, Tensor> DCGANGeneratorImpl::forward(const Tensor& z) {
  Tensor h = relu(bn1(ct1(z)));
  h = relu(bn2(ct2(h)));
  h = relu(bn3(ct3(h)));
  Tensor img = tanh(ct4(h));
  return {img, (img * img).mean()};
}

}  // namespace models
