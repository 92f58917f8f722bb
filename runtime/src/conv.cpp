// conv2d and conv_transpose2d on the CPU, with PyTorch's semantics (stride,
// padding, dilation, groups; [N, C, H, W] or unbatched [C, H, W]). Each
// backward is one recorded node (conv2d_backward, conv_transpose2d_backward).
//
// float32 (and the 16-bit floats, computed in float32) runs oneDNN's
// convolution primitives: forward with the bias (and, from static graphs, a
// relu) as post-ops, backward data, backward weights with the bias gradient
// (dnnl_conv.cpp). What oneDNN does not take runs im2col + one BLAS gemm per
// (sample, group) below: float64 (oneDNN has no double convolution), and any
// case the library refuses (counted in detail::dnnl_conv_stats().refused).
//   input  gradient: col2im(W_g^T @ grad_g)
//   weight gradient: sum over samples of grad_g @ cols_g^T
//   bias   gradient: grad summed over N, H, W.
// A 1x1 kernel with stride 1 and no padding needs no im2col: the input plane
// block already is the column matrix.

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "blas.h"
#include "dnnl_conv.h"
#include "graph/detail/conv_stats.h"
#include "graph/autocast.h"
#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/detail/generated_support.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "device.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

struct ConvGeom {
  int64_t N, C, H, W;      // input
  int64_t Cout, Cg, Coutg;  // output channels, input and output channels per group
  int64_t kH, kW, sH, sW, pH, pW, dH, dW, groups;
  int64_t Ho, Wo;
  int64_t K() const { return Cg * kH * kW; }
  int64_t HWo() const { return Ho * Wo; }
  bool pointwise() const { return kH == 1 && kW == 1 && sH == 1 && sW == 1 && pH == 0 && pW == 0; }
};

// ceil(a / b) for b > 0 and any sign of a.
inline int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// Output columns [lo, hi) whose input column ow * s - p + k * d lies in [0, W).
inline void valid_range(int64_t W, int64_t Wo, int64_t s, int64_t p, int64_t kd, int64_t& lo, int64_t& hi) {
  lo = std::clamp<int64_t>(ceil_div(p - kd, s), 0, Wo);
  hi = std::clamp<int64_t>(ceil_div(W + p - kd, s), lo, Wo);
}

// cols [Cg * kH * kW, Ho * Wo] (rows `ld` apart) from one group's input
// planes x [Cg, H, W].
template <class T>
void im2col(const ConvGeom& g, const T* __restrict x, T* __restrict cols, int64_t ld) {
  const int64_t HWo = ld;
  for (int64_t c = 0; c < g.Cg; ++c) {
    const T* plane = x + c * g.H * g.W;
    for (int64_t ki = 0; ki < g.kH; ++ki) {
      for (int64_t kj = 0; kj < g.kW; ++kj) {
        T* dst = cols + ((c * g.kH + ki) * g.kW + kj) * HWo;
        int64_t lo, hi;
        valid_range(g.W, g.Wo, g.sW, g.pW, kj * g.dW, lo, hi);
        const int64_t shift = kj * g.dW - g.pW;
        for (int64_t oh = 0; oh < g.Ho; ++oh) {
          T* d = dst + oh * g.Wo;
          const int64_t ih = oh * g.sH - g.pH + ki * g.dH;
          if (ih < 0 || ih >= g.H) {
            std::fill(d, d + g.Wo, T(0));
            continue;
          }
          const T* src = plane + ih * g.W + shift;
          std::fill(d, d + lo, T(0));
          if (g.sW == 1) {
            std::memcpy(d + lo, src + lo, static_cast<size_t>(hi - lo) * sizeof(T));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) d[ow] = src[ow * g.sW];
          }
          std::fill(d + hi, d + g.Wo, T(0));
        }
      }
    }
  }
}

// The adjoint of im2col: adds cols [Cg * kH * kW, Ho * Wo] (rows `ld` apart)
// into x [Cg, H, W].
template <class T>
void col2im(const ConvGeom& g, const T* __restrict cols, T* __restrict x, int64_t ld) {
  const int64_t HWo = ld;
  for (int64_t c = 0; c < g.Cg; ++c) {
    T* plane = x + c * g.H * g.W;
    for (int64_t ki = 0; ki < g.kH; ++ki) {
      for (int64_t kj = 0; kj < g.kW; ++kj) {
        const T* src = cols + ((c * g.kH + ki) * g.kW + kj) * HWo;
        int64_t lo, hi;
        valid_range(g.W, g.Wo, g.sW, g.pW, kj * g.dW, lo, hi);
        const int64_t shift = kj * g.dW - g.pW;
        for (int64_t oh = 0; oh < g.Ho; ++oh) {
          const int64_t ih = oh * g.sH - g.pH + ki * g.dH;
          if (ih < 0 || ih >= g.H) continue;
          const T* s = src + oh * g.Wo;
          T* d = plane + ih * g.W + shift;
          for (int64_t ow = lo; ow < hi; ++ow) d[ow * g.sW] += s[ow];
        }
      }
    }
  }
}

// Row-major C[M, N] = alpha * op(A) @ op(B) + beta * C.
template <class T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
          T beta, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS rejects k = 0: C = beta * C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == T(0) ? T(0) : beta * C[i * ldc + j];
    return;
  }
  cpu::gemm_rowmajor(ta, tb, M, N, K, T(1), A, lda, B, ldb, beta, C, ldc);
}

cpu::DnnlConvShape dnnl_shape(const ConvGeom& g) {
  return {g.N, g.C, g.H, g.W, g.Cout, g.kH, g.kW, g.sH, g.sW, g.pH, g.pW, g.dH, g.dW, g.groups, g.Ho, g.Wo};
}

// Samples per gemm: small images are batched so that each product has at
// least kMinCols columns (BLAS is slow on thin matrices), within a bound on
// the column buffer.
int64_t samples_per_gemm(const ConvGeom& g) {
  constexpr int64_t kMinCols = 512, kMaxBuffer = int64_t{1} << 23;
  const int64_t HWo = std::max<int64_t>(g.HWo(), 1), K = std::max<int64_t>(g.K(), 1);
  int64_t nb = std::clamp<int64_t>((kMinCols + HWo - 1) / HWo, 1, std::max<int64_t>(g.N, 1));
  nb = std::min(nb, std::max<int64_t>(kMaxBuffer / (K * HWo), 1));
  return nb;
}

// Convolutions of at most this many multiply-adds run conv_direct: oneDNN's
// primitive costs about 3 us a call in set-up alone (a conv1d over a short
// sequence), about what conv_direct takes for 4k multiply-adds in short rows.
// Not under bf16 autocast, whose convolutions are oneDNN's bf16 ones.
constexpr int64_t kDirectConv = 4096;
std::atomic<int64_t> direct_conv_limit{kDirectConv};  // tests lower it (detail::set_direct_conv_limit)
bool direct_conv(const ConvGeom& g) {
  return g.N * g.Cout * g.HWo() * g.K() <= direct_conv_limit.load(std::memory_order_relaxed) && !autocast_bf16();
}

// out = conv(x, w) + b by rows: each output row adds, for every input
// channel and kernel tap, a weight times a row of input over the columns
// whose input lies inside the image (the padding adds nothing), so the
// inner loop is a contiguous multiply-add when the stride is 1.
template <class T>
void conv_direct(const ConvGeom& g, const T* __restrict x, const T* __restrict w, const T* b, T* __restrict out) {
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oc = 0; oc < g.Cout; ++oc) {
      const int64_t gr = oc / g.Coutg;
      const T* xg = x + (n * g.C + gr * g.Cg) * g.H * g.W;
      const T* wo = w + oc * g.K();
      T* plane = out + (n * g.Cout + oc) * g.HWo();
      std::fill(plane, plane + g.HWo(), b ? b[oc] : T(0));
      for (int64_t c = 0; c < g.Cg; ++c)
        for (int64_t ki = 0; ki < g.kH; ++ki)
          for (int64_t kj = 0; kj < g.kW; ++kj) {
            const T wv = wo[(c * g.kH + ki) * g.kW + kj];
            int64_t lo, hi;
            valid_range(g.W, g.Wo, g.sW, g.pW, kj * g.dW, lo, hi);
            for (int64_t oh = 0; oh < g.Ho; ++oh) {
              const int64_t ih = oh * g.sH - g.pH + ki * g.dH;
              if (ih < 0 || ih >= g.H) continue;
              const T* row = xg + (c * g.H + ih) * g.W;
              const int64_t shift = kj * g.dW - g.pW;
              T* o = plane + oh * g.Wo;
              if (g.sW == 1)
                for (int64_t ow = lo; ow < hi; ++ow) o[ow] += wv * row[ow + shift];
              else
                for (int64_t ow = lo; ow < hi; ++ow) o[ow] += wv * row[ow * g.sW + shift];
            }
          }
    }
}

template <class T>
Tensor conv_forward(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& bias) {
  Tensor out = empty({g.N, g.Cout, g.Ho, g.Wo}, x.dtype());
  const T* px = x.data_ptr<T>();
  const T* pw = w.data_ptr<T>();
  const T* pb = bias.defined() ? bias.data_ptr<T>() : nullptr;
  T* po = out.data_ptr<T>();
  if (direct_conv(g)) {
    conv_direct<T>(g, px, pw, pb, po);
    return out;
  }
  if constexpr (std::is_same_v<T, float>)
    if (cpu::dnnl_conv_forward(dnnl_shape(g), x, w, bias, false, out)) return out;
  const int64_t K = g.K(), HWo = g.HWo(), nb = samples_per_gemm(g);
  const int64_t plane = g.H * g.W;
  if (nb == 1) {  // one sample per gemm, written straight into the output
    std::vector<T> cols(g.pointwise() ? 0 : static_cast<size_t>(K * HWo));
    for (int64_t n = 0; n < g.N; ++n) {
      for (int64_t gr = 0; gr < g.groups; ++gr) {
        const T* xg = px + (n * g.C + gr * g.Cg) * plane;
        T* og = po + (n * g.Cout + gr * g.Coutg) * HWo;
        const T* c = xg;
        if (!g.pointwise()) {
          im2col(g, xg, cols.data(), HWo);
          c = cols.data();
        }
        if (pb) {
          for (int64_t oc = 0; oc < g.Coutg; ++oc) std::fill(og + oc * HWo, og + (oc + 1) * HWo, pb[gr * g.Coutg + oc]);
        }
        gemm<T>(false, false, g.Coutg, HWo, K, pw + gr * g.Coutg * K, K, c, HWo, pb ? T(1) : T(0), og, HWo);
      }
    }
    return out;
  }
  // nb samples side by side: cols [K, nb * HWo], product [Coutg, nb * HWo].
  std::vector<T> cols(static_cast<size_t>(K * nb * HWo)), prod(static_cast<size_t>(g.Coutg * nb * HWo));
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t cnt = std::min(nb, g.N - n0), L = cnt * HWo;
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      for (int64_t i = 0; i < cnt; ++i) im2col(g, px + ((n0 + i) * g.C + gr * g.Cg) * plane, cols.data() + i * HWo, L);
      gemm<T>(false, false, g.Coutg, L, K, pw + gr * g.Coutg * K, K, cols.data(), L, T(0), prod.data(), L);
      for (int64_t i = 0; i < cnt; ++i) {
        for (int64_t oc = 0; oc < g.Coutg; ++oc) {
          const T* src = prod.data() + oc * L + i * HWo;
          T* dst = po + ((n0 + i) * g.Cout + gr * g.Coutg + oc) * HWo;
          const T b = pb ? pb[gr * g.Coutg + oc] : T(0);
          for (int64_t j = 0; j < HWo; ++j) dst[j] = src[j] + b;
        }
      }
    }
  }
  return out;
}

// Gradients of the input and the weight (each only when asked for) from the
// output gradient `go` [N, C_out, Ho, Wo] (contiguous).
template <class T>
void conv_backward(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& go, Tensor* gx, Tensor* gw) {
  const T* px = gw ? x.data_ptr<T>() : nullptr;  // the input only for the weight's gradient
  const T* pw = w.data_ptr<T>();
  const T* pg = go.data_ptr<T>();
  T* pgx = gx ? gx->data_ptr<T>() : nullptr;
  T* pgw = gw ? gw->data_ptr<T>() : nullptr;
  const int64_t K = g.K(), HWo = g.HWo(), plane = g.H * g.W, nb = samples_per_gemm(g);
  const bool direct = nb == 1 && g.pointwise();  // the input block is its own column matrix
  std::vector<T> cols(direct ? 0 : static_cast<size_t>(K * nb * HWo));
  std::vector<T> gpack(nb == 1 ? 0 : static_cast<size_t>(g.Coutg * nb * HWo));
  for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
    const int64_t cnt = std::min(nb, g.N - n0), L = cnt * HWo;
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      const T* wg = pw + gr * g.Coutg * K;  // [Coutg, K]
      // grad_g [Coutg, L]: in place for one sample, else packed side by side.
      const T* gog = pg + (n0 * g.Cout + gr * g.Coutg) * HWo;
      if (nb > 1) {
        for (int64_t oc = 0; oc < g.Coutg; ++oc)
          for (int64_t i = 0; i < cnt; ++i)
            std::memcpy(gpack.data() + oc * L + i * HWo, pg + ((n0 + i) * g.Cout + gr * g.Coutg + oc) * HWo,
                        static_cast<size_t>(HWo) * sizeof(T));
        gog = gpack.data();
      }
      const auto xoff = [&](int64_t i) { return ((n0 + i) * g.C + gr * g.Cg) * plane; };
      if (pgw) {
        const T* c = px + xoff(0);
        if (!direct) {
          for (int64_t i = 0; i < cnt; ++i) im2col(g, px + xoff(i), cols.data() + i * HWo, L);
          c = cols.data();
        }
        // gw_g [Coutg, K] += grad_g [Coutg, L] @ cols^T [L, K]
        gemm<T>(false, true, g.Coutg, K, L, gog, L, c, L, T(1), pgw + gr * g.Coutg * K, K);
      }
      if (pgx) {
        // dcols [K, L] = W_g^T [K, Coutg] @ grad_g [Coutg, L], then col2im
        if (direct) {
          gemm<T>(true, false, K, HWo, g.Coutg, wg, K, gog, HWo, T(0), pgx + xoff(0), HWo);
        } else {
          gemm<T>(true, false, K, L, g.Coutg, wg, K, gog, L, T(0), cols.data(), L);
          for (int64_t i = 0; i < cnt; ++i) col2im(g, cols.data() + i * HWo, pgx + xoff(i), L);
        }
      }
    }
  }
}

// A pair from a 1- or 2-element argument (PyTorch's int-or-tuple).
std::pair<int64_t, int64_t> pair_arg(const char* name, const Shape& v, const Shape& x_shape) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  throw Error(std::string("conv2d: ") + name + " must have 1 or 2 elements, got " + shape_str(v) +
              " (input shape " + shape_str(x_shape) + ")");
}

// `x` is 4-D; `shown` is the shape the caller passed (3-D when unbatched),
// which messages name.
ConvGeom check_conv(const Tensor& x, const Tensor& w, const Tensor& bias, const Shape& stride, const Shape& padding,
                    const Shape& dilation, int64_t groups, const Shape& shown) {
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string("input shape " + shape_str(shown) + ", weight shape " + shape_str(w.sizes()));
  };
  if (w.dim() != 4)
    throw Error("conv2d: expected a 4-D weight [C_out, C_in / groups, kH, kW], got " + shapes());
  if (!is_floating(x.dtype()))
    throw Error("conv2d: expected a floating input, got " + std::string(dtype_name(x.dtype())) + " (" + shapes() + ")");
  if (w.dtype() != x.dtype())
    throw Error("conv2d: input (" + std::string(dtype_name(x.dtype())) + ") and weight (" +
                std::string(dtype_name(w.dtype())) + ") must have one dtype (" + shapes() + ")");
  if (groups <= 0)
    throw Error("conv2d: groups must be positive, got " + std::to_string(groups) + " (" + shapes() + ")");
  ConvGeom g{};
  g.N = x.size(0), g.C = x.size(1), g.H = x.size(2), g.W = x.size(3);
  g.Cout = w.size(0), g.Cg = w.size(1), g.kH = w.size(2), g.kW = w.size(3);
  g.groups = groups;
  if (g.Cout % groups != 0)
    throw Error("conv2d: weight shape " + shape_str(w.sizes()) + " has " + std::to_string(g.Cout) +
                " output channels, not divisible by groups=" + std::to_string(groups) + " (input shape " +
                shape_str(shown) + ")");
  if (g.Cg * groups != g.C)
    throw Error("conv2d: input shape " + shape_str(shown) + " has " + std::to_string(g.C) +
                " channels, but weight shape " + shape_str(w.sizes()) + " with groups=" + std::to_string(groups) +
                " expects " + std::to_string(g.Cg * groups));
  g.Coutg = g.Cout / groups;
  if (bias.defined()) {
    if (bias.dim() != 1 || bias.size(0) != g.Cout)
      throw Error("conv2d: expected a bias of shape [" + std::to_string(g.Cout) + "], got " +
                  shape_str(bias.sizes()) + " (" + shapes() + ")");
    if (bias.dtype() != x.dtype())
      throw Error("conv2d: bias (" + std::string(dtype_name(bias.dtype())) + ") and input (" +
                  std::string(dtype_name(x.dtype())) + ") must have one dtype (" + shapes() + ")");
  }
  std::tie(g.sH, g.sW) = pair_arg("stride", stride, shown);
  std::tie(g.pH, g.pW) = pair_arg("padding", padding, shown);
  std::tie(g.dH, g.dW) = pair_arg("dilation", dilation, shown);
  if (g.sH <= 0 || g.sW <= 0)
    throw Error("conv2d: stride must be positive, got " + shape_str(stride) + " (" + shapes() + ")");
  if (g.dH <= 0 || g.dW <= 0)
    throw Error("conv2d: dilation must be positive, got " + shape_str(dilation) + " (" + shapes() + ")");
  if (g.pH < 0 || g.pW < 0)
    throw Error("conv2d: padding must be non-negative, got " + shape_str(padding) + " (" + shapes() + ")");
  const int64_t ekH = g.dH * (g.kH - 1) + 1, ekW = g.dW * (g.kW - 1) + 1;
  const int64_t h = g.H + 2 * g.pH, wd = g.W + 2 * g.pW;
  if (g.kH <= 0 || g.kW <= 0 || h < ekH || wd < ekW)
    throw Error("conv2d: padded input " + std::to_string(h) + "x" + std::to_string(wd) +
                " is smaller than the dilated kernel " + std::to_string(ekH) + "x" + std::to_string(ekW) + " (" +
                shapes() + ", padding " + shape_str(padding) + ", dilation " + shape_str(dilation) + ")");
  g.Ho = (h - ekH) / g.sH + 1;
  g.Wo = (wd - ekW) / g.sW + 1;
  for (int64_t v : {g.Cout, g.Coutg * g.K(), g.HWo(), g.K() * g.HWo(), g.H * g.W})
    if (v > INT_MAX) throw Error("conv2d: sizes exceed the BLAS int range (" + shapes() + ")");
  return g;
}

// The gradients of conv2d (x [N, C, H, W] and w contiguous, float32/64): on
// the device cuDNN's backward-data and backward-filter, on the CPU
// conv_backward; the bias's is grad summed over N, H, W.
std::vector<Tensor> conv_grads(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& grad, bool need_x,
                               bool need_w, bool need_b) {
  const Tensor go = grad.to(x.dtype()).contiguous();
  Tensor gx, gw;
  if (x.device() == Device::CUDA) {
    const detail::Conv2dParams p{g.sH, g.sW, g.pH, g.pW, g.dH, g.dW, g.groups};
    if (need_x) gx = detail::cuda_conv2d_grad_input(w, go, x.sizes(), p);
    if (need_w) gw = detail::cuda_conv2d_grad_weight(x, go, w.sizes(), p);
  } else {
    if (x.dtype() == kFloat32) {
      // oneDNN writes every element: no zero fill.
      Tensor gb = need_b ? empty({g.Cout}, kFloat32) : Tensor();
      bool ok = true;
      if (need_x) {
        gx = empty(x.sizes(), x.dtype());
        ok = cpu::dnnl_conv_backward_data(dnnl_shape(g), w, go, gx);
      }
      if (ok && need_w) {
        gw = empty(w.sizes(), w.dtype());
        ok = cpu::dnnl_conv_backward_weights(dnnl_shape(g), x, go, gw, gb);
      }
      if (ok) return {gx, gw, need_b ? (need_w ? gb : sum(go, Shape{0, 2, 3})) : Tensor()};
    }
    if (need_x) gx = zeros(x.sizes(), x.dtype());
    if (need_w) gw = zeros(w.sizes(), w.dtype());
    if (x.dtype() == kFloat64)
      conv_backward<double>(g, x, w, go, need_x ? &gx : nullptr, need_w ? &gw : nullptr);
    else
      conv_backward<float>(g, x, w, go, need_x ? &gx : nullptr, need_w ? &gw : nullptr);
  }
  return {gx, gw, need_b ? sum(go, Shape{0, 2, 3}) : Tensor()};
}

// On the device: cuDNN's forward, backward-data and backward-filter
// convolutions; the bias is added (and its gradient summed) by the eager
// CUDA ops.
Tensor conv2d_cuda(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const ConvGeom& g) {
  const Tensor x = x_in.contiguous().detach(), w = w_in.contiguous().detach();
  const detail::Conv2dParams p{g.sH, g.sW, g.pH, g.pW, g.dH, g.dW, g.groups};
  Tensor out = detail::cuda_conv2d(x, w, p);
  if (b_in.defined()) out = out + b_in.detach().reshape({1, g.Cout, 1, 1});
  if (!autograd::needs_grad({&x_in, &w_in, &b_in})) return out;
  const bool need_x = x_in.requires_grad(), need_w = w_in.requires_grad(), need_b = b_in.defined() && b_in.requires_grad();
  auto conv2d_backward = [g, x, w, need_x, need_w, need_b](const Tensor& grad) {
    return conv_grads(g, x, w, grad, need_x, need_w, need_b);
  };
  autograd::record("conv2d", out, {x_in, w_in, b_in}, conv2d_backward);
  return out;
}

Tensor conv2d_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const ConvGeom& g) {
  if (x_in.device() == Device::CUDA) return conv2d_cuda(x_in, w_in, b_in, g);
  const Tensor x = x_in.contiguous().detach(), w = w_in.contiguous().detach();
  const Tensor b = b_in.defined() ? b_in.contiguous().detach() : Tensor();
  Tensor out = x.dtype() == kFloat64 ? conv_forward<double>(g, x, w, b) : conv_forward<float>(g, x, w, b);
  if (!autograd::needs_grad({&x_in, &w_in, &b_in})) return out;
  const bool need_x = x_in.requires_grad(), need_w = w_in.requires_grad(), need_b = b_in.defined() && b_in.requires_grad();
  // The named backward: saved tensors are detached values.
  auto conv2d_backward = [g, x, w, need_x, need_w, need_b](const Tensor& grad) {
    return conv_grads(g, x, w, grad, need_x, need_w, need_b);
  };
  autograd::record("conv2d", out, {x_in, w_in, b_in}, conv2d_backward);
  return out;
}

// ---- conv_transpose2d ---------------------------------------------------------
// conv_transpose2d(x, w) is the adjoint of the convolution whose input is the
// transposed op's output: with that convolution's geometry `g` (input
// [N, C_out, Ho, Wo], weight w [C_in, C_out / groups, kH, kW] read as
// [O, I / groups, kH, kW], output [N, C_in, H, W]), the forward is g's
// backward data, the input gradient g's forward, the weight gradient g's
// backward weights with the roles of input and output gradient swapped.
// Each runs oneDNN (float32), cuDNN (CUDA) or the GEMM path (float64).

detail::Conv2dParams cuda_params(const ConvGeom& g) { return {g.sH, g.sW, g.pH, g.pW, g.dH, g.dW, g.groups}; }

// The data gradient of g from `go` [N, g.Cout, g.Ho, g.Wo] (dense): the
// transposed convolution's forward.
Tensor conv_data_grad(const ConvGeom& g, const Tensor& w, const Tensor& go) {
  const Shape xs{g.N, g.C, g.H, g.W};
  if (go.device() == Device::CUDA) return detail::cuda_conv2d_grad_input(w, go, xs, cuda_params(g));
  if (go.dtype() == kFloat32) {
    Tensor gx = empty(xs, kFloat32);  // oneDNN writes every element
    if (cpu::dnnl_conv_backward_data(dnnl_shape(g), w, go, gx)) return gx;
  }
  Tensor gx = zeros(xs, go.dtype());
  if (go.dtype() == kFloat64)
    conv_backward<double>(g, Tensor(), w, go, &gx, nullptr);
  else
    conv_backward<float>(g, Tensor(), w, go, &gx, nullptr);
  return gx;
}

// Gradients of conv_transpose2d(x, w, b) = conv_data_grad(g, w, x) + b from
// its output gradient `grad` [N, g.C, g.H, g.W].
std::vector<Tensor> conv_transpose_grads(const ConvGeom& g, const Tensor& x, const Tensor& w, const Tensor& grad,
                                         bool need_x, bool need_w, bool need_b) {
  const Tensor go = grad.to(x.dtype()).contiguous();
  Tensor gx, gw;
  if (x.device() == Device::CUDA) {
    if (need_x) gx = detail::cuda_conv2d(go, w, cuda_params(g));
    if (need_w) gw = detail::cuda_conv2d_grad_weight(go, x, w.sizes(), cuda_params(g));
    return {gx, gw, need_b ? sum(go, Shape{0, 2, 3}) : Tensor()};
  }
  if (need_x)
    gx = x.dtype() == kFloat64 ? conv_forward<double>(g, go, w, Tensor()) : conv_forward<float>(g, go, w, Tensor());
  if (need_w) {
    gw = empty(w.sizes(), w.dtype());
    if (x.dtype() != kFloat32 || !cpu::dnnl_conv_backward_weights(dnnl_shape(g), go, x, gw, Tensor())) {
      gw = zeros(w.sizes(), w.dtype());
      if (x.dtype() == kFloat64)
        conv_backward<double>(g, go, w, x, nullptr, &gw);
      else
        conv_backward<float>(g, go, w, x, nullptr, &gw);
    }
  }
  return {gx, gw, need_b ? sum(go, Shape{0, 2, 3}) : Tensor()};
}

// The convolution geometry of conv_transpose2d(x [N, C_in, H, W], w), in the
// terms above; messages name the op and the shapes the caller passed.
ConvGeom check_conv_transpose(const Tensor& x, const Tensor& w, const Tensor& bias, const Shape& stride,
                              const Shape& padding, const Shape& output_padding, int64_t groups, const Shape& dilation,
                              const Shape& shown) {
  const std::string op = "conv_transpose2d: ";
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string("input shape " + shape_str(shown) + ", weight shape " + shape_str(w.sizes()));
  };
  if (w.dim() != 4) throw Error(op + "expected a 4-D weight [C_in, C_out / groups, kH, kW], got " + shapes());
  if (!is_floating(x.dtype()))
    throw Error(op + "expected a floating input, got " + std::string(dtype_name(x.dtype())) + " (" + shapes() + ")");
  if (w.dtype() != x.dtype())
    throw Error(op + "input (" + std::string(dtype_name(x.dtype())) + ") and weight (" +
                std::string(dtype_name(w.dtype())) + ") must have one dtype (" + shapes() + ")");
  if (groups <= 0) throw Error(op + "groups must be positive, got " + std::to_string(groups) + " (" + shapes() + ")");
  if (w.size(0) != x.size(1))
    throw Error(op + "input shape " + shape_str(shown) + " has " + std::to_string(x.size(1)) +
                " channels, but weight shape " + shape_str(w.sizes()) + " expects " + std::to_string(w.size(0)));
  if (x.size(1) % groups != 0)
    throw Error(op + "input channels " + std::to_string(x.size(1)) + " are not divisible by groups=" +
                std::to_string(groups) + " (" + shapes() + ")");
  ConvGeom g{};
  g.N = x.size(0), g.Cout = x.size(1), g.H = 0, g.W = 0;
  g.Cg = w.size(1), g.kH = w.size(2), g.kW = w.size(3), g.groups = groups;
  g.C = g.Cg * groups, g.Coutg = g.Cout / groups;
  if (bias.defined()) {
    if (bias.dim() != 1 || bias.size(0) != g.C)
      throw Error(op + "expected a bias of shape [" + std::to_string(g.C) + "], got " + shape_str(bias.sizes()) +
                  " (" + shapes() + ")");
    if (bias.dtype() != x.dtype())
      throw Error(op + "bias (" + std::string(dtype_name(bias.dtype())) + ") and input (" +
                  std::string(dtype_name(x.dtype())) + ") must have one dtype (" + shapes() + ")");
  }
  const auto pair = [&](const char* name, const Shape& v) {
    if (v.size() == 1) return std::pair<int64_t, int64_t>{v[0], v[0]};
    if (v.size() == 2) return std::pair<int64_t, int64_t>{v[0], v[1]};
    throw Error(op + name + " must have 1 or 2 elements, got " + shape_str(v) + " (" + shapes() + ")");
  };
  std::tie(g.sH, g.sW) = pair("stride", stride);
  std::tie(g.pH, g.pW) = pair("padding", padding);
  std::tie(g.dH, g.dW) = pair("dilation", dilation);
  const auto [oH, oW] = pair("output_padding", output_padding);
  if (g.sH <= 0 || g.sW <= 0)
    throw Error(op + "stride must be positive, got " + shape_str(stride) + " (" + shapes() + ")");
  if (g.dH <= 0 || g.dW <= 0)
    throw Error(op + "dilation must be positive, got " + shape_str(dilation) + " (" + shapes() + ")");
  if (g.pH < 0 || g.pW < 0)
    throw Error(op + "padding must be non-negative, got " + shape_str(padding) + " (" + shapes() + ")");
  // PyTorch's rule: output_padding below the stride or the dilation.
  if (oH < 0 || oW < 0 || (oH >= g.sH && oH >= g.dH) || (oW >= g.sW && oW >= g.dW))
    throw Error(op + "output_padding " + shape_str(output_padding) + " must be non-negative and smaller than the stride " +
                shape_str(stride) + " or the dilation " + shape_str(dilation) + " (" + shapes() + ")");
  g.Ho = x.size(2), g.Wo = x.size(3);
  g.H = (g.Ho - 1) * g.sH - 2 * g.pH + g.dH * (g.kH - 1) + oH + 1;
  g.W = (g.Wo - 1) * g.sW - 2 * g.pW + g.dW * (g.kW - 1) + oW + 1;
  if (g.kH <= 0 || g.kW <= 0 || g.H <= 0 || g.W <= 0)
    throw Error(op + "the output would be " + std::to_string(g.H) + "x" + std::to_string(g.W) + " (" + shapes() +
                ", stride " + shape_str(stride) + ", padding " + shape_str(padding) + ")");
  for (int64_t v : {g.C, g.Coutg * g.K(), g.HWo(), g.K() * g.HWo(), g.H * g.W})
    if (v > INT_MAX) throw Error(op + "sizes exceed the BLAS int range (" + shapes() + ")");
  return g;
}

Tensor conv_transpose2d_impl(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, const ConvGeom& g) {
  // Output padding past the stride leaves the convolution's own output size
  // (floor division) bigger than the input: cuDNN takes no such geometry.
  if (x_in.device() == Device::CUDA && ((g.H + 2 * g.pH - g.dH * (g.kH - 1) - 1) / g.sH + 1 != g.Ho ||
                                        (g.W + 2 * g.pW - g.dW * (g.kW - 1) - 1) / g.sW + 1 != g.Wo))
    throw Error("conv_transpose2d: output_padding not smaller than the stride is not on CUDA yet (input shape " +
                shape_str(x_in.sizes()) + ", weight shape " + shape_str(w_in.sizes()) + ")");
  const Tensor x = x_in.contiguous().detach(), w = w_in.contiguous().detach();
  Tensor out = conv_data_grad(g, w, x);
  if (b_in.defined()) {
    out = out + b_in.detach().reshape({1, g.C, 1, 1});
  }
  if (!autograd::needs_grad({&x_in, &w_in, &b_in})) return out;
  const bool need_x = x_in.requires_grad(), need_w = w_in.requires_grad(), need_b = b_in.defined() && b_in.requires_grad();
  auto conv_transpose2d_backward = [g, x, w, need_x, need_w, need_b](const Tensor& grad) {
    return conv_transpose_grads(g, x, w, grad, need_x, need_w, need_b);
  };
  autograd::record("conv_transpose2d", out, {x_in, w_in, b_in}, conv_transpose2d_backward);
  return out;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Shape stride, Shape padding, Shape dilation,
              int64_t groups) {
  if (detail::tracing())
    return detail::trace_op("conv2d", {x, weight, bias},
                            {{"stride", detail::ints(stride)}, {"padding", detail::ints(padding)},
                             {"dilation", detail::ints(dilation)}, {"groups", groups}},
                            [&] { return conv2d(x, weight, bias, stride, padding, dilation, groups); });
  detail::check_defined("conv2d", x);
  detail::check_defined("conv2d", weight);
  if (x.dim() != 3 && x.dim() != 4)
    throw Error("conv2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got input shape " +
                shape_str(x.sizes()) + ", weight shape " + shape_str(weight.sizes()));
  const Device dev = detail::common_device("conv2d", x, weight);
  if (bias.defined() && bias.device() != dev)
    throw Error("conv2d: expected input, weight and bias on one device, got the bias on " +
                std::string(device_name(bias.device())) + " (input shape " + shape_str(x.sizes()) + ")");
  if (dev == Device::CUDA && x.device() != Device::CUDA)
    throw Error("conv2d: expected input and weight on one device, got cpu " + shape_str(x.sizes()) + " and cuda " +
                shape_str(weight.sizes()) + "; move one with .to(kCUDA) or .to(kCPU)");
  const bool unbatched = x.dim() == 3;
  const Tensor x4 = unbatched ? x.unsqueeze(0) : x;
  const ConvGeom g = check_conv(x4, weight, bias, stride, padding, dilation, groups, x.sizes());
  Tensor out;
  if (is_reduced_float(x.dtype())) {  // 16-bit floats compute in float32
    const Tensor b32 = bias.defined() ? bias.to(kFloat32) : Tensor();
    out = conv2d_impl(x4.to(kFloat32), weight.to(kFloat32), b32, g).to(x.dtype());
  } else {
    out = conv2d_impl(x4, weight, bias, g);
  }
  return unbatched ? out.squeeze(0) : out;
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Shape stride, Shape padding,
                        Shape output_padding, int64_t groups, Shape dilation) {
  if (detail::tracing())
    return detail::trace_op("conv_transpose2d", {x, weight, bias},
                            {{"stride", detail::ints(stride)}, {"padding", detail::ints(padding)},
                             {"output_padding", detail::ints(output_padding)}, {"groups", groups},
                             {"dilation", detail::ints(dilation)}},
                            [&] { return conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation); });
  detail::check_defined("conv_transpose2d", x);
  detail::check_defined("conv_transpose2d", weight);
  if (x.dim() != 3 && x.dim() != 4)
    throw Error("conv_transpose2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got input shape " +
                shape_str(x.sizes()) + ", weight shape " + shape_str(weight.sizes()));
  const Device dev = detail::common_device("conv_transpose2d", x, weight);
  if (bias.defined() && bias.device() != dev)
    throw Error("conv_transpose2d: expected input, weight and bias on one device, got the bias on " +
                std::string(device_name(bias.device())) + " (input shape " + shape_str(x.sizes()) + ")");
  const bool unbatched = x.dim() == 3;
  const Tensor x4 = unbatched ? x.unsqueeze(0) : x;
  const ConvGeom g =
      check_conv_transpose(x4, weight, bias, stride, padding, output_padding, groups, dilation, x.sizes());
  Tensor out;
  if (is_reduced_float(x.dtype())) {  // 16-bit floats compute in float32
    const Tensor b32 = bias.defined() ? bias.to(kFloat32) : Tensor();
    out = conv_transpose2d_impl(x4.to(kFloat32), weight.to(kFloat32), b32, g).to(x.dtype());
  } else {
    out = conv_transpose2d_impl(x4, weight, bias, g);
  }
  return unbatched ? out.squeeze(0) : out;
}

namespace detail {

int64_t set_direct_conv_limit(int64_t macs) { return direct_conv_limit.exchange(macs); }

Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, Shape stride, Shape padding,
                   Shape dilation, int64_t groups) {
  const auto f32_cpu = [](const Tensor& t) { return t.device() == Device::CPU && t.dtype() == kFloat32; };
  if (!detail::tracing() && x.defined() && weight.defined() && x.dim() == 4 && weight.dim() == 4 && f32_cpu(x) &&
      f32_cpu(weight) && (!bias.defined() || f32_cpu(bias)) && !autograd::needs_grad({&x, &weight, &bias})) {
    const ConvGeom g = check_conv(x, weight, bias, stride, padding, dilation, groups, x.sizes());
    Tensor out = empty({g.N, g.Cout, g.Ho, g.Wo}, kFloat32);
    if (!direct_conv(g) && cpu::dnnl_conv_forward(dnnl_shape(g), x.contiguous(), weight.contiguous(),
                               bias.defined() ? bias.contiguous() : Tensor(), true, out))
      return out;
  }
  return relu(conv2d(x, weight, bias, stride, padding, dilation, groups));
}

std::vector<Tensor> conv2d_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    const Shape& stride, const Shape& padding, const Shape& dilation, int64_t groups,
                                    GradMask mask) {
  detail::observe_grad_mask("conv2d_backward", mask);
  detail::check_defined("conv2d_backward", x);
  detail::check_defined("conv2d_backward", weight);
  if (x.dim() != 3 && x.dim() != 4)
    throw Error("conv2d_backward: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got input shape " +
                shape_str(x.sizes()) + ", weight shape " + shape_str(weight.sizes()));
  const bool unbatched = x.dim() == 3;
  const Tensor x4 = unbatched ? x.unsqueeze(0) : x;
  const ConvGeom g = check_conv(x4, weight, bias, stride, padding, dilation, groups, x.sizes());
  const Shape out{g.N, g.Cout, g.Ho, g.Wo};
  const Tensor g4 = unbatched && grad.dim() == 3 ? grad.unsqueeze(0) : grad;
  if (g4.sizes() != out)
    throw Error("conv2d_backward: gradient of shape " + shape_str(grad.sizes()) + " does not match the result " +
                shape_str(unbatched ? Shape{g.Cout, g.Ho, g.Wo} : out) + " (input shape " + shape_str(x.sizes()) + ")");
  const bool need_b = wants(mask, 2) && bias.defined();
  const DType ct = is_reduced_float(x.dtype()) ? kFloat32 : x.dtype();  // 16-bit floats compute in float32
  std::vector<Tensor> r = conv_grads(g, x4.to(ct).contiguous(), weight.to(ct).contiguous(), g4.to(ct), wants(mask, 0),
                                     wants(mask, 1), need_b);
  if (r[0].defined() && unbatched) r[0] = r[0].squeeze(0);
  for (size_t i = 0; i < 3; ++i)
    if (r[i].defined() && r[i].dtype() != x.dtype()) r[i] = r[i].to(x.dtype());
  if (r[2].defined()) r[2] = r[2].reshape(bias.sizes());
  return r;
}


std::vector<Tensor> conv_transpose2d_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                              const Tensor& bias, const Shape& stride, const Shape& padding,
                                              const Shape& output_padding, int64_t groups, const Shape& dilation,
                                              GradMask mask) {
  detail::observe_grad_mask("conv_transpose2d_backward", mask);
  detail::check_defined("conv_transpose2d_backward", x);
  detail::check_defined("conv_transpose2d_backward", weight);
  if (x.dim() != 3 && x.dim() != 4)
    throw Error("conv_transpose2d_backward: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got input shape " +
                shape_str(x.sizes()) + ", weight shape " + shape_str(weight.sizes()));
  const bool unbatched = x.dim() == 3;
  const Tensor x4 = unbatched ? x.unsqueeze(0) : x;
  const ConvGeom g =
      check_conv_transpose(x4, weight, bias, stride, padding, output_padding, groups, dilation, x.sizes());
  const Shape out{g.N, g.C, g.H, g.W};
  const Tensor g4 = unbatched && grad.dim() == 3 ? grad.unsqueeze(0) : grad;
  if (g4.sizes() != out)
    throw Error("conv_transpose2d_backward: gradient of shape " + shape_str(grad.sizes()) +
                " does not match the result " + shape_str(unbatched ? Shape{g.C, g.H, g.W} : out) + " (input shape " +
                shape_str(x.sizes()) + ")");
  const bool need_b = wants(mask, 2) && bias.defined();
  const DType ct = is_reduced_float(x.dtype()) ? kFloat32 : x.dtype();  // 16-bit floats compute in float32
  std::vector<Tensor> r = conv_transpose_grads(g, x4.to(ct).contiguous(), weight.to(ct).contiguous(), g4.to(ct),
                                               wants(mask, 0), wants(mask, 1), need_b);
  if (r[0].defined() && unbatched) r[0] = r[0].squeeze(0);
  for (size_t i = 0; i < 3; ++i)
    if (r[i].defined() && r[i].dtype() != x.dtype()) r[i] = r[i].to(x.dtype());
  if (r[2].defined()) r[2] = r[2].reshape(bias.sizes());
  return r;
}
}  // namespace detail

}  // namespace graph
