// interpolate (torch.nn.functional.interpolate: nearest, linear, bilinear) as
// one direct kernel: per output column and row, the source indices and weights
// are computed once, then every [N, C] plane is read through them. It was
// ~12 small ops (arange, to, clamp, two index_selects, ...), whose fixed costs
// were most of its time. The arithmetic is the composition's, so the results
// did not change: nearest picks min(floor(dst * s), in - 1) in float32 (with
// PyTorch's exact shortcuts for out == in and out == 2 in); linear computes
// positions in float64 and blends in x's dtype, the last dim first, then the
// rows. Its gradient adds each output's gradient into the elements it read.
// On the device a thread per output computes its sources with the same
// arithmetic (cuda/src/interpolate.cu); the gradient adds atomically.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/nn_ops.h"
#include "device.h"
#include "device_ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// One call's parameters, resolved against x: planes of ih x iw resized to
// oh x ow (a 3-D x is one row: ih = oh = 1, `rows` false).
struct Resize {
  InterpolateMode mode = kNearest;
  bool align_corners = false;
  double scale = 0.0;  // > 0: the user's scale_factor
  Shape size;          // as given (empty with a scale_factor)
  Shape in_sizes;      // x's sizes
  int64_t planes = 0, ih = 1, iw = 1, oh = 1, ow = 1;
  bool rows = false;
  Shape out_sizes() const {
    Shape s{in_sizes[0], in_sizes[1]};
    if (rows) s.push_back(oh);
    s.push_back(ow);
    return s;
  }
};

[[noreturn]] void fail(const char* op, const std::string& what) { throw Error(std::string(op) + ": " + what); }

// interpolate's checks (PyTorch's, with our messages) and the output size.
Resize resolve(const char* op, const Tensor& x, const Shape& size, double scale, InterpolateMode mode, bool ac) {
  detail::check_defined(op, x);
  const int m = static_cast<int>(mode);
  if (m < 0 || m > 2) fail(op, "unknown mode " + std::to_string(m) + " (0 nearest, 1 linear, 2 bilinear)");
  if (x.dim() != 3 && x.dim() != 4)
    fail(op, "expected a 3-D [N, C, L] or 4-D [N, C, H, W] input, got shape " + shape_str(x.sizes()));
  if (mode == kLinear && x.dim() != 3)
    fail(op, "linear mode needs a 3-D input, got shape " + shape_str(x.sizes()) + " (bilinear is for 4-D)");
  if (mode == kBilinear && x.dim() != 4)
    fail(op, "bilinear mode needs a 4-D input, got shape " + shape_str(x.sizes()) + " (linear is for 3-D)");
  if (mode == kNearest && ac)
    fail(op, "align_corners can only be set with the interpolating modes (linear, bilinear)");
  if (mode != kNearest && !is_floating(x.dtype()))
    fail(op, "linear modes need a floating input, got " + std::string(dtype_name(x.dtype())));
  Resize r;
  r.mode = mode;
  r.align_corners = ac;
  r.scale = scale;
  r.size = size;
  r.in_sizes = x.sizes();
  r.rows = x.dim() == 4;
  const int64_t spatial = x.dim() - 2;
  Shape out(static_cast<size_t>(spatial));
  if (scale > 0) {
    for (int64_t d = 0; d < spatial; ++d) {
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.size(2 + d)) * scale));
      if (out[d] < 1)
        fail(op, "scale_factor " + std::to_string(scale) + " gives an empty output for input shape " +
                     shape_str(x.sizes()));
    }
  } else {
    if (scale < 0 || size.empty()) fail(op, "expected a positive scale_factor, got " + std::to_string(scale));
    bool ok = static_cast<int64_t>(size.size()) == spatial;
    for (int64_t s : size) ok = ok && s > 0;
    if (!ok)
      fail(op, "expected " + std::to_string(spatial) + " positive output sizes for input shape " +
                   shape_str(x.sizes()) + ", got " + shape_str(size));
    out = size;
  }
  r.planes = x.size(0) * x.size(1);
  r.iw = x.size(-1);
  r.ow = out.back();
  if (r.rows) {
    r.ih = x.size(2);
    r.oh = out[0];
  }
  return r;
}

// PyTorch's nearest_idx: min(floor(dst * s), in - 1) in float32.
void nearest_table(int64_t in, int64_t out, double scale, int64_t* idx) {
  const float s = scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
  for (int64_t j = 0; j < out; ++j) {
    if (out == in) idx[j] = j;
    else if (out == 2 * in) idx[j] = j >> 1;
    else idx[j] = std::min<int64_t>(static_cast<int64_t>(std::floor(static_cast<float>(j) * s)), in - 1);
  }
}

// Linear sources of one dim: neighbours i0, i1 and weights (1 - w, w) in T.
template <class T>
struct LinearTable {
  std::vector<int64_t> i0, i1;
  std::vector<T> w0, w1;
  LinearTable(int64_t in, int64_t out, double scale, bool ac) : i0(out), i1(out), w0(out), w1(out) {
    const double step = scale > 0 ? 1.0 / scale : static_cast<double>(in) / static_cast<double>(out);
    const double corner = out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    for (int64_t j = 0; j < out; ++j) {
      const double dst = static_cast<double>(j);
      const double src = ac ? dst * corner : std::max((dst + 0.5) * step - 0.5, 0.0);
      const int64_t a = static_cast<int64_t>(src);  // floor: src >= 0
      i0[j] = a;
      i1[j] = std::min<int64_t>(a + 1, in - 1);
      const T w = static_cast<T>(std::clamp(src - static_cast<double>(a), 0.0, 1.0));
      w1[j] = w;
      w0[j] = T(1) - w;
    }
  }
};

// Nearest: a copy of element-sized words, whatever the dtype.
template <class W>
void nearest_copy(const Resize& r, const W* x, W* o) {
  std::vector<int64_t> cols(static_cast<size_t>(r.ow)), rows(static_cast<size_t>(r.oh), 0);
  nearest_table(r.iw, r.ow, r.scale, cols.data());
  if (r.rows) nearest_table(r.ih, r.oh, r.scale, rows.data());
  for (int64_t p = 0; p < r.planes; ++p) {
    const W* xp = x + p * r.ih * r.iw;
    for (int64_t i = 0; i < r.oh; ++i, o += r.ow) {
      const W* src = xp + rows[i] * r.iw;
      for (int64_t j = 0; j < r.ow; ++j) o[j] = src[cols[j]];
    }
  }
}

template <class T>
void linear_forward(const Resize& r, const T* x, T* o) {
  const LinearTable<T> c(r.iw, r.ow, r.scale, r.align_corners);
  const LinearTable<T> h(r.rows ? r.ih : 1, r.rows ? r.oh : 1, r.scale, r.align_corners);
  for (int64_t p = 0; p < r.planes; ++p) {
    const T* xp = x + p * r.ih * r.iw;
    for (int64_t i = 0; i < r.oh; ++i, o += r.ow) {
      const T* a = xp + h.i0[i] * r.iw;
      if (!r.rows) {
        for (int64_t j = 0; j < r.ow; ++j) o[j] = a[c.i0[j]] * c.w0[j] + a[c.i1[j]] * c.w1[j];
        continue;
      }
      // The row blend of the two column blends, each rounded to T as the
      // two-pass composition did.
      const T* b = xp + h.i1[i] * r.iw;
      const T hw0 = h.w0[i], hw1 = h.w1[i];
      for (int64_t j = 0; j < r.ow; ++j) {
        const T u = a[c.i0[j]] * c.w0[j] + a[c.i1[j]] * c.w1[j];
        const T v = b[c.i0[j]] * c.w0[j] + b[c.i1[j]] * c.w1[j];
        o[j] = u * hw0 + v * hw1;
      }
    }
  }
}

// The adjoint: gx (zeroed, [planes, ih, iw]) += each output's gradient times
// the weight it was read with.
template <class T>
void interp_backward(const Resize& r, const T* g, T* gx) {
  if (r.mode == kNearest) {
    std::vector<int64_t> cols(static_cast<size_t>(r.ow)), rows(static_cast<size_t>(r.oh), 0);
    nearest_table(r.iw, r.ow, r.scale, cols.data());
    if (r.rows) nearest_table(r.ih, r.oh, r.scale, rows.data());
    for (int64_t p = 0; p < r.planes; ++p, gx += r.ih * r.iw)
      for (int64_t i = 0; i < r.oh; ++i, g += r.ow) {
        T* dst = gx + rows[i] * r.iw;
        for (int64_t j = 0; j < r.ow; ++j) dst[cols[j]] += g[j];
      }
    return;
  }
  const LinearTable<T> c(r.iw, r.ow, r.scale, r.align_corners);
  const LinearTable<T> h(r.rows ? r.ih : 1, r.rows ? r.oh : 1, r.scale, r.align_corners);
  for (int64_t p = 0; p < r.planes; ++p, gx += r.ih * r.iw)
    for (int64_t i = 0; i < r.oh; ++i, g += r.ow) {
      T* a = gx + h.i0[i] * r.iw;
      T* b = gx + h.i1[i] * r.iw;
      const T hw0 = r.rows ? h.w0[i] : T(1), hw1 = h.w1[i];
      for (int64_t j = 0; j < r.ow; ++j) {
        const T ga = g[j] * hw0;
        a[c.i0[j]] += ga * c.w0[j];
        a[c.i1[j]] += ga * c.w1[j];
        if (!r.rows) continue;
        const T gb = g[j] * hw1;
        b[c.i0[j]] += gb * c.w0[j];
        b[c.i1[j]] += gb * c.w1[j];
      }
    }
}

bool is_half(DType d) { return d == kFloat16 || d == kBFloat16; }

detail::DeviceResize on_device(const Resize& r) {
  detail::DeviceResize d;
  d.mode = static_cast<int>(r.mode), d.align_corners = r.align_corners, d.scale = r.scale;
  d.planes = r.planes, d.ih = r.ih, d.iw = r.iw, d.oh = r.oh, d.ow = r.ow;
  return d;
}

Tensor forward_impl(const Resize& r, const Tensor& x) {
  // float16 / bfloat16 blend in float32 and round once (as PyTorch's opmath).
  if (r.mode != kNearest && is_half(x.dtype())) return forward_impl(r, x.to(kFloat32)).to(x.dtype());
  const Tensor c = x.contiguous();
  Tensor out = detail::empty_on(x.device(), r.out_sizes(), x.dtype());
  if (out.numel() == 0 || r.planes == 0) return out;
  if (x.device() == Device::CUDA) {
    detail::cuda_interpolate(false, c, out, on_device(r));
    return out;
  }
  const void* in = c.raw_data();
  void* o = out.raw_data();
  if (r.mode == kNearest) {
    switch (element_size(x.dtype())) {
      case 1: nearest_copy(r, static_cast<const uint8_t*>(in), static_cast<uint8_t*>(o)); break;
      case 2: nearest_copy(r, static_cast<const uint16_t*>(in), static_cast<uint16_t*>(o)); break;
      case 4: nearest_copy(r, static_cast<const uint32_t*>(in), static_cast<uint32_t*>(o)); break;
      default: nearest_copy(r, static_cast<const uint64_t*>(in), static_cast<uint64_t*>(o)); break;
    }
  } else if (x.dtype() == kFloat64) {
    linear_forward(r, static_cast<const double*>(in), static_cast<double*>(o));
  } else {
    linear_forward(r, static_cast<const float*>(in), static_cast<float*>(o));
  }
  return out;
}

Tensor backward_impl(const Resize& r, const Tensor& grad) {
  if (is_half(grad.dtype())) return backward_impl(r, grad.to(kFloat32)).to(grad.dtype());
  const Tensor g = grad.contiguous();
  Tensor gx = detail::full_on(grad.device(), r.in_sizes, 0, grad.dtype());
  if (g.numel() == 0 || gx.numel() == 0) return gx;
  if (grad.device() == Device::CUDA) {
    detail::cuda_interpolate(true, g, gx, on_device(r));
    return gx;
  }
  if (grad.dtype() == kFloat64)
    interp_backward(r, static_cast<const double*>(g.raw_data()), static_cast<double*>(gx.raw_data()));
  else
    interp_backward(r, static_cast<const float*>(g.raw_data()), static_cast<float*>(gx.raw_data()));
  return gx;
}

Tensor backward_recorded(const Resize& r, const Tensor& grad);

// Each direction records the other as its gradient, so gradients of
// gradients flow (the op is linear in x).
Tensor forward_recorded(const Resize& r, const Tensor& x) {
  Tensor out = forward_impl(r, x.detach());
  return autograd::record_unary("interpolate", out, x, [r](const Tensor& g) { return backward_recorded(r, g); });
}

Tensor backward_recorded(const Resize& r, const Tensor& grad) {
  Tensor gx = backward_impl(r, grad.detach());
  return autograd::record_unary("interpolate_backward", gx, grad,
                                [r](const Tensor& gg) { return forward_recorded(r, gg); });
}

}  // namespace

Tensor interpolate(const Tensor& x, const Shape& size, InterpolateMode mode, bool align_corners) {
  if (detail::tracing())
    return detail::trace_op("interpolate", {x},
                            {{"size", detail::ints(size)},
                             {"mode", static_cast<int64_t>(mode)},
                             {"align_corners", align_corners}},
                            [&] { return graph::interpolate(x, size, mode, align_corners); });
  return forward_recorded(resolve("interpolate", x, size, 0.0, mode, align_corners), x);
}

Tensor interpolate_scale(const Tensor& x, double scale_factor, InterpolateMode mode, bool align_corners) {
  if (detail::tracing())
    return detail::trace_op("interpolate", {x},
                            {{"scale_factor", scale_factor},
                             {"mode", static_cast<int64_t>(mode)},
                             {"align_corners", align_corners}},
                            [&] { return graph::interpolate_scale(x, scale_factor, mode, align_corners); });
  return forward_recorded(resolve("interpolate", x, Shape{}, scale_factor, mode, align_corners), x);
}

namespace detail {

Tensor interpolate_backward(const Tensor& grad, const Tensor& x, const Shape& size, double scale_factor, int64_t mode,
                            bool align_corners) {
  const char* op = "interpolate_backward";
  const Resize r = resolve(op, x, scale_factor > 0 ? Shape{} : size, scale_factor,
                           static_cast<InterpolateMode>(mode), align_corners);
  check_defined(op, grad);
  if (grad.sizes() != r.out_sizes())
    throw Error(std::string(op) + ": gradient of shape " + shape_str(grad.sizes()) + " does not match the result " +
                shape_str(r.out_sizes()) + " (input shape " + shape_str(x.sizes()) + ")");
  if (!is_floating(grad.dtype()))
    throw Error(std::string(op) + ": expected a floating gradient, got " + std::string(dtype_name(grad.dtype())));
  return backward_impl(r, grad);
}

std::vector<Tensor> interpolate_sources(int64_t in, int64_t out, double scale_factor, int64_t mode,
                                       bool align_corners) {
  std::vector<int64_t> i0(static_cast<size_t>(out)), i1;
  std::vector<double> w1(static_cast<size_t>(out), 0.0);
  if (mode == static_cast<int64_t>(kNearest)) {
    nearest_table(in, out, scale_factor, i0.data());
    i1 = i0;
  } else {
    const LinearTable<double> t(in, out, scale_factor, align_corners);
    i0 = t.i0;
    i1 = t.i1;
    w1 = t.w1;
  }
  auto put = [out](const void* src, DType d) {
    Tensor t = empty({out}, d);
    if (out > 0) std::memcpy(t.raw_data(), src, static_cast<size_t>(out) * element_size(d));
    return t;
  };
  return {put(i0.data(), kInt64), put(i1.data(), kInt64), put(w1.data(), kFloat64)};
}

}  // namespace detail

}  // namespace graph
