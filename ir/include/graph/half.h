#pragma once
// Storage types for 16-bit floats: graph::Half (IEEE binary16) and
// graph::BFloat16 (the top half of a float32). They only store: arithmetic
// converts to float (every kernel computes 16-bit dtypes in float32, as
// PyTorch's "opmath" does) and rounds back to nearest-even on store.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GRAPH_HALF_HD __host__ __device__
#else
#define GRAPH_HALF_HD
#endif

namespace graph {

namespace detail {

GRAPH_HALF_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

GRAPH_HALF_HD inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// float32 -> binary16, round to nearest even; overflow gives inf, NaN stays NaN.
GRAPH_HALF_HD inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (mag < 0x38800000u) {  // subnormal half (or zero): scale by 2^24 and round
    const float scaled = bits_float(mag) * 16777216.0f;  // exact
    uint32_t q = static_cast<uint32_t>(scaled);
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = ((mag - 0x38000000u) >> 13);  // rebias exponent 127 -> 15
  const uint32_t rest = mag & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

GRAPH_HALF_HD inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = static_cast<float>(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (man << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

// float32 -> bfloat16, round to nearest even; NaN stays NaN.
GRAPH_HALF_HD inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  GRAPH_HALF_HD Half(float f) : bits(detail::float_to_half_bits(f)) {}
  GRAPH_HALF_HD operator float() const { return detail::half_bits_to_float(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  GRAPH_HALF_HD BFloat16(float f) : bits(detail::float_to_bf16_bits(f)) {}
  GRAPH_HALF_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }
};

}  // namespace graph
