// adaptive_avg_pool2d on the CPU with PyTorch's windows: output row i of oh
// averages input rows [floor(i * H / oh), ceil((i + 1) * H / oh)), which
// overlap when oh does not divide H (the same for columns). [N, C, H, W] or
// unbatched [C, H, W]; float16/bfloat16 compute in float32. One pass over
// each window, summed in its row-major order and divided by its height, then
// its width, as PyTorch's CPU kernel. On the device the op is two products
// with the [out, in] averaging matrices (a window is a rectangle, so the two
// dims separate), whose gradient is matmul's.
#include <algorithm>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

constexpr const char* kOp = "adaptive_avg_pool2d";

struct Windows {
  int64_t planes, H, W, oh, ow;
};

// Window i of `out` over `in`.
int64_t window_begin(int64_t i, int64_t in, int64_t out) { return i * in / out; }
int64_t window_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

Windows check_windows(const char* op, const Tensor& x, const Shape& output_size) {
  detail::check_defined(op, x);
  // Only on failure: building it every call was a tenth of a small call's time.
  const auto in = [&] { return "input shape " + shape_str(x.sizes()); };
  if (x.dim() != 3 && x.dim() != 4)
    throw Error(std::string(op) + ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got " + in());
  if (!is_floating(x.dtype()))
    throw Error(std::string(op) + ": expected a floating input, got " + std::string(dtype_name(x.dtype())) + " (" +
                in() + ")");
  if (output_size.size() != 1 && output_size.size() != 2)
    throw Error(std::string(op) + ": output_size must have 1 or 2 elements, got " + shape_str(output_size) + " (" +
                in() + ")");
  Windows w{};
  w.oh = output_size[0];
  w.ow = output_size.size() == 2 ? output_size[1] : output_size[0];
  if (w.oh <= 0 || w.ow <= 0)
    throw Error(std::string(op) + ": output_size must be positive, got " + shape_str(output_size) + " (" + in() + ")");
  w.H = x.size(-2), w.W = x.size(-1);
  if (w.H == 0 || w.W == 0)
    throw Error(std::string(op) + ": expected a non-empty height and width, got " + in());
  w.planes = x.numel() / (w.H * w.W);
  return w;
}

Shape out_shape(const Shape& in, const Windows& w) {
  Shape s = in;
  s[s.size() - 2] = w.oh;
  s[s.size() - 1] = w.ow;
  return s;
}

// The windows' bounds of every output row, then column, [begin, end) pairs:
// computed once per call, not per output and plane (their four integer
// divisions were most of a small call's time).
struct Bounds {
  int64_t local[64];
  std::vector<int64_t> heap;
  int64_t *rows, *cols;  // into local or heap: not copyable
  Bounds(const Bounds&) = delete;
  explicit Bounds(const Windows& w) {
    const int64_t need = 2 * (w.oh + w.ow);
    if (need > 64) heap.resize(static_cast<size_t>(need));
    rows = need > 64 ? heap.data() : local;
    cols = rows + 2 * w.oh;
    for (int64_t i = 0; i < w.oh; ++i) rows[2 * i] = window_begin(i, w.H, w.oh), rows[2 * i + 1] = window_end(i, w.H, w.oh);
    for (int64_t j = 0; j < w.ow; ++j) cols[2 * j] = window_begin(j, w.W, w.ow), cols[2 * j + 1] = window_end(j, w.W, w.ow);
  }
};

// Planes as vector lanes: a 16-byte vector's worth of planes (4 float, 2
// double) copied side by side (position-major), then each window summed once
// for all of them. Every lane adds the same elements in the same row-major
// order and divides the same way, so each result has the bits of the
// plane-by-plane loop; but the 3-4 wide windows of a small pool were short
// serial chains of scalar adds (most of the call), now one vector chain per
// window. 16 bytes: the baseline build's register (a wider vector type was
// kept on the stack between adds, slower than the scalar loop). Lanes past
// the last plane are zeros, unused.
constexpr int64_t kLaneBufBytes = 16384;  // on the stack: H * W vectors at most

template <class T>
constexpr int64_t lane_max_hw() { return kLaneBufBytes / 16; }

template <class T>
void forward_lanes(const Windows& w, const Bounds& b, const T* __restrict x, T* __restrict out) {
  constexpr int64_t kLanes = 16 / sizeof(T);
  typedef T V __attribute__((vector_size(16)));
  const int64_t hw = w.H * w.W, ohw = w.oh * w.ow;
  alignas(64) V buf[lane_max_hw<T>()];
  for (int64_t p0 = 0; p0 < w.planes; p0 += kLanes) {
    const int64_t lanes = std::min(kLanes, w.planes - p0);
    for (int64_t q = 0; q < hw; ++q) buf[q] = V{};
    for (int64_t l = 0; l < lanes; ++l) {
      const T* plane = x + (p0 + l) * hw;
      for (int64_t q = 0; q < hw; ++q) buf[q][l] = plane[q];
    }
    for (int64_t i = 0; i < w.oh; ++i) {
      const int64_t h0 = b.rows[2 * i], h1 = b.rows[2 * i + 1];
      for (int64_t j = 0; j < w.ow; ++j) {
        const int64_t w0 = b.cols[2 * j], w1 = b.cols[2 * j + 1];
        V s = V{};
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += buf[ih * w.W + iw];
        s = s / static_cast<T>(h1 - h0) / static_cast<T>(w1 - w0);
        for (int64_t l = 0; l < lanes; ++l) out[(p0 + l) * ohw + i * w.ow + j] = s[l];
      }
    }
  }
}

template <class T>
void forward(const Windows& w, const T* __restrict x, T* __restrict out) {
  const Bounds b(w);
  if (w.planes > 1 && w.H * w.W <= lane_max_hw<T>()) return forward_lanes(w, b, x, out);
  for (int64_t p = 0; p < w.planes; ++p) {
    const T* plane = x + p * w.H * w.W;
    T* o = out + p * w.oh * w.ow;
    for (int64_t i = 0; i < w.oh; ++i) {
      const int64_t h0 = b.rows[2 * i], h1 = b.rows[2 * i + 1];
      for (int64_t j = 0; j < w.ow; ++j) {
        const int64_t w0 = b.cols[2 * j], w1 = b.cols[2 * j + 1];
        T s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += plane[ih * w.W + iw];
        o[i * w.ow + j] = s / static_cast<T>(h1 - h0) / static_cast<T>(w1 - w0);
      }
    }
  }
}

template <class T>
void backward(const Windows& w, const T* __restrict g, T* __restrict gx) {
  const Bounds b(w);
  for (int64_t p = 0; p < w.planes; ++p) {
    const T* go = g + p * w.oh * w.ow;
    T* plane = gx + p * w.H * w.W;
    for (int64_t i = 0; i < w.oh; ++i) {
      const int64_t h0 = b.rows[2 * i], h1 = b.rows[2 * i + 1];
      for (int64_t j = 0; j < w.ow; ++j) {
        const int64_t w0 = b.cols[2 * j], w1 = b.cols[2 * j + 1];
        const T share = go[i * w.ow + j] / static_cast<T>(h1 - h0) / static_cast<T>(w1 - w0);
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) plane[ih * w.W + iw] += share;
      }
    }
  }
}


Tensor averaging(int64_t in, int64_t out, const Tensor& like) {
  return detail::adaptive_averaging(in, out, like.dtype()).to(like.device());
}

// The gradient on the CPU: each output's gradient shared over its window.
Tensor cpu_grad(const Windows& w, const Shape& in_sizes, DType dt, const Tensor& grad) {
  const Tensor go = grad.to(dt).contiguous();
  Tensor gx = zeros(in_sizes, dt);
  detail::dispatch_float(dt, [&](auto v) {
    using T = decltype(v);
    backward<T>(w, go.data_ptr<T>(), gx.data_ptr<T>());
  });
  return gx;
}

Tensor compute(const Tensor& x_in, const Windows& w) {
  if (x_in.device() != Device::CPU)  // matmul's device kernels and its gradient
    return matmul(averaging(w.H, w.oh, x_in), matmul(x_in, averaging(w.W, w.ow, x_in).t()));
  const Tensor x = x_in.contiguous().detach();
  Tensor out = empty(out_shape(x.sizes(), w), x.dtype());
  detail::dispatch_float(x.dtype(), [&](auto v) {
    using T = decltype(v);
    forward<T>(w, x.data_ptr<T>(), out.data_ptr<T>());
  });
  const Shape in_sizes = x.sizes();
  const DType dt = x.dtype();
  return autograd::record_unary(kOp, out, x_in, [w, in_sizes, dt](const Tensor& g) { return cpu_grad(w, in_sizes, dt, g); });
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& x, Shape output_size) {
  if (detail::tracing())
    return detail::trace_op(kOp, {x}, {{"output_size", detail::ints(output_size)}},
                            [&] { return adaptive_avg_pool2d(x, output_size); });
  const Windows w = check_windows(kOp, x, output_size);
  if (is_reduced_float(x.dtype())) return compute(x.to(kFloat32), w).to(x.dtype());
  return compute(x, w);
}

namespace detail {

Tensor adaptive_averaging(int64_t in, int64_t out, DType dtype) {
  Tensor m = zeros({out, in}, kFloat64);
  double* d = m.data_ptr<double>();
  for (int64_t i = 0; i < out; ++i) {
    const int64_t b = window_begin(i, in, out), e = window_end(i, in, out);
    for (int64_t k = b; k < e; ++k) d[i * in + k] = 1.0 / static_cast<double>(e - b);
  }
  return m.to(dtype);
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Tensor& x, const Shape& output_size) {
  const char* op = "adaptive_avg_pool2d_backward";
  const Windows w = check_windows(op, x, output_size);
  const Shape out = out_shape(x.sizes(), w);
  check_defined(op, grad);
  if (grad.sizes() != out)
    throw Error(std::string(op) + ": gradient of shape " + shape_str(grad.sizes()) + " does not match the result " +
                shape_str(out) + " (input shape " + shape_str(x.sizes()) + ")");
  const DType dt = opmath_dtype(x.dtype());
  if (x.device() != Device::CPU) {  // the transposed products
    const Tensor g = grad.to(dt);
    return matmul(averaging(w.H, w.oh, g).t(), matmul(g, averaging(w.W, w.ow, g))).to(x.dtype());
  }
  return cpu_grad(w, x.sizes(), dt, grad).to(x.dtype());
}

}  // namespace detail

}  // namespace graph
