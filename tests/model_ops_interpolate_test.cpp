// interpolate's direct kernel (runtime/src/interpolate.cpp) beyond the PyTorch
// fixtures (tests/fixtures/ops.txt): dtypes PyTorch has no nearest kernel for
// (int32, int64, bool) against the float32 path, which copies the same
// elements; float16/bfloat16 against float32 rounded once; strided input;
// gradients by central differences in float64 for every mode, size and
// scale; interpolate_backward against the autograd gradient; bad input.
// Part of op_fixture_test.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "graph/detail/backward_kernels.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::doubles;
using gradcheck_support::expect_error;

Tensor ramp(const Shape& s) {  // distinct small integers, exact in every dtype
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return graph::arange(n).reshape(s).to(graph::kFloat32);
}

TEST(InterpolateKernel, NearestCopiesEveryDtypeAsFloat32) {
  const Tensor x = ramp({2, 3, 5, 4});
  for (const Shape& size : {Shape{10, 8}, Shape{5, 4}, Shape{3, 7}, Shape{11, 2}}) {
    const std::vector<double> want = doubles(graph::interpolate(x, size));
    for (graph::DType d : {graph::kInt32, graph::kInt64, graph::kFloat64, graph::kFloat16, graph::kBFloat16}) {
      const Tensor y = graph::interpolate(x.to(d), size);
      EXPECT_EQ(y.dtype(), d);
      EXPECT_EQ(doubles(y), want) << graph::dtype_name(d) << " " << graph::shape_str(size);
    }
  }
  // bool: the same picks of 0 / 1 values.
  const Tensor m = graph::lt(graph::sin(x), 0.0);
  EXPECT_EQ(doubles(graph::interpolate_scale(m, 1.5)), doubles(graph::interpolate_scale(m.to(graph::kFloat32), 1.5)));
  // 3-D.
  const Tensor l = ramp({2, 2, 7});
  EXPECT_EQ(doubles(graph::interpolate(l.to(graph::kInt64), {12})), doubles(graph::interpolate(l, {12})));
}

TEST(InterpolateKernel, HalfBlendsInFloat32) {
  const Tensor x = gradcheck_support::values({1, 2, 5, 4}, -2.0, 2.0, 3).to(graph::kFloat32);
  for (graph::DType d : {graph::kFloat16, graph::kBFloat16}) {
    const Tensor xh = x.to(d);
    const Tensor want = graph::interpolate(xh.to(graph::kFloat32), {7, 3}, graph::kBilinear, true).to(d);
    const Tensor got = graph::interpolate(xh, {7, 3}, graph::kBilinear, true);
    EXPECT_EQ(got.dtype(), d);
    EXPECT_EQ(doubles(got), doubles(want));
  }
}

TEST(InterpolateKernel, StridedInputEqualsContiguous) {
  const Tensor base = gradcheck_support::values({2, 5, 4, 3}, -1.0, 1.0, 5);
  const Tensor x = base.permute({0, 3, 1, 2});  // [2, 3, 5, 4], not contiguous
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_EQ(doubles(graph::interpolate(x, {9, 3}, graph::kBilinear)),
            doubles(graph::interpolate(x.contiguous(), {9, 3}, graph::kBilinear)));
  EXPECT_EQ(doubles(graph::interpolate_scale(x, 2.0)), doubles(graph::interpolate_scale(x.contiguous(), 2.0)));
}

TEST(InterpolateKernel, GradientsByFiniteDifferences) {
  using gradcheck_support::gradcheck;
  using V = std::vector<Tensor>;
  const auto r = [](Shape s, int seed) { return gradcheck_support::values(s, -1.0, 1.0, seed); };
  gradcheck([](const V& v) { return graph::interpolate(v[0], {9, 3}); }, {r({2, 2, 5, 4}, 1)});
  gradcheck([](const V& v) { return graph::interpolate(v[0], {8, 8}); }, {r({1, 2, 4, 4}, 2)});  // out == 2 in
  gradcheck([](const V& v) { return graph::interpolate_scale(v[0], 0.6); }, {r({1, 2, 7}, 3)});
  gradcheck([](const V& v) { return graph::interpolate(v[0], {3, 7}, graph::kBilinear, true); }, {r({1, 2, 5, 4}, 4)});
  gradcheck([](const V& v) { return graph::interpolate_scale(v[0], 1.7, graph::kBilinear); }, {r({2, 1, 4, 6}, 5)});
  gradcheck([](const V& v) { return graph::interpolate(v[0], {4}, graph::kLinear, true); }, {r({2, 2, 9}, 6)});
  gradcheck([](const V& v) { return graph::interpolate(v[0], {12}, graph::kLinear); }, {r({1, 3, 7}, 7)});
  gradcheck([](const V& v) { return graph::interpolate(v[0], {1}, graph::kLinear, true); }, {r({1, 1, 5}, 8)});
}

TEST(InterpolateKernel, BackwardKernelMatchesAutograd) {
  const Tensor x = gradcheck_support::values({2, 3, 5, 4}, -1.0, 1.0, 9).requires_grad_(true);
  const Tensor g = gradcheck_support::values({2, 3, 7, 6}, -1.0, 1.0, 10);
  const Tensor y = graph::interpolate(x, {7, 6}, graph::kBilinear);
  (y * g).sum().backward();
  const Tensor direct = graph::detail::interpolate_backward(g, x.detach(), {7, 6}, 0.0, 2, false);
  EXPECT_EQ(doubles(direct), doubles(x.grad()));
  // By a scale factor: the size it gives is floor(in * scale).
  const Tensor gs = gradcheck_support::values({2, 3, 7, 6}, -1.0, 1.0, 11);
  EXPECT_EQ(direct.sizes(), graph::detail::interpolate_backward(gs, x.detach(), {}, 1.5, 0, false).sizes());
}

TEST(InterpolateKernel, BadInputNamesTheOp) {
  const Tensor img = graph::zeros({1, 2, 3, 3});
  expect_error([&] { graph::interpolate(img, {4, 4}, static_cast<graph::InterpolateMode>(7)); },
               {"interpolate", "unknown mode 7"});
  expect_error([&] { graph::interpolate(img, {}); }, {"interpolate", "positive scale_factor"});
  expect_error([&] { graph::interpolate_scale(img, 0.0); }, {"interpolate", "positive scale_factor"});
  expect_error([&] { graph::interpolate(Tensor(), {4, 4}); }, {"interpolate"});
  expect_error([&] { graph::detail::interpolate_backward(graph::zeros({1, 2, 5, 5}), img, {4, 4}, 0.0, 0, false); },
               {"interpolate_backward", "[1, 2, 5, 5]", "[1, 2, 4, 4]"});
  expect_error([&] { graph::detail::interpolate_backward(graph::zeros({1, 2, 4, 4}), img, {4, 4}, 0.0, 5, false); },
               {"interpolate_backward", "unknown mode 5"});
}

}  // namespace
