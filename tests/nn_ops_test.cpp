// nn_ops.h: forward values against hand-computed cases and naive reference
// loops (in double), every differentiable input against central finite
// differences in float64, and error messages naming the op and the shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::Fn;

constexpr double kInf = std::numeric_limits<double>::infinity();

using gradcheck_support::gradcheck;
using gradcheck_support::values;

std::vector<double> vec(const Tensor& t) {
  const Tensor c = t.detach().to(graph::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

Tensor dtensor(const std::vector<double>& v, const Shape& shape) {
  Tensor t = graph::empty(shape, graph::kFloat64);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t;
}

void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const auto g = vec(got), w = vec(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "element " << i;
      continue;
    }
    if (g[i] == w[i]) continue;  // infinities
    EXPECT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
  }
}

using gradcheck_support::expect_error;

// ---- naive references (double, contiguous) -------------------------------------

Tensor ref_conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, int64_t sh, int64_t sw, int64_t ph,
                  int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
  const Tensor x = x_in.to(graph::kFloat64).contiguous(), w = w_in.to(graph::kFloat64).contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Co = w.size(0), Cg = w.size(1), kh = w.size(2), kw = w.size(3), Cog = Co / groups;
  const int64_t Ho = (H + 2 * ph - dh * (kh - 1) - 1) / sh + 1, Wo = (W + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  Tensor out = graph::zeros({N, Co, Ho, Wo}, graph::kFloat64);
  const double* px = x.data_ptr<double>();
  const double* pw_ = w.data_ptr<double>();
  double* po = out.data_ptr<double>();
  const auto bv = b_in.defined() ? vec(b_in) : std::vector<double>(Co, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < Co; ++o) {
      const int64_t g = o / Cog;
      for (int64_t i = 0; i < Ho; ++i)
        for (int64_t j = 0; j < Wo; ++j) {
          double s = bv[o];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t b = 0; b < kw; ++b) {
                const int64_t ih = i * sh - ph + a * dh, iw = j * sw - pw + b * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += px[((n * C + g * Cg + c) * H + ih) * W + iw] * pw_[((o * Cg + c) * kh + a) * kw + b];
              }
          po[((n * Co + o) * Ho + i) * Wo + j] = s;
        }
    }
  (void)C;
  return out;
}

// max (padding never wins) or average (count_include_pad) pooling.
Tensor ref_pool(bool is_max, const Tensor& x_in, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                int64_t pw) {
  const Tensor x = x_in.to(graph::kFloat64).contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Ho = (H + 2 * ph - kh) / sh + 1, Wo = (W + 2 * pw - kw) / sw + 1;
  Tensor out = graph::zeros({N, C, Ho, Wo}, graph::kFloat64);
  const double* px = x.data_ptr<double>();
  double* po = out.data_ptr<double>();
  for (int64_t p = 0; p < N * C; ++p)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        double acc = is_max ? -kInf : 0.0;
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t b = 0; b < kw; ++b) {
            const int64_t ih = i * sh - ph + a, iw = j * sw - pw + b;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = px[(p * H + ih) * W + iw];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        po[(p * Ho + i) * Wo + j] = is_max ? acc : acc / static_cast<double>(kh * kw);
      }
  return out;
}

// ---- random numbers ---------------------------------------------------------------

TEST(Random, SeededAndInRange) {
  graph::manual_seed(42);
  const auto a = vec(graph::rand({1000}));
  graph::manual_seed(42);
  const auto b = vec(graph::rand({1000}));
  EXPECT_EQ(a, b);
  const auto c = vec(graph::rand({1000}));
  EXPECT_NE(a, c);
  double mean = 0;
  for (double v : a) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
    mean += v / a.size();
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
  Tensor d = graph::rand({3, 4}, graph::kFloat64);
  EXPECT_EQ(d.dtype(), graph::kFloat64);
  EXPECT_EQ(d.sizes(), (Shape{3, 4}));
}

TEST(Random, NormalMoments) {
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64}) {
    graph::manual_seed(7);
    Tensor x = graph::randn({20001}, dt);  // odd count: the last pair is half used
    EXPECT_EQ(x.dtype(), dt);
    const auto v = vec(x);
    double m = 0, s2 = 0;
    for (double e : v) m += e / v.size();
    for (double e : v) s2 += (e - m) * (e - m) / v.size();
    EXPECT_NEAR(m, 0.0, 0.03);
    EXPECT_NEAR(std::sqrt(s2), 1.0, 0.03);
    graph::manual_seed(7);
    EXPECT_EQ(vec(graph::randn({20001}, dt)), v);
  }
}

TEST(Random, Errors) {
  expect_error([] { graph::rand({2, 3}, graph::kInt64); }, {"rand:", "long", "[2, 3]"});
  expect_error([] { graph::randn({4}, graph::kBool); }, {"randn:", "bool", "[4]"});
  expect_error([] { graph::rand({-1}); }, {"rand:", "negative", "[-1]"});
}

// ---- linear -----------------------------------------------------------------------

TEST(Linear, Values) {
  Tensor x = dtensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = dtensor({1, 0, -1, 0.5, 0.5, 0.5}, {2, 3});
  Tensor b = dtensor({10, 20}, {2});
  expect_close(graph::linear(x, w, b), dtensor({8, 23, 8, 27.5}, {2, 2}), 1e-12);
  expect_close(graph::linear(x, w), dtensor({-2, 3, -2, 7.5}, {2, 2}), 1e-12);
  // 1-D and 3-D inputs
  expect_close(graph::linear(dtensor({1, 2, 3}, {3}), w, b), dtensor({8, 23}, {2}), 1e-12);
  Tensor x3 = values({2, 4, 3}, -1, 1, 1);
  Tensor y3 = graph::linear(x3, w, b);
  ASSERT_EQ(y3.sizes(), (Shape{2, 4, 2}));
  expect_close(y3.reshape({8, 2}), graph::linear(x3.reshape({8, 3}), w, b), 1e-12);
  // float32
  Tensor yf = graph::linear(x.to(graph::kFloat32), w.to(graph::kFloat32), b.to(graph::kFloat32));
  EXPECT_EQ(yf.dtype(), graph::kFloat32);
  expect_close(yf, dtensor({8, 23, 8, 27.5}, {2, 2}), 1e-6);
}

TEST(Linear, Gradcheck) {
  gradcheck([](const auto& in) { return graph::linear(in[0], in[1], in[2]); },
            {values({2, 3, 4}, -1, 1, 1), values({5, 4}, -1, 1, 2), values({5}, -1, 1, 3)});
  gradcheck([](const auto& in) { return graph::linear(in[0], in[1]); }, {values({3, 4}, -1, 1, 4), values({2, 4}, -1, 1, 5)});
}

TEST(Linear, Errors) {
  Tensor x = graph::zeros({2, 3}), w = graph::zeros({4, 5});
  expect_error([&] { graph::linear(x, w); }, {"linear:", "[2, 3]", "[4, 5]"});
  expect_error([&] { graph::linear(x, graph::zeros({3})); }, {"linear:", "2-D weight", "[3]"});
  expect_error([&] { graph::linear(x, graph::zeros({4, 3}), graph::zeros({5})); }, {"linear:", "bias", "[5]"});
  expect_error([&] { graph::linear(x, graph::zeros({4, 3}, graph::kFloat64)); }, {"linear:", "dtype", "[2, 3]"});
}

// ---- layer_norm -------------------------------------------------------------------

Tensor ref_layer_norm(const Tensor& x, const Shape& ns, const Tensor& w, const Tensor& b, double eps) {
  Shape dims;
  for (size_t i = 0; i < ns.size(); ++i) dims.push_back(x.dim() - ns.size() + i);
  Tensor mu = x.mean(dims, true);
  Tensor var = ((x - mu) * (x - mu)).mean(dims, true);
  Tensor y = (x - mu) / graph::sqrt(var + eps);
  if (w.defined()) y = y * w;
  if (b.defined()) y = y + b;
  return y;
}

TEST(LayerNorm, Values) {
  // [1, 2, 3]: mean 2, variance 2/3.
  Tensor x = dtensor({1, 2, 3, -1, 0, 4}, {2, 3});
  const double r = 1 / std::sqrt(2.0 / 3 + 1e-5);
  expect_close(graph::layer_norm(x.slice(0, 0, 1), {3}), dtensor({-r, 0, r}, {1, 3}), 1e-12);
  Tensor w = dtensor({1, 2, 3}, {3}), b = dtensor({0.5, 0, -0.5}, {3});
  expect_close(graph::layer_norm(x, {3}, w, b), ref_layer_norm(x, {3}, w, b, 1e-5), 1e-12);
  // two normalized dims, no bias, float32
  Tensor x4 = values({2, 3, 4, 5}, -3, 3, 2), w2 = values({4, 5}, 0.5, 1.5, 3);
  expect_close(graph::layer_norm(x4, {4, 5}, w2, Tensor(), 1e-3), ref_layer_norm(x4, {4, 5}, w2, Tensor(), 1e-3), 1e-12);
  Tensor y32 = graph::layer_norm(x4.to(graph::kFloat32), {4, 5}, w2.to(graph::kFloat32));
  EXPECT_EQ(y32.dtype(), graph::kFloat32);
  expect_close(y32, ref_layer_norm(x4, {4, 5}, w2, Tensor(), 1e-5), 1e-5);
}

TEST(LayerNorm, StableForLargeOffsets) {
  // float32 rows around 1e4 with spread 1e-1: a one-pass E[x^2] - E[x]^2 in
  // float would lose every digit of the variance.
  Tensor small = values({4, 64}, -0.1, 0.1, 5);
  Tensor x = (small + 1e4).to(graph::kFloat32);
  Tensor y = graph::layer_norm(x, {64});
  Tensor want = ref_layer_norm(x.to(graph::kFloat64), {64}, Tensor(), Tensor(), 1e-5);
  expect_close(y, want, 1e-4);
  for (double v : vec(y)) EXPECT_TRUE(std::isfinite(v));
}

TEST(LayerNorm, Gradcheck) {
  gradcheck([](const auto& in) { return graph::layer_norm(in[0], {4}, in[1], in[2]); },
            {values({3, 4}, -2, 2, 6), values({4}, 0.5, 1.5, 7), values({4}, -1, 1, 8)});
  gradcheck([](const auto& in) { return graph::layer_norm(in[0], {3, 4}, in[1], Tensor(), 1e-3); },
            {values({2, 3, 4}, -2, 2, 9), values({3, 4}, 0.5, 1.5, 10)});
  gradcheck([](const auto& in) { return graph::layer_norm(in[0], {5}); }, {values({2, 5}, -2, 2, 11)});
  // a non-contiguous input
  gradcheck([](const auto& in) { return graph::layer_norm(in[0].t(), {3}, Tensor(), in[1]); },
            {values({3, 4}, -2, 2, 12), values({3}, -1, 1, 13)});
}

TEST(LayerNorm, Errors) {
  Tensor x = graph::zeros({2, 3});
  expect_error([&] { graph::layer_norm(x, {4}); }, {"layer_norm:", "[2, 3]", "[4]"});
  expect_error([&] { graph::layer_norm(x, {3}, graph::zeros({4})); }, {"layer_norm:", "weight", "[4]", "[2, 3]"});
  expect_error([&] { graph::layer_norm(graph::zeros({2, 3}, graph::kInt64), {3}); }, {"layer_norm:", "long", "[2, 3]"});
  expect_error([&] { graph::layer_norm(x, {}); }, {"layer_norm:", "[2, 3]"});
}

// ---- conv2d -------------------------------------------------------------------------

TEST(Conv2d, HandComputed) {
  // 1x1x3x3 input 1..9, 2x2 kernel of ones: sums of each 2x2 window.
  Tensor x = dtensor({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Tensor w = graph::ones({1, 1, 2, 2}, graph::kFloat64);
  expect_close(graph::conv2d(x, w), dtensor({12, 16, 24, 28}, {1, 1, 2, 2}), 1e-12);
  // stride 2, padding 1, bias 1: the corner window holds only x[0][0]
  expect_close(graph::conv2d(x, w, dtensor({1}, {1}), {2, 2}, {1, 1}),
               dtensor({1 + 1, 1 + 2 + 3, 1 + 4 + 7, 1 + 5 + 6 + 8 + 9}, {1, 1, 2, 2}), 1e-12);
  // dilation 2 on a 3x3 input with a 2x2 kernel: corners only
  expect_close(graph::conv2d(x, w, Tensor(), {1, 1}, {0, 0}, {2, 2}), dtensor({1 + 3 + 7 + 9}, {1, 1, 1, 1}), 1e-12);
}

struct ConvCase {
  Shape x, w;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, 1, 1, 0, 0, 1, 1, 1, true},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, 2, 2, 1, 1, 1, 1, 1, true},
      {{1, 4, 8, 9}, {6, 2, 3, 2}, 1, 2, 1, 0, 2, 1, 2, false},
      {{2, 4, 9, 9}, {4, 2, 3, 3}, 2, 2, 1, 1, 2, 2, 2, true},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, 1, 1, 1, 1, 1, 1, 6, true},  // depthwise
      {{2, 4, 5, 4}, {3, 4, 1, 1}, 1, 1, 0, 0, 1, 1, 1, true},  // pointwise fast path
      {{1, 2, 5, 5}, {2, 2, 1, 1}, 2, 2, 1, 1, 1, 1, 1, false}, // 1x1 with stride/pad
      {{1, 1, 4, 6}, {2, 1, 4, 2}, 3, 1, 2, 3, 1, 3, 1, true},  // large padding
      {{1, 4, 5, 4}, {3, 4, 1, 1}, 1, 1, 0, 0, 1, 1, 1, true},  // pointwise, one sample: no im2col
      {{2, 2, 24, 23}, {4, 1, 3, 3}, 1, 1, 1, 1, 1, 1, 2, true},  // large images: one sample per gemm
  };
  return cases;
}

TEST(Conv2d, MatchesNaiveReference) {
  int seed = 20;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(graph::shape_str(c.x) + " " + graph::shape_str(c.w) + " groups " + std::to_string(c.groups));
    Tensor x = values(c.x, -1, 1, seed++), w = values(c.w, -1, 1, seed++);
    Tensor b = c.bias ? values({c.w[0]}, -1, 1, seed++) : Tensor();
    Tensor want = ref_conv2d(x, w, b, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.groups);
    expect_close(graph::conv2d(x, w, b, {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw}, c.groups), want, 1e-12);
    Tensor y32 = graph::conv2d(x.to(graph::kFloat32), w.to(graph::kFloat32), b.defined() ? b.to(graph::kFloat32) : b,
                               {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw}, c.groups);
    EXPECT_EQ(y32.dtype(), graph::kFloat32);
    expect_close(y32, want, 1e-5);
  }
}

TEST(Conv2d, NonContiguousUnbatchedAndSingleValueArgs) {
  Tensor x = values({2, 3, 6, 5}, -1, 1, 40), w = values({4, 3, 3, 3}, -1, 1, 41);
  Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);  // same values, other strides
  ASSERT_FALSE(xt.is_contiguous());
  expect_close(graph::conv2d(xt, w), graph::conv2d(x, w), 1e-12);
  // unbatched [C, H, W]
  Tensor x3 = x.slice(0, 1, 2).reshape({3, 6, 5});
  Tensor y3 = graph::conv2d(x3, w, Tensor(), {2}, {1});
  ASSERT_EQ(y3.sizes(), (Shape{4, 3, 3}));
  expect_close(y3, graph::conv2d(x, w, Tensor(), {2, 2}, {1, 1}).slice(0, 1, 2).reshape({4, 3, 3}), 1e-12);
}

TEST(Conv2d, Gradcheck) {
  int seed = 50;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(graph::shape_str(c.x) + " " + graph::shape_str(c.w) + " groups " + std::to_string(c.groups));
    std::vector<Tensor> in = {values(c.x, -1, 1, seed++), values(c.w, -1, 1, seed++)};
    if (c.bias) in.push_back(values({c.w[0]}, -1, 1, seed++));
    gradcheck(
        [&c](const auto& v) {
          return graph::conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), {c.sh, c.sw}, {c.ph, c.pw}, {c.dh, c.dw},
                               c.groups);
        },
        in);
  }
  // only the weight requires grad (the input's gradient is skipped)
  Tensor x = values({1, 2, 5, 5}, -1, 1, 70);
  Tensor w = values({2, 2, 3, 3}, -1, 1, 71).requires_grad_();
  graph::conv2d(x, w, Tensor(), {1, 1}, {1, 1}).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_FALSE(x.grad().defined());
  // unbatched input
  gradcheck([](const auto& v) { return graph::conv2d(v[0], v[1], v[2], {2, 1}, {1, 1}); },
            {values({2, 5, 4}, -1, 1, 72), values({3, 2, 2, 2}, -1, 1, 73), values({3}, -1, 1, 74)});
}

TEST(Conv2d, Errors) {
  Tensor x = graph::zeros({1, 3, 5, 5}), w = graph::zeros({4, 2, 3, 3});
  expect_error([&] { graph::conv2d(x, w); }, {"conv2d:", "[1, 3, 5, 5]", "[4, 2, 3, 3]", "channels"});
  expect_error([&] { graph::conv2d(graph::zeros({3, 5}), w); }, {"conv2d:", "[3, 5]", "[4, 2, 3, 3]"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3})); }, {"conv2d:", "4-D weight", "[4, 3, 3]"});
  expect_error([&] { graph::conv2d(graph::zeros({1, 4, 5, 5}), graph::zeros({3, 2, 3, 3}), Tensor(), {1}, {0}, {1}, 2); },
               {"conv2d:", "[3, 2, 3, 3]", "groups=2"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}), graph::zeros({3})); },
               {"conv2d:", "bias", "[3]", "[1, 3, 5, 5]"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 7, 7})); },
               {"conv2d:", "smaller than the dilated kernel", "[1, 3, 5, 5]", "[4, 3, 7, 7]"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}), Tensor(), {0, 1}); }, {"conv2d:", "stride", "[0, 1]"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}), Tensor(), {1, 1}, {-1, 0}); }, {"conv2d:", "padding"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}), Tensor(), {1, 1}, {0, 0}, {0, 1}); }, {"conv2d:", "dilation"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}), Tensor(), {1, 2, 3}); }, {"conv2d:", "stride", "[1, 2, 3]"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}, graph::kFloat64)); },
               {"conv2d:", "float", "double", "[1, 3, 5, 5]"});
  expect_error([&] { graph::conv2d(graph::zeros({1, 3, 5, 5}, graph::kInt64), graph::zeros({4, 3, 3, 3}, graph::kInt64)); },
               {"conv2d:", "long", "[1, 3, 5, 5]"});
  expect_error([&] { graph::conv2d(x, graph::zeros({4, 3, 3, 3}), Tensor(), {1}, {0}, {1}, 0); }, {"conv2d:", "groups"});
}

// ---- pooling --------------------------------------------------------------------------

TEST(Pool2d, HandComputed) {
  Tensor x = dtensor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  expect_close(graph::max_pool2d(x, {2, 2}), dtensor({6, 8, 14, 16}, {1, 1, 2, 2}), 0);
  expect_close(graph::avg_pool2d(x, {2}), dtensor({3.5, 5.5, 11.5, 13.5}, {1, 1, 2, 2}), 1e-12);
  // stride 1
  expect_close(graph::max_pool2d(x, {3, 3}, {1, 1}), dtensor({11, 12, 15, 16}, {1, 1, 2, 2}), 0);
  // padding: count_include_pad divides the corner by 4 although it holds 1 value
  expect_close(graph::avg_pool2d(x, {2, 2}, {2, 2}, {1, 1}),
               dtensor({0.25, 1.25, 1, 3.5, 8.5, 5, 3.25, 7.25, 4}, {1, 1, 3, 3}), 1e-12);
  // padded positions are -inf for max: an all-negative input keeps its values
  Tensor neg = -x;
  expect_close(graph::max_pool2d(neg, {2, 2}, {2, 2}, {1, 1}),
               dtensor({-1, -2, -4, -5, -6, -8, -13, -14, -16}, {1, 1, 3, 3}), 0);
}

struct PoolCase {
  Shape x;
  int64_t kh, kw, sh, sw, ph, pw;
};

TEST(Pool2d, MatchesNaiveReference) {
  const PoolCase cases[] = {
      {{2, 3, 7, 6}, 2, 2, 2, 2, 0, 0}, {{2, 3, 7, 6}, 3, 3, 2, 2, 1, 1}, {{1, 2, 8, 9}, 3, 2, 1, 2, 1, 1},
      {{1, 1, 5, 5}, 5, 5, 1, 1, 2, 2}, {{2, 2, 6, 7}, 4, 3, 3, 2, 2, 0},
  };
  int seed = 80;
  for (const PoolCase& c : cases) {
    SCOPED_TRACE(graph::shape_str(c.x));
    Tensor x = values(c.x, -2, -0.1, seed++);  // negative: padding must not win
    for (graph::DType dt : {graph::kFloat64, graph::kFloat32}) {
      const double tol = dt == graph::kFloat64 ? 1e-12 : 1e-6;
      expect_close(graph::max_pool2d(x.to(dt), {c.kh, c.kw}, {c.sh, c.sw}, {c.ph, c.pw}),
                   ref_pool(true, x, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw), tol);
      expect_close(graph::avg_pool2d(x.to(dt), {c.kh, c.kw}, {c.sh, c.sw}, {c.ph, c.pw}),
                   ref_pool(false, x, c.kh, c.kw, c.sh, c.sw, c.ph, c.pw), tol);
    }
  }
  // stride defaults to the kernel size; unbatched input
  Tensor x = values({3, 6, 6}, -1, 1, 90);
  Tensor y = graph::max_pool2d(x, {3});
  ASSERT_EQ(y.sizes(), (Shape{3, 2, 2}));
  expect_close(y, ref_pool(true, x.unsqueeze(0), 3, 3, 3, 3, 0, 0).reshape({3, 2, 2}), 0);
  // NaN propagates through max; infinities are ordinary values
  Tensor n = dtensor({1, NAN, 3, 4}, {1, 1, 2, 2});
  EXPECT_TRUE(std::isnan(vec(graph::max_pool2d(n, {2}))[0]));
  expect_close(graph::max_pool2d(dtensor({-kInf, kInf, 3, -kInf, -kInf, -kInf, -kInf, -kInf}, {1, 1, 2, 4}), {2}),
               dtensor({kInf, 3}, {1, 1, 1, 2}), 0);
  // ties: the first maximum gets the gradient, as in PyTorch
  Tensor t = graph::ones({1, 1, 2, 2}, graph::kFloat64).requires_grad_();
  graph::max_pool2d(t, {2}).sum().backward();
  expect_close(t.grad(), dtensor({1, 0, 0, 0}, {1, 1, 2, 2}), 0);
}

TEST(Pool2d, Gradcheck) {
  // Distinct values so every max is unique (finite differences need it).
  gradcheck([](const auto& in) { return graph::max_pool2d(in[0], {2, 2}); }, {values({2, 2, 4, 5}, -1, 1, 91)});
  gradcheck([](const auto& in) { return graph::max_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}); }, {values({1, 2, 6, 5}, -1, 1, 92)});
  // overlapping windows: one input can be the max of several
  gradcheck([](const auto& in) { return graph::max_pool2d(in[0], {3, 2}, {1, 1}, {1, 1}); }, {values({1, 1, 5, 4}, -1, 1, 93)});
  gradcheck([](const auto& in) { return graph::avg_pool2d(in[0], {2, 2}); }, {values({2, 2, 4, 5}, -1, 1, 94)});
  gradcheck([](const auto& in) { return graph::avg_pool2d(in[0], {3, 3}, {2, 1}, {1, 1}); }, {values({1, 2, 6, 5}, -1, 1, 95)});
  gradcheck([](const auto& in) { return graph::avg_pool2d(in[0].transpose(2, 3), {2, 3}, {1, 2}, {1, 0}); },
            {values({1, 2, 5, 6}, -1, 1, 96)});
}

TEST(Pool2d, Errors) {
  Tensor x = graph::zeros({1, 2, 4, 4});
  expect_error([&] { graph::max_pool2d(graph::zeros({4, 4}), {2}); }, {"max_pool2d:", "[4, 4]"});
  expect_error([&] { graph::avg_pool2d(x, {2, 2}, {}, {2, 2}); }, {"avg_pool2d:", "padding", "[2, 2]", "[1, 2, 4, 4]"});
  expect_error([&] { graph::max_pool2d(x, {5, 5}); }, {"max_pool2d:", "[5, 5]", "[1, 2, 4, 4]"});
  expect_error([&] { graph::max_pool2d(x, {0, 2}); }, {"max_pool2d:", "kernel_size", "[0, 2]"});
  expect_error([&] { graph::avg_pool2d(x, {2}, {0}); }, {"avg_pool2d:", "stride", "[0]"});
  expect_error([&] { graph::avg_pool2d(x, {2, 2, 2}); }, {"avg_pool2d:", "kernel_size", "[2, 2, 2]"});
  expect_error([&] { graph::max_pool2d(graph::zeros({1, 2, 4, 4}, graph::kInt64), {2}); }, {"max_pool2d:", "long", "[1, 2, 4, 4]"});
}

// ---- embedding --------------------------------------------------------------------------

TEST(Embedding, Values) {
  Tensor w = dtensor({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  Tensor idx = graph::tensor({{3, 0, 3}, {1, 2, 2}});
  Tensor y = graph::embedding(w, idx);
  ASSERT_EQ(y.sizes(), (Shape{2, 3, 2}));
  expect_close(y, dtensor({30, 31, 0, 1, 30, 31, 10, 11, 20, 21, 20, 21}, {2, 3, 2}), 0);
  // 0-d index, float32 table
  expect_close(graph::embedding(w.to(graph::kFloat32), graph::full({}, 2, graph::kInt64)), dtensor({20, 21}, {2}), 0);
}

TEST(Embedding, GradientScatterAdds) {
  Tensor idx = graph::tensor({{3, 0, 3}, {1, 3, 3}});
  gradcheck([&](const auto& in) { return graph::embedding(in[0], idx); }, {values({5, 3}, -1, 1, 100)});
  Tensor w = graph::zeros({5, 2}, graph::kFloat64).requires_grad_();
  graph::embedding(w, idx).sum().backward();
  expect_close(w.grad(), dtensor({1, 1, 1, 1, 0, 0, 4, 4, 0, 0}, {5, 2}), 0);
}

TEST(Embedding, Errors) {
  Tensor w = graph::zeros({5, 3});
  expect_error([&] { graph::embedding(w, graph::tensor({1, 5, 2})); }, {"embedding:", "index 5", "5 rows", "[5, 3]", "[3]"});
  expect_error([&] { graph::embedding(w, graph::tensor({-1})); }, {"embedding:", "index -1", "[5, 3]"});
  expect_error([&] { graph::embedding(w, graph::tensor({1.f, 2.f})); }, {"embedding:", "float", "[5, 3]", "[2]"});
  expect_error([&] { graph::embedding(graph::zeros({5}), graph::tensor({1})); }, {"embedding:", "2-D", "[5]"});
}

// ---- cat / stack ----------------------------------------------------------------------------

TEST(Cat, Values) {
  Tensor a = dtensor({1, 2, 3, 4}, {2, 2}), b = dtensor({5, 6}, {1, 2});
  expect_close(graph::cat({a, b}), dtensor({1, 2, 3, 4, 5, 6}, {3, 2}), 0);
  expect_close(graph::cat({a, b.t()}, -1), dtensor({1, 2, 5, 3, 4, 6}, {2, 3}), 0);
  // promotion: int64 with float32 -> float32; bool with int64 -> int64
  Tensor c = graph::cat({graph::tensor({1, 2}), graph::tensor({0.5f})});
  EXPECT_EQ(c.dtype(), graph::kFloat32);
  expect_close(c, dtensor({1, 2, 0.5}, {3}), 0);
  EXPECT_EQ(graph::cat({graph::tensor({true}), graph::tensor({3})}).dtype(), graph::kInt64);
  EXPECT_EQ(graph::cat({a, graph::zeros({1, 2})}).dtype(), graph::kFloat64);
  // legacy: 1-D empty tensors are skipped
  expect_close(graph::cat({graph::zeros({0}, graph::kFloat64), a}, 1), a, 0);
  // stack
  Tensor s = graph::stack({dtensor({1, 2}, {2}), dtensor({3, 4}, {2})}, 1);
  expect_close(s, dtensor({1, 3, 2, 4}, {2, 2}), 0);
  EXPECT_EQ(graph::stack({a, a, a}, -1).sizes(), (Shape{2, 2, 3}));
  EXPECT_EQ(graph::stack({a, a}).sizes(), (Shape{2, 2, 2}));
}

TEST(Cat, Gradcheck) {
  gradcheck([](const auto& in) { return graph::cat({in[0], in[1], in[2]}, 1); },
            {values({2, 1, 3}, -1, 1, 110), values({2, 3, 3}, -1, 1, 111), values({2, 2, 3}, -1, 1, 112)});
  gradcheck([](const auto& in) { return graph::cat({in[0], in[1]}, -1); }, {values({2, 3}, -1, 1, 113), values({2, 1}, -1, 1, 114)});
  gradcheck([](const auto& in) { return graph::stack({in[0], in[1]}, 1); }, {values({2, 3}, -1, 1, 115), values({2, 3}, -1, 1, 116)});
  // mixed dtypes: the float32 input's gradient comes back as float32
  Tensor a = graph::ones({2}).requires_grad_();
  Tensor b = graph::ones({3}, graph::kFloat64).requires_grad_();
  (graph::cat({a, b}) * dtensor({1, 2, 3, 4, 5}, {5})).sum().backward();
  EXPECT_EQ(a.grad().dtype(), graph::kFloat32);
  expect_close(a.grad(), dtensor({1, 2}, {2}), 0);
  expect_close(b.grad(), dtensor({3, 4, 5}, {3}), 0);
}

TEST(Cat, Errors) {
  expect_error([] { graph::cat({graph::zeros({2, 3}), graph::zeros({2, 4})}); }, {"cat:", "[2, 3]", "[2, 4]", "dim 0"});
  expect_error([] { graph::cat({graph::zeros({2, 3}), graph::zeros({2, 3, 1})}, 1); }, {"cat:", "[2, 3]", "[2, 3, 1]"});
  expect_error([] { graph::cat({graph::zeros({2, 3})}, 2); }, {"cat:", "dim 2", "[2, 3]"});
  expect_error([] { graph::cat({graph::zeros({})}); }, {"cat:", "zero-dimensional"});
  expect_error([] { graph::cat({}); }, {"cat:", "non-empty"});
  expect_error([] { graph::stack({graph::zeros({2, 3}), graph::zeros({3, 2})}); }, {"stack:", "[2, 3]", "[3, 2]"});
  expect_error([] { graph::stack({graph::zeros({2, 3})}, 3); }, {"stack:", "dim 3"});
}

// ---- dropout ----------------------------------------------------------------------------

TEST(Dropout, MaskAndScale) {
  Tensor x = graph::ones({10000}, graph::kFloat64);
  expect_close(graph::dropout(x, 0.3, false), x, 0);
  expect_close(graph::dropout(x, 0.0), x, 0);
  expect_close(graph::dropout(x, 1.0), graph::zeros({10000}, graph::kFloat64), 0);
  graph::manual_seed(3);
  const auto y = vec(graph::dropout(x, 0.3));
  int zeros = 0;
  for (double v : y) {
    if (v == 0) ++zeros;
    else EXPECT_NEAR(v, 1 / 0.7, 1e-12);
  }
  EXPECT_NEAR(zeros / 10000.0, 0.3, 0.02);
  graph::manual_seed(3);
  EXPECT_EQ(vec(graph::dropout(x, 0.3)), y);
  EXPECT_EQ(graph::dropout(graph::ones({4}), 0.5).dtype(), graph::kFloat32);
}

TEST(Dropout, Gradcheck) {
  // Re-seeding inside f makes every call draw the same mask.
  gradcheck([](const auto& in) { graph::manual_seed(11); return graph::dropout(in[0], 0.4); }, {values({4, 5}, -1, 1, 120)});
  Tensor x = graph::ones({1000}, graph::kFloat64).requires_grad_();
  graph::manual_seed(12);
  Tensor y = graph::dropout(x, 0.25);
  y.sum().backward();
  expect_close(x.grad(), y.detach(), 0);  // the gradient is the mask times 1/(1-p)
}

// dropout_mask is what dropout multiplies by, from the same draw, in every
// floating dtype: static graphs that differentiate dropout run x * mask.
TEST(Dropout, MaskIsWhatDropoutMultipliesBy) {
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kBFloat16}) {
    SCOPED_TRACE(graph::dtype_name(dt));
    Tensor x = values({50, 40}, -2, 2, 140).to(dt);
    graph::manual_seed(21);
    Tensor y = graph::dropout(x, 0.3);
    graph::manual_seed(21);
    Tensor m = graph::dropout_mask(x, 0.3);
    EXPECT_EQ(m.dtype(), dt);
    EXPECT_EQ(m.sizes(), x.sizes());
    expect_close(x * m, y, 0);
    const double kept = graph::ne(m, 0.0).to(graph::kFloat64).mean().item<double>();
    EXPECT_NEAR(kept, 0.7, 0.05);
    expect_close(graph::amax(m), graph::full({}, 1 / 0.7, dt), dt == graph::kFloat64 ? 0 : 1e-2);
    expect_close(graph::dropout_mask(x, 0.3, false), graph::ones({50, 40}, dt), 0);
    expect_close(graph::dropout_mask(x, 0.0), graph::ones({50, 40}, dt), 0);
    expect_close(graph::dropout_mask(x, 1.0), graph::zeros({50, 40}, dt), 0);
    expect_close(graph::dropout_mask(x, 1.0, false), graph::ones({50, 40}, dt), 0);
  }
  Tensor x = values({3, 4}, -1, 1, 141).requires_grad_();
  EXPECT_FALSE(graph::dropout_mask(x, 0.5).requires_grad());  // x's values are not read
  expect_error([] { graph::dropout_mask(graph::zeros({2, 3}), 1.5); }, {"dropout_mask:", "1.5", "[2, 3]"});
  expect_error([] { graph::dropout_mask(graph::zeros({2}, graph::kInt64), 0.5); }, {"dropout_mask:", "long"});
}

TEST(Dropout, Errors) {
  expect_error([] { graph::dropout(graph::zeros({2, 3}), 1.5); }, {"dropout:", "1.5", "[2, 3]"});
  expect_error([] { graph::dropout(graph::zeros({2, 3}), -0.1); }, {"dropout:", "[2, 3]"});
  expect_error([] { graph::dropout(graph::zeros({2}, graph::kInt64), 0.5); }, {"dropout:", "long", "[2]"});
}

// ---- losses -------------------------------------------------------------------------------

TEST(MseLoss, ValuesAndGradient) {
  Tensor a = dtensor({1, 2, 3, 4}, {2, 2}), b = dtensor({0, 2, 5, 1}, {2, 2});
  Tensor l = graph::mse_loss(a, b);
  EXPECT_EQ(l.dim(), 0);
  EXPECT_DOUBLE_EQ(l.item<double>(), (1 + 0 + 4 + 9) / 4.0);
  gradcheck([](const auto& in) { return graph::mse_loss(in[0], in[1]); }, {values({3, 4}, -1, 1, 130), values({3, 4}, -1, 1, 131)});
  gradcheck([](const auto& in) { return graph::mse_loss(in[0], in[1]); }, {values({3, 4}, -1, 1, 132), values({4}, -1, 1, 133)});
  expect_error([] { graph::mse_loss(graph::zeros({2, 3}), graph::zeros({4})); }, {"mse_loss", "[2, 3]", "[4]"});
  expect_error([] { graph::mse_loss(graph::zeros({2}), graph::tensor({1, 2})); }, {"mse_loss:", "long", "[2]"});
}

TEST(CrossEntropy, Values) {
  // Row 0: logits [0, 0, 0] -> log 3 whatever the target.
  // Row 1: logits [1, 2, 3], target 2 -> log(e + e^2 + e^3) - 3.
  Tensor logits = dtensor({0, 0, 0, 1, 2, 3}, {2, 3});
  Tensor target = graph::tensor({1, 2});
  const double want = (std::log(3.0) + std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 3) / 2;
  EXPECT_NEAR(graph::cross_entropy(logits, target).item<double>(), want, 1e-12);
  // float32, 1-D logits with a 0-d target
  EXPECT_NEAR(graph::cross_entropy(logits.to(graph::kFloat32), target).item<double>(), want, 1e-6);
  EXPECT_NEAR(graph::cross_entropy(dtensor({1, 2, 3}, {3}), graph::full({}, 0, graph::kInt64)).item<double>(),
              std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 1, 1e-12);
  // ignore_index -100 (PyTorch's default) leaves the row out of the mean
  EXPECT_NEAR(graph::cross_entropy(logits, graph::tensor({-100, 2})).item<double>(),
              std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 3, 1e-12);
  // class probabilities as target
  Tensor probs = dtensor({0, 1, 0, 0.5, 0, 0.5}, {2, 3});
  const double l1 = std::log(std::exp(1) + std::exp(2) + std::exp(3));
  EXPECT_NEAR(graph::cross_entropy(logits, probs).item<double>(), (std::log(3.0) + 0.5 * (l1 - 1) + 0.5 * (l1 - 3)) / 2, 1e-12);
  // [N, C, d] logits with [N, d] targets equal the flattened [N*d, C] form
  Tensor l3 = values({2, 3, 4}, -2, 2, 140);
  Tensor t3 = graph::tensor({{0, 1, 2, 1}, {2, 2, 0, 1}});
  EXPECT_NEAR(graph::cross_entropy(l3, t3).item<double>(),
              graph::cross_entropy(l3.permute({0, 2, 1}).reshape({8, 3}), t3.reshape({8})).item<double>(), 1e-12);
  // large logits stay finite (log_softmax is stable)
  EXPECT_NEAR(graph::cross_entropy(dtensor({1000, 0}, {1, 2}), graph::tensor({1})).item<double>(), 1000, 1e-9);
}

TEST(CrossEntropy, Gradcheck) {
  Tensor target = graph::tensor({2, 0, 1, 2});
  gradcheck([&](const auto& in) { return graph::cross_entropy(in[0], target); }, {values({4, 3}, -2, 2, 141)});
  Tensor t3 = graph::tensor({{0, 1, 2, 1}, {2, -100, 0, 1}});
  gradcheck([&](const auto& in) { return graph::cross_entropy(in[0], t3); }, {values({2, 3, 4}, -2, 2, 142)});
  gradcheck([](const auto& in) { return graph::cross_entropy(in[0], in[1]); },
            {values({3, 4}, -2, 2, 143), values({3, 4}, 0, 1, 144)});
}

TEST(CrossEntropy, Errors) {
  Tensor logits = graph::zeros({2, 3});
  expect_error([&] { graph::cross_entropy(logits, graph::tensor({0, 3})); }, {"cross_entropy:", "target 3", "3 classes", "[2, 3]", "[2]"});
  expect_error([&] { graph::cross_entropy(logits, graph::tensor({0, 1, 2})); }, {"cross_entropy:", "[2, 3]", "[3]"});
  expect_error([&] { graph::cross_entropy(logits, graph::tensor({true, false})); }, {"cross_entropy:", "bool", "[2, 3]"});
  expect_error([&] { graph::cross_entropy(graph::zeros({2, 3}, graph::kInt64), graph::tensor({0, 1})); },
               {"cross_entropy:", "long", "[2, 3]"});
  expect_error([&] { graph::cross_entropy(logits, graph::zeros({2, 4})); }, {"cross_entropy:", "[2, 3]", "[2, 4]"});
}

// ---- attention ------------------------------------------------------------------------------

// Reference: per-batch naive attention in double; `mask(i, j)` adds to the score.
Tensor ref_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::function<double(int64_t, int64_t, int64_t)>& mask) {
  const int64_t B = q.size(0), L = q.size(1), E = q.size(2), S = k.size(1), Ev = v.size(2);
  const auto pq = vec(q), pk = vec(k), pv = vec(v);
  std::vector<double> out(B * L * Ev, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(S);
      double m = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += pq[(b * L + i) * E + e] * pk[(b * S + j) * E + e];
        s[j] = d / std::sqrt(static_cast<double>(E)) + mask(b, i, j);
        m = std::max(m, s[j]);
      }
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - m));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Ev; ++e) out[(b * L + i) * Ev + e] += s[j] / z * pv[(b * S + j) * Ev + e];
    }
  return dtensor(out, {B, L, Ev});
}

TEST(Attention, MatchesReference) {
  Tensor q = values({2, 3, 4}, -1, 1, 150), k = values({2, 5, 4}, -1, 1, 151), v = values({2, 5, 2}, -1, 1, 152);
  auto none = [](int64_t, int64_t, int64_t) { return 0.0; };
  expect_close(graph::scaled_dot_product_attention(q, k, v), ref_attention(q, k, v, none), 1e-12);
  // float mask [L, S] broadcast over the batch
  Tensor fm = values({3, 5}, -1, 1, 153);
  const auto fmv = vec(fm);
  expect_close(graph::scaled_dot_product_attention(q, k, v, fm),
               ref_attention(q, k, v, [&](int64_t, int64_t i, int64_t j) { return fmv[i * 5 + j]; }), 1e-12);
  // bool mask [B, 1, S]: true keeps
  Tensor bm = graph::tensor({{true, false, true, true, false}, {false, true, true, true, true}}).reshape({2, 1, 5});
  const bool keep[2][5] = {{true, false, true, true, false}, {false, true, true, true, true}};
  expect_close(graph::scaled_dot_product_attention(q, k, v, bm),
               ref_attention(q, k, v, [&](int64_t b, int64_t, int64_t j) { return keep[b][j] ? 0.0 : -kInf; }), 1e-12);
  // causal: position i sees keys j <= i
  Tensor kc = values({2, 3, 4}, -1, 1, 154), vc = values({2, 3, 2}, -1, 1, 155);
  expect_close(graph::scaled_dot_product_attention(q, kc, vc, Tensor(), 0.0, true),
               ref_attention(q, kc, vc, [](int64_t, int64_t i, int64_t j) { return j <= i ? 0.0 : -kInf; }), 1e-12);
  // 4-D [B, H, L, E], float32
  Tensor q4 = values({2, 2, 3, 4}, -1, 1, 156), k4 = values({2, 2, 5, 4}, -1, 1, 157), v4 = values({2, 2, 5, 3}, -1, 1, 158);
  Tensor y4 = graph::scaled_dot_product_attention(q4.to(graph::kFloat32), k4.to(graph::kFloat32), v4.to(graph::kFloat32));
  EXPECT_EQ(y4.dtype(), graph::kFloat32);
  expect_close(y4.reshape({4, 3, 3}), ref_attention(q4.reshape({4, 3, 4}), k4.reshape({4, 5, 4}), v4.reshape({4, 5, 3}), none), 1e-5);
  // a fully masked row gives NaN, as PyTorch's math backend
  Tensor all_false = graph::zeros({3, 5}, graph::kBool);
  for (double x : vec(graph::scaled_dot_product_attention(q, k, v, all_false))) EXPECT_TRUE(std::isnan(x));
}

TEST(Attention, Gradcheck) {
  Tensor q = values({2, 3, 4}, -1, 1, 160), k = values({2, 5, 4}, -1, 1, 161), v = values({2, 5, 2}, -1, 1, 162);
  gradcheck([](const auto& in) { return graph::scaled_dot_product_attention(in[0], in[1], in[2]); }, {q, k, v});
  gradcheck([](const auto& in) { return graph::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); },
            {q, k, v, values({3, 5}, -1, 1, 163)});
  Tensor bm = graph::tensor({{true, false, true, true, false}, {false, true, true, true, true}}).reshape({2, 1, 5});
  gradcheck([&](const auto& in) { return graph::scaled_dot_product_attention(in[0], in[1], in[2], bm); }, {q, k, v});
  Tensor kc = values({2, 3, 4}, -1, 1, 164), vc = values({2, 3, 2}, -1, 1, 165);
  gradcheck([](const auto& in) { return graph::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.0, true); },
            {q, kc, vc});
  // with dropout, re-seeded so each call draws the same mask
  gradcheck([](const auto& in) {
    graph::manual_seed(5);
    return graph::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.3);
  }, {q, k, v});
}

// float32 on the CPU takes the fused blocked kernel (runtime/src/attention_cpu.cpp,
// blocks of 32 queries x 128 keys); float64 the math path, the reference here.
Tensor f32(const Tensor& t) { return t.to(graph::kFloat32); }
Tensor sdpa64(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& m = Tensor(), bool causal = false) {
  const Tensor m64 = m.defined() && m.dtype() != graph::kBool ? m.to(graph::kFloat64) : m;
  return graph::scaled_dot_product_attention(q.to(graph::kFloat64), k.to(graph::kFloat64), v.to(graph::kFloat64), m64,
                                             0.0, causal);
}

TEST(Attention, FusedFloat32MatchesMathPath) {
  // Odd sizes: L = 70 (3 query blocks, the last partial), S = 300 (3 key
  // blocks), E = 20 and Ev = 19 (a 16-lane block and a scalar tail).
  Tensor q = values({2, 70, 20}, -1, 1, 170), k = values({2, 300, 20}, -1, 1, 171), v = values({2, 300, 19}, -1, 1, 172);
  Tensor y = graph::scaled_dot_product_attention(f32(q), f32(k), f32(v));
  EXPECT_EQ(y.dtype(), graph::kFloat32);
  expect_close(y, sdpa64(q, k, v), 1e-5);
  // causal with L < S and L > S (top-left aligned)
  expect_close(graph::scaled_dot_product_attention(f32(q), f32(k), f32(v), Tensor(), 0.0, true),
               sdpa64(q, k, v, Tensor(), true), 1e-5);
  Tensor kl = values({2, 40, 20}, -1, 1, 173), vl = values({2, 40, 19}, -1, 1, 174);
  expect_close(graph::scaled_dot_product_attention(f32(q), f32(kl), f32(vl), Tensor(), 0.0, true),
               sdpa64(q, kl, vl, Tensor(), true), 1e-5);
  // float mask [L, S] broadcast over the batch; bool mask [B, 1, S] with a
  // whole key block masked for every query, and one row masked everywhere
  Tensor fm = values({70, 300}, -3, 3, 175);
  expect_close(graph::scaled_dot_product_attention(f32(q), f32(k), f32(v), f32(fm)), sdpa64(q, k, v, fm), 1e-5);
  Tensor bm = graph::empty({2, 1, 300}, graph::kBool);
  for (int64_t i = 0; i < 600; ++i) bm.data_ptr<bool>()[i] = i % 300 >= 128 && i % (3 + i / 300) != 0;
  expect_close(graph::scaled_dot_product_attention(f32(q), f32(k), f32(v), bm), sdpa64(q, k, v, bm), 1e-5);
  Tensor rows = graph::ones({2, 70, 300}, graph::kBool);
  rows.select(1, 33).fill_(false);
  const Tensor yr = graph::scaled_dot_product_attention(f32(q), f32(k), f32(v), rows);
  expect_close(yr, sdpa64(q, k, v, rows), 1e-5);
  for (double x : vec(yr.select(1, 33))) EXPECT_TRUE(std::isnan(x));
  // large scores: softmax must subtract the running max (exp(1e4) overflows)
  Tensor big = q * 1000.0;
  expect_close(graph::scaled_dot_product_attention(f32(big), f32(k), f32(v)), sdpa64(f32(big), k, v), 1e-4);
  // [B, H, L, E] views with transposed heads (rows not dense), the key and
  // value batch broadcast over heads
  Tensor q4 = values({2, 64, 3, 32}, -1, 1, 177).transpose(1, 2), k4 = values({2, 1, 50, 32}, -1, 1, 178),
         v4 = values({1, 3, 50, 48}, -1, 1, 179);
  expect_close(graph::scaled_dot_product_attention(f32(q4), f32(k4), f32(v4)), sdpa64(q4, k4, v4), 1e-5);
  expect_close(graph::scaled_dot_product_attention(f32(q4).contiguous().transpose(1, 2).transpose(1, 2), f32(k4),
                                                   f32(v4)),
               sdpa64(q4, k4, v4), 1e-5);
}

TEST(Attention, FusedFloat32Gradients) {
  // The fused forward records the recomputing backward kernel: its gradients
  // equal the float64 math path's (autograd through matmul and softmax).
  Tensor q = values({2, 37, 8}, -1, 1, 180), k = values({2, 140, 8}, -1, 1, 181), v = values({2, 140, 5}, -1, 1, 182);
  Tensor fm = values({37, 140}, -1, 1, 183);
  for (bool use_mask : {false, true}) {
    std::vector<Tensor> in32 = {f32(q), f32(k), f32(v), f32(fm)}, in64 = {q, k, v, fm};
    for (auto* in : {&in32, &in64})
      for (Tensor& t : *in) t = t.detach().requires_grad_();
    const Tensor up = values({2, 37, 5}, -1, 1, 184);
    const Tensor y32 = graph::scaled_dot_product_attention(in32[0], in32[1], in32[2], use_mask ? in32[3] : Tensor());
    const Tensor y64 = graph::scaled_dot_product_attention(in64[0], in64[1], in64[2], use_mask ? in64[3] : Tensor());
    graph::autograd::backward(y32, f32(up), false);
    graph::autograd::backward(y64, up, false);
    for (size_t i = 0; i < (use_mask ? 4u : 3u); ++i) expect_close(in32[i].grad(), in64[i].grad(), 1e-4);
  }
}

TEST(Attention, Errors) {
  Tensor q = graph::zeros({2, 3, 4}), k = graph::zeros({2, 5, 4}), v = graph::zeros({2, 5, 2});
  const std::string op = "scaled_dot_product_attention:";
  expect_error([&] { graph::scaled_dot_product_attention(q, graph::zeros({2, 5, 3}), v); }, {op, "[2, 3, 4]", "[2, 5, 3]"});
  expect_error([&] { graph::scaled_dot_product_attention(q, k, graph::zeros({2, 4, 2})); }, {op, "[2, 5, 4]", "[2, 4, 2]"});
  expect_error([&] { graph::scaled_dot_product_attention(q, k, v, graph::zeros({4, 5})); }, {"scaled_dot_product_attention", "[4, 5]"});
  expect_error([&] { graph::scaled_dot_product_attention(q, k, v, graph::zeros({3, 5}, graph::kInt64)); }, {op, "long", "[3, 5]"});
  expect_error([&] { graph::scaled_dot_product_attention(q, k, v, graph::zeros({3, 5}), 0.0, true); }, {op, "is_causal"});
  expect_error([&] { graph::scaled_dot_product_attention(q, k.to(graph::kFloat64), v); }, {op, "double", "[2, 5, 4]"});
  expect_error([&] { graph::scaled_dot_product_attention(graph::zeros({4}), k, v); }, {op, "[4]"});
  expect_error([&] { graph::scaled_dot_product_attention(graph::zeros({3, 3, 4}), k, v); }, {"scaled_dot_product_attention", "[3]", "[2]"});
}

}  // namespace
