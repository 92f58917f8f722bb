#pragma once
// Branch-free exp, tanh, log and log1p for float and double, written so that a plain loop
// calling them vectorizes (GCC 12 -O3, baseline SSE2 included): no libm calls,
// no data-dependent branches (selects only), no float <-> int conversions
// (2^n is built from the bits of the rounded exponent). The bodies are plain
// C++ with no intrinsics, so the eager kernels, the generated fused loops and
// CUDA use the same math.
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
//   log : x = m 2^e, m in [sqrt(1/2), sqrt(2)) from the bits, then Cephes'
//         polynomial (float) / rational (double) in m - 1; log1p through
//         log(1 + x) * x / ((1 + x) - 1), expm1 through
//         (exp(x) - 1) * x / log(exp(x)).
//
// On the device (__CUDA_ARCH__) each is CUDA's own function (expf, tanhf, ...,
// within 2 ulp, and `?:` for select): the GPU has no vectors to fill, and
// these polynomials made a compute-bound chain slower there (an 8-op chain on
// 256M floats ran at 77% of the H200's copy bandwidth, 98% with CUDA's math).
//
// Measured (tests/fast_math_test.cpp): float32 results within 1 ulp of the
// correctly rounded value (std:: in double, rounded) over all float inputs
// checked (log1p: 2); double within 2 ulp of std:: (log1p: 3 allowed, 2 seen).
// ops.def's exp, expm1, tanh, log, log1p, erf, sigmoid, silu, softplus, elu and gelu
// call them.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
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

// Forced inline (exp, log, erf, expm1): GCC's inliner left them a call
// inside big fused loops (a GPT block's erf) and in elu's loop (expm1's exp
// and log), which then ran them one element at a time.
#if defined(__CUDACC__)
#define GRAPH_MATH_FORCE_INLINE __forceinline__
#elif defined(__GNUC__)
#define GRAPH_MATH_FORCE_INLINE __attribute__((always_inline)) inline
#else
#define GRAPH_MATH_FORCE_INLINE inline
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
#if defined(__CUDA_ARCH__)
  return c ? a : b;
#endif
  const int32_t m = c ? int32_t(-1) : int32_t(0);
  return bit_cast<float>((bit_cast<int32_t>(a) & m) | (bit_cast<int32_t>(b) & ~m));
}
GRAPH_HOST_DEVICE inline double select(bool c, double a, double b) {
#if defined(__CUDA_ARCH__)
  return c ? a : b;
#endif
  const int64_t m = c ? int64_t(-1) : int64_t(0);
  return bit_cast<double>((bit_cast<int64_t>(a) & m) | (bit_cast<int64_t>(b) & ~m));
}

}  // namespace detail

// c ? a : b for scalar bodies (ops.def) that must vectorize: both sides are
// computed, then one is picked by its bits; a `?:` there keeps GCC's loop scalar.
GRAPH_HOST_DEVICE inline float select(bool c, float a, float b) { return detail::select(c, a, b); }
GRAPH_HOST_DEVICE inline double select(bool c, double a, double b) { return detail::select(c, a, b); }
template <class T>  // integers and bool (constant folding instantiates every body)
GRAPH_HOST_DEVICE inline T select(bool c, T a, T b) {
  return c ? a : b;
}

// ---- exp -----------------------------------------------------------------

namespace detail {

// e^x = y * 2^n with y = e^r, x = n ln2 + r, |r| <= ln2/2 (|x| < 2^21).
GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE float exp_reduced(float x, int32_t& ni) {
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

GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE float exp(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#endif
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

GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE double exp(double x) {
#if defined(__CUDA_ARCH__)
  return ::exp(x);
#endif
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
#if defined(__CUDA_ARCH__)
  return ::tanhf(x);
#endif
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
#if defined(__CUDA_ARCH__)
  return ::tanh(x);
#endif
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

// ---- log, log1p -----------------------------------------------------------

// log(x) = e ln2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)): m's bits
// are x's mantissa re-based at sqrt(1/2)'s (no division, no libm), then
// Cephes' polynomials in f = m - 1 (float: degree 9; double: P/Q of degree
// 5), with ln2 in two parts. Subnormals are scaled into the normal range
// first. 0 gives -inf, negatives NaN, +inf +inf, NaN stays NaN.
GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE float log(float x) {
#if defined(__CUDA_ARCH__)
  return ::logf(x);
#endif
  const bool tiny = x < 1.17549435e-38f;  // subnormal (or 0, negative: fixed below)
  const float xs = detail::select(tiny, x * 8388608.0f, x);  // * 2^23
  // In unsigned arithmetic: a negative x's bits minus these overflow an int
  // (undefined; the select below discards that lane anyway).
  const int32_t i = static_cast<int32_t>(detail::bit_cast<uint32_t>(xs) - 0x3f3504f3u);  // sqrt(1/2)'s bits
  // The exponent as a float through the 1.5 * 2^23 magic (as exp does).
  const float e = (detail::bit_cast<float>((i >> 23) + 0x4b400000) - 12582912.0f) - detail::select(tiny, 23.0f, 0.0f);
  const float f = detail::bit_cast<float>((i & 0x007fffff) + 0x3f3504f3) - 1.0f;
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * z;
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + e * 0.693359375f;
  r = detail::select(x == 0.0f, -INFINITY, r);
  r = detail::select(x < 0.0f, NAN, r);
  r = detail::select(x == INFINITY, x, r);
  return detail::select(x != x, x, r);
}

GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE double log(double x) {
#if defined(__CUDA_ARCH__)
  return ::log(x);
#endif
  const bool tiny = x < 2.2250738585072014e-308;
  const double xs = detail::select(tiny, x * 4503599627370496.0, x);  // * 2^52
  constexpr int64_t kHalfRoot = 0x3fe6a09e667f3bcdLL;  // sqrt(1/2)'s bits
  const int64_t i = static_cast<int64_t>(detail::bit_cast<uint64_t>(xs) - static_cast<uint64_t>(kHalfRoot));  // as above
  // The exponent without a 64-bit arithmetic shift or int64 -> double
  // conversion (neither is in SSE2/AVX2): biased by 1024, then read as the
  // low bits of 2^52.
  const uint64_t biased = (static_cast<uint64_t>(i) + (uint64_t{1024} << 52)) >> 52;
  const double e = (detail::bit_cast<double>(biased | 0x4330000000000000ULL) - 4503599627370496.0) - 1024.0 -
                   detail::select(tiny, 52.0, 0.0);
  const double f = detail::bit_cast<double>((i & 0x000fffffffffffffLL) + kHalfRoot) - 1.0;
  const double z = f * f;
  const double p = ((((1.01875663804580931796e-4 * f + 4.97494994976747001425e-1) * f + 4.70579119878881725854e0) * f +
                     1.44989225341610930846e1) * f + 1.79368678507819816313e1) * f + 7.70838733755885391666e0;
  const double q = ((((f + 1.12873587189167450590e1) * f + 4.52279145837532221105e1) * f + 8.29875266912776603211e1) * f +
                    7.11544750618563894466e1) * f + 2.31251620126765340583e1;
  double y = f * (z * p / q);
  y = y + e * -2.121944400546905827679e-4;
  y = y - 0.5 * z;
  double r = f + y;
  r = r + e * 0.693359375;
  r = detail::select(x == 0.0, -static_cast<double>(INFINITY), r);
  r = detail::select(x < 0.0, static_cast<double>(NAN), r);
  r = detail::select(x == static_cast<double>(INFINITY), x, r);
  return detail::select(x != x, x, r);
}

template <class T>
GRAPH_HOST_DEVICE inline T log(T x) {
  using std::log;
  return log(x);
}

// log(1 + x) = log(u) * x / (u - 1), u = 1 + x rounded (Goldberg): the
// factor undoes u's rounding error, so small x keep their digits; where u
// rounds to 1, x itself.
template <class T>
GRAPH_HOST_DEVICE inline T log1p(T x) {
  if constexpr (std::is_integral_v<T>) {  // instantiated for bool and ints, never run
    return static_cast<T>(graph::math::log1p(static_cast<double>(x)));
  } else {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) return ::log1pf(x);
    if constexpr (std::is_same_v<T, double>) return ::log1p(x);
#endif
    const T u = T(1) + x;
    const T d = u - T(1);
    T r = graph::math::log(u) * (x / d);
    r = graph::math::select(d == T(0), x, r);
    return graph::math::select(x == T(INFINITY), x, r);  // inf / inf above
  }
}

// exp(x) - 1 = (u - 1) * x / log(u), u = exp(x) rounded (Kahan): the factor
// undoes u's rounding error, as log1p's does; where u rounds to 1, x itself
// (-0 stays -0); where u - 1 is -1 (x below about -17 in float), -1; +inf
// stays +inf. Vectorizes where libm's expm1 is a call per element (elu);
// forced inline as erf, since GCC left it a call inside elu's select.
template <class T>
GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE T expm1(T x) {
  if constexpr (std::is_integral_v<T>) {  // instantiated for bool and ints, never run
    return static_cast<T>(graph::math::expm1(static_cast<double>(x)));
  } else {
#if defined(__CUDA_ARCH__)
    if constexpr (std::is_same_v<T, float>) return ::expm1f(x);
    if constexpr (std::is_same_v<T, double>) return ::expm1(x);
#endif
    const T u = graph::math::exp(x);
    const T d = u - T(1);
    T r = d * (x / graph::math::log(u));
    r = graph::math::select(u == T(1), x, r);
    r = graph::math::select(d == T(-1), T(-1), r);
    return graph::math::select(u == T(INFINITY), u, r);  // inf / inf above
  }
}

// ---- erf -----------------------------------------------------------------
// float: |x| <= 1: x P(x^2), P of degree 6; 1 < |x| < 4: 1 - exp(-x^2) Q(1/|x|),
// Q of degree 8 approximating erfc(x) e^{x^2}; |x| >= 4 gives 1 (erfc(4) is
// below half an ulp of 1), with x's sign. Both branches are computed and one is
// selected, so loops of it vectorize (libm's erff is a call per element: a
// fifth of a Transformer block's time went to it through gelu). The
// coefficients are least-squares fits weighted toward the largest relative
// error; against double erf the result is within 1.5e-7 (2.5 ulp) for every
// float. NaN stays NaN. double: libm's erf.
GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE float erf(float x) {
#if defined(__CUDA_ARCH__)
  return ::erff(x);
#endif
  const float a = detail::select(x < 0.0f, -x, x);
  const float t = a * a;
  float p = 7.447598909e-05f;
  p = p * t - 7.876655436e-04f;
  p = p * t + 5.171407945e-03f;
  p = p * t - 2.684349008e-02f;
  p = p * t + 1.128327772e-01f;
  p = p * t - 3.761258721e-01f;
  p = p * t + 1.128379107e+00f;
  const float small = a * p;
  const float c = detail::select(a > 4.0f, 4.0f, detail::select(a < 1.0f, 1.0f, a));
  const float u = 1.0f / c;
  float q = -1.113458909e-02f;
  q = q * u + 3.659915179e-02f;
  q = q * u + 7.430165075e-03f;
  q = q * u - 2.235806733e-01f;
  q = q * u + 4.845122397e-01f;
  q = q * u - 4.663992524e-01f;
  q = q * u + 4.066200554e-02f;
  q = q * u + 5.592361093e-01f;
  q = q * u + 2.583997848e-04f;
  const float large = 1.0f - graph::math::exp(-(c * c)) * q;
  const float r = detail::select(a <= 1.0f, small, large);
  return detail::select(x < 0.0f, -r, r);
}

template <class T>
GRAPH_HOST_DEVICE inline T erf(T x) {
  using std::erf;
  return erf(x);
}

}  // namespace graph::math
