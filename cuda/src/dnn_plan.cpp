// The host decisions behind the cuDNN calls (dnn.h): descriptor arrays,
// algorithm choice, the algorithm cache. No CUDA headers: cuda_host_test
// checks all of it without a GPU.
#include <algorithm>
#include <climits>
#include <string>

#include "graph/cuda/dnn.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

int as_int(const char* op, const char* what, int64_t v) {
  if (v < 0 || v > INT_MAX)
    throw Error(std::string(op) + ": cuda: " + what + " " + std::to_string(v) + " is outside cuDNN's int range");
  return static_cast<int>(v);
}

bool is_float64(const char* op, DType t) {
  if (t == kFloat32) return false;
  if (t == kFloat64) return true;
  throw Error(std::string(op) + ": cuda: float32 or float64 only, got " + std::string(dtype_name(t)));
}

}  // namespace

ConvDescriptors conv_descriptors(const ConvShape& s) {
  const char* op = "conv2d";
  ConvDescriptors d{};
  d.float64 = is_float64(op, s.dtype);
  if (s.groups <= 0 || s.C % s.groups != 0 || s.Cout % s.groups != 0)
    throw Error(std::string(op) + ": cuda: groups=" + std::to_string(s.groups) + " does not divide " +
                std::to_string(s.C) + " input and " + std::to_string(s.Cout) + " output channels");
  if (s.sH <= 0 || s.sW <= 0 || s.dH <= 0 || s.dW <= 0 || s.pH < 0 || s.pW < 0 || s.kH <= 0 || s.kW <= 0)
    throw Error(std::string(op) + ": cuda: kernel, stride and dilation must be positive and padding non-negative");
  const int64_t ekH = s.dH * (s.kH - 1) + 1, ekW = s.dW * (s.kW - 1) + 1;
  const int64_t h = s.H + 2 * s.pH, w = s.W + 2 * s.pW;
  if (h < ekH || w < ekW)
    throw Error(std::string(op) + ": cuda: padded input " + std::to_string(h) + "x" + std::to_string(w) +
                " is smaller than the dilated kernel " + std::to_string(ekH) + "x" + std::to_string(ekW));
  const int64_t Ho = (h - ekH) / s.sH + 1, Wo = (w - ekW) / s.sW + 1;
  const int64_t x[4] = {s.N, s.C, s.H, s.W}, wt[4] = {s.Cout, s.C / s.groups, s.kH, s.kW}, y[4] = {s.N, s.Cout, Ho, Wo};
  for (int i = 0; i < 4; ++i) {
    d.x[i] = as_int(op, "input size", x[i]);
    d.w[i] = as_int(op, "weight size", wt[i]);
    d.y[i] = as_int(op, "output size", y[i]);
  }
  // cuDNN indexes each tensor with int strides too.
  as_int(op, "input numel", s.N * s.C * s.H * s.W);
  as_int(op, "output numel", s.N * s.Cout * Ho * Wo);
  d.pad[0] = as_int(op, "padding", s.pH), d.pad[1] = as_int(op, "padding", s.pW);
  d.stride[0] = as_int(op, "stride", s.sH), d.stride[1] = as_int(op, "stride", s.sW);
  d.dilation[0] = as_int(op, "dilation", s.dH), d.dilation[1] = as_int(op, "dilation", s.dW);
  d.groups = static_cast<int>(s.groups);
  return d;
}

AlgoPerf choose_algorithm(const char* what, const std::vector<AlgoPerf>& perfs, size_t workspace_limit) {
  const AlgoPerf* smallest = nullptr;
  for (const AlgoPerf& p : perfs) {
    if (!p.ok) continue;
    if (p.workspace <= workspace_limit) return p;
    if (!smallest || p.workspace < smallest->workspace) smallest = &p;
  }
  if (smallest)
    throw Error(std::string(what) + ": cuda: every cuDNN algorithm needs more workspace than the " +
                std::to_string(workspace_limit) + " bytes allowed (the smallest, algorithm " +
                std::to_string(smallest->algo) + ", needs " + std::to_string(smallest->workspace) + ")");
  throw Error(std::string(what) + ": cuda: cuDNN supports no algorithm for this shape (" +
              std::to_string(perfs.size()) + " tried)");
}

size_t conv_workspace_limit(size_t free_device_bytes) {
  constexpr size_t kMin = size_t{16} << 20, kMax = size_t{1} << 30;
  return std::clamp(free_device_bytes / 4, kMin, kMax);
}

std::string ConvAlgoCache::key(ConvPass pass, const ConvShape& s) {
  std::string k = pass == ConvPass::Forward ? "fwd" : pass == ConvPass::BackwardData ? "bwd_data" : "bwd_filter";
  for (int64_t v : {s.N, s.C, s.H, s.W, s.Cout, s.kH, s.kW, s.sH, s.sW, s.pH, s.pW, s.dH, s.dW, s.groups})
    k += ',' + std::to_string(v);
  k += ',';
  k += dtype_name(s.dtype);
  return k;
}

bool ConvAlgoCache::find(const std::string& key, AlgoPerf* out) const {
  std::lock_guard lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  if (out) *out = it->second;
  return true;
}

void ConvAlgoCache::insert(const std::string& key, const AlgoPerf& a) {
  std::lock_guard lock(mu_);
  map_.emplace(key, a);
}

size_t ConvAlgoCache::size() const {
  std::lock_guard lock(mu_);
  return map_.size();
}

PoolDescriptors pool_descriptors(const PoolShape& s) {
  const char* op = s.max ? "max_pool2d" : "avg_pool2d";
  PoolDescriptors d{};
  d.float64 = is_float64(op, s.dtype);
  d.mode = s.max ? PoolMode::Max : PoolMode::AverageIncludePad;
  if (s.kH <= 0 || s.kW <= 0 || s.sH <= 0 || s.sW <= 0 || s.pH < 0 || s.pW < 0)
    throw Error(std::string(op) + ": cuda: kernel and stride must be positive and padding non-negative");
  const int64_t h = s.H + 2 * s.pH - s.kH, w = s.W + 2 * s.pW - s.kW;
  if (h < 0 || w < 0)
    throw Error(std::string(op) + ": cuda: the window " + std::to_string(s.kH) + "x" + std::to_string(s.kW) +
                " is larger than the padded input " + std::to_string(s.H + 2 * s.pH) + "x" +
                std::to_string(s.W + 2 * s.pW));
  const int64_t Ho = h / s.sH + 1, Wo = w / s.sW + 1;
  d.window[0] = as_int(op, "kernel size", s.kH), d.window[1] = as_int(op, "kernel size", s.kW);
  d.pad[0] = as_int(op, "padding", s.pH), d.pad[1] = as_int(op, "padding", s.pW);
  d.stride[0] = as_int(op, "stride", s.sH), d.stride[1] = as_int(op, "stride", s.sW);
  const int64_t x[4] = {1, s.planes, s.H, s.W}, y[4] = {1, s.planes, Ho, Wo};
  for (int i = 0; i < 4; ++i) {
    d.x[i] = as_int(op, "input size", x[i]);
    d.y[i] = as_int(op, "output size", y[i]);
  }
  as_int(op, "input numel", s.planes * s.H * s.W);
  return d;
}

}  // namespace graph::cuda
