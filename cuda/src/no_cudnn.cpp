// The cuDNN calls of dnn.h in a build that found no cuDNN: they throw.
#include <string>

#include "graph/cuda/dnn.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

[[noreturn]] void no_cudnn(const char* op) {
  throw Error(std::string(op) + ": cuda: this build found no cuDNN (cudnn.h and libcudnn); install cuDNN 9 and "
              "reconfigure, or move the tensors with .to(kCPU)");
}

}  // namespace

void conv2d_forward(const ConvShape&, const void*, const void*, void*) { no_cudnn("conv2d"); }
void conv2d_backward_data(const ConvShape&, const void*, const void*, void*) { no_cudnn("conv2d backward"); }
void conv2d_backward_filter(const ConvShape&, const void*, const void*, void*) { no_cudnn("conv2d backward"); }
void pool2d_forward(const PoolShape& s, const void*, void*) { no_cudnn(s.max ? "max_pool2d" : "avg_pool2d"); }
void pool2d_backward(const PoolShape& s, const void*, const void*, const void*, void*) {
  no_cudnn(s.max ? "max_pool2d backward" : "avg_pool2d backward");
}

}  // namespace graph::cuda
