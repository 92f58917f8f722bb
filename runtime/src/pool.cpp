// max_pool2d and avg_pool2d on the CPU with PyTorch's semantics (floor mode,
// no dilation): [N, C, H, W] or unbatched [C, H, W]; stride defaults to the
// kernel size; padding at most half the kernel. Padded positions never win a
// max (they are -inf); average pooling counts them (count_include_pad=True).
// max_pool2d keeps the argmax of each window (an index into its H x W plane,
// as PyTorch's return_indices) and its backward scatters through it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "device.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

struct PoolGeom {
  int64_t planes, H, W, Ho, Wo;
  int64_t kH, kW, sH, sW, pH, pW;
};

std::pair<int64_t, int64_t> pair_arg(const char* op, const char* name, const Shape& v, const Shape& x_shape) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  throw Error(std::string(op) + ": " + name + " must have 1 or 2 elements, got " + shape_str(v) + " (input shape " +
              shape_str(x_shape) + ")");
}

PoolGeom check_pool(const char* op, const Tensor& x, const Shape& kernel, const Shape& stride_in, const Shape& padding) {
  detail::check_defined(op, x);
  const std::string in = "input shape " + shape_str(x.sizes());
  if (x.dim() != 3 && x.dim() != 4)
    throw Error(std::string(op) + ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got " + in);
  if (!is_floating(x.dtype()))
    throw Error(std::string(op) + ": expected a floating input, got " + std::string(dtype_name(x.dtype())) + " (" +
                in + ")");
  PoolGeom g{};
  const Shape stride = stride_in.empty() ? kernel : stride_in;
  std::tie(g.kH, g.kW) = pair_arg(op, "kernel_size", kernel, x.sizes());
  std::tie(g.sH, g.sW) = pair_arg(op, "stride", stride, x.sizes());
  std::tie(g.pH, g.pW) = pair_arg(op, "padding", padding, x.sizes());
  if (g.kH <= 0 || g.kW <= 0)
    throw Error(std::string(op) + ": kernel_size must be positive, got " + shape_str(kernel) + " (" + in + ")");
  if (g.sH <= 0 || g.sW <= 0)
    throw Error(std::string(op) + ": stride must be positive, got " + shape_str(stride) + " (" + in + ")");
  if (g.pH < 0 || g.pW < 0 || g.pH > g.kH / 2 || g.pW > g.kW / 2)
    throw Error(std::string(op) + ": padding " + shape_str(padding) + " should be at most half of kernel_size " +
                shape_str(kernel) + " (" + in + ")");
  g.H = x.size(-2), g.W = x.size(-1);
  if (x.dim() == 4) g.planes = x.size(0) * x.size(1);
  else g.planes = x.size(0);
  const int64_t h = g.H + 2 * g.pH - g.kH, w = g.W + 2 * g.pW - g.kW;
  if (h < 0 || w < 0)
    throw Error(std::string(op) + ": kernel_size " + shape_str(kernel) + " is larger than the padded input (" + in +
                ", padding " + shape_str(padding) + ")");
  g.Ho = h / g.sH + 1;
  g.Wo = w / g.sW + 1;
  return g;
}

Shape out_shape(const Tensor& x, const PoolGeom& g) {
  Shape s = x.sizes();
  s[s.size() - 2] = g.Ho;
  s[s.size() - 1] = g.Wo;
  return s;
}

template <class T>
void max_forward(const PoolGeom& g, const T* __restrict x, T* __restrict out, int64_t* __restrict idx) {
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = x + p * g.H * g.W;
    T* o = out + p * g.Ho * g.Wo;
    int64_t* id = idx + p * g.Ho * g.Wo;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      const int64_t h0 = std::max<int64_t>(oh * g.sH - g.pH, 0);
      const int64_t h1 = std::min<int64_t>(oh * g.sH - g.pH + g.kH, g.H);
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        const int64_t w0 = std::max<int64_t>(ow * g.sW - g.pW, 0);
        const int64_t w1 = std::min<int64_t>(ow * g.sW - g.pW + g.kW, g.W);
        // Two passes: a branch-free max, then the position of the first
        // maximum, as PyTorch's strict `>` picks; with a NaN in the window
        // the result is NaN at the last NaN, also as PyTorch.
        // `probe` turns NaN when the window holds a NaN (or an infinity:
        // the slow path then checks).
        T best = -std::numeric_limits<T>::infinity(), probe = 0;
        for (int64_t ih = h0; ih < h1; ++ih) {
          const T* row = plane + ih * g.W;
          for (int64_t iw = w0; iw < w1; ++iw) {
            const T v = row[iw];
            best = v > best ? v : best;
            probe += v * T(0);
          }
        }
        int64_t at = -1;
        if (probe != probe) {
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw)
              if (std::isnan(plane[ih * g.W + iw])) at = ih * g.W + iw;
          if (at >= 0) best = std::numeric_limits<T>::quiet_NaN();
        }
        if (at < 0) {
          // Backwards with selects: the first maximum is written last.
          for (int64_t ih = h1; ih-- > h0;) {
            const T* row = plane + ih * g.W;
            for (int64_t iw = w1; iw-- > w0;) at = row[iw] == best ? ih * g.W + iw : at;
          }
        }
        o[oh * g.Wo + ow] = best;
        id[oh * g.Wo + ow] = at;
      }
    }
  }
}

template <class T>
void avg_forward(const PoolGeom& g, const T* __restrict x, T* __restrict out) {
  for (int64_t p = 0; p < g.planes; ++p) {
    const T* plane = x + p * g.H * g.W;
    T* o = out + p * g.Ho * g.Wo;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      const int64_t hs = oh * g.sH - g.pH, he = std::min(hs + g.kH, g.H + g.pH);
      const int64_t h0 = std::max<int64_t>(hs, 0), h1 = std::min(he, g.H);
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        const int64_t ws = ow * g.sW - g.pW, we = std::min(ws + g.kW, g.W + g.pW);
        const int64_t w0 = std::max<int64_t>(ws, 0), w1 = std::min(we, g.W);
        const int64_t count = (he - hs) * (we - ws);  // count_include_pad
        T s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += plane[ih * g.W + iw];
        o[oh * g.Wo + ow] = s / static_cast<T>(count);
      }
    }
  }
}

template <class T>
void avg_backward(const PoolGeom& g, const T* __restrict go, T* __restrict gx) {
  for (int64_t p = 0; p < g.planes; ++p) {
    T* plane = gx + p * g.H * g.W;
    const T* o = go + p * g.Ho * g.Wo;
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      const int64_t hs = oh * g.sH - g.pH, he = std::min(hs + g.kH, g.H + g.pH);
      const int64_t h0 = std::max<int64_t>(hs, 0), h1 = std::min(he, g.H);
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        const int64_t ws = ow * g.sW - g.pW, we = std::min(ws + g.kW, g.W + g.pW);
        const int64_t w0 = std::max<int64_t>(ws, 0), w1 = std::min(we, g.W);
        const T v = o[oh * g.Wo + ow] / static_cast<T>((he - hs) * (we - ws));
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) plane[ih * g.W + iw] += v;
      }
    }
  }
}


// On the device: cuDNN pooling forward and backward (max pooling's
// backward finds each window's maximum again from x and y).
Tensor pool_cuda(const char* op, bool max, const Tensor& x_in, const PoolGeom& g) {
  const Tensor x = x_in.contiguous().detach();
  const detail::Pool2dParams p{g.kH, g.kW, g.sH, g.sW, g.pH, g.pW, max};
  Tensor out = detail::cuda_pool2d(x, p, out_shape(x, g));
  const Tensor y = out.detach();
  const DType dt = x.dtype();
  return autograd::record_unary(op, out, x_in, [x, y, p, dt](const Tensor& grad) {
    return detail::cuda_pool2d_backward(x, y, grad.to(dt).contiguous(), p);
  });
}

// max pooling's input gradient on the CPU: grad scattered to each window's
// maximum (idx: its offset in the plane, per output element).
Tensor max_grad(const PoolGeom& g, const Tensor& idx, const Shape& in_sizes, DType dt, const Tensor& grad) {
  const Tensor go = grad.to(dt).contiguous();
  Tensor gx = zeros(in_sizes, go.dtype());
  detail::dispatch_float(go.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* pg = go.data_ptr<T>();
    const int64_t* pi = idx.data_ptr<int64_t>();
    T* px = gx.data_ptr<T>();
    const int64_t n = g.Ho * g.Wo, hw = g.H * g.W;
    for (int64_t p = 0; p < g.planes; ++p)
      for (int64_t i = 0; i < n; ++i) px[p * hw + pi[p * n + i]] += pg[p * n + i];
  });
  return gx;
}

Tensor avg_grad(const PoolGeom& g, const Shape& in_sizes, DType dt, const Tensor& grad) {
  const Tensor go = grad.to(dt).contiguous();
  Tensor gx = zeros(in_sizes, go.dtype());
  detail::dispatch_float(go.dtype(), [&](auto v) {
    using T = decltype(v);
    avg_backward<T>(g, go.data_ptr<T>(), gx.data_ptr<T>());
  });
  return gx;
}

// The backward kernels: max pooling finds each window's maximum again (one
// pass over x without autograd; the graph saves the input, not the indices),
// average pooling needs no forward value. cuDNN's backward takes the
// forward's result too: on the device it is recomputed.
Tensor pool_backward(const char* op, bool max, const Tensor& grad, const Tensor& x_in, const Shape& kernel,
                     const Shape& stride, const Shape& padding) {
  const PoolGeom g = check_pool(op, x_in, kernel, stride, padding);
  if (is_reduced_float(x_in.dtype()))
    return pool_backward(op, max, grad.to(kFloat32), x_in.to(kFloat32), kernel, stride, padding).to(x_in.dtype());
  const Tensor x = x_in.contiguous();
  const Shape out = out_shape(x, g);
  if (grad.sizes() != out)
    throw Error(std::string(op) + ": gradient of shape " + shape_str(grad.sizes()) + " does not match the result " +
                shape_str(out) + " (input shape " + shape_str(x.sizes()) + ")");
  if (x.device() == Device::CUDA) {
    const detail::Pool2dParams p{g.kH, g.kW, g.sH, g.sW, g.pH, g.pW, max};
    return detail::cuda_pool2d_backward(x, detail::cuda_pool2d(x, p, out), grad.to(x.dtype()).contiguous(), p);
  }
  if (!max) return avg_grad(g, x.sizes(), x.dtype(), grad);
  Tensor y = empty(out, x.dtype()), idx = empty(out, kInt64);
  detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    max_forward<T>(g, x.data_ptr<T>(), y.data_ptr<T>(), idx.data_ptr<int64_t>());
  });
  return max_grad(g, idx, x.sizes(), x.dtype(), grad);
}

Tensor max_pool_impl(const Tensor& x_in, const PoolGeom& g) {
  if (x_in.device() == Device::CUDA) return pool_cuda("max_pool2d", true, x_in, g);
  const Tensor x = x_in.contiguous().detach();
  Tensor out = empty(out_shape(x, g), x.dtype());
  Tensor idx = empty(out.sizes(), kInt64);
  detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    max_forward<T>(g, x.data_ptr<T>(), out.data_ptr<T>(), idx.data_ptr<int64_t>());
  });
  const Shape in_sizes = x.sizes();
  const DType dt = x.dtype();
  return autograd::record_unary("max_pool2d", out, x_in,
                                [g, idx, in_sizes, dt](const Tensor& grad) { return max_grad(g, idx, in_sizes, dt, grad); });
}

Tensor avg_pool_impl(const Tensor& x_in, const PoolGeom& g) {
  if (x_in.device() == Device::CUDA) return pool_cuda("avg_pool2d", false, x_in, g);
  const Tensor x = x_in.contiguous().detach();
  Tensor out = empty(out_shape(x, g), x.dtype());
  detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    avg_forward<T>(g, x.data_ptr<T>(), out.data_ptr<T>());
  });
  const Shape in_sizes = x.sizes();
  const DType dt = x.dtype();
  return autograd::record_unary("avg_pool2d", out, x_in,
                                [g, in_sizes, dt](const Tensor& grad) { return avg_grad(g, in_sizes, dt, grad); });
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Shape kernel_size, Shape stride, Shape padding) {
  if (detail::tracing())
    return detail::trace_op("max_pool2d", {x}, detail::pool_attrs(kernel_size, stride, padding),
                            [&] { return max_pool2d(x, kernel_size, stride, padding); });
  const PoolGeom g = check_pool("max_pool2d", x, kernel_size, stride, padding);
  if (is_reduced_float(x.dtype())) return max_pool_impl(x.to(kFloat32), g).to(x.dtype());
  return max_pool_impl(x, g);
}

Tensor avg_pool2d(const Tensor& x, Shape kernel_size, Shape stride, Shape padding) {
  if (detail::tracing())
    return detail::trace_op("avg_pool2d", {x}, detail::pool_attrs(kernel_size, stride, padding),
                            [&] { return avg_pool2d(x, kernel_size, stride, padding); });
  const PoolGeom g = check_pool("avg_pool2d", x, kernel_size, stride, padding);
  if (is_reduced_float(x.dtype())) return avg_pool_impl(x.to(kFloat32), g).to(x.dtype());
  return avg_pool_impl(x, g);
}

namespace detail {

Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const Shape& kernel_size, const Shape& stride,
                           const Shape& padding) {
  return pool_backward("max_pool2d_backward", true, grad, x, kernel_size, stride, padding);
}

Tensor avg_pool2d_backward(const Tensor& grad, const Tensor& x, const Shape& kernel_size, const Shape& stride,
                           const Shape& padding) {
  return pool_backward("avg_pool2d_backward", false, grad, x, kernel_size, stride, padding);
}

}  // namespace detail

}  // namespace graph
