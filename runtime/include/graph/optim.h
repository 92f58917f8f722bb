#pragma once
// graph::optim: SGD and Adam with PyTorch's update rules (torch.optim, the
// single-tensor path), e.g.
//
//   optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   for (...) {
//     opt.zero_grad();
//     Tensor loss = cross_entropy(net(x), y);
//     loss.backward();
//     opt.step();
//   }
//
// step() updates each parameter that has a gradient in place (same storage,
// so modules and other handles see the new values), with autograd off.
// Parameters without a gradient are skipped. Float32 and float64 parameters.
#include <cstdint>
#include <utility>
#include <vector>

#include "graph/arg.h"
#include "graph/tensor.h"

namespace graph::detail {
struct OptimizerAccess;  // a static train step's step() (generated_support.cpp)
}  // namespace graph::detail

namespace graph::optim {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual void step() = 0;
  // Drops every parameter's gradient (PyTorch's set_to_none).
  void zero_grad();
  const std::vector<Tensor>& parameters() const { return params_; }

 protected:
  friend struct ::graph::detail::OptimizerAccess;
  // step() with parameter i's gradient grads[i] (undefined: skipped), which a
  // static train step passes from its graph instead of .grad. SGD and Adam
  // implement it; the default throws.
  virtual void step_with(const std::vector<Tensor>& grads);
  // Each parameter's .grad, as step() reads them.
  std::vector<Tensor> current_grads() const;

  std::vector<Tensor> params_;
};

// LibTorch's builder: SGDOptions(0.1).momentum(0.9).weight_decay(1e-4); read
// back as options.lr(), changed in place as opt.options().lr(0.01).
class SGDOptions {
 public:
  SGDOptions(double lr = 0.01) : lr_(lr) {}  // implicit: SGD(params, 0.1)
  GRAPH_ARG(double, lr);
  GRAPH_ARG(double, momentum) = 0.0;
  GRAPH_ARG(double, dampening) = 0.0;
  GRAPH_ARG(double, weight_decay) = 0.0;
  GRAPH_ARG(bool, nesterov) = false;
};

// d = g + weight_decay * p
// momentum != 0: buf = d (first step), else buf = momentum * buf + (1 - dampening) * d;
//                d = nesterov ? d + momentum * buf : buf
// p -= lr * d
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  SGDOptions& options() { return options_; }  // e.g. to change lr between steps
  const Tensor& momentum_buffer(size_t i) const { return momentum_buffer_.at(i); }

 protected:
  void step_with(const std::vector<Tensor>& grads) override;

 private:
  SGDOptions options_;
  std::vector<Tensor> momentum_buffer_;  // undefined until the first step
};

// AdamOptions(2e-4).betas({0.5, 0.999}).weight_decay(1e-5).
class AdamOptions {
 public:
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  GRAPH_ARG(double, lr);
  using Betas = std::pair<double, double>;
  GRAPH_ARG(Betas, betas) = {0.9, 0.999};
  GRAPH_ARG(double, eps) = 1e-8;
  GRAPH_ARG(double, weight_decay) = 0.0;  // L2, added to the gradient (Adam, not AdamW)
  GRAPH_ARG(bool, amsgrad) = false;
};

// t += 1; g = g + weight_decay * p
// m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
// (amsgrad: vmax = max(vmax, v), used for v below)
// p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  void step() override;
  AdamOptions& options() { return options_; }
  int64_t step_count(size_t i) const { return steps_.at(i); }
  const Tensor& exp_avg(size_t i) const { return exp_avg_.at(i); }
  const Tensor& exp_avg_sq(size_t i) const { return exp_avg_sq_.at(i); }
  const Tensor& max_exp_avg_sq(size_t i) const { return max_exp_avg_sq_.at(i); }

 protected:
  void step_with(const std::vector<Tensor>& grads) override;

 private:
  AdamOptions options_;
  std::vector<int64_t> steps_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_, max_exp_avg_sq_;
};

}  // namespace graph::optim
