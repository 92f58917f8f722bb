// The backward kernels of graph/detail/backward_kernels.h, called directly as
// generated code calls them: each gradient against float64 central
// differences of the op's forward, the mask (unwanted inputs get none), and
// errors on bad input. (tests/static_grad/op_grad_test.cpp checks the same
// kernels through generated backward code against eager autograd.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "graph/detail/backward_kernels.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::Fn;
using gradcheck_support::values;
namespace gd = graph::detail;

using Kernel = std::function<std::vector<Tensor>(const Tensor& grad, const std::vector<Tensor>& in, gd::GradMask)>;

// The kernel's gradients of sum(forward(in) * w) against central differences,
// for every floating input whose bit is in `mask`; the others must be undefined.
void check_kernel(const Fn& forward, const Kernel& kernel, const std::vector<Tensor>& in, gd::GradMask mask,
                  double tol = 1e-6) {
  graph::NoGradGuard no_grad;
  const Tensor w = values(forward(in).sizes(), 0.5, 1.5, 99);
  const std::vector<Tensor> grads = kernel(w, in, mask);
  ASSERT_EQ(grads.size(), in.size());
  // Eager autograd of the forward on the same inputs.
  const std::vector<Tensor> eager = gd::rerun_backward(w, in, mask, forward);
  const double eps = 1e-6;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!gd::wants(mask, k) || !in[k].defined() || !graph::is_floating(in[k].dtype())) {
      EXPECT_FALSE(grads[k].defined()) << "input " << k << " was not asked for";
      continue;
    }
    ASSERT_TRUE(grads[k].defined()) << "input " << k;
    ASSERT_EQ(grads[k].sizes(), in[k].sizes()) << "input " << k;
    const Tensor a = grads[k].contiguous();
    ASSERT_TRUE(eager[k].defined()) << "input " << k;
    EXPECT_LE(graph::abs(a - eager[k]).amax({}, false).item<double>(), 1e-10) << "input " << k << " vs eager autograd";
    std::vector<Tensor> probe_in = in;
    Tensor probe = in[k].clone();
    probe_in[k] = probe;
    double* p = probe.data_ptr<double>();
    for (int64_t i = 0; i < probe.numel(); ++i) {
      const double keep = p[i];
      p[i] = keep + eps;
      const double up = (forward(probe_in) * w).sum().item<double>();
      p[i] = keep - eps;
      const double down = (forward(probe_in) * w).sum().item<double>();
      p[i] = keep;
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(a.data_ptr<double>()[i], numeric, tol * (1 + std::fabs(numeric))) << "input " << k << " element " << i;
    }
  }
}

// Same shape, and elements within tol.
bool allclose(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  if (a.sizes() != b.sizes()) return false;
  graph::NoGradGuard no_grad;
  return a.numel() == 0 || graph::abs(a.to(graph::kFloat64) - b.to(graph::kFloat64)).amax({}, false).item<double>() <= tol;
}

Tensor indices(const Shape& shape, const std::vector<int64_t>& v) {
  Tensor t = graph::empty(shape, graph::kInt64);
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<int64_t>()[i] = v[i];
  return t;
}

TEST(BackwardKernels, Matmul) {
  const Kernel k = [](const Tensor& g, const auto& in, gd::GradMask m) { return gd::matmul_backward(g, in[0], in[1], m); };
  const Fn f = [](const auto& in) { return graph::matmul(in[0], in[1]); };
  check_kernel(f, k, {values({3, 4}, -1, 1, 1), values({4, 5}, -1, 1, 2)}, gd::kAllGrads);
  check_kernel(f, k, {values({4}, -1, 1, 1), values({4}, -1, 1, 2)}, gd::kAllGrads);              // dot
  check_kernel(f, k, {values({4}, -1, 1, 1), values({2, 4, 3}, -1, 1, 2)}, gd::kAllGrads);        // vector @ batch
  check_kernel(f, k, {values({2, 3, 4}, -1, 1, 1), values({4}, -1, 1, 2)}, gd::kAllGrads);        // batch @ vector
  check_kernel(f, k, {values({2, 3, 4}, -1, 1, 1), values({4, 5}, -1, 1, 2)}, gd::kAllGrads);     // rows folded
  check_kernel(f, k, {values({2, 1, 3, 4}, -1, 1, 1), values({5, 4, 2}, -1, 1, 2)}, gd::kAllGrads);  // broadcast
  check_kernel(f, k, {values({3, 4}, -1, 1, 1), values({4, 5}, -1, 1, 2)}, 2u);                   // b only
  // A transposed operand is read in place (a view), with the same result.
  const Tensor a = values({4, 3}, -1, 1, 3).t(), b = values({4, 5}, -1, 1, 4);
  check_kernel(f, k, {a, b}, gd::kAllGrads);
  EXPECT_THROW(gd::matmul_backward(values({3, 5}, 0, 1, 1), values({3, 4}, 0, 1, 1), values({3, 5}, 0, 1, 2), 3u),
               graph::Error);
}

TEST(BackwardKernels, Linear) {
  const Kernel k = [](const Tensor& g, const auto& in, gd::GradMask m) {
    return gd::linear_backward(g, in[0], in[1], in[2], m);
  };
  const Fn f = [](const auto& in) { return graph::linear(in[0], in[1], in[2]); };
  check_kernel(f, k, {values({5, 4}, -1, 1, 1), values({3, 4}, -1, 1, 2), values({3}, -1, 1, 3)}, gd::kAllGrads);
  check_kernel(f, k, {values({2, 5, 4}, -1, 1, 1), values({3, 4}, -1, 1, 2), values({1}, -1, 1, 3)}, gd::kAllGrads);
  check_kernel(f, k, {values({4}, -1, 1, 1), values({3, 4}, -1, 1, 2), values({}, -1, 1, 3)}, gd::kAllGrads);
  check_kernel(f, k, {values({5, 4}, -1, 1, 1), values({3, 4}, -1, 1, 2), Tensor()}, 3u);  // no bias
  check_kernel(f, k, {values({5, 4}, -1, 1, 1), values({3, 4}, -1, 1, 2), values({3}, -1, 1, 3)}, 6u);
  try {
    gd::linear_backward(values({5, 2}, 0, 1, 1), values({5, 4}, 0, 1, 1), values({3, 4}, 0, 1, 2), Tensor(), 3u);
    FAIL() << "expected an error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear_backward: gradient of shape [5, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gd::linear_backward(values({5, 3}, 0, 1, 1), values({5, 4}, 0, 1, 1), values({4}, 0, 1, 2), Tensor(), 3u),
               graph::Error);
}

TEST(BackwardKernels, MseLoss) {
  const Kernel k = [](const Tensor& g, const auto& in, gd::GradMask m) { return gd::mse_loss_backward(g, in[0], in[1], m); };
  const Fn f = [](const auto& in) { return graph::mse_loss(in[0], in[1]); };
  check_kernel(f, k, {values({3, 4}, -1, 1, 1), values({3, 4}, -1, 1, 2)}, gd::kAllGrads);
  check_kernel(f, k, {values({3, 4}, -1, 1, 1), values({4}, -1, 1, 2)}, gd::kAllGrads);  // broadcast target
  check_kernel(f, k, {values({3, 4}, -1, 1, 1), values({3, 4}, -1, 1, 2)}, 1u);
  EXPECT_THROW(gd::mse_loss_backward(values({}, 0, 1, 1), values({3, 4}, 0, 1, 1), values({3}, 0, 1, 2), 1u),
               graph::Error);
}

TEST(BackwardKernels, CrossEntropy) {
  const Kernel k = [](const Tensor& g, const auto& in, gd::GradMask m) {
    return gd::cross_entropy_backward(g, in[0], in[1], m);
  };
  const Fn f = [](const auto& in) { return graph::cross_entropy(in[0], in[1]); };
  check_kernel(f, k, {values({4, 5}, -2, 2, 1), indices({4}, {0, 4, 2, 2})}, gd::kAllGrads);
  check_kernel(f, k, {values({4, 5}, -2, 2, 1), indices({4}, {1, -100, 3, 0})}, gd::kAllGrads);  // ignore_index
  check_kernel(f, k, {values({5}, -2, 2, 1), indices({}, {3})}, gd::kAllGrads);                    // one sample
  check_kernel(f, k, {values({2, 3, 2, 2}, -2, 2, 1), indices({2, 2, 2}, {0, 1, 2, 0, 2, 2, 1, 0})}, gd::kAllGrads);
  check_kernel(f, k, {values({3, 4}, -2, 2, 1), values({3, 4}, 0.1, 1, 2)}, gd::kAllGrads);      // probabilities
  check_kernel(f, k, {values({3, 4}, -2, 2, 1), values({3, 4}, 0.1, 1, 2)}, 2u);
  // The forward's log-probabilities, when saved, give the same gradient.
  const Tensor logits = values({4, 5}, -2, 2, 1), target = indices({4}, {0, 4, 2, 2});
  const Tensor g = graph::full({}, 1.0, graph::kFloat64);
  const Tensor a = gd::cross_entropy_backward(g, logits, target, 1u)[0];
  const Tensor b = gd::cross_entropy_backward(g, logits, target, 1u, graph::log_softmax(logits, 1))[0];
  EXPECT_TRUE(allclose(a, b, 0));
  try {
    gd::cross_entropy_backward(g, logits, indices({4}, {0, 5, 1, 1}), 1u);
    FAIL() << "expected an error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("target 5 is out of range for 5 classes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(gd::cross_entropy_backward(g, logits, indices({3}, {0, 1, 1}), 1u), graph::Error);
}

TEST(BackwardKernels, Reductions) {
  using R = Tensor (*)(const Tensor&, const Tensor&, const Shape&, bool);
  struct Case {
    const char* name;
    R kernel;
    Tensor (*forward)(const Tensor&, const Shape&, bool);
  };
  const Case cases[] = {
      {"sum", gd::sum_backward, [](const Tensor& x, const Shape& d, bool k) { return graph::sum(x, d, k); }},
      {"mean", gd::mean_backward, [](const Tensor& x, const Shape& d, bool k) { return graph::mean(x, d, k); }},
      {"amax", [](const Tensor& g, const Tensor& x, const Shape& d, bool k) { return gd::amax_backward(g, x, d, k); },
       [](const Tensor& x, const Shape& d, bool k) { return graph::amax(x, d, k); }},
      {"amin", [](const Tensor& g, const Tensor& x, const Shape& d, bool k) { return gd::amin_backward(g, x, d, k); },
       [](const Tensor& x, const Shape& d, bool k) { return graph::amin(x, d, k); }},
  };
  for (const Case& c : cases)
    for (const Shape& dims : {Shape{}, Shape{1}, Shape{0, 2}, Shape{-1}})
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + " dims " + graph::shape_str(dims) + (keepdim ? " keepdim" : ""));
        const Fn f = [&](const auto& in) { return c.forward(in[0], dims, keepdim); };
        const Kernel k = [&](const Tensor& g, const auto& in, gd::GradMask) {
          return std::vector<Tensor>{c.kernel(g, in[0], dims, keepdim)};
        };
        check_kernel(f, k, {values({2, 3, 4}, -1, 1, 5)}, gd::kAllGrads);
      }
  // Ties share the gradient of the maximum evenly, as PyTorch's amax.
  const Tensor x = graph::tensor({1.0, 3.0, 3.0, 2.0}).to(graph::kFloat64);
  const Tensor g = gd::amax_backward(graph::full({}, 1.0, graph::kFloat64), x, {}, false);
  EXPECT_TRUE(allclose(g, graph::tensor({0.0, 0.5, 0.5, 0.0}).to(graph::kFloat64), 0));
  EXPECT_THROW(gd::sum_backward(values({3}, 0, 1, 1), values({3, 4}, 0, 1, 1), {2}, false), graph::Error);
}

TEST(BackwardKernels, Helpers) {
  graph::NoGradGuard no_grad;
  const Tensor g = values({2, 3, 4}, -1, 1, 1);
  EXPECT_TRUE(allclose(gd::sum_to_backward(g, values({3, 1}, 0, 1, 2)), g.sum(Shape{0, 2}, true).reshape({3, 1})));
  EXPECT_EQ(gd::sum_to_backward(g, values({4}, 0, 1, 2).to(graph::kFloat32)).dtype(), graph::kFloat32);
  EXPECT_EQ(gd::reshape_as_backward(g, values({6, 4}, 0, 1, 2)).sizes(), (Shape{6, 4}));
  EXPECT_TRUE(allclose(gd::zeros_like_backward(g), graph::zeros({2, 3, 4}, graph::kFloat64)));
  const std::vector<Tensor> xs{values({2, 1, 4}, 0, 1, 3), values({2, 2, 4}, 0, 1, 4)};
  EXPECT_TRUE(allclose(gd::cat_backward(g, xs, 1, 1), g.slice(1, 1, 3)));
  EXPECT_TRUE(allclose(gd::cat_backward(g, xs, -2, 0), g.slice(1, 0, 1)));
  try {
    gd::cat_backward(g, xs, 1, 2);
    FAIL() << "expected an error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cat_backward: index 2 out of range for 2 inputs"), std::string::npos);
  }
}

TEST(BackwardKernels, SliceAndEmbedding) {
  for (int64_t step : {1, 2}) {
    const Kernel k = [step](const Tensor& g, const auto& in, gd::GradMask) {
      return std::vector<Tensor>{gd::slice_backward(g, in[0], 1, 1, -1, step)};
    };
    check_kernel([step](const auto& in) { return in[0].slice(1, 1, -1, step); }, k, {values({3, 6}, -1, 1, 1)},
                 gd::kAllGrads);
  }
  EXPECT_THROW(gd::slice_backward(values({3, 2}, 0, 1, 1), values({3, 6}, 0, 1, 1), 1, 0, 3, 1), graph::Error);
  const Kernel k = [](const Tensor& g, const auto& in, gd::GradMask m) { return gd::embedding_backward(g, in[0], in[1], m); };
  const Fn f = [](const auto& in) { return graph::embedding(in[0], in[1]); };
  check_kernel(f, k, {values({5, 3}, -1, 1, 1), indices({2, 2}, {0, 4, 4, 2})}, gd::kAllGrads);  // repeated index
  try {
    gd::embedding_backward(values({1, 3}, 0, 1, 1), values({5, 3}, 0, 1, 1), indices({1}, {7}), 1u);
    FAIL() << "expected an error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 7 is out of range for a table of 5 rows"), std::string::npos);
  }
}

TEST(BackwardKernels, LayerNorm) {
  for (const Shape& norm : {Shape{4}, Shape{3, 4}}) {
    const Kernel k = [norm](const Tensor& g, const auto& in, gd::GradMask m) {
      return gd::layer_norm_backward(g, in[0], norm, in[1], in[2], 1e-5, m);
    };
    const Fn f = [norm](const auto& in) { return graph::layer_norm(in[0], norm, in[1], in[2], 1e-5); };
    // Rows far from 0 too: the statistics are recomputed as the forward's.
    check_kernel(f, k, {values({2, 3, 4}, 9, 11, 1), values(norm, 0.5, 1.5, 2), values(norm, -1, 1, 3)}, gd::kAllGrads,
                 1e-5);
    check_kernel(f, k, {values({2, 3, 4}, -1, 1, 1), Tensor(), values(norm, -1, 1, 3)}, 5u, 1e-5);
    check_kernel(f, k, {values({2, 3, 4}, -1, 1, 1), values(norm, 0.5, 1.5, 2), Tensor()}, 2u, 1e-5);
  }
  EXPECT_THROW(gd::layer_norm_backward(values({2, 3}, 0, 1, 1), values({2, 3}, 0, 1, 1), {4}, Tensor(), Tensor(), 1e-5, 1u),
               graph::Error);
}

TEST(BackwardKernels, Conv2d) {
  struct Case {
    Shape x, w;
    Shape stride, padding, dilation;
    int64_t groups;
  };
  const Case cases[] = {
      {{2, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{1, 4, 6, 5}, {4, 2, 3, 2}, {2, 1}, {1, 1}, {1, 2}, 2},
      {{3, 5, 5}, {2, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},  // unbatched, 1x1
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(graph::shape_str(c.x) + " * " + graph::shape_str(c.w));
    const Kernel k = [&](const Tensor& g, const auto& in, gd::GradMask m) {
      return gd::conv2d_backward(g, in[0], in[1], in[2], c.stride, c.padding, c.dilation, c.groups, m);
    };
    const Fn f = [&](const auto& in) {
      return graph::conv2d(in[0], in[1], in[2], c.stride, c.padding, c.dilation, c.groups);
    };
    check_kernel(f, k, {values(c.x, -1, 1, 1), values(c.w, -1, 1, 2), values({c.w[0]}, -1, 1, 3)}, gd::kAllGrads);
    check_kernel(f, k, {values(c.x, -1, 1, 1), values(c.w, -1, 1, 2), Tensor()}, 2u);
  }
  EXPECT_THROW(gd::conv2d_backward(values({2, 4, 2, 2}, 0, 1, 1), values({2, 3, 5, 5}, 0, 1, 1), values({4, 3, 3, 3}, 0, 1, 2),
                                   Tensor(), {1, 1}, {0, 0}, {1, 1}, 1, 3u),
               graph::Error);
}

TEST(BackwardKernels, Pooling) {
  const Tensor x = values({2, 3, 6, 5}, -1, 1, 1);
  for (const Shape& padding : {Shape{0, 0}, Shape{1, 1}})
    for (const Shape& stride : {Shape{}, Shape{1, 2}}) {
      SCOPED_TRACE("padding " + graph::shape_str(padding) + " stride " + graph::shape_str(stride));
      const Kernel km = [&](const Tensor& g, const auto& in, gd::GradMask) {
        return std::vector<Tensor>{gd::max_pool2d_backward(g, in[0], {3, 2}, stride, padding)};
      };
      check_kernel([&](const auto& in) { return graph::max_pool2d(in[0], {3, 2}, stride, padding); }, km, {x},
                   gd::kAllGrads);
      const Kernel ka = [&](const Tensor& g, const auto& in, gd::GradMask) {
        return std::vector<Tensor>{gd::avg_pool2d_backward(g, in[0], {3, 2}, stride, padding)};
      };
      check_kernel([&](const auto& in) { return graph::avg_pool2d(in[0], {3, 2}, stride, padding); }, ka,
                   {x.slice(0, 1, 2).squeeze(0).contiguous()}, gd::kAllGrads);  // unbatched
    }
  EXPECT_THROW(gd::max_pool2d_backward(values({2, 3, 2, 2}, 0, 1, 1), x, {2, 2}, {}, {0, 0}), graph::Error);
}

TEST(BackwardKernels, Attention) {
  const Tensor q = values({2, 3, 4}, -1, 1, 1), k = values({2, 5, 4}, -1, 1, 2), v = values({2, 5, 3}, -1, 1, 3);
  for (bool causal : {false, true}) {
    const Kernel kk = [causal](const Tensor& g, const auto& in, gd::GradMask m) {
      return gd::scaled_dot_product_attention_backward(g, in[0], in[1], in[2], in[3], causal, m);
    };
    const Fn f = [causal](const auto& in) {
      return graph::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0.0, causal);
    };
    check_kernel(f, kk, {q, k, v, Tensor()}, gd::kAllGrads);
    if (causal) continue;
    check_kernel(f, kk, {q, k, v, values({3, 5}, -1, 1, 4)}, gd::kAllGrads);  // float mask, broadcast
    Tensor keep = graph::full({3, 5}, 1.0, graph::kFloat64).to(graph::kBool);
    keep.data_ptr<bool>()[2] = false;
    check_kernel(f, kk, {q, k, v, keep}, 7u);  // bool mask
    check_kernel(f, kk, {values({3, 4}, -1, 1, 5), k, v, Tensor()}, gd::kAllGrads);  // broadcast batch
  }
  EXPECT_THROW(gd::scaled_dot_product_attention_backward(values({2, 3, 4}, 0, 1, 1), q, k, v, Tensor(), false, 7u),
               graph::Error);
}

}  // namespace
