// The model suite's ResNet-18-style network (model_functions.h).
#include "model_functions.h"

namespace models {
using namespace graph;

namespace {
nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(in, out, k, stride, k / 2, 1, 1, /*bias=*/false);
}
}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t channels)
    : conv1(register_module("conv1", conv(channels, channels, 3, 1))),
      bn1(register_module("bn1", nn::BatchNorm2d(channels))),
      conv2(register_module("conv2", conv(channels, channels, 3, 1))),
      bn2(register_module("bn2", nn::BatchNorm2d(channels))) {}

Tensor BasicBlockImpl::forward(const Tensor& x) {
  Tensor y = relu(bn1(conv1(x)));
  y = bn2(conv2(y));
  return relu(y + x);
}

DownBlockImpl::DownBlockImpl(int64_t in, int64_t out)
    : conv1(register_module("conv1", conv(in, out, 3, 2))),
      bn1(register_module("bn1", nn::BatchNorm2d(out))),
      conv2(register_module("conv2", conv(out, out, 3, 1))),
      bn2(register_module("bn2", nn::BatchNorm2d(out))),
      down_conv(register_module("down_conv", conv(in, out, 1, 2))),
      down_bn(register_module("down_bn", nn::BatchNorm2d(out))) {}

Tensor DownBlockImpl::forward(const Tensor& x) {
  Tensor y = relu(bn1(conv1(x)));
  y = bn2(conv2(y));
  return relu(y + down_bn(down_conv(x)));
}

ResNetImpl::ResNetImpl(int64_t width, int64_t classes)
    : conv1(register_module("conv1", conv(3, width, 3, 1))),
      bn1(register_module("bn1", nn::BatchNorm2d(width))),
      layer1(register_module("layer1", BasicBlock(width))),
      layer2(register_module("layer2", DownBlock(width, 2 * width))),
      layer3(register_module("layer3", DownBlock(2 * width, 4 * width))),
      layer4(register_module("layer4", DownBlock(4 * width, 8 * width))),
      fc(register_module("fc", nn::Linear(8 * width, classes))) {}

[[graph::static]] std::tuple<Tensor, Tensor> ResNetImpl::forward(const Tensor& x, const Tensor& targets) {
  Tensor h = relu(bn1(conv1(x)));
  h = layer1(h);
  h = layer2(h);
  h = layer3(h);
  h = layer4(h);
  Tensor logits = fc(adaptive_avg_pool2d(h, {1, 1}).flatten(1));
  return {logits, cross_entropy(logits, targets)};
}

}  // namespace models
