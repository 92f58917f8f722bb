#pragma once
// conv2d and pooling through cuDNN, and what decides how they are called.
//
// The decisions (output shape, the int arrays cuDNN's descriptors take, the
// pooling mode, which algorithm to run within a workspace budget, the
// per-shape algorithm cache) are plain host functions here, so that
// cuda_host_test checks them without a GPU; dnn.cpp only turns them into
// cuDNN descriptors and calls.
//
// cuDNN 9 keeps the legacy convolution and pooling API
// (cudnnConvolutionForward, cudnnPoolingForward, ...) beside its graph API;
// the legacy one is used: it covers every case of the eager ops (groups,
// dilation, asymmetric stride and padding) with a few descriptor calls.
// layer_norm does not go through cuDNN (cuDNN 9 has it only in the graph
// API, as a fused operation graph built and finalized per shape): it is a
// hand kernel (norm.cu).
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "graph/dtype.h"

namespace graph::cuda {

// A conv2d as the eager op checked it: input [N, C, H, W], weight
// [Cout, C / groups, kH, kW], contiguous; float32 or float64.
struct ConvShape {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t Cout = 0, kH = 0, kW = 0;
  int64_t sH = 1, sW = 1, pH = 0, pW = 0, dH = 1, dW = 1;
  int64_t groups = 1;
  DType dtype = kFloat32;
};

// What cuDNN's descriptors take, as ints: NCHW dims of x, w and y, and the
// convolution's padding, stride and dilation.
struct ConvDescriptors {
  int x[4], w[4], y[4];
  int pad[2], stride[2], dilation[2];
  int groups;
  bool float64;  // CUDNN_DATA_DOUBLE, else CUDNN_DATA_FLOAT
};

// The output dims [N, Cout, Ho, Wo] (PyTorch's formula). Throws graph::Error
// naming conv2d for a shape the eager op would refuse or that does not fit
// cuDNN's int descriptors, or for another dtype.
ConvDescriptors conv_descriptors(const ConvShape& s);

// One algorithm as cuDNN's Get/Find*_v7 reports it: cuDNN lists them
// fastest first (by its heuristics), with a status and the workspace each
// needs.
struct AlgoPerf {
  int algo = 0;
  bool ok = false;  // status == CUDNN_STATUS_SUCCESS
  size_t workspace = 0;
  bool deterministic = true;
};

// The first listed algorithm that succeeded and needs at most
// `workspace_limit` bytes of workspace; throws graph::Error naming `what`
// and the closest miss when none fits.
AlgoPerf choose_algorithm(const char* what, const std::vector<AlgoPerf>& perfs, size_t workspace_limit);

// The workspace budget: a quarter of the free device memory, at most 1 GiB
// and at least 16 MiB (algorithms needing more are skipped).
size_t conv_workspace_limit(size_t free_device_bytes);

enum class ConvPass { Forward, BackwardData, BackwardFilter };

// Algorithms chosen per (pass, shape): cuDNN's heuristic query costs about
// as much as a small convolution, so it runs once per shape.
class ConvAlgoCache {
 public:
  static std::string key(ConvPass pass, const ConvShape& s);
  bool find(const std::string& key, AlgoPerf* out) const;
  void insert(const std::string& key, const AlgoPerf& a);  // the first insert of a key wins
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, AlgoPerf> map_;
};

// ---- pooling -----------------------------------------------------------------

// max_pool2d / avg_pool2d as the eager op checked them: planes = N * C (or
// C when unbatched) of H x W, contiguous, float32 or float64.
struct PoolShape {
  int64_t planes = 0, H = 0, W = 0;
  int64_t kH = 1, kW = 1, sH = 1, sW = 1, pH = 0, pW = 0;
  bool max = true;
  DType dtype = kFloat32;
};

enum class PoolMode {
  Max,                // CUDNN_POOLING_MAX_DETERMINISTIC: padding never wins
  AverageIncludePad,  // CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING (PyTorch's default)
};

struct PoolDescriptors {
  PoolMode mode;
  int window[2], pad[2], stride[2];
  int x[4], y[4];  // [1, planes, H, W] and [1, planes, Ho, Wo]
  bool float64;
};

// Throws graph::Error naming the op for sizes beyond cuDNN's ints or a
// window larger than the padded input.
PoolDescriptors pool_descriptors(const PoolShape& s);

// ---- device calls (dnn.cpp; cuDNN on the default stream) --------------------
// y = conv(x, w) (no bias: the runtime adds it).
void conv2d_forward(const ConvShape& s, const void* x, const void* w, void* y);
// dx = conv's adjoint applied to dy; dw = the weight gradient (overwritten).
void conv2d_backward_data(const ConvShape& s, const void* w, const void* dy, void* dx);
void conv2d_backward_filter(const ConvShape& s, const void* x, const void* dy, void* dw);
void pool2d_forward(const PoolShape& s, const void* x, void* y);
// dx (overwritten) from dy, with the forward's x and y (max pooling finds
// the window maxima again).
void pool2d_backward(const PoolShape& s, const void* x, const void* y, const void* dy, void* dx);

}  // namespace graph::cuda
