// conv2d's float32 path through oneDNN's convolution primitives
// (runtime/src/dnnl_conv.cpp): forward, backward data and backward weights
// against the float64 path (im2col + GEMM, itself checked against a naive
// loop and finite differences in nn_ops_test), the counters showing that
// the primitives really ran, the kept weight reorder refreshing after an
// in-place update, and the relu post-op of graph::detail::conv2d_relu
// against relu(conv2d).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/detail/conv_stats.h"
#include "graph/detail/generated_support.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::values;

std::vector<double> vec(const Tensor& t) {
  const Tensor c = t.detach().to(graph::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto g = vec(got), w = vec(want);
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i]))))
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << w[i], ++bad;
}

// For sums of many terms of both signs (gradients over N * Ho * Wo
// positions): float32's rounding follows the terms' size, not the (possibly
// much smaller) sum's, so the bound scales with the tensor's largest element.
void expect_close_to_scale(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const auto g = vec(got), w = vec(want);
  double scale = 1;
  for (double v : w) scale = std::max(scale, std::fabs(v));
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::fabs(g[i] - w[i]) <= tol * scale))
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", want " << w[i] << " (scale " << scale << ")",
          ++bad;
}

Tensor f32(const Tensor& t) { return t.defined() ? t.to(graph::kFloat32) : t; }

struct Case {
  Shape x, w;
  Shape stride, padding, dilation;
  int64_t groups;
  bool bias;
};

// Odd sizes, every attribute, groups (depthwise too), 1x1 and kernels as
// large as the padded input.
const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{3, 5, 11, 7}, {7, 5, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {{2, 3, 13, 9}, {5, 3, 5, 3}, {2, 3}, {2, 1}, {1, 1}, 1, true},
      {{1, 6, 10, 10}, {9, 2, 3, 3}, {1, 1}, {1, 1}, {2, 2}, 3, false},
      {{2, 8, 9, 9}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 8, true},  // depthwise
      {{4, 16, 6, 5}, {24, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},  // pointwise
      {{1, 4, 7, 6}, {6, 2, 1, 1}, {2, 2}, {1, 1}, {1, 1}, 2, false},  // 1x1 with stride and padding
      {{2, 1, 4, 6}, {2, 1, 4, 2}, {3, 1}, {2, 3}, {1, 3}, 1, true},  // large padding, dilated width
      {{1, 3, 5, 5}, {4, 3, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true},  // kernel = input: 1x1 output
      {{64, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1, true},  // LeNet-5's layers
      {{64, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, true},
  };
  return c;
}

std::string describe(const Case& c) {
  return graph::shape_str(c.x) + " * " + graph::shape_str(c.w) + " stride " + graph::shape_str(c.stride) +
         " padding " + graph::shape_str(c.padding) + " dilation " + graph::shape_str(c.dilation) + " groups " +
         std::to_string(c.groups);
}

Tensor conv(const Case& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  return graph::conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
}

// These tests are about the library paths: tiny convolutions would take the
// direct loop (checked against them in DirectConv below).
[[maybe_unused]] const int64_t kDirectLimit = graph::detail::set_direct_conv_limit(0);

// The direct loop (conv.cpp's conv_direct, which every convolution of at
// most ~16k multiply-adds takes) against oneDNN (float32) and im2col + GEMM
// (float64) on every geometry above: strides, padding, dilation, groups.
TEST(DirectConv, MatchesTheLibraryPathsOnEveryGeometry) {
  int seed = 900;
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const Tensor x = values(c.x, -1, 1, seed++), w = values(c.w, -1, 1, seed++);
    const Tensor b = c.bias ? values({c.w[0]}, -1, 1, seed++) : Tensor();
    const int64_t before = graph::detail::set_direct_conv_limit(std::numeric_limits<int64_t>::max());
    const auto s0 = graph::detail::dnnl_conv_stats();
    const Tensor d32 = conv(c, f32(x), f32(w), f32(b)), d64 = conv(c, x, w, b);
    const auto s1 = graph::detail::dnnl_conv_stats();
    graph::detail::set_direct_conv_limit(0);
    const Tensor l32 = conv(c, f32(x), f32(w), f32(b)), l64 = conv(c, x, w, b);
    graph::detail::set_direct_conv_limit(before);
    EXPECT_EQ(s1.forward, s0.forward) << "oneDNN ran where the direct loop should have";
    expect_close(d32, l32, 2e-5, "float32");
    expect_close(d64, l64, 1e-12, "float64");
  }
}

TEST(DnnlConv, ForwardMatchesFloat64) {
  int seed = 300;
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const Tensor x = values(c.x, -1, 1, seed++), w = values(c.w, -1, 1, seed++);
    const Tensor b = c.bias ? values({c.w[0]}, -1, 1, seed++) : Tensor();
    const auto s0 = graph::detail::dnnl_conv_stats();
    const Tensor y = conv(c, f32(x), f32(w), f32(b));
    const auto s1 = graph::detail::dnnl_conv_stats();
    EXPECT_EQ(s1.forward - s0.forward, 1u) << "oneDNN's forward primitive did not run";
    EXPECT_EQ(s1.refused, s0.refused);
    EXPECT_EQ(y.dtype(), graph::kFloat32);
    expect_close(y, conv(c, x, w, b), 2e-5, "forward");
  }
}

TEST(DnnlConv, BackwardMatchesFloat64) {
  int seed = 400;
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const Tensor x = values(c.x, -1, 1, seed++), w = values(c.w, -1, 1, seed++);
    const Tensor b = c.bias ? values({c.w[0]}, -1, 1, seed++) : Tensor();
    std::vector<Tensor> in64{x.clone().requires_grad_(), w.clone().requires_grad_()};
    std::vector<Tensor> in32{f32(x).requires_grad_(), f32(w).requires_grad_()};
    if (c.bias) in64.push_back(b.clone().requires_grad_()), in32.push_back(f32(b).requires_grad_());
    const Tensor y64 = conv(c, in64[0], in64[1], c.bias ? in64[2] : Tensor());
    const Tensor gy = values(y64.sizes(), -1, 1, seed++);  // a non-uniform output gradient
    graph::mul(y64, gy).sum().backward();
    const auto s0 = graph::detail::dnnl_conv_stats();
    graph::mul(conv(c, in32[0], in32[1], c.bias ? in32[2] : Tensor()), f32(gy)).sum().backward();
    const auto s1 = graph::detail::dnnl_conv_stats();
    EXPECT_EQ(s1.backward_data - s0.backward_data, 1u);
    EXPECT_EQ(s1.backward_weights - s0.backward_weights, 1u);
    EXPECT_EQ(s1.refused, s0.refused);
    const char* names[] = {"input gradient", "weight gradient", "bias gradient"};
    for (size_t i = 0; i < in64.size(); ++i) {
      ASSERT_TRUE(in32[i].grad().defined()) << names[i];
      EXPECT_EQ(in32[i].grad().dtype(), graph::kFloat32);
      expect_close_to_scale(in32[i].grad(), in64[i].grad(), 1e-5, names[i]);
    }
  }
}

// Only the requested gradients are computed: the input's alone (backward
// data), the weight's alone (backward weights), and the bias's without the
// weight's (a plain sum).
TEST(DnnlConv, GradientsOnlyWhereAsked) {
  const Case& c = cases()[1];
  const Tensor x = values(c.x, -1, 1, 500), w = values(c.w, -1, 1, 501), b = values({c.w[0]}, -1, 1, 502);
  const Tensor grad = values({c.x[0], c.w[0], 7, 3}, -1, 1, 503);
  namespace gd = graph::detail;
  const auto full64 = gd::conv2d_backward(grad, x, w, b, c.stride, c.padding, c.dilation, c.groups, gd::kAllGrads);
  for (uint32_t mask : {1u, 2u, 4u, 5u}) {
    SCOPED_TRACE("mask " + std::to_string(mask));
    const auto r = gd::conv2d_backward(f32(grad), f32(x), f32(w), f32(b), c.stride, c.padding, c.dilation, c.groups,
                                       gd::GradMask{mask});
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r[i].defined(), bool(mask >> i & 1)) << i;
      if (r[i].defined()) expect_close_to_scale(r[i], full64[i], 1e-5, "gradient " + std::to_string(i));
    }
  }
}

// The weight's reorder is kept per Tensor::version: an in-place update must
// be seen by the next call, and an unchanged weight is not reordered again.
TEST(DnnlConv, WeightUpdatedInPlaceRefreshesTheKeptReorder) {
  graph::detail::clear_dnnl_conv_cache();
  const Case& c = cases()[0];
  const Tensor x = f32(values(c.x, -1, 1, 600));
  Tensor w = f32(values(c.w, -1, 1, 601));
  const Tensor b = f32(values({c.w[0]}, -1, 1, 602));
  const auto s0 = graph::detail::dnnl_conv_stats();
  const Tensor y1 = conv(c, x, w, b);
  const Tensor y1_again = conv(c, x, w, b);
  const auto s1 = graph::detail::dnnl_conv_stats();
  EXPECT_EQ(s1.weight_reorders - s0.weight_reorders, 1u);
  EXPECT_EQ(s1.weight_hits - s0.weight_hits, 1u);
  expect_close(y1_again, y1, 0, "same weight, kept reorder");

  w.add_(graph::full(c.w, 0.25, graph::kFloat32));  // bumps the version
  const Tensor y2 = conv(c, x, w, b);
  const auto s2 = graph::detail::dnnl_conv_stats();
  EXPECT_EQ(s2.weight_reorders - s1.weight_reorders, 1u) << "the update was not seen";
  expect_close(y2, conv(c, x.to(graph::kFloat64), w.to(graph::kFloat64), b.to(graph::kFloat64)), 2e-5, "updated");
  EXPECT_GT(std::fabs(vec(y2)[0] - vec(y1)[0]), 1e-3);
  // The old version's entry was dropped, not kept beside the new one.
  EXPECT_EQ(s2.weights_held, 1u);

  // A write through data_ptr is seen only after bump_version (as the packed
  // linear's cache documents).
  w.data_ptr<float>()[0] += 1.0f;
  w.bump_version();
  expect_close(conv(c, x, w, b), conv(c, x.to(graph::kFloat64), w.to(graph::kFloat64), b.to(graph::kFloat64)), 2e-5,
               "written through data_ptr");
}

// A new weight tensor at a freed one's address never matches the old entry.
TEST(DnnlConv, NewWeightTensorsAreNeverConfusedWithFreedOnes) {
  const Case& c = cases()[2];
  const Tensor x = f32(values(c.x, -1, 1, 650));
  for (int i = 0; i < 4; ++i) {
    const Tensor w64 = values(c.w, -1, 1, 651 + i);
    expect_close(conv(c, x, f32(w64), Tensor()), conv(c, x.to(graph::kFloat64), w64, Tensor()), 2e-5,
                 "weight " + std::to_string(i));
  }
}

TEST(DnnlConv, FusedReluMatchesReluOfConv) {
  int seed = 700;
  for (const Case& c : cases()) {
    SCOPED_TRACE(describe(c));
    const Tensor x = f32(values(c.x, -1, 1, seed++)), w = f32(values(c.w, -1, 1, seed++));
    const Tensor b = c.bias ? f32(values({c.w[0]}, -1, 1, seed++)) : Tensor();
    const auto s0 = graph::detail::dnnl_conv_stats();
    const Tensor fused = graph::detail::conv2d_relu(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    EXPECT_EQ(graph::detail::dnnl_conv_stats().forward - s0.forward, 1u);
    const Tensor unfused = graph::relu(conv(c, x, w, b));
    expect_close(fused, unfused, 1e-6, "fused relu");
    EXPECT_EQ(graph::amin(fused).item<float>(), 0.0f);  // the relu really ran
  }
}

// Where the post-op does not apply conv2d_relu is relu(conv2d(...)): float64,
// inputs that require grad (the tape records both ops), 3-D input.
TEST(DnnlConv, FusedReluFallsBackToTheEagerOps) {
  const Case& c = cases()[1];
  const Tensor x = values(c.x, -1, 1, 800), w = values(c.w, -1, 1, 801), b = values({c.w[0]}, -1, 1, 802);
  const Tensor want = graph::relu(conv(c, x, w, b));
  expect_close(graph::detail::conv2d_relu(x, w, b, c.stride, c.padding, c.dilation, c.groups), want, 0, "float64");
  Tensor w32 = f32(w).requires_grad_();
  const Tensor y = graph::detail::conv2d_relu(f32(x), w32, f32(b), c.stride, c.padding, c.dilation, c.groups);
  expect_close(y, want, 2e-5, "requires grad");
  y.sum().backward();
  ASSERT_TRUE(w32.grad().defined());
  Tensor w64 = w.clone().requires_grad_();
  graph::relu(conv(c, x, w64, b)).sum().backward();
  expect_close_to_scale(w32.grad(), w64.grad(), 1e-5, "weight gradient through the fallback");
  const Tensor x3 = f32(values({3, 6, 5}, -1, 1, 803)), w3 = f32(values({2, 3, 3, 3}, -1, 1, 804));
  expect_close(graph::detail::conv2d_relu(x3, w3, Tensor(), {1, 1}, {1, 1}, {1, 1}, 1),
               graph::relu(graph::conv2d(x3, w3, Tensor(), {1, 1}, {1, 1})), 0, "unbatched");
}

// oneDNN's relu post-op maps NaN to 0 (graph::relu keeps it): documented in
// generated_support.h, asserted here so a oneDNN change is noticed.
TEST(DnnlConv, FusedReluMapsNaNToZero) {
  Tensor x = graph::ones({1, 1, 3, 3}, graph::kFloat32);
  x.data_ptr<float>()[4] = std::numeric_limits<float>::quiet_NaN();
  const Tensor w = graph::ones({1, 1, 1, 1}, graph::kFloat32);
  const Tensor fused = graph::detail::conv2d_relu(x, w, Tensor(), {1, 1}, {0, 0}, {1, 1}, 1);
  EXPECT_EQ(fused.data_ptr<float>()[4], 0.0f);
  EXPECT_EQ(fused.data_ptr<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(graph::relu(graph::conv2d(x, w)).data_ptr<float>()[4]));
}

TEST(DnnlConv, FusedReluReportsBadInput) {
  const Tensor x = graph::zeros({1, 3, 5, 5}, graph::kFloat32);
  try {
    graph::detail::conv2d_relu(x, graph::zeros({4, 2, 3, 3}, graph::kFloat32), Tensor(), {1, 1}, {0, 0}, {1, 1}, 1);
    ADD_FAILURE() << "no error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2d:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("channels"), std::string::npos) << e.what();
  }
  EXPECT_THROW(graph::detail::conv2d_relu(x, graph::zeros({4, 3, 7, 7}, graph::kFloat32), Tensor(), {1, 1}, {0, 0},
                                          {1, 1}, 1),
               graph::Error);
}

}  // namespace
