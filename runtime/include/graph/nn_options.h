#pragma once
// Options of the nn modules, LibTorch style (GRAPH_ARG, graph/arg.h):
//   Linear(LinearOptions(128, 10).bias(false))
//   Conv2d(Conv2dOptions(3, 64, 3).stride(2).padding(1).bias(false))
//   ConvTranspose2d(ConvTranspose2dOptions(100, 64, 4).stride(2).padding(1))
// Each module also keeps its positional constructor.
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "graph/arg.h"
#include "graph/tensor.h"

namespace graph::nn {

// A pair of sizes (kernel, stride, ...) given as one int or as {h, w}.
struct Size2 {
  Size2() = default;  // empty: "the default" where a module allows it
  Size2(int64_t v) : values{v, v} {}
  Size2(int v) : values{v, v} {}
  Size2(std::initializer_list<int64_t> v) : values(v) {}
  Size2(Shape v) : values(std::move(v)) {}
  Shape values;
  operator const Shape&() const { return values; }
};

class LinearOptions {
 public:
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  GRAPH_ARG(int64_t, in_features);
  GRAPH_ARG(int64_t, out_features);
  GRAPH_ARG(bool, bias) = true;
};

class Conv2dOptions {
 public:
  Conv2dOptions(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(std::move(kernel_size)) {}
  GRAPH_ARG(int64_t, in_channels);
  GRAPH_ARG(int64_t, out_channels);
  GRAPH_ARG(Size2, kernel_size);
  GRAPH_ARG(Size2, stride) = 1;
  GRAPH_ARG(Size2, padding) = 0;
  GRAPH_ARG(Size2, dilation) = 1;
  GRAPH_ARG(int64_t, groups) = 1;
  GRAPH_ARG(bool, bias) = true;
};

class ConvTranspose2dOptions {
 public:
  ConvTranspose2dOptions(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(std::move(kernel_size)) {}
  GRAPH_ARG(int64_t, in_channels);
  GRAPH_ARG(int64_t, out_channels);
  GRAPH_ARG(Size2, kernel_size);
  GRAPH_ARG(Size2, stride) = 1;
  GRAPH_ARG(Size2, padding) = 0;
  GRAPH_ARG(Size2, output_padding) = 0;
  GRAPH_ARG(int64_t, groups) = 1;
  GRAPH_ARG(bool, bias) = true;
  GRAPH_ARG(Size2, dilation) = 1;
};

}  // namespace graph::nn
