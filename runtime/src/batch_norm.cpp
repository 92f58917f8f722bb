// batch_norm: torch.nn.functional.batch_norm on the CPU (float32, float64;
// float16/bfloat16 computed in float32), its autograd node and its backward
// kernel (graph/detail/backward_kernels.h).
//
// Per-channel loops over a contiguous [N, C, S] view of the input, parallel
// over channels; statistics accumulate in double. Training normalizes with
// the batch's biased variance and, when running stats are given, updates them
// in place with the unbiased one, as PyTorch does. On the device the same
// steps run as kernels (device_ops.h, cuda/src/batch_norm.cu). Graphs never run that
// update: the plugin lowers batch_norm only where it is pure (eval mode, or no
// running stats), and tracing records the update as untraceable.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/nn_ops.h"
#include "graph/parallel.h"
#include "device.h"
#include "device_ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// The input as [N, C, S] (S: the product of the dims after C).
struct Layout {
  int64_t N, C, S;
  int64_t per_channel() const { return N * S; }
};

Layout layout_of(const Tensor& x) {
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t S = N * C == 0 ? 0 : x.numel() / (N * C);
  return {N, C, S};
}


// Channels per parallel chunk: about kElementwiseGrain elements of work.
int64_t channel_grain(const Layout& l) {
  return std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(1, l.per_channel()));
}

// mean[c] and the biased variance var[c] of each channel (two passes: no
// cancellation for channels far from 0).
template <class T>
void channel_stats(const Layout& l, const T* __restrict x, double* mean, double* var) {
  cpu::parallel_for(l.C, channel_grain(l), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double s = 0;
      for (int64_t n = 0; n < l.N; ++n) {
        const T* xr = x + (n * l.C + c) * l.S;
        for (int64_t i = 0; i < l.S; ++i) s += static_cast<double>(xr[i]);
      }
      const double mu = s / static_cast<double>(l.per_channel());
      double v = 0;
      for (int64_t n = 0; n < l.N; ++n) {
        const T* xr = x + (n * l.C + c) * l.S;
        for (int64_t i = 0; i < l.S; ++i) {
          const double d = static_cast<double>(xr[i]) - mu;
          v += d * d;
        }
      }
      mean[c] = mu;
      var[c] = v / static_cast<double>(l.per_channel());
    }
  });
}

// y = (x - mean) * invstd * w + b, as one scale and shift per channel.
template <class T>
void normalize(const Layout& l, const T* __restrict x, const double* mean, const double* invstd, const T* w,
               const T* b, T* __restrict y) {
  cpu::parallel_for(l.C, channel_grain(l), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const double scale = invstd[c] * (w ? static_cast<double>(w[c]) : 1.0);
      const T a = static_cast<T>(scale);
      const T s = static_cast<T>((b ? static_cast<double>(b[c]) : 0.0) - mean[c] * scale);
      for (int64_t n = 0; n < l.N; ++n) {
        const int64_t o = (n * l.C + c) * l.S;
        for (int64_t i = 0; i < l.S; ++i) y[o + i] = x[o + i] * a + s;
      }
    }
  });
}

// The gradients from the channels' mean and invstd. Training: the statistics
// depend on x, so gx = w * invstd * (g - mean(g) - xhat * mean(g * xhat));
// eval: they are constants, gx = g * w * invstd. gx, gw, gb may be null.
template <class T>
void backward_channels(const Layout& l, bool training, const T* __restrict g, const T* __restrict x, const T* w,
                       const double* mean, const double* invstd, T* gx, T* gw, T* gb) {
  const double M = static_cast<double>(l.per_channel());
  cpu::parallel_for(l.C, channel_grain(l), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double sg = 0, sgx = 0;
      for (int64_t n = 0; n < l.N; ++n) {
        const int64_t o = (n * l.C + c) * l.S;
        for (int64_t i = 0; i < l.S; ++i) {
          sg += static_cast<double>(g[o + i]);
          sgx += static_cast<double>(g[o + i]) * (static_cast<double>(x[o + i]) - mean[c]);
        }
      }
      sgx *= invstd[c];  // sum(g * xhat)
      if (gw) gw[c] = static_cast<T>(sgx);
      if (gb) gb[c] = static_cast<T>(sg);
      if (!gx) continue;
      const double k = (w ? static_cast<double>(w[c]) : 1.0) * invstd[c];
      for (int64_t n = 0; n < l.N; ++n) {
        const int64_t o = (n * l.C + c) * l.S;
        for (int64_t i = 0; i < l.S; ++i) {
          double d = static_cast<double>(g[o + i]);
          if (training) d -= (sg + (static_cast<double>(x[o + i]) - mean[c]) * invstd[c] * sgx) / M;
          gx[o + i] = static_cast<T>(k * d);
        }
      }
    }
  });
}

std::string describe(const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w, const Tensor& b) {
  std::string s = "input shape " + shape_str(x.sizes());
  const auto add = [&](const char* name, const Tensor& t) {
    if (t.defined()) s += std::string(", ") + name + " shape " + shape_str(t.sizes());
  };
  add("running_mean", rm);
  add("running_var", rv);
  add("weight", w);
  add("bias", b);
  return s;
}

// PyTorch's checks, with the shapes in every message.
void check_args(const char* op, const Tensor& x, const Tensor& rm, const Tensor& rv, const Tensor& w, const Tensor& b,
                bool training) {
  detail::check_defined(op, x);
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string(describe(x, rm, rv, w, b));
  };
  if (x.dim() < 2)
    throw Error(std::string(op) + ": expected an input of at least 2 dims [N, C, ...] (" + shapes() + ")");
  if (!is_floating(x.dtype()))
    throw Error(std::string(op) + ": expected a floating input, got " + std::string(dtype_name(x.dtype())) + " (" +
                shapes() + ")");
  const int64_t C = x.size(1);
  const std::pair<const char*, const Tensor*> params[] = {{"running_mean", &rm}, {"running_var", &rv},
                                                           {"weight", &w}, {"bias", &b}};
  for (const auto& [name, t] : params) {
    if (!t->defined()) continue;
    if (t->dim() != 1 || t->numel() != C)
      throw Error(std::string(op) + ": expected " + name + " of shape [" + std::to_string(C) +
                  "] (one value per channel, dim 1 of the input) (" + shapes() + ")");
    if (!is_floating(t->dtype()))
      throw Error(std::string(op) + ": expected a floating " + name + ", got " + std::string(dtype_name(t->dtype())));
    if (t->device() != x.device()) throw Error(std::string(op) + ": " + name + " is on another device than the input");
  }
  if (!training && (!rm.defined() || !rv.defined()))
    throw Error(std::string(op) + ": running_mean and running_var must be defined in evaluation mode (" + shapes() +
                ")");
  if (rm.defined() != rv.defined())
    throw Error(std::string(op) + ": running_mean and running_var must both be defined or both undefined (" + shapes() +
                ")");
  if (training && x.numel() / std::max<int64_t>(1, C) <= 1 && x.numel() > 0)
    throw Error(std::string(op) + ": expected more than 1 value per channel when training (" + shapes() + ")");
}

// A [C] double tensor's data from a floating [C] tensor (or null when undefined).
Tensor as_double(const Tensor& t) { return t.defined() ? t.detach().to(kFloat64).contiguous() : Tensor(); }
Tensor as_dtype(const Tensor& t, DType d) { return t.defined() ? t.detach().to(d).contiguous() : Tensor(); }

// The channels' mean and invstd [C] (double): the batch's in training, the
// running stats' otherwise; the batch's biased variance too (training only).
void channel_mean_invstd(const Layout& l, const Tensor& x, const Tensor& rm, const Tensor& rv, bool training, double eps,
                         Tensor& mean, Tensor& invstd, Tensor& var) {
  if (x.device() == Device::CUDA) {
    invstd = detail::empty_on(Device::CUDA, {l.C}, kFloat64);
    if (training) {
      mean = detail::empty_on(Device::CUDA, {l.C}, kFloat64);
      var = detail::empty_on(Device::CUDA, {l.C}, kFloat64);
      detail::cuda_bn_stats(x, l.N, l.C, l.S, mean, var);
    } else {
      mean = as_double(rm).reshape({l.C}).clone();  // saved for backward: never the buffer itself
      var = as_double(rv).reshape({l.C}).clone();
    }
    detail::cuda_bn_finish(mean, var, invstd, eps, Tensor(), Tensor(), 0.0, 1.0);
    return;
  }
  mean = empty({l.C}, kFloat64);
  invstd = empty({l.C}, kFloat64);
  var = empty({l.C}, kFloat64);
  double* pm = mean.data_ptr<double>();
  double* pi = invstd.data_ptr<double>();
  double* pv = var.data_ptr<double>();
  if (training) {
    detail::dispatch_float(x.dtype(), [&](auto v) { channel_stats(l, x.data_ptr<decltype(v)>(), pm, pv); });
  } else {
    const Tensor m = as_double(rm), r = as_double(rv);
    for (int64_t c = 0; c < l.C; ++c) {
      pm[c] = m.data_ptr<double>()[c];
      pv[c] = r.data_ptr<double>()[c];
    }
  }
  for (int64_t c = 0; c < l.C; ++c) pi[c] = 1.0 / std::sqrt(pv[c] + eps);
}

// running = (1 - momentum) * running + momentum * batch (unbiased variance).
void update_running_stats(const Layout& l, const Tensor& rm, const Tensor& rv, const Tensor& mean, const Tensor& var,
                          double momentum) {
  const Tensor m = as_double(rm), v = as_double(rv);
  const double M = static_cast<double>(l.per_channel());
  const double unbias = M / (M - 1);
  if (m.device() == Device::CUDA) {  // invstd goes to scratch; only the update is kept
    const Tensor scratch = detail::empty_on(Device::CUDA, {l.C}, kFloat64);
    detail::cuda_bn_finish(mean, var, scratch, 1.0, m.reshape({l.C}), v.reshape({l.C}), momentum, unbias);
    autograd::NoGradGuard no_grad;
    if (m.raw_data() != rm.raw_data()) Tensor(rm).copy_(m.reshape(rm.sizes()));  // else updated in place
    if (v.raw_data() != rv.raw_data()) Tensor(rv).copy_(v.reshape(rv.sizes()));
    return;
  }
  for (int64_t c = 0; c < l.C; ++c) {
    m.data_ptr<double>()[c] = (1 - momentum) * m.data_ptr<double>()[c] + momentum * mean.data_ptr<double>()[c];
    v.data_ptr<double>()[c] = (1 - momentum) * v.data_ptr<double>()[c] + momentum * var.data_ptr<double>()[c] * unbias;
  }
  autograd::NoGradGuard no_grad;
  Tensor(rm).copy_(m.reshape(rm.sizes()));
  Tensor(rv).copy_(v.reshape(rv.sizes()));
}

// {gx, gw, gb} on x's device (each undefined when not wanted), in x's dtype.
std::tuple<Tensor, Tensor, Tensor> channel_grads(const Layout& l, bool training, const Tensor& g, const Tensor& x,
                                                 const Tensor& w, const Tensor& mean, const Tensor& invstd, bool need_x,
                                                 bool need_w, bool need_b) {
  const Device dev = x.device();
  const DType dt = x.dtype();
  Tensor gx = need_x ? detail::empty_on(dev, x.sizes(), dt) : Tensor();
  Tensor gw = need_w ? detail::empty_on(dev, {l.C}, dt) : Tensor();
  Tensor gb = need_b ? detail::empty_on(dev, {l.C}, dt) : Tensor();
  if (dev == Device::CUDA) {
    detail::cuda_bn_backward(training, g, x, w, mean, invstd, gx, gw, gb, l.N, l.C, l.S);
    return {gx, gw, gb};
  }
  detail::dispatch_float(dt, [&](auto v) {
    using T = decltype(v);
    backward_channels<T>(l, training, g.data_ptr<T>(), x.data_ptr<T>(), w.defined() ? w.data_ptr<T>() : nullptr,
                         mean.data_ptr<double>(), invstd.data_ptr<double>(), need_x ? gx.data_ptr<T>() : nullptr,
                         need_w ? gw.data_ptr<T>() : nullptr, need_b ? gb.data_ptr<T>() : nullptr);
  });
  return {gx, gw, gb};
}

Tensor batch_norm_impl(const Tensor& x_in, const Tensor& rm, const Tensor& rv, const Tensor& w_in, const Tensor& b_in,
                       bool training, double momentum, double eps) {
  const Tensor x = x_in.detach().contiguous();
  const Tensor w = as_dtype(w_in, x.dtype()), b = as_dtype(b_in, x.dtype());
  const Layout l = layout_of(x);
  Tensor mean, invstd, var;
  channel_mean_invstd(l, x, rm, rv, training, eps, mean, invstd, var);
  Tensor y = detail::empty_on(x.device(), x.sizes(), x.dtype());
  if (x.device() == Device::CUDA) detail::cuda_bn_normalize(x, mean, invstd, w, b, y, l.N, l.C, l.S);
  else detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    normalize<T>(l, x.data_ptr<T>(), mean.data_ptr<double>(), invstd.data_ptr<double>(),
                 w.defined() ? w.data_ptr<T>() : nullptr, b.defined() ? b.data_ptr<T>() : nullptr, y.data_ptr<T>());
  });
  if (training && rm.defined() && l.per_channel() > 1) update_running_stats(l, rm, rv, mean, var, momentum);
  if (!autograd::needs_grad({&x_in, &w_in, &b_in})) return y;
  const bool need_x = x_in.requires_grad(), need_w = w.defined() && w_in.requires_grad(),
             need_b = b.defined() && b_in.requires_grad();
  // The saved statistics: the running stats may change before backward runs.
  autograd::record("batch_norm", y, {x_in, w_in, b_in},
                   [x, w, mean, invstd, training, need_x, need_w, need_b, wd = w_in.dtype(),
                    bd = b_in.dtype()](const Tensor& grad) {
                     const Layout l = layout_of(x);
                     const Tensor g = grad.to(x.dtype()).contiguous();
                     auto [gx, gw, gb] = channel_grads(l, training, g, x, w, mean, invstd, need_x, need_w, need_b);
                     if (gw.defined()) gw = gw.to(wd);
                     if (gb.defined()) gb = gb.to(bd);
                     return std::vector<Tensor>{gx, gw, gb};
                   });
  return y;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  if (detail::tracing()) {
    // The running-stat update is an effect a graph cannot hold: recorded under
    // a name the tracer does not know, it fails a trace that depends on it.
    const bool updates = training && running_mean.defined();
    return detail::trace_op(updates ? "batch_norm (updating running stats)" : "batch_norm",
                            {x, running_mean, running_var, weight, bias},
                            {{"training", training}, {"momentum", momentum}, {"eps", eps}}, [&] {
                              return batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps);
                            });
  }
  check_args("batch_norm", x, running_mean, running_var, weight, bias, training);
  if (is_reduced_float(x.dtype()))
    return batch_norm_impl(x.to(kFloat32), running_mean, running_var, weight, bias, training, momentum, eps)
        .to(x.dtype());
  return batch_norm_impl(x, running_mean, running_var, weight, bias, training, momentum, eps);
}

namespace detail {

// Recomputes the channels' statistics (the batch's in training, else the
// running stats'): the graph saves batch_norm's inputs, not its statistics.
std::vector<Tensor> batch_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& running_mean,
                                        const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                                        bool training, double eps, GradMask mask) {
  observe_grad_mask("batch_norm_backward", mask);
  check_args("batch_norm_backward", x, running_mean, running_var, weight, bias, training);
  if (!grad.defined() || grad.sizes() != x.sizes())
    throw Error("batch_norm_backward: expected a gradient of the input's shape " + shape_str(x.sizes()) + ", got " +
                (grad.defined() ? shape_str(grad.sizes()) : std::string("undefined")));
  const DType dt = is_reduced_float(x.dtype()) ? kFloat32 : x.dtype();
  const Tensor xc = x.detach().to(dt).contiguous(), g = grad.detach().to(dt).contiguous();
  const Tensor w = as_dtype(weight, dt);
  const Layout l = layout_of(xc);
  Tensor mean, invstd, var;
  channel_mean_invstd(l, xc, running_mean, running_var, training, eps, mean, invstd, var);
  const bool need_x = wants(mask, 0), need_w = wants(mask, 3) && weight.defined(),
             need_b = wants(mask, 4) && bias.defined();
  auto [gx, gw, gb] = channel_grads(l, training, g, xc, w, mean, invstd, need_x, need_w, need_b);
  if (gx.defined()) gx = gx.to(x.dtype());
  if (gw.defined()) gw = gw.to(weight.dtype()).reshape(weight.sizes());
  if (gb.defined()) gb = gb.to(bias.dtype()).reshape(bias.sizes());
  return {gx, Tensor(), Tensor(), gw, gb};
}

}  // namespace detail

}  // namespace graph
