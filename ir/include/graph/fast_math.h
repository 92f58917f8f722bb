#pragma once
// Branch-free exp and tanh for float and double, written so that a plain loop
// calling them vectorizes (GCC 12 -O3, baseline SSE2 included): no libm calls,
// no data-dependent branches (selects only), no float <-> int conversions
// (2^n is built from the bits of the rounded exponent). The bodies are plain
// C++ with no intrinsics, so the eager kernels, the generated fused loops and
// CUDA use the same math (ops.def's exp, tanh, sigmoid, silu call them).
//
//   exp : x = n ln2 + r, |r| <= ln2/2 (Cody-Waite, two-part ln2), then Cephes'
//         polynomial (float: degree 7) or Pade form (double) for e^r, times
//         2^n applied as two exact power-of-two factors so that subnormal
//         results round once. Overflow gives +inf, underflow 0 (subnormals are
//         kept), NaN stays NaN, -inf gives 0.
//   tanh: |x| < 0.625: Cephes' odd polynomial (float) / rational (double) in
//         x^2, accurate near 0 (tanh(x) = x for tiny x, -0 stays -0);
//         otherwise 1 - 2 / (exp(2|x|) + 1) with the sign of x, |x|
//         clamped to 9.1 where tanh is 1 in float; NaN stays NaN.
//
// Measured (tests/fast_math_test.cpp): float32 results within 1 ulp of the
// correctly rounded value (std::exp / std::tanh in double, rounded) over all
// float inputs checked; double within 2 ulp of std::exp / std::tanh.
#include <cmath>
#include <cstdint>
#include <cstring>
#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

#ifndef GRAPH_HOST_DEVICE
#if defined(__CUDACC__)
#define GRAPH_HOST_DEVICE __host__ __device__
#else
#define GRAPH_HOST_DEVICE
#endif
#endif

namespace graph::math {

namespace detail {

template <class To, class From>
GRAPH_HOST_DEVICE inline To bit_cast(From f) {
#if defined(__CUDA_ARCH__)
  To t;
  memcpy(&t, &f, sizeof t);
  return t;
#else
  return std::bit_cast<To>(f);
#endif
}

// c ? a : b, selecting the bits: both operands are computed, and the
// compiler cannot sink their arithmetic into branches (with the default
// -ftrapping-math GCC then refuses to if-convert, and the loop stays scalar).
GRAPH_HOST_DEVICE inline float select(bool c, float a, float b) {
  const int32_t m = c ? int32_t(-1) : int32_t(0);
  return bit_cast<float>((bit_cast<int32_t>(a) & m) | (bit_cast<int32_t>(b) & ~m));
}
GRAPH_HOST_DEVICE inline double select(bool c, double a, double b) {
  const int64_t m = c ? int64_t(-1) : int64_t(0);
  return bit_cast<double>((bit_cast<int64_t>(a) & m) | (bit_cast<int64_t>(b) & ~m));
}

}  // namespace detail

// ---- exp -----------------------------------------------------------------

namespace detail {

// e^x = y * 2^n with y = e^r, x = n ln2 + r, |r| <= ln2/2 (|x| < 2^21).
GRAPH_HOST_DEVICE inline float exp_reduced(float x, int32_t& ni) {
  // n = round(x / ln2): adding 1.5 * 2^23 rounds to an integer, whose value
  // then sits in the low mantissa bits.
  constexpr float kMagic = 12582912.0f;
  const float t = x * 1.44269504088896341f + kMagic;
  const float n = t - kMagic;
  ni = bit_cast<int32_t>(t) - bit_cast<int32_t>(kMagic);
  // r = x - n ln2, ln2 = 0.693359375 - 2.12194440e-4 (n * first part exact).
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * z + r + 1.0f;
}

}  // namespace detail

GRAPH_HOST_DEVICE inline float exp(float x) {
  // exp(88.8) overflows and exp(-104) rounds to 0, so clamping changes no
  // result; NaN passes both selects and poisons the polynomial.
  x = detail::select(x > 88.8f, 88.8f, x);
  x = detail::select(x < -104.0f, -104.0f, x);
  int32_t ni;
  const float y = detail::exp_reduced(x, ni);
  // y * 2^n as y * 2^n1 * 2^n2 (n in [-150, 128], both halves normal): the
  // first product is exact, the second rounds once, also into subnormals.
  const int32_t n1 = ni >> 1, n2 = ni - n1;
  const float s1 = detail::bit_cast<float>((n1 + 127) << 23);
  const float s2 = detail::bit_cast<float>((n2 + 127) << 23);
  return y * s1 * s2;
}

GRAPH_HOST_DEVICE inline double exp(double x) {
  x = detail::select(x > 709.8, 709.8, x);     // above log(DBL_MAX): +inf
  x = detail::select(x < -746.0, -746.0, x);  // below log(2^-1075): 0
  constexpr double kMagic = 6755399441055744.0;  // 1.5 * 2^52
  const double t = x * 1.4426950408889634074 + kMagic;
  const double n = t - kMagic;
  const int64_t ni = detail::bit_cast<int64_t>(t) - detail::bit_cast<int64_t>(kMagic);
  double r = x - n * 6.93145751953125e-1;
  r = r - n * 1.42860682030941723212e-6;
  // Cephes: e^r = 1 + 2 r P(r^2) / (Q(r^2) - r P(r^2)).
  const double z = r * r;
  const double px = r * ((1.26177193074810590878e-4 * z + 3.02994407707441961300e-2) * z +
                         9.99999999999999999910e-1);
  const double qx = ((3.00198505138664455042e-6 * z + 2.52448340349684104192e-3) * z +
                     2.27265548208155028766e-1) * z + 2.00000000000000000009e0;
  const double y = 1.0 + 2.0 * (px / (qx - px));
  // Split n without a 64-bit arithmetic shift (none in SSE2/AVX2): n1 =
  // round(n / 2) through the same magic constant.
  const int64_t n1 = detail::bit_cast<int64_t>(n * 0.5 + kMagic) - detail::bit_cast<int64_t>(kMagic);
  const int64_t n2 = ni - n1;
  const double s1 = detail::bit_cast<double>((n1 + 1023) << 52);
  const double s2 = detail::bit_cast<double>((n2 + 1023) << 52);
  return y * s1 * s2;
}

// Other types (none today): the library function.
template <class T>
GRAPH_HOST_DEVICE inline T exp(T x) {
  using std::exp;
  return exp(x);
}

// ---- tanh ----------------------------------------------------------------

GRAPH_HOST_DEVICE inline float tanh(float x) {
  const float a = detail::select(x < 0.0f, -x, x);
  // Small |x|: x + x^3 P(x^2).
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  // Otherwise 1 - 2 / (e^{2|x|} + 1). tanh rounds to 1 from |x| = 9.01 on:
  // clamping there keeps e^{2|x|} normal (one scale factor, no overflow).
  int32_t ni;
  const float y2 = detail::exp_reduced(detail::select(a > 9.1f, 18.2f, 2.0f * a), ni);
  const float e = y2 * detail::bit_cast<float>((ni + 127) << 23);
  const float big = 1.0f - 2.0f / (e + 1.0f);
  const float signed_big = detail::select(x < 0.0f, -big, big);
  const float y = detail::select(a < 0.625f, small, signed_big);
  return detail::select(x == 0.0f, x, y);  // the sum above turns -0 into +0
}

GRAPH_HOST_DEVICE inline double tanh(double x) {
  const double a = detail::select(x < 0.0, -x, x);
  const double z = x * x;
  const double p = (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z - 1.61468768441708447952e3;
  const double q = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z + 4.84406305325125486048e3;
  const double small = x + x * z * (p / q);
  const double e = graph::math::exp(2.0 * a);
  const double big = 1.0 - 2.0 / (e + 1.0);
  const double signed_big = detail::select(x < 0.0, -big, big);
  const double y = detail::select(a < 0.625, small, signed_big);
  return detail::select(x == 0.0, x, y);
}

template <class T>
GRAPH_HOST_DEVICE inline T tanh(T x) {
  using std::tanh;
  return tanh(x);
}

}  // namespace graph::math
