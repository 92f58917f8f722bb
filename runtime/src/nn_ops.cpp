// Neural-network ops that are not convolutions or pooling (conv.cpp, pool.cpp)
// or random numbers (random.cpp): linear, layer_norm, embedding, cat, stack,
// dropout, mse_loss, cross_entropy, scaled_dot_product_attention.
//
// stack, dropout, mse_loss, cross_entropy and sdpa's math path are composites
// of differentiable ops, so autograd needs nothing more. sdpa's fused float32
// kernel (attention_cpu.cpp) records its backward kernel. linear, layer_norm,
// embedding, cat and the target selection of cross_entropy (pick_targets)
// record their own backward; the kernels the generated backward code calls
// (graph/detail/backward_kernels.h) are here for layer_norm and embedding,
// the others in backward_kernels.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "graph/autocast.h"
#include "graph/autograd.h"
#include "graph/cpu_loop.h"
#include "graph/detail/backward_kernels.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "attention_cpu.h"
#include "class_targets.h"
#include "device.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

std::string dt(const Tensor& t) { return std::string(dtype_name(t.dtype())); }

void check_floating(const char* op, const Tensor& t, const std::string& shapes) {
  if (!is_floating(t.dtype()))
    throw Error(std::string(op) + ": expected a floating tensor, got " + dt(t) + " (" + shapes + ")");
}

bool any_requires_grad(const std::vector<Tensor>& ts) {
  if (!autograd::grad_mode_enabled()) return false;
  for (const Tensor& t : ts)
    if (t.requires_grad()) return true;
  return false;
}

// ---- layer_norm kernel -------------------------------------------------------

// mean and rstd of one row of M elements: four accumulators break the add
// latency chain; two passes avoid the cancellation of E[x^2] - E[x]^2 for
// rows far from 0.
template <class T>
void row_stats(const T* __restrict xr, int64_t M, double eps, double& mean, double& rstd) {
  double s4[4] = {0, 0, 0, 0}, v4[4] = {0, 0, 0, 0};
  const int64_t M4 = M / 4 * 4;
  for (int64_t j = 0; j < M4; j += 4)
    for (int k = 0; k < 4; ++k) s4[k] += static_cast<double>(xr[j + k]);
  for (int64_t j = M4; j < M; ++j) s4[0] += static_cast<double>(xr[j]);
  const double mu = (s4[0] + s4[1] + s4[2] + s4[3]) / static_cast<double>(M);
  for (int64_t j = 0; j < M4; j += 4)
    for (int k = 0; k < 4; ++k) {
      const double d = static_cast<double>(xr[j + k]) - mu;
      v4[k] += d * d;
    }
  for (int64_t j = M4; j < M; ++j) {
    const double d = static_cast<double>(xr[j]) - mu;
    v4[0] += d * d;
  }
  const double v = v4[0] + v4[1] + v4[2] + v4[3];
  mean = mu;
  rstd = 1.0 / std::sqrt(v / static_cast<double>(M) + eps);
}

// y = (x - mean) * rstd * w + b per row of M elements; mean and rstd saved
// per row (double). w, b may be null.
template <class T>
void layer_norm_forward(int64_t rows, int64_t M, double eps, const T* __restrict x, const T* w, const T* b,
                        T* __restrict y, double* __restrict mean, double* __restrict rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * M;
    T* yr = y + r * M;
    row_stats(xr, M, eps, mean[r], rstd[r]);
    const double mu = mean[r], rs = rstd[r];
    // x - mu as (x - tm) - dm: tm is mu rounded to T, so x - tm is exact
    // for x near the mean (no loss for rows far from 0), and dm the rest.
    const T tm = static_cast<T>(mu), dm = static_cast<T>(mu - static_cast<double>(tm)), tr = static_cast<T>(rs);
    if (w && b) {
      for (int64_t j = 0; j < M; ++j) yr[j] = ((xr[j] - tm) - dm) * tr * w[j] + b[j];
    } else if (w) {
      for (int64_t j = 0; j < M; ++j) yr[j] = ((xr[j] - tm) - dm) * tr * w[j];
    } else if (b) {
      for (int64_t j = 0; j < M; ++j) yr[j] = ((xr[j] - tm) - dm) * tr + b[j];
    } else {
      for (int64_t j = 0; j < M; ++j) yr[j] = ((xr[j] - tm) - dm) * tr;
    }
  }
}

// dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w * xhat)),
// dw = sum_rows dy * xhat, db = sum_rows dy. Any of gx, gw, gb may be null.
template <class T>
void layer_norm_backward(int64_t rows, int64_t M, const T* __restrict g, const T* __restrict x, const T* w,
                         const double* mean, const double* rstd, T* gx, T* gw, T* gb) {
  std::vector<double> acc_w(gw ? M : 0, 0.0), acc_b(gb ? M : 0, 0.0), gy(static_cast<size_t>(M));
  for (int64_t r = 0; r < rows; ++r) {
    const T* gr = g + r * M;
    const T* xr = x + r * M;
    const double mu = mean[r], rs = rstd[r];
    double sum_gy = 0, sum_gy_xhat = 0;
    for (int64_t j = 0; j < M; ++j) {
      const double xhat = (static_cast<double>(xr[j]) - mu) * rs;
      const double gj = static_cast<double>(gr[j]);
      const double gyj = w ? gj * static_cast<double>(w[j]) : gj;
      gy[j] = gyj;
      sum_gy += gyj;
      sum_gy_xhat += gyj * xhat;
      if (gw) acc_w[j] += gj * xhat;
      if (gb) acc_b[j] += gj;
    }
    if (gx) {
      const double a = sum_gy / static_cast<double>(M), c = sum_gy_xhat / static_cast<double>(M);
      T* o = gx + r * M;
      for (int64_t j = 0; j < M; ++j) {
        const double xhat = (static_cast<double>(xr[j]) - mu) * rs;
        o[j] = static_cast<T>(rs * (gy[j] - a - xhat * c));
      }
    }
  }
  for (int64_t j = 0; gw && j < M; ++j) gw[j] = static_cast<T>(acc_w[j]);
  for (int64_t j = 0; gb && j < M; ++j) gb[j] = static_cast<T>(acc_b[j]);
}


// The gradients of layer_norm on the CPU from the rows' saved statistics
// (float64 [rows]); x and w contiguous.
std::vector<Tensor> layer_norm_grads(const Tensor& grad, const Tensor& x, const Tensor& w, const Tensor& mean,
                                     const Tensor& rstd, int64_t M, bool need_x, bool need_w, bool need_b,
                                     const Shape& bias_shape) {
  const int64_t rows = M == 0 ? 0 : x.numel() / M;
  const Tensor g = grad.to(x.dtype()).contiguous();
  Tensor gx = need_x ? empty(x.sizes(), x.dtype()) : Tensor();
  Tensor gw = need_w ? empty(w.sizes(), x.dtype()) : Tensor();
  Tensor gb = need_b ? empty(bias_shape, x.dtype()) : Tensor();
  detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    layer_norm_backward<T>(rows, M, g.data_ptr<T>(), x.data_ptr<T>(), w.defined() ? w.data_ptr<T>() : nullptr,
                           mean.data_ptr<double>(), rstd.data_ptr<double>(), need_x ? gx.data_ptr<T>() : nullptr,
                           need_w ? gw.data_ptr<T>() : nullptr, need_b ? gb.data_ptr<T>() : nullptr);
  });
  return {gx, gw, gb};
}

// On the device: the hand kernels of cuda/src/nn.cu (one block per row;
// mean and rstd kept in the input's dtype).
Tensor layer_norm_cuda(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, int64_t M, double eps) {
  const Tensor x = x_in.contiguous().detach();
  const Tensor w = w_in.defined() ? w_in.contiguous().detach() : Tensor();
  const Tensor b = b_in.defined() ? b_in.contiguous().detach() : Tensor();
  std::vector<Tensor> r = detail::cuda_layer_norm(x, w, b, M, eps);
  if (!autograd::needs_grad({&x_in, &w_in, &b_in})) return r[0];
  const bool need_x = x_in.requires_grad(), need_w = w.defined() && w_in.requires_grad(),
             need_b = b.defined() && b_in.requires_grad();
  const Tensor mean = r[1], rstd = r[2];
  autograd::record("layer_norm", r[0], {x_in, w_in, b_in},
                   [x, w, mean, rstd, M, need_x, need_w, need_b](const Tensor& grad) {
                     return detail::cuda_layer_norm_backward(grad.to(x.dtype()).contiguous(), x, w, mean, rstd, M,
                                                             need_x, need_w, need_b);
                   });
  return r[0];
}

Tensor layer_norm_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, int64_t M, double eps) {
  if (x_in.device() == Device::CUDA) return layer_norm_cuda(x_in, w_in, b_in, M, eps);
  const Tensor x = x_in.contiguous().detach();
  const Tensor w = w_in.defined() ? w_in.contiguous().detach() : Tensor();
  const Tensor b = b_in.defined() ? b_in.contiguous().detach() : Tensor();
  const int64_t rows = M == 0 ? 0 : x.numel() / M;
  Tensor y = empty(x.sizes(), x.dtype());
  Tensor mean = empty({rows}, kFloat64), rstd = empty({rows}, kFloat64);
  detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    layer_norm_forward<T>(rows, M, eps, x.data_ptr<T>(), w.defined() ? w.data_ptr<T>() : nullptr,
                          b.defined() ? b.data_ptr<T>() : nullptr, y.data_ptr<T>(), mean.data_ptr<double>(),
                          rstd.data_ptr<double>());
  });
  if (!autograd::needs_grad({&x_in, &w_in, &b_in})) return y;
  const bool need_x = x_in.requires_grad(), need_w = w.defined() && w_in.requires_grad(),
             need_b = b.defined() && b_in.requires_grad();
  auto layer_norm_backward_fn = [x, w, mean, rstd, M, need_x, need_w, need_b,
                                 bs = b.defined() ? b.sizes() : Shape{M}](const Tensor& grad) {
    return layer_norm_grads(grad, x, w, mean, rstd, M, need_x, need_w, need_b, bs);
  };
  autograd::record("layer_norm", y, {x_in, w_in, b_in}, layer_norm_backward_fn);
  return y;
}

// ---- embedding kernel --------------------------------------------------------

// The weight's gradient: grad's rows scatter-added at the indices (int64,
// contiguous, checked by the forward); 16-bit floats accumulate in float32
// (the engine converts back to the weight's dtype).
Tensor embedding_grad(const Tensor& grad, const Tensor& idx, const Shape& wsizes, DType wdtype) {
  const DType acc = wdtype == kFloat64 ? kFloat64 : kFloat32;
  if (grad.device() == Device::CUDA) return detail::cuda_embedding_backward(grad.to(acc).contiguous(), idx, wsizes, acc);
  const Tensor g = grad.to(acc).contiguous();
  Tensor gw = zeros(wsizes, acc);
  const int64_t* p = idx.data_ptr<int64_t>();
  const int64_t D = wsizes[1], m = idx.numel();
  detail::dispatch_float(acc, [&](auto v) {
    using T = decltype(v);
    const T* pg = g.data_ptr<T>();
    T* pw = gw.data_ptr<T>();
    for (int64_t i = 0; i < m; ++i) {
      T* row = pw + p[i] * D;
      const T* gr = pg + i * D;
      for (int64_t j = 0; j < D; ++j) row[j] += gr[j];
    }
  });
  return gw;
}

// On the device: a gather kernel (its range check synchronizes to report a
// bad index as the CPU does) and an atomic scatter-add for the backward.
Tensor embedding_cuda(const Tensor& weight_in, const Tensor& indices_in, bool checked = false) {
  const Tensor weight = weight_in.contiguous().detach();
  const Tensor idx = indices_in.to(kInt64).contiguous();
  const Tensor out = detail::cuda_embedding(weight, idx,
                                            "weight shape " + shape_str(weight.sizes()) + ", indices shape " +
                                                shape_str(indices_in.sizes()),
                                            checked);
  const Shape wsizes = weight.sizes();
  const DType wdtype = weight.dtype();
  return autograd::record_unary("embedding", out, weight_in,
                                [idx, wsizes, wdtype](const Tensor& grad) { return embedding_grad(grad, idx, wsizes, wdtype); });
}

Tensor embedding_impl(const Tensor& weight_in, const Tensor& indices_in) {
  if (weight_in.device() == Device::CUDA) return embedding_cuda(weight_in, indices_in);
  const Tensor weight = weight_in.contiguous().detach();
  const Tensor idx = indices_in.to(kInt64).contiguous();
  const int64_t num = weight.size(0), D = weight.size(1), n = idx.numel();
  const int64_t* pi = idx.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    if (pi[i] < 0 || pi[i] >= num)
      throw Error("embedding: index " + std::to_string(pi[i]) + " is out of range for a table of " +
                  std::to_string(num) + " rows (weight shape " + shape_str(weight.sizes()) + ", indices shape " +
                  shape_str(indices_in.sizes()) + ")");
  Shape shape = indices_in.sizes();
  shape.push_back(D);
  Tensor out = empty(shape, weight.dtype());
  const size_t row_bytes = static_cast<size_t>(D) * element_size(weight.dtype());
  const char* src = static_cast<const char*>(weight.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * row_bytes, src + pi[i] * row_bytes, row_bytes);
  const Shape wsizes = weight.sizes();
  const DType wdtype = weight.dtype();
  return autograd::record_unary("embedding", out, weight_in,
                                [idx, wsizes, wdtype](const Tensor& grad) { return embedding_grad(grad, idx, wsizes, wdtype); });
}

// ---- cross_entropy's selection -------------------------------------------------

// out[r] = lsm[r, target[r]] for lsm [R, C] and int64 target [R]; targets
// equal to `ignore` give 0 (and no gradient).
Tensor pick_targets(const Tensor& lsm_in, const Tensor& target, int64_t ignore) {
  const Tensor lsm = lsm_in.contiguous().detach();
  const int64_t R = lsm.size(0), C = lsm.size(1);
  const int64_t* pt = target.data_ptr<int64_t>();
  Tensor out = zeros({R}, lsm.dtype());
  detail::dispatch_float(lsm.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* pl = lsm.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t r = 0; r < R; ++r)
      if (pt[r] != ignore) po[r] = pl[r * C + pt[r]];
  });
  const DType dtype = lsm.dtype();
  return autograd::record_unary("cross_entropy", out, lsm_in, [target, ignore, R, C, dtype](const Tensor& grad) {
    const Tensor g = grad.to(dtype).contiguous();
    Tensor gl = zeros({R, C}, dtype);
    const int64_t* p = target.data_ptr<int64_t>();
    detail::dispatch_float(dtype, [&](auto v) {
      using T = decltype(v);
      const T* pg = g.data_ptr<T>();
      T* o = gl.data_ptr<T>();
      for (int64_t r = 0; r < R; ++r)
        if (p[r] != ignore) o[r * C + p[r]] = pg[r];
    });
    return gl;
  });
}

// pick_targets on the device: the picks are rows r * C + target[r] of the
// log-probabilities viewed as [R * C, 1], gathered by embedding (its backward
// scatter-adds); ignored rows read row r * C and are masked to 0.
Tensor pick_targets_device(const Tensor& lsm, const Tensor& host_target, int64_t ignore) {
  const int64_t R = lsm.size(0), C = lsm.size(1);
  const int64_t* pt = host_target.data_ptr<int64_t>();
  Tensor rows = empty({R}, kInt64), keep = ones({R}, kFloat64);
  int64_t* pr = rows.data_ptr<int64_t>();
  double* pk = keep.data_ptr<double>();
  bool any_ignored = false;
  for (int64_t r = 0; r < R; ++r) {
    const bool ignored = pt[r] == ignore;
    pr[r] = r * C + (ignored ? 0 : pt[r]);
    pk[r] = ignored ? 0.0 : 1.0;
    any_ignored = any_ignored || ignored;
  }
  const Tensor picked = embedding_impl(lsm.reshape({R * C, 1}), rows.to(Device::CUDA)).reshape({R});
  return any_ignored ? picked * keep.to(lsm.dtype()).to(Device::CUDA) : picked;
}

// The same with device targets already checked (class_targets.h) and none
// ignored: row r's entry is element r * C + t[r] of the flat [R * C], all on
// the device, so nothing waits for it.
Tensor pick_checked_targets_device(const Tensor& lsm, const Tensor& device_target) {
  const int64_t R = lsm.size(0), C = lsm.size(1);
  const Tensor idx = device_target + arange(0, R * C, C, Device::CUDA);
  return embedding_cuda(lsm.reshape({R * C, 1}), idx, true).reshape({R});
}

// A float tensor of infinities of `dtype` (0-d), for masking.
Tensor minus_inf(DType dtype) { return full({}, -std::numeric_limits<double>::infinity(), dtype); }

}  // namespace

// ---- linear ------------------------------------------------------------------

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (detail::tracing())
    return detail::trace_op("linear", {x, weight, bias}, {}, [&] { return linear(x, weight, bias); });
  detail::check_defined("linear", x);
  detail::check_defined("linear", weight);
  std::string shapes = "input shape " + shape_str(x.sizes()) + ", weight shape " + shape_str(weight.sizes());
  if (bias.defined()) shapes += ", bias shape " + shape_str(bias.sizes());
  if (weight.dim() != 2) throw Error("linear: expected a 2-D weight [out, in], got " + shapes);
  if (x.dim() == 0) throw Error("linear: expected an input with at least 1 dim, got " + shapes);
  if (x.size(-1) != weight.size(1))
    throw Error("linear: input features " + std::to_string(x.size(-1)) + " do not match weight in_features " +
                std::to_string(weight.size(1)) + " (" + shapes + ")");
  check_floating("linear", x, shapes);
  if (weight.dtype() != x.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    throw Error("linear: expected input, weight and bias of one dtype, got " + dt(x) + ", " + dt(weight) +
                (bias.defined() ? ", " + dt(bias) : std::string()) + " (" + shapes + ")");
  if (bias.defined() && !(bias.dim() == 0 || (bias.dim() == 1 && (bias.size(0) == weight.size(0) || bias.size(0) == 1))))
    throw Error("linear: expected a bias of shape [" + std::to_string(weight.size(0)) + "], got " + shapes);
  // One node on the tape whose backward is linear_backward: dW = g^T x
  // directly, no transposed weight gradient to transpose back.
  const bool record = autograd::needs_grad({&x, &weight, &bias});
  Tensor y;
  {
    NoGradGuard no_grad;
    // On the device the bias rides in the GEMM's epilogue where it can: no
    // broadcast add over the whole output.
    if (x.device() == Device::CUDA && bias.defined()) y = detail::cuda_linear_bias(x, weight, bias);
    if (!y.defined()) {
      if (x.dim() > 2) {  // one 2-D product over the flattened leading dims
        Shape out = x.sizes();
        out.back() = weight.size(0);
        y = matmul(x.reshape({-1, x.size(-1)}), weight.t()).reshape(out);
      } else {
        y = matmul(x, weight.t());
      }
      if (bias.defined()) y = y + bias;
    }
  }
  if (!record) return y;
  const detail::GradMask mask = (x.requires_grad() ? 1u : 0u) | (weight.requires_grad() ? 2u : 0u) |
                                (bias.defined() && bias.requires_grad() ? 4u : 0u);
  const Tensor xs = x.detach(), ws = weight.detach(), bs = bias.defined() ? bias.detach() : Tensor();
  autograd::record("linear", y, {x, weight, bias}, [xs, ws, bs, mask](const Tensor& g) {
    return detail::linear_backward(g, xs, ws, bs, mask);
  });
  return y;
}

// ---- layer_norm --------------------------------------------------------------

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias, double eps) {
  if (detail::tracing())
    return detail::trace_op("layer_norm", {x, weight, bias},
                            {{"normalized_shape", detail::ints(normalized_shape)}, {"eps", eps}},
                            [&] { return layer_norm(x, normalized_shape, weight, bias, eps); });
  detail::check_defined("layer_norm", x);
  std::string shapes = "input shape " + shape_str(x.sizes()) + ", normalized_shape " + shape_str(normalized_shape);
  if (weight.defined()) shapes += ", weight shape " + shape_str(weight.sizes());
  if (bias.defined()) shapes += ", bias shape " + shape_str(bias.sizes());
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0) throw Error("layer_norm: normalized_shape must have at least one dim (" + shapes + ")");
  bool ok = x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == normalized_shape[i];
  if (!ok) throw Error("layer_norm: the trailing dims of the input do not match normalized_shape (" + shapes + ")");
  check_floating("layer_norm", x, shapes);
  for (const Tensor* p : {&weight, &bias}) {
    if (!p->defined()) continue;
    if (p->sizes() != normalized_shape)
      throw Error(std::string("layer_norm: expected ") + (p == &weight ? "weight" : "bias") + " of shape " +
                  shape_str(normalized_shape) + " (" + shapes + ")");
    if (p->dtype() != x.dtype())
      throw Error("layer_norm: expected input, weight and bias of one dtype, got " + dt(x) + " and " + dt(*p) +
                  " (" + shapes + ")");
  }
  int64_t M = 1;
  for (int64_t s : normalized_shape) M *= s;
  if (is_reduced_float(x.dtype())) {
    const auto up = [](const Tensor& t) { return t.defined() ? t.to(kFloat32) : t; };
    return layer_norm_impl(up(x), up(weight), up(bias), M, eps).to(x.dtype());
  }
  return layer_norm_impl(x, weight, bias, M, eps);
}

// ---- embedding ---------------------------------------------------------------

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  if (detail::tracing())
    return detail::trace_op("embedding", {weight, indices}, {}, [&] { return embedding(weight, indices); });
  detail::check_defined("embedding", weight);
  detail::check_defined("embedding", indices);
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string("weight shape " + shape_str(weight.sizes()) + ", indices shape " + shape_str(indices.sizes()));
  };
  if (weight.dim() != 2) throw Error("embedding: expected a 2-D weight [num_embeddings, dim], got " + shapes());
  if (indices.dtype() != kInt64 && indices.dtype() != kInt32)
    throw Error("embedding: expected int64 (or int32) indices, got " + dt(indices) + " (" + shapes() + ")");
  if (weight.device() != indices.device())
    throw Error("embedding: expected weight and indices on one device, got " +
                std::string(device_name(weight.device())) + " and " + std::string(device_name(indices.device())) +
                " (" + shapes() + ")");
  return embedding_impl(weight, indices);
}

// ---- cat / stack -------------------------------------------------------------

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (detail::tracing())
    return detail::trace_op("cat", {tensors.begin(), tensors.end()}, {{"dim", dim}},
                            [&] { return cat(tensors, dim); });
  if (tensors.empty()) throw Error("cat: expected a non-empty list of tensors");
  std::string shapes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    detail::check_defined("cat", tensors[i]);
    shapes += (i ? ", " : "") + shape_str(tensors[i].sizes());
  }
  // PyTorch's legacy rule: 1-D empty tensors ([0]) are skipped whatever the
  // other shapes are.
  auto skipped = [](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0; };
  const Tensor* ref = &tensors[0];
  for (const Tensor& t : tensors)
    if (!skipped(t)) {
      ref = &t;
      break;
    }
  DType dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].dim() == 0)
      throw Error("cat: zero-dimensional tensor (at position " + std::to_string(i) +
                  ") cannot be concatenated (shapes " + shapes + ")");
  const int64_t d = detail::wrap_dim("cat", dim, ref->sizes());
  Shape out_shape = ref->sizes();
  out_shape[d] = 0;
  for (const Tensor& t : tensors) {
    if (skipped(t) && &t != ref) continue;
    bool ok = t.dim() == ref->dim();
    for (int64_t k = 0; ok && k < t.dim(); ++k) ok = k == d || t.size(k) == ref->size(k);
    if (!ok)
      throw Error("cat: shapes " + shapes + " must match except in dim " + std::to_string(d));
    out_shape[d] += t.size(d);
  }
  // Every tensor on one device (a 0-d tensor cannot be concatenated).
  const Device dev = ref->device();
  for (const Tensor& t : tensors)
    if (t.device() != dev)
      throw Error("cat: expected tensors on one device, got " + std::string(device_name(dev)) + " and " +
                  std::string(device_name(t.device())) + " (shapes " + shapes + ")");
  Tensor out = detail::empty_on(dev, out_shape, dtype);
  std::vector<int64_t> offsets;
  int64_t off = 0;
  for (const Tensor& t : tensors) {
    offsets.push_back(off);
    if (skipped(t) && &t != ref) continue;
    const int64_t n = t.size(d);
    if (n > 0) detail::copy_into(out.slice(d, off, off + n), t);
    off += n;
  }
  if (!any_requires_grad(tensors) || !is_floating(dtype)) return out;
  std::vector<Shape> in_shapes;
  std::vector<bool> skip;
  for (const Tensor& t : tensors) {
    in_shapes.push_back(t.sizes());
    skip.push_back(skipped(t) && &t != ref);
  }
  autograd::record("cat", out, tensors, [d, offsets, in_shapes, skip](const Tensor& grad) {
    std::vector<Tensor> gs;
    for (size_t i = 0; i < in_shapes.size(); ++i) {
      if (skip[i]) gs.push_back(detail::full_on(grad.device(), in_shapes[i], 0, grad.dtype()));
      else gs.push_back(grad.slice(d, offsets[i], offsets[i] + in_shapes[i][d]));
    }
    return gs;
  });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (detail::tracing())
    return detail::trace_op("stack", {tensors.begin(), tensors.end()}, {{"dim", dim}},
                            [&] { return stack(tensors, dim); });
  if (tensors.empty()) throw Error("stack: expected a non-empty list of tensors");
  for (const Tensor& t : tensors) detail::check_defined("stack", t);
  for (size_t i = 1; i < tensors.size(); ++i)
    if (tensors[i].sizes() != tensors[0].sizes())
      throw Error("stack: expects each tensor to be equal size, but got " + shape_str(tensors[0].sizes()) +
                  " at entry 0 and " + shape_str(tensors[i].sizes()) + " at entry " + std::to_string(i));
  Shape with_new = tensors[0].sizes();
  with_new.push_back(1);
  const int64_t d = detail::wrap_dim("stack", dim, with_new);
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

// ---- dropout -----------------------------------------------------------------

static void check_dropout(const char* op, const Tensor& x, double p) {
  detail::check_defined(op, x);
  if (!(p >= 0.0 && p <= 1.0))
    throw Error(std::string(op) + ": probability has to be between 0 and 1, but got " + std::to_string(p) +
                " (input shape " + shape_str(x.sizes()) + ")");
  check_floating(op, x, "input shape " + shape_str(x.sizes()));
}

// The kept elements' scale 1 / (1 - p), zeros elsewhere: the one draw both
// dropout and a static graph's split dropout make, so they agree under a seed.
static Tensor drawn_mask(const Tensor& x, double p) {
  const DType rdt = x.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const Tensor keep = lt(rand(x.sizes(), rdt), 1.0 - p);  // kept with probability 1 - p
  return keep.to(x.dtype()) * (1.0 / (1.0 - p));  // on the CPU, as dropout's (docs/runtime.md, CUDA)
}

Tensor dropout(const Tensor& x, double p, bool training) {
  if (detail::tracing())
    return detail::trace_op("dropout", {x}, {{"p", p}, {"training", training}},
                            [&] { return dropout(x, p, training); });
  check_dropout("dropout", x, p);
  if (!training || p == 0.0) return x;
  if (p == 1.0) return x * zeros({}, x.dtype());
  return x * drawn_mask(x, p);
}

Tensor dropout_mask(const Tensor& x, double p, bool training) {
  if (detail::tracing())
    return detail::trace_op("dropout_mask", {x}, {{"p", p}, {"training", training}},
                            [&] { return dropout_mask(x, p, training); });
  check_dropout("dropout_mask", x, p);
  if (!training || p == 0.0 || p == 1.0)
    return full(x.sizes(), p == 1.0 && training ? 0.0 : 1.0, x.dtype(), x.device());
  return drawn_mask(x, p);
}

// ---- losses ------------------------------------------------------------------

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  if (detail::tracing())
    return detail::trace_op("mse_loss", {input, target}, {}, [&] { return mse_loss(input, target); });
  detail::check_defined("mse_loss", input);
  detail::check_defined("mse_loss", target);
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string("input shape " + shape_str(input.sizes()) + ", target shape " + shape_str(target.sizes()));
  };
  check_floating("mse_loss", input, shapes());
  check_floating("mse_loss", target, shapes());
  cpu::broadcast_shapes("mse_loss", {input.sizes(), target.sizes()});  // names the op when they do not broadcast
  const Tensor d = input - target;
  return (d * d).mean();
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  if (detail::tracing())
    return detail::trace_op("cross_entropy", {logits, target}, {}, [&] { return cross_entropy(logits, target); });
  detail::check_defined("cross_entropy", logits);
  detail::check_defined("cross_entropy", target);
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string("logits shape " + shape_str(logits.sizes()) + ", target shape " + shape_str(target.sizes()));
  };
  check_floating("cross_entropy", logits, shapes());
  if (logits.dim() == 0) throw Error("cross_entropy: expected logits [N, C] or [C], got " + shapes());
  const int64_t cdim = logits.dim() == 1 ? 0 : 1;
  const int64_t C = logits.size(cdim);
  if (is_floating(target.dtype())) {  // class probabilities, same shape as logits
    if (target.sizes() != logits.sizes())
      throw Error("cross_entropy: class-probability targets must have the logits' shape (" + shapes() + ")");
    const Tensor per = -(target * log_softmax(logits, cdim)).sum(cdim);
    return per.mean();
  }
  if (target.dtype() != kInt64)
    throw Error("cross_entropy: expected int64 class indices (or floating class probabilities) as target, got " +
                dt(target) + " (" + shapes() + ")");
  // Expected target shape: logits' shape without the class dim.
  Shape want = logits.sizes();
  want.erase(want.begin() + cdim);
  if (target.sizes() != want)
    throw Error("cross_entropy: expected a target of shape " + shape_str(want) + " (" + shapes() + ")");
  // PyTorch's default ignore_index: such targets do not count in the mean.
  constexpr int64_t kIgnore = -100;
  // The targets are checked (and counted) on the host: a device target is
  // copied, once per version (class_targets.h).
  const detail::ClassTargets checked = detail::check_class_targets("cross_entropy", target, C, kIgnore, shapes());
  const int64_t count = checked.count;
  // Rows [R, C]: the class dim moved last, the others flattened.
  Tensor rows = logits.dim() == 1 ? logits.unsqueeze(0) : logits;
  if (rows.dim() > 2) {
    Shape perm{0};
    for (int64_t k = 2; k < rows.dim(); ++k) perm.push_back(k);
    perm.push_back(1);
    rows = rows.permute(perm);
  }
  rows = rows.reshape({-1, C});
  const Tensor lsm = log_softmax(rows, 1);
  Tensor picked;
  if (logits.device() == Device::CUDA && target.device() == Device::CUDA && !checked.any_ignored)
    picked = pick_checked_targets_device(lsm, target.reshape({-1}));
  else if (logits.device() == Device::CUDA)
    picked = pick_targets_device(lsm, target.to(kCPU).contiguous().reshape({-1}), kIgnore);
  else
    picked = pick_targets(lsm, target.to(kCPU).contiguous().reshape({-1}).detach().clone(), kIgnore);
  return -picked.sum() / static_cast<double>(count);
}

// ---- attention ---------------------------------------------------------------

// float32 on the CPU without dropout takes the fused kernel (attention_cpu.h);
// float64, 16-bit floats, CUDA and dropout the math path below. Under bf16
// autocast the fused float32 kernel still runs where a head's products are
// small (L * S * E up to 2^20, as 64 queries over 256 keys of 64): there the
// bf16 GEMMs' rounding and per-call set-up cost more than the float32
// arithmetic they save (Transformer block, s64: 1.3 ms against ~0.4 ms per
// call). Larger heads take the math path, whose products run in bf16.
static bool use_fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, double dropout_p) {
  if (q.device() != Device::CPU || k.device() != Device::CPU || v.device() != Device::CPU) return false;
  if (attn_mask.defined() && attn_mask.device() != Device::CPU) return false;
  if (q.dtype() != kFloat32 || dropout_p != 0.0) return false;
  if (autocast_bf16() && q.size(-2) * k.size(-2) * q.size(-1) > (int64_t{1} << 20)) return false;
  return q.size(-2) > 0 && k.size(-2) > 0 && q.size(-1) > 0 && v.size(-1) > 0;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal) {
  if (detail::tracing())  // the op table has no dropout_p: with one, the trace fails naming it
    return detail::trace_op(dropout_p == 0 ? "scaled_dot_product_attention" : "scaled_dot_product_attention(dropout_p)",
                            {q, k, v, attn_mask}, {{"is_causal", is_causal}},
                            [&] { return scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal); });
  const char* op = "scaled_dot_product_attention";
  for (const Tensor* t : {&q, &k, &v}) detail::check_defined(op, *t);
  std::string shapes = "query shape " + shape_str(q.sizes()) + ", key shape " + shape_str(k.sizes()) +
                       ", value shape " + shape_str(v.sizes());
  if (attn_mask.defined()) shapes += ", attn_mask shape " + shape_str(attn_mask.sizes());
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    throw Error(std::string(op) + ": expected query, key and value with at least 2 dims [..., L, E] (" + shapes + ")");
  check_floating(op, q, shapes);
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    throw Error(std::string(op) + ": expected query, key and value of one dtype, got " + dt(q) + ", " + dt(k) + ", " +
                dt(v) + " (" + shapes + ")");
  if (q.size(-1) != k.size(-1))
    throw Error(std::string(op) + ": query and key must have the same embedding size (" + shapes + ")");
  if (k.size(-2) != v.size(-2))
    throw Error(std::string(op) + ": key and value must have the same sequence length (" + shapes + ")");
  if (!(dropout_p >= 0.0 && dropout_p <= 1.0))
    throw Error(std::string(op) + ": dropout_p has to be between 0 and 1, but got " + std::to_string(dropout_p) +
                " (" + shapes + ")");
  const Shape qb(q.sizes().begin(), q.sizes().end() - 2), kb(k.sizes().begin(), k.sizes().end() - 2),
      vb(v.sizes().begin(), v.sizes().end() - 2);
  Shape score_shape = cpu::broadcast_shapes(op, {qb, kb, vb});
  const int64_t L = q.size(-2), S = k.size(-2);
  score_shape.insert(score_shape.end(), {L, S});
  if (attn_mask.defined()) {
    if (is_causal)
      throw Error(std::string(op) + ": an explicit attn_mask should not be set when is_causal=true (" + shapes + ")");
    if (attn_mask.dtype() != kBool && attn_mask.dtype() != q.dtype())
      throw Error(std::string(op) + ": expected a bool attn_mask or one of the query's dtype " + dt(q) + ", got " +
                  dt(attn_mask) + " (" + shapes + ")");
    if (cpu::broadcast_shapes(op, {attn_mask.sizes(), score_shape}) != score_shape)
      throw Error(std::string(op) + ": attn_mask does not broadcast to the attention shape " +
                  shape_str(score_shape) + " (" + shapes + ")");
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  const Shape batch(score_shape.begin(), score_shape.end() - 2);
  if (use_fused_attention(q, k, v, attn_mask, dropout_p)) {
    Tensor out = cpu::fused_attention(q, k, v, attn_mask, is_causal, scale, batch);
    if (!autograd::needs_grad({&q, &k, &v, &attn_mask})) return out;
    // The backward kernel recomputes the probabilities (backward_kernels.cpp).
    const detail::GradMask mask = (q.requires_grad() ? 1u : 0u) | (k.requires_grad() ? 2u : 0u) |
                                  (v.requires_grad() ? 4u : 0u) |
                                  (attn_mask.defined() && attn_mask.requires_grad() ? 8u : 0u);
    autograd::record("scaled_dot_product_attention", out, {q, k, v, attn_mask},
                     [qs = q.detach(), ks = k.detach(), vs = v.detach(),
                      ms = attn_mask.defined() ? attn_mask.detach() : Tensor(), is_causal, mask](const Tensor& g) {
                       return detail::scaled_dot_product_attention_backward(g, qs, ks, vs, ms, is_causal, mask);
                     });
    return out;
  }
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  if (is_causal) {
    Tensor causal = empty({L, S}, kBool);  // top-left aligned, as PyTorch's tril
    bool* pc = causal.data_ptr<bool>();
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) pc[i * S + j] = j <= i;
    scores = where(causal, scores, minus_inf(scores.dtype()));
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == kBool ? where(attn_mask, scores, minus_inf(scores.dtype())) : scores + attn_mask;
  }
  Tensor attn = softmax(scores, -1);
  if (dropout_p > 0.0) attn = dropout(attn, dropout_p, true);
  return matmul(attn, v);
}

// ---- backward kernels (backward_kernels.h) -------------------------------------

namespace detail {

// Recomputes each row's mean and rstd (one pass over x, O(rows * M), no
// autograd): the graph saves layer_norm's inputs, not its statistics.
std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& x, const Shape& normalized_shape,
                                        const Tensor& weight, const Tensor& bias, double eps, GradMask mask) {
  observe_grad_mask("layer_norm_backward", mask);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k > 0 && x.dim() >= k && grad.sizes() == x.sizes() && is_floating(x.dtype());
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == normalized_shape[i];
  for (const Tensor* p : {&weight, &bias}) ok = ok && (!p->defined() || p->sizes() == normalized_shape);
  if (!ok)
    throw Error("layer_norm_backward: expected a floating input whose trailing dims are normalized_shape " +
                shape_str(normalized_shape) + ", weight and bias of that shape and a gradient of the input's shape, got input " +
                shape_str(x.sizes()) + ", gradient " + shape_str(grad.sizes()));
  const bool need_x = wants(mask, 0), need_w = wants(mask, 1) && weight.defined(), need_b = wants(mask, 2) && bias.defined();
  if (is_reduced_float(x.dtype())) {  // as the forward: in float32, gradients converted back
    const auto up = [](const Tensor& t) { return t.defined() ? t.to(kFloat32) : t; };
    std::vector<Tensor> r = layer_norm_backward(up(grad), up(x), normalized_shape, up(weight), up(bias), eps, mask);
    for (Tensor& t : r)
      if (t.defined()) t = t.to(x.dtype());
    return r;
  }
  int64_t M = 1;
  for (int64_t s : normalized_shape) M *= s;
  const Tensor xc = x.contiguous(), wc = weight.defined() ? weight.contiguous() : Tensor();
  std::vector<Tensor> r;
  if (x.device() == Device::CUDA) {
    // The device kernel gives the statistics with y only: its one pass.
    const std::vector<Tensor> f = cuda_layer_norm(xc, wc, bias.defined() ? bias.contiguous() : Tensor(), M, eps);
    r = cuda_layer_norm_backward(grad.to(x.dtype()).contiguous(), xc, wc, f[1], f[2], M, need_x, need_w, need_b);
  } else {
    const int64_t rows = M == 0 ? 0 : x.numel() / M;
    Tensor mean = empty({rows}, kFloat64), rstd = empty({rows}, kFloat64);
    detail::dispatch_float(x.dtype(), [&](auto v) {
      using T = decltype(v);
      const T* px = xc.data_ptr<T>();
      for (int64_t i = 0; i < rows; ++i) row_stats(px + i * M, M, eps, mean.data_ptr<double>()[i], rstd.data_ptr<double>()[i]);
    });
    r = layer_norm_grads(grad, xc, wc, mean, rstd, M, need_x, need_w, need_b,
                         bias.defined() ? bias.sizes() : Shape{M});
  }
  if (r.size() == 3 && r[2].defined()) r[2] = r[2].reshape(bias.sizes());
  return r;
}

std::vector<Tensor> embedding_backward(const Tensor& grad, const Tensor& weight, const Tensor& indices, GradMask mask) {
  observe_grad_mask("embedding_backward", mask);
  if (!wants(mask, 0)) return {Tensor(), Tensor()};
  if (weight.dim() != 2 || is_floating(indices.dtype()) || grad.numel() != indices.numel() * weight.size(1))
    throw Error("embedding_backward: expected a 2-D weight, integer indices and a gradient of shape indices + [" +
                (weight.dim() == 2 ? std::to_string(weight.size(1)) : std::string("D")) + "], got weight " +
                shape_str(weight.sizes()) + ", indices " + shape_str(indices.sizes()) + ", gradient " +
                shape_str(grad.sizes()));
  const Tensor idx = indices.to(kInt64).contiguous();
  if (weight.device() != Device::CUDA) {
    const int64_t* pi = idx.data_ptr<int64_t>();
    for (int64_t i = 0; i < idx.numel(); ++i)
      if (pi[i] < 0 || pi[i] >= weight.size(0))
        throw Error("embedding_backward: index " + std::to_string(pi[i]) + " is out of range for a table of " +
                    std::to_string(weight.size(0)) + " rows");
  }
  Tensor gw = embedding_grad(grad, idx, weight.sizes(), weight.dtype());
  if (gw.dtype() != weight.dtype()) gw = gw.to(weight.dtype());
  return {gw, Tensor()};
}

}  // namespace detail

}  // namespace graph
