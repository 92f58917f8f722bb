#pragma once
// What the static-gradient tests share: deterministic inputs, and the whole
// check of one [[graph::static]] function called with inputs that require
// grad (the graph ran once as a node with history; its value and gradients
// equal eager autograd's; gradients equal float64 central differences of the
// eager body). An undefined gradient where eager has one fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <graph/graph.h>

namespace sg_check {

using graph::Mode;
using graph::Tensor;

// Deterministic inputs in [-1, 1].
inline Tensor pattern(graph::Shape shape, float scale, float shift) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return graph::tanh(graph::arange(0, n).to(graph::kFloat32).view(shape) * scale + shift);
}

inline void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": no gradient";
  ASSERT_TRUE(want.defined()) << what << ": no reference gradient";
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const Tensor a = got.to(graph::kFloat64).contiguous(), b = want.to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = b.data_ptr<double>()[i];
    EXPECT_NEAR(x, y, tol * (1 + std::fabs(y))) << what << ", element " << i;
  }
}

// f's scalar objective from leaves made of `inputs`.
using Objective = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradRun {
  Tensor value;
  std::vector<Tensor> grads;  // one per input
  uint64_t graph_runs = 0;    // of `mangled`
};

// Runs `f` in `mode` on leaves (copies of `inputs`; those in `no_grad` do not
// require grad) and backward() from its objective.
inline GradRun grad_run(Mode mode, const char* mangled, const Objective& f, const std::vector<Tensor>& inputs,
                 const std::vector<size_t>& no_grad = {}) {
  graph::set_mode(mode);
  std::vector<Tensor> leaves;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor t = inputs[k].detach().clone();
    if (std::find(no_grad.begin(), no_grad.end(), k) == no_grad.end()) t.requires_grad_();
    leaves.push_back(t);
  }
  const uint64_t before = graph::detail::graph_calls(mangled);
  GradRun r;
  r.value = f(leaves);
  r.graph_runs = graph::detail::graph_calls(mangled) - before;
  r.value.backward();
  for (const Tensor& t : leaves) r.grads.push_back(t.grad());
  graph::set_mode(Mode::Static);
  return r;
}

// d objective / d inputs[k] by central differences in float64. The graphs
// are compiled for f32, so these calls run the eager body.
inline Tensor finite_difference(const Objective& f, const std::vector<Tensor>& inputs, size_t k) {
  graph::NoGradGuard no_grad;
  std::vector<Tensor> in;
  // Integer inputs (indices, class targets) stay integers.
  for (const Tensor& t : inputs)
    in.push_back(graph::is_floating(t.dtype()) ? t.detach().to(graph::kFloat64).clone() : t.detach());
  Tensor g = graph::zeros(in[k].sizes(), graph::kFloat64);
  double* p = in[k].data_ptr<double>();
  const double eps = 1e-6;
  for (int64_t i = 0; i < in[k].numel(); ++i) {
    // Writes through data_ptr: bump the version so that nothing cached from
    // the input (packed GEMM weights) outlives them (Tensor::version).
    const double keep = p[i];
    p[i] = keep + eps;
    in[k].bump_version();
    const double up = f(in).item<double>();
    p[i] = keep - eps;
    in[k].bump_version();
    const double down = f(in).item<double>();
    p[i] = keep;
    in[k].bump_version();
    g.data_ptr<double>()[i] = (up - down) / (2 * eps);
  }
  return g;
}

// The whole check: the graph ran once as a node with history; value and
// gradients equal eager autograd's; gradients equal finite differences.
// `mode` is Static (the generated backward) or Interpret (eager autograd
// through the interpreter's kernels).
inline void check_gradients(const char* mangled, const Objective& f, const std::vector<Tensor>& inputs,
                            const std::vector<size_t>& no_grad = {}, Mode mode = Mode::Static) {
  GradRun s = grad_run(mode, mangled, f, inputs, no_grad);
  GradRun e = grad_run(Mode::Eager, mangled, f, inputs, no_grad);
  EXPECT_EQ(s.graph_runs, 1u) << mangled << ": the compiled graph did not run";
  EXPECT_EQ(e.graph_runs, 0u);
  expect_close(s.value, e.value, 1e-5, "objective");
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string what = "gradient of input " + std::to_string(k);
    if (std::find(no_grad.begin(), no_grad.end(), k) != no_grad.end()) {
      EXPECT_FALSE(s.grads[k].defined()) << what << " does not require grad";
      continue;
    }
    if (!e.grads[k].defined()) {  // eager: no path; the graph may say zero
      if (s.grads[k].defined()) EXPECT_EQ((s.grads[k] * s.grads[k]).sum().item<float>(), 0.0f) << what;
      continue;
    }
    expect_close(s.grads[k], e.grads[k], 1e-5, what + " (static vs eager)");
    expect_close(s.grads[k], finite_difference(f, inputs, k), 2e-3, what + " (static vs finite differences)");
  }
}

// Weights that make every output element count differently.
inline Tensor weights_like(const Tensor& t) { return pattern(t.sizes(), 0.37f, 0.2f) + 1.5; }

}  // namespace sg_check
