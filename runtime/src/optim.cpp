// graph::optim: SGD and Adam. Updates are elementwise loops over contiguous
// float32/float64 data, written into the parameters' own storage, with the
// same operation order as PyTorch's CPU kernels (scalars in double, cast to
// the element type, as ATen does). A CUDA parameter updates in one kernel
// with the same math (cuda/src/optim.cu).
#include "graph/optim.h"

#include <cmath>
#include <string>
#include <type_traits>

#include "device.h"
#include "graph/autograd.h"
#include "graph/detail/generated_support.h"
#include "graph/error.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "storage.h"

namespace graph::optim {

namespace {

void check_param(const char* opt, size_t i, const Tensor& p) {
  if (!p.defined()) throw Error(std::string(opt) + ": parameter " + std::to_string(i) + " is undefined");
  if (p.dtype() != kFloat32 && p.dtype() != kFloat64)
    throw Error(std::string(opt) + ": parameter " + std::to_string(i) + " must be float32 or float64, got " +
                std::string(dtype_name(p.dtype())));
  if (!p.is_leaf())
    throw Error(std::string(opt) + ": parameter " + std::to_string(i) +
                " is not a leaf tensor (optimize leaves, e.g. a module's parameters)");
}

void check_nonneg(const char* opt, const char* what, double v) {
  if (!(v >= 0.0)) throw Error(std::string(opt) + ": invalid " + what + " " + std::to_string(v) + " (must be >= 0)");
}

// The parameter's data as a contiguous tensor to update in place, and a
// write-back for a non-contiguous parameter.
struct Target {
  Tensor param, data;
  explicit Target(const Tensor& p) : param(p.detach()), data(param.contiguous()) {}
  // Writes the update back if it went into a copy, and bumps the parameter's
  // version (Tensor::version: caches of packed weights key on it).
  void finish() {
    if (data.storage() != param.storage() || data.storage_offset() != param.storage_offset())
      ::graph::detail::copy_into(param, data);
    param.bump_version();
  }
};

Tensor gradient_of(const char* opt, size_t i, const Tensor& p, Tensor g) {
  if (!g.defined()) return g;
  if (g.sizes() != p.sizes())
    throw Error(std::string(opt) + ": gradient of parameter " + std::to_string(i) + " has shape " +
                shape_str(g.sizes()) + ", expected " + shape_str(p.sizes()));
  return g.detach().to(p.dtype()).contiguous();
}

// Calls f(std::true_type) or f(std::false_type): hoists a loop-invariant
// option out of the per-element loop, so each variant compiles to one
// branch-free (vectorizable) loop.
template <class F>
void with_flag(bool flag, F&& f) {
  if (flag)
    f(std::true_type{});
  else
    f(std::false_type{});
}

// One pass over each parameter, split across the runtime's threads: every
// element's update is independent, so the bits do not depend on the split.
template <class T>
void sgd_update(const SGDOptions& o, T* p, const T* g, T* buf, bool first, int64_t n) {
  const T wd = static_cast<T>(o.weight_decay()), mom = static_cast<T>(o.momentum());
  const T damp1 = static_cast<T>(1.0 - o.dampening()), neg_lr = static_cast<T>(-o.lr());
  with_flag(o.weight_decay() != 0, [&](auto decay) {
    with_flag(o.momentum() != 0, [&](auto momentum) {
      with_flag(first, [&](auto first_step) {
        with_flag(o.nesterov(), [&](auto nesterov) {
          cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
            for (int64_t j = begin; j < end; ++j) {
              T d = g[j];
              if constexpr (decay) d = d + wd * p[j];
              if constexpr (momentum) {
                if constexpr (first_step)
                  buf[j] = d;
                else
                  buf[j] = buf[j] * mom + damp1 * d;
                if constexpr (nesterov)
                  d = d + mom * buf[j];
                else
                  d = buf[j];
              }
              p[j] = p[j] + neg_lr * d;
            }
          });
        });
      });
    });
  });
}

template <class T>
void adam_update(const AdamOptions& o, int64_t step, T* p, const T* g, T* m, T* v, T* vmax, int64_t n) {
  const double beta1 = o.betas().first, beta2 = o.betas().second;
  const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(step));
  const T b1 = static_cast<T>(beta1), c1 = static_cast<T>(1.0 - beta1);
  const T b2 = static_cast<T>(beta2), c2 = static_cast<T>(1.0 - beta2);
  const T wd = static_cast<T>(o.weight_decay()), eps = static_cast<T>(o.eps());
  const T bc2_sqrt = static_cast<T>(std::sqrt(bc2));
  const T neg_step_size = static_cast<T>(-(o.lr() / bc1));
  with_flag(o.weight_decay() != 0, [&](auto decay) {
    with_flag(vmax != nullptr, [&](auto amsgrad) {
      cpu::parallel_for(n, cpu::kElementwiseGrain / 4, [&](int64_t begin, int64_t end) {  // sqrt, div: more work
        for (int64_t j = begin; j < end; ++j) {
          T grad = g[j];
          if constexpr (decay) grad = grad + wd * p[j];
          m[j] = m[j] * b1 + c1 * grad;
          v[j] = v[j] * b2 + c2 * grad * grad;
          T second = v[j];
          if constexpr (amsgrad) {
            if (vmax[j] < v[j] || std::isnan(v[j])) vmax[j] = v[j];
            second = vmax[j];
          }
          const T denom = std::sqrt(second) / bc2_sqrt + eps;
          p[j] = p[j] + neg_step_size * m[j] / denom;
        }
      });
    });
  });
}

// A CUDA parameter updates in one kernel of the same math
// (cuda_sgd_update, cuda_adam_update); its gradient must be there too.
void check_device_grad(const char* opt, size_t i, const Tensor& g) {
  if (g.device() != Device::CUDA)
    throw Error(std::string(opt) + ": gradient of parameter " + std::to_string(i) +
                " is on cpu and the parameter on cuda; move it with .to(kCUDA)");
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  ::graph::detail::register_optimizer(this, true);
}

Optimizer::~Optimizer() { ::graph::detail::register_optimizer(this, false); }

void Optimizer::step_with(const std::vector<Tensor>&) {
  throw Error("this optimizer cannot take its gradients from a static train step (only SGD and Adam do)");
}

std::vector<Tensor> Optimizer::current_grads() const {
  std::vector<Tensor> g;
  g.reserve(params_.size());
  for (const Tensor& p : params_) g.push_back(p.defined() ? p.grad() : Tensor());
  return g;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_)
    if (p.defined()) p.zero_grad();
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer(std::move(params)), options_(options), momentum_buffer_(params_.size()) {
  check_nonneg("SGD", "learning rate", options_.lr());
  check_nonneg("SGD", "momentum", options_.momentum());
  check_nonneg("SGD", "weight_decay", options_.weight_decay());
  if (options_.nesterov() && (options_.momentum() <= 0 || options_.dampening() != 0))
    throw Error("SGD: nesterov momentum requires a momentum and zero dampening");
  for (size_t i = 0; i < params_.size(); ++i) check_param("SGD", i, params_[i]);
}

void SGD::step() { step_with(current_grads()); }

void SGD::step_with(const std::vector<Tensor>& grads) {
  if (grads.size() != params_.size())
    throw Error("SGD: " + std::to_string(grads.size()) + " gradients for " + std::to_string(params_.size()) +
                " parameters");
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = gradient_of("SGD", i, params_[i], grads[i]);
    if (!g.defined()) continue;
    Target t(params_[i]);
    bool first = false;
    if (options_.momentum() != 0 && !momentum_buffer_[i].defined()) {
      momentum_buffer_[i] = zeros(t.data.sizes(), t.data.dtype(), t.data.device());
      first = true;
    }
    Tensor& buf = momentum_buffer_[i];
    if (t.data.device() == Device::CUDA) {
      check_device_grad("SGD", i, g);
      ::graph::detail::cuda_sgd_update(t.data, g, buf, options_, first);
      t.finish();
      continue;
    }
    const int64_t n = t.data.numel();
    if (t.data.dtype() == kFloat32)
      sgd_update<float>(options_, t.data.data_ptr<float>(), g.data_ptr<float>(),
                        buf.defined() ? buf.data_ptr<float>() : nullptr, first, n);
    else
      sgd_update<double>(options_, t.data.data_ptr<double>(), g.data_ptr<double>(),
                         buf.defined() ? buf.data_ptr<double>() : nullptr, first, n);
    t.finish();
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Optimizer(std::move(params)),
      options_(options),
      steps_(params_.size(), 0),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()),
      max_exp_avg_sq_(params_.size()) {
  check_nonneg("Adam", "learning rate", options_.lr());
  check_nonneg("Adam", "epsilon", options_.eps());
  check_nonneg("Adam", "weight_decay", options_.weight_decay());
  auto [b1, b2] = options_.betas();
  if (!(b1 >= 0 && b1 < 1)) throw Error("Adam: invalid beta parameter at index 0: " + std::to_string(b1));
  if (!(b2 >= 0 && b2 < 1)) throw Error("Adam: invalid beta parameter at index 1: " + std::to_string(b2));
  for (size_t i = 0; i < params_.size(); ++i) check_param("Adam", i, params_[i]);
}

void Adam::step() { step_with(current_grads()); }

void Adam::step_with(const std::vector<Tensor>& grads) {
  if (grads.size() != params_.size())
    throw Error("Adam: " + std::to_string(grads.size()) + " gradients for " + std::to_string(params_.size()) +
                " parameters");
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = gradient_of("Adam", i, params_[i], grads[i]);
    if (!g.defined()) continue;
    Target t(params_[i]);
    const Shape& s = t.data.sizes();
    const DType dt = t.data.dtype();
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = zeros(s, dt, t.data.device());
      exp_avg_sq_[i] = zeros(s, dt, t.data.device());
    }
    if (options_.amsgrad() && !max_exp_avg_sq_[i].defined()) max_exp_avg_sq_[i] = zeros(s, dt, t.data.device());
    const int64_t step = ++steps_[i];
    if (t.data.device() == Device::CUDA) {
      check_device_grad("Adam", i, g);
      ::graph::detail::cuda_adam_update(t.data, g, exp_avg_[i], exp_avg_sq_[i],
                                        options_.amsgrad() ? max_exp_avg_sq_[i] : Tensor(), options_, step);
      t.finish();
      continue;
    }
    const int64_t n = t.data.numel();
    const bool ams = options_.amsgrad();
    if (dt == kFloat32)
      adam_update<float>(options_, step, t.data.data_ptr<float>(), g.data_ptr<float>(), exp_avg_[i].data_ptr<float>(),
                         exp_avg_sq_[i].data_ptr<float>(), ams ? max_exp_avg_sq_[i].data_ptr<float>() : nullptr, n);
    else
      adam_update<double>(options_, step, t.data.data_ptr<double>(), g.data_ptr<double>(),
                          exp_avg_[i].data_ptr<double>(), exp_avg_sq_[i].data_ptr<double>(),
                          ams ? max_exp_avg_sq_[i].data_ptr<double>() : nullptr, n);
    t.finish();
  }
}

}  // namespace graph::optim
