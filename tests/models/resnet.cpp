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

Tensor BasicBlockImpl::forward(const Tensor& x, bool training) {
  Tensor y = relu(batch_norm_2d(conv1(x), bn1->weight, bn1->bias, bn1->running_mean, bn1->running_var, training));
  y = batch_norm_2d(conv2(y), bn2->weight, bn2->bias, bn2->running_mean, bn2->running_var, training);
  return relu(y + x);
}

DownBlockImpl::DownBlockImpl(int64_t in, int64_t out)
    : conv1(register_module("conv1", conv(in, out, 3, 2))),
      bn1(register_module("bn1", nn::BatchNorm2d(out))),
      conv2(register_module("conv2", conv(out, out, 3, 1))),
      bn2(register_module("bn2", nn::BatchNorm2d(out))),
      down_conv(register_module("down_conv", conv(in, out, 1, 2))),
      down_bn(register_module("down_bn", nn::BatchNorm2d(out))) {}

Tensor DownBlockImpl::forward(const Tensor& x, bool training) {
  Tensor y = relu(batch_norm_2d(conv1(x), bn1->weight, bn1->bias, bn1->running_mean, bn1->running_var, training));
  y = batch_norm_2d(conv2(y), bn2->weight, bn2->bias, bn2->running_mean, bn2->running_var, training);
  const Tensor shortcut = batch_norm_2d(down_conv(x), down_bn->weight, down_bn->bias, down_bn->running_mean,
                                        down_bn->running_var, training);
  return relu(y + shortcut);
}

ResNetImpl::ResNetImpl(int64_t width, int64_t classes)
    : conv1(register_module("conv1", conv(3, width, 3, 1))),
      bn1(register_module("bn1", nn::BatchNorm2d(width))),
      layer1(register_module("layer1", BasicBlock(width))),
      layer2(register_module("layer2", DownBlock(width, 2 * width))),
      layer3(register_module("layer3", DownBlock(2 * width, 4 * width))),
      layer4(register_module("layer4", DownBlock(4 * width, 8 * width))),
      fc(register_module("fc", nn::Linear(8 * width, classes))) {}

[[graph::static]] std::tuple<Tensor, Tensor> ResNetImpl::forward(const Tensor& x, const Tensor& targets,
                                                                 bool training) {
  Tensor h = relu(batch_norm_2d(conv1(x), bn1->weight, bn1->bias, bn1->running_mean, bn1->running_var, training));
  h = layer1(h, training);
  h = layer2(h, training);
  h = layer3(h, training);
  h = layer4(h, training);
  Tensor logits = fc(adaptive_avg_pool2d(h, {1, 1}).flatten(1));
  return {logits, cross_entropy(logits, targets)};
}

}  // namespace models
