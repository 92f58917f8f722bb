#pragma once
// What autodiff_test.cpp and autodiff_control_test.cpp share: check_graph runs
// a graph's backward in float64 against eager autograd and central finite
// differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/autodiff.h"
#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"
#include "graph/op_table.h"
#include "graph/ops.h"
#include "support/gradcheck.h"

namespace graph::autodiff_test {

using gradcheck_support::values;

inline bool differentiable(const IValue& v) {
  auto* t = std::get_if<Tensor>(&v);
  return t && t->defined() && is_floating(t->dtype());
}

inline std::vector<bool> floating_inputs(const std::vector<IValue>& in) {
  std::vector<bool> rg;
  for (const IValue& v : in) rg.push_back(differentiable(v));
  return rg;
}

inline std::vector<Tensor> tensors(const std::vector<IValue>& vs) {
  std::vector<Tensor> out;
  for (const IValue& v : vs) out.push_back(std::get<Tensor>(v));
  return out;
}

inline void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(shape_str(got.sizes()), shape_str(want.sizes())) << what;
  const Tensor a = got.to(kFloat64).contiguous(), b = want.to(kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = b.data_ptr<double>()[i];
    EXPECT_NEAR(x, y, tol * (1 + std::fabs(y))) << what << ", element " << i;
  }
}

struct Grads {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;  // one per input requiring grad
};

// The pass's gradients: forward, then backward (with grad mode off, as inside
// an eager backward()), through the interpreter. The combined graph must give
// the same values.
inline Grads pass_grads(const ir::Graph& g, const std::vector<IValue>& in, const std::vector<bool>& rg,
                 const std::vector<Tensor>& grad_outputs) {
  ir::GradGraphs gg = ir::differentiate(g, rg);
  ir::verify_or_throw(*gg.forward);
  ir::verify_or_throw(*gg.backward);
  EXPECT_EQ(gg.forward->outputs().size(), gg.num_outputs + gg.num_saved);
  EXPECT_EQ(gg.backward->inputs().size(), gg.num_saved + gg.num_outputs);
  std::vector<IValue> fwd = run(*gg.forward, in);
  Grads r;
  std::vector<IValue> bin(fwd.begin() + static_cast<long>(gg.num_outputs), fwd.end());
  for (size_t i = 0; i < gg.num_outputs; ++i) r.outputs.push_back(std::get<Tensor>(fwd[i]));
  bin.insert(bin.end(), grad_outputs.begin(), grad_outputs.end());
  {
    NoGradGuard no_grad;
    r.grads = tensors(run(*gg.backward, bin));
  }
  auto combined = ir::differentiate_combined(g, rg);
  std::vector<IValue> cin = in;
  cin.insert(cin.end(), grad_outputs.begin(), grad_outputs.end());
  std::vector<Tensor> c = tensors(run(*combined, cin));
  EXPECT_EQ(c.size(), r.outputs.size() + r.grads.size());
  for (size_t i = 0; i < r.grads.size() && r.outputs.size() + i < c.size(); ++i) {
    EXPECT_EQ(c[r.outputs.size() + i].defined(), r.grads[i].defined());
    if (c[r.outputs.size() + i].defined())
      expect_close(c[r.outputs.size() + i], r.grads[i], 0, "combined graph, gradient " + std::to_string(i));
  }
  return r;
}

// Eager autograd of the same graph: the interpreter runs eager ops, which
// record when their inputs require grad.
inline std::vector<Tensor> eager_grads(const ir::Graph& g, std::vector<IValue> in, const std::vector<bool>& rg,
                                const std::vector<Tensor>& grad_outputs) {
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < in.size(); ++i)
    if (rg[i]) {
      Tensor t = std::get<Tensor>(in[i]).detach().clone().requires_grad_();
      in[i] = t;
      leaves.push_back(t);
    }
  std::vector<Tensor> out = tensors(run(g, in));
  Tensor total;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].requires_grad()) continue;
    Tensor term = (out[i] * grad_outputs[i]).sum();
    total = total.defined() ? total + term : term;
  }
  if (total.defined()) total.backward();
  std::vector<Tensor> grads;
  for (const Tensor& l : leaves) grads.push_back(l.grad());
  return grads;
}

// d/d input of sum_i (output_i * grad_output_i), by central differences.
inline std::vector<Tensor> numeric_grads(const ir::Graph& g, const std::vector<IValue>& in, const std::vector<bool>& rg,
                                  const std::vector<Tensor>& grad_outputs) {
  NoGradGuard no_grad;
  auto objective = [&](const std::vector<IValue>& x) {
    std::vector<Tensor> out = tensors(run(g, x));
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += (out[i].to(kFloat64) * grad_outputs[i]).sum().item<double>();
    return s;
  };
  std::vector<Tensor> grads;
  const double eps = 1e-6;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!rg[k]) continue;
    std::vector<IValue> x = in;
    Tensor probe = std::get<Tensor>(in[k]).clone();
    x[k] = probe;
    Tensor grad = zeros(probe.sizes(), kFloat64);
    double* p = probe.data_ptr<double>();
    for (int64_t i = 0; i < probe.numel(); ++i) {
      const double keep = p[i];
      p[i] = keep + eps;
      const double up = objective(x);
      p[i] = keep - eps;
      const double down = objective(x);
      p[i] = keep;
      grad.data_ptr<double>()[i] = (up - down) / (2 * eps);
    }
    grads.push_back(grad);
  }
  return grads;
}

inline bool all_zero(const Tensor& t) { return !t.defined() || (abs(t.to(kFloat64)).sum().item<double>() < 1e-8); }

// The whole check for one graph: the pass against eager autograd (1e-10)
// and finite differences (1e-6); an undefined gradient must be zero for both.
inline Grads check_graph(const std::string& text, const std::vector<IValue>& in, double fd_tol = 1e-6) {
  auto g = ir::parse(text);
  const std::vector<bool> rg = floating_inputs(in);
  std::vector<Tensor> grad_outputs;
  {
    NoGradGuard no_grad;
    int seed = 7;
    for (const Tensor& o : tensors(run(*g, in))) grad_outputs.push_back(values(o.sizes(), 0.5, 1.5, seed++));
  }
  Grads ours = pass_grads(*g, in, rg, grad_outputs);
  const std::vector<Tensor> eager = eager_grads(*g, in, rg, grad_outputs);
  const std::vector<Tensor> numeric = numeric_grads(*g, in, rg, grad_outputs);
  EXPECT_EQ(ours.grads.size(), eager.size());
  for (size_t i = 0; i < ours.grads.size() && i < eager.size(); ++i) {
    const std::string what = "gradient " + std::to_string(i);
    if (!ours.grads[i].defined()) {
      EXPECT_TRUE(all_zero(eager[i])) << what << ": undefined, but eager autograd gives one";
      EXPECT_TRUE(all_zero(numeric[i])) << what << ": undefined, but finite differences are not zero";
      continue;
    }
    if (eager[i].defined()) expect_close(ours.grads[i], eager[i], 1e-10, what + " vs eager autograd");
    else EXPECT_TRUE(all_zero(ours.grads[i])) << what << ": eager autograd gives none";
    expect_close(ours.grads[i], numeric[i], fd_tol, what + " vs finite differences");
  }
  return ours;
}

// A graph of one node (`body`, defining %y) over inputs %a, %b, ...
inline std::string one_node(const std::string& body, size_t inputs) {
  std::string params;
  for (size_t i = 0; i < inputs; ++i) params += (i ? ", %" : "%") + std::string(1, char('a' + i)) + " : Tensor";
  return "graph g(" + params + ") {\n" + body + "  return (%y)\n}\n";
}

}  // namespace graph::autodiff_test
