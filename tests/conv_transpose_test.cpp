// conv_transpose2d (runtime/src/conv.cpp): values against a direct scatter
// reference in double, float32 (oneDNN) against float64 (GEMM path),
// finite-difference gradients (float64), float32 gradients against float64's,
// unbatched input, and the errors, which name the op and the shapes.
// PyTorch's own values are in tests/fixtures/ops.txt (op_fixture_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::expect_error;
using gradcheck_support::gradcheck;
using gradcheck_support::values;

struct Case {
  Shape x, w;
  int64_t s = 1, p = 0, op = 0, d = 1, groups = 1;
  bool bias = true;
};

std::vector<Case> cases() {
  return {
      {{2, 3, 4, 5}, {3, 2, 3, 3}},
      {{1, 4, 3, 3}, {4, 3, 4, 4}, 2, 1},                 // DCGAN's upsampling block
      {{2, 2, 3, 4}, {2, 3, 3, 2}, 2, 1, 1},              // output_padding
      {{1, 2, 3, 3}, {2, 2, 2, 3}, 1, 1, 0, 2},           // dilation
      {{1, 4, 3, 2}, {4, 1, 3, 3}, 2, 0, 1, 1, 2, false},  // groups, no bias
      {{2, 3, 1, 1}, {3, 5, 4, 4}, 1, 0, 0, 1, 1, false},  // DCGAN's first layer: 1x1 -> 4x4
      {{1, 2, 3, 3}, {2, 1, 3, 3}, 1, 0, 1, 2},           // output_padding below the dilation, not the stride
  };
}

// y[n, g * Cg + o, i * s - p + ki * d, j * s - p + kj * d] += x[n, c, i, j] * w[c, o, ki, kj].
Tensor reference(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const Case& c) {
  const Tensor x = x_in.to(graph::kFloat64).contiguous(), w = w_in.to(graph::kFloat64).contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Cg = w.size(1), kH = w.size(2), kW = w.size(3), Cin_g = C / c.groups;
  const int64_t Ho = (H - 1) * c.s - 2 * c.p + c.d * (kH - 1) + c.op + 1;
  const int64_t Wo = (W - 1) * c.s - 2 * c.p + c.d * (kW - 1) + c.op + 1;
  const int64_t Cout = Cg * c.groups;
  Tensor y = graph::zeros({N, Cout, Ho, Wo}, graph::kFloat64);
  const double* px = x.data_ptr<double>();
  const double* pw = w.data_ptr<double>();
  double* py = y.data_ptr<double>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t o = 0; o < Cg; ++o)
        for (int64_t i = 0; i < H; ++i)
          for (int64_t j = 0; j < W; ++j)
            for (int64_t ki = 0; ki < kH; ++ki)
              for (int64_t kj = 0; kj < kW; ++kj) {
                const int64_t oh = i * c.s - c.p + ki * c.d, ow = j * c.s - c.p + kj * c.d;
                if (oh < 0 || oh >= Ho || ow < 0 || ow >= Wo) continue;
                const int64_t co = (ci / Cin_g) * Cg + o;
                py[((n * Cout + co) * Ho + oh) * Wo + ow] +=
                    px[((n * C + ci) * H + i) * W + j] * pw[((ci * Cg + o) * kH + ki) * kW + kj];
              }
  if (b_in.defined()) y = y + b_in.to(graph::kFloat64).reshape({1, Cout, 1, 1});
  return y;
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const Tensor g = got.detach().to(graph::kFloat64).contiguous(), w = want.detach().to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < g.numel(); ++i)
    ASSERT_NEAR(g.data_ptr<double>()[i], w.data_ptr<double>()[i], tol * (1 + std::abs(w.data_ptr<double>()[i])))
        << "element " << i;
}

Tensor run(const Case& c, const std::vector<Tensor>& v) {
  return graph::conv_transpose2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), {c.s, c.s}, {c.p, c.p}, {c.op, c.op},
                                 c.groups, {c.d, c.d});
}

std::vector<Tensor> inputs(const Case& c, int seed) {
  std::vector<Tensor> in = {values(c.x, -1, 1, seed), values(c.w, -1, 1, seed + 1)};
  if (c.bias) in.push_back(values({c.w[1] * c.groups}, -1, 1, seed + 2));
  return in;
}

TEST(ConvTranspose2d, ValuesMatchTheReference) {
  int seed = 10;
  for (const Case& c : cases()) {
    SCOPED_TRACE(graph::shape_str(c.x) + " " + graph::shape_str(c.w));
    const std::vector<Tensor> in = inputs(c, seed += 3);
    const Tensor want = reference(in[0], in[1], c.bias ? in[2] : Tensor(), c);
    expect_close(run(c, in), want, 1e-12);
    std::vector<Tensor> f32;
    for (const Tensor& t : in) f32.push_back(t.to(graph::kFloat32));
    const Tensor y32 = run(c, f32);
    EXPECT_EQ(y32.dtype(), graph::kFloat32);
    expect_close(y32, want, 1e-5);
  }
  // A hand-computed one: 1x1 input, stride 2 copies the scaled kernel.
  const Tensor k = graph::arange(4).to(graph::kFloat64).reshape({1, 1, 2, 2});
  const Tensor y = graph::conv_transpose2d(graph::full({1, 1, 1, 1}, 2.0, graph::kFloat64), k, Tensor(), {2, 2});
  expect_close(y, k * 2.0, 0);
}

TEST(ConvTranspose2d, FiniteDifferenceGradients) {
  int seed = 100;
  for (const Case& c : cases()) {
    SCOPED_TRACE(graph::shape_str(c.x) + " " + graph::shape_str(c.w));
    gradcheck([&c](const auto& v) { return run(c, v); }, inputs(c, seed += 3));
  }
  // unbatched input
  const Case c{{2, 3, 3}, {2, 3, 3, 3}, 2, 1, 1};
  gradcheck([&c](const auto& v) { return run(c, v); }, {values({2, 3, 3}, -1, 1, 7), values({2, 3, 3, 3}, -1, 1, 8),
                                                        values({3}, -1, 1, 9)});
}

// float32 gradients (oneDNN's convolution forward and backward weights) agree
// with float64's (the GEMM path).
TEST(ConvTranspose2d, Float32GradientsMatchFloat64) {
  int seed = 200;
  for (const Case& c : cases()) {
    SCOPED_TRACE(graph::shape_str(c.x) + " " + graph::shape_str(c.w));
    std::vector<Tensor> in64 = inputs(c, seed += 3), in32;
    for (Tensor& t : in64) {
      in32.push_back(t.to(graph::kFloat32).requires_grad_());
      t.requires_grad_();
    }
    const Tensor up = values(run(c, in64).sizes(), -1, 1, seed + 50);
    (run(c, in64) * up).sum().backward();
    (run(c, in32) * up.to(graph::kFloat32)).sum().backward();
    for (size_t i = 0; i < in64.size(); ++i) {
      ASSERT_TRUE(in32[i].grad().defined()) << "input " << i;
      expect_close(in32[i].grad(), in64[i].grad(), 1e-5);
    }
  }
}

TEST(ConvTranspose2d, OnlyTheWeightWantsAGradient) {
  const Tensor x = values({1, 2, 3, 3}, -1, 1, 1), w = values({2, 2, 3, 3}, -1, 1, 2).requires_grad_();
  graph::conv_transpose2d(x, w, Tensor(), {2, 2}).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  // d(sum)/dw[c, o, ki, kj] = sum over the input of channel c (every tap lands inside with no padding)
  const Tensor per_channel = x.sum(Shape{0, 2, 3});
  for (int64_t c = 0; c < 2; ++c) {
    const double want = per_channel.select(0, c).item<double>();
    EXPECT_NEAR(graph::amax(w.grad().select(0, c)).item<double>(), want, 1e-12);
    EXPECT_NEAR(graph::amin(w.grad().select(0, c)).item<double>(), want, 1e-12);
  }
}

TEST(ConvTranspose2d, Errors) {
  const Tensor x = graph::zeros({1, 3, 4, 4}), w = graph::zeros({3, 2, 3, 3});
  expect_error([&] { graph::conv_transpose2d(x, graph::zeros({4, 2, 3, 3})); },
               {"conv_transpose2d:", "[1, 3, 4, 4]", "[4, 2, 3, 3]", "channels"});
  expect_error([&] { graph::conv_transpose2d(graph::zeros({3, 4}), w); }, {"conv_transpose2d:", "[3, 4]", "[3, 2, 3, 3]"});
  expect_error([&] { graph::conv_transpose2d(x, graph::zeros({3, 2, 3})); },
               {"conv_transpose2d:", "4-D weight", "[3, 2, 3]"});
  expect_error([&] { graph::conv_transpose2d(x, w, Tensor(), {2, 2}, {0, 0}, {2, 0}); },
               {"conv_transpose2d:", "output_padding", "[2, 0]", "[1, 3, 4, 4]", "[3, 2, 3, 3]"});
  expect_error([&] { graph::conv_transpose2d(x, w, Tensor(), {1, 1}, {0, 0}, {1, 1}); },
               {"conv_transpose2d:", "output_padding", "stride"});
  expect_error([&] { graph::conv_transpose2d(x, w, graph::zeros({3})); }, {"conv_transpose2d:", "bias", "[2]", "[3]"});
  expect_error([&] { graph::conv_transpose2d(x, w, Tensor(), {1, 1}, {0, 0}, {0, 0}, 2); },
               {"conv_transpose2d:", "groups=2", "[1, 3, 4, 4]"});
  expect_error([&] { graph::conv_transpose2d(x, w, Tensor(), {0, 1}); }, {"conv_transpose2d:", "stride", "[0, 1]"});
  expect_error([&] { graph::conv_transpose2d(x, w, Tensor(), {1, 1}, {-1, 0}); }, {"conv_transpose2d:", "padding"});
  expect_error([&] { graph::conv_transpose2d(x, w, Tensor(), {1, 1}, {3, 3}); },
               {"conv_transpose2d:", "output would be", "[1, 3, 4, 4]"});
  expect_error([&] { graph::conv_transpose2d(x.to(graph::kFloat64), w); }, {"conv_transpose2d:", "dtype"});
}

}  // namespace
