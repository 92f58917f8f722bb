// argsort (issue 19), the kernel of sort and topk (inline in ops.h: argsort,
// all of it or its first k, then gather), and the eager checks of topk and
// norm's string p. Lines of at most 64 keys of 32 bits sort in a bitonic
// network on AVX-512 (float32 along the last dim: keys built in vectors too).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <numeric>
#include <utility>
#include <string>
#include <vector>

#if defined(__x86_64__)
// GCC 12 warns of the intrinsics' own `__Y = __Y` placeholders once inlined
// into AVX-512 code (a false positive, at the header's lines).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif

#include "graph/cpu_isa.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// An unsigned key whose order is the value order argsort wants: NaN (any
// payload) the largest, -0.0 equal to 0.0, as PyTorch compares them. Written
// with selects and masks only: the keys of random data are built with no
// mispredicted branch (they were half of a topk's time with branches).
template <class T>
auto order_key(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
    constexpr U sign = U(1) << (sizeof(T) * 8 - 1);
    U bits = std::bit_cast<U>(v);
    bits = v == T(0) ? U(0) : bits;
    const U flip = U(U(0) - (bits >> (sizeof(T) * 8 - 1))) | sign;  // negative: all bits; else the sign bit
    const U key = bits ^ flip;
    return v != v ? U(~U(0)) : key;
  } else if constexpr (std::is_same_v<T, bool>) {
    return uint32_t(v);
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr U flip = std::is_signed_v<T> ? U(U(1) << (sizeof(T) * 8 - 1)) : U(0);
    return U(U(v) ^ flip);
  }
}

// Short lines (at most kNetMax items) of packed keys on AVX-512: a bitonic
// sorting network over 8 R items in R registers (lanes padded with ~0, which
// sorts last). std::sort of 64 random keys mispredicts about every other
// compare, which was most of sort's time; the network's min/max steps have no
// branch. It sorts the packed keys, as std::sort does, so the result is the
// same permutation.
constexpr int64_t kNetMax = 64;

#if GRAPH_ISA_DISPATCH
// Compare-exchange of each lane with lane ^ j (j = 1, 2, 4): lanes whose bit j
// is clear keep the min where the step sorts upwards (`up`), else the max.
GRAPH_TARGET_AVX512 inline __m512i lane_step(__m512i v, int j, __mmask8 up) {
  const __m512i idx = j == 1 ? _mm512_set_epi64(6, 7, 4, 5, 2, 3, 0, 1)
                      : j == 2 ? _mm512_set_epi64(5, 4, 7, 6, 1, 0, 3, 2)
                               : _mm512_set_epi64(3, 2, 1, 0, 7, 6, 5, 4);
  const __mmask8 lower = j == 1 ? 0x55 : j == 2 ? 0x33 : 0x0F;
  const __m512i p = _mm512_maskz_permutexvar_epi64(0xFF, idx, v);
  const __m512i lo = _mm512_maskz_min_epu64(0xFF, v, p), hi = _mm512_maskz_max_epu64(0xFF, v, p);
  return _mm512_mask_blend_epi64(static_cast<__mmask8>(~(lower ^ up)), hi, lo);
}

// Item e = 8 r + lane of v[r]; the textbook network: for each block size k,
// items e and e ^ j (j = k / 2 .. 1) ordered upwards where e & k is 0.
template <int R>
GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void bitonic_sort(uint64_t* items) {
  __m512i v[R];
  for (int r = 0; r < R; ++r) v[r] = _mm512_loadu_si512(items + 8 * r);
#pragma GCC unroll 8
  for (int k = 2; k <= 8 * R; k *= 2) {
#pragma GCC unroll 8
    for (int j = k / 2; j >= 1; j /= 2) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const bool up = ((r * 8) & k) == 0;  // k >= 8: the register decides
        if (j < 8) {
          v[r] = lane_step(v[r], j, k < 8 ? (k == 2 ? 0x33 : 0x0F) : up ? 0xFF : 0x00);
        } else if ((r & (j / 8)) == 0) {
          const int q = r | (j / 8);
          const __m512i lo = _mm512_maskz_min_epu64(0xFF, v[r], v[q]), hi = _mm512_maskz_max_epu64(0xFF, v[r], v[q]);
          v[r] = up ? lo : hi;
          v[q] = up ? hi : lo;
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) _mm512_storeu_si512(items + 8 * r, v[r]);
}

GRAPH_TARGET_AVX512 void network_sort(uint64_t* items, int64_t n) {
  const int64_t regs = (n + 7) / 8;
  const int64_t padded = regs <= 1 ? 8 : regs <= 2 ? 16 : regs <= 4 ? 32 : 64;
  for (int64_t i = n; i < padded; ++i) items[i] = ~uint64_t{0};
  if (padded == 8) return bitonic_sort<1>(items);
  if (padded == 16) return bitonic_sort<2>(items);
  if (padded == 32) return bitonic_sort<4>(items);
  bitonic_sort<8>(items);
}

// A float32 line along the last dim, whole on AVX-512: order_key's keys built
// 16 at a time (the scalar loop was as costly as the network), packed with
// their positions, sorted, and the first k positions written 8 at a time.
GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void network_sort_f32(const float* x, int64_t n, int64_t k, bool descending,
                                                           uint64_t* items, int64_t* out) {
  const int64_t regs = (n + 7) / 8;
  const int64_t padded = regs <= 1 ? 8 : regs <= 2 ? 16 : regs <= 4 ? 32 : 64;
  const __m512i sign = _mm512_set1_epi32(INT32_MIN), ones = _mm512_set1_epi32(-1);
  const __m512i flip = descending ? ones : _mm512_setzero_si512();
  const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  for (int64_t j = 0; j < padded; j += 16) {
    const __mmask16 valid = static_cast<__mmask16>(n - j >= 16 ? 0xFFFF : n - j <= 0 ? 0 : (1u << (n - j)) - 1);
    const __m512 f = _mm512_maskz_loadu_ps(valid, x + j);
    const __mmask16 zero = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_EQ_OQ);
    const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    const __m512i bits = _mm512_maskz_mov_epi32(static_cast<__mmask16>(~zero), _mm512_castps_si512(f));  // -0.0 is 0.0
    __m512i key = _mm512_xor_si512(bits, _mm512_or_si512(_mm512_srai_epi32(bits, 31), sign));
    key = _mm512_xor_si512(_mm512_mask_mov_epi32(key, nan, ones), flip);  // NaN the largest
    key = _mm512_mask_mov_epi32(ones, valid, key);                          // padding: ~0 with ~0 below
    const __m512i pos = _mm512_add_epi64(lane, _mm512_set1_epi64(j));
    const __m512i lo = _mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(key)), 32);
    const __m512i hi = _mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(key, 1)), 32);
    const __m512i pad = _mm512_set1_epi64(-1);
    const __mmask8 vlo = static_cast<__mmask8>(valid), vhi = static_cast<__mmask8>(valid >> 8);
    _mm512_storeu_si512(items + j, _mm512_mask_or_epi64(pad, vlo, lo, pos));
    const __m512i pos_hi = _mm512_add_epi64(pos, _mm512_set1_epi64(8));
    if (j + 8 < padded) _mm512_storeu_si512(items + j + 8, _mm512_mask_or_epi64(pad, vhi, hi, pos_hi));
  }
  if (padded == 8) bitonic_sort<1>(items);
  else if (padded == 16) bitonic_sort<2>(items);
  else if (padded == 32) bitonic_sort<4>(items);
  else bitonic_sort<8>(items);
  const __m512i low = _mm512_set1_epi64(0xFFFFFFFF);
  for (int64_t j = 0; j < k; j += 8) {
    const __mmask8 m = static_cast<__mmask8>(k - j >= 8 ? 0xFF : (1u << (k - j)) - 1);
    _mm512_mask_storeu_epi64(out + j, m, _mm512_and_si512(_mm512_loadu_si512(items + j), low));
  }
}
#endif

// The permutation that sorts each line along dim, stably, or its first k
// indices (k < n: topk, a partial sort, O(n log k)). Each element is sorted
// as (key, position): the position breaks ties, which is the stable order
// without stable_sort's buffer; descending inverts the key only, so ties stay
// in position order there too. Keys of at most 32 bits and a position below
// 2^32 pack into one uint64 (`packed`), the fastest thing std::sort can
// compare. out has the lines' shape with k in place of n.
template <class T, bool packed>
void argsort_lines(const T* x, int64_t* out, int64_t outer, int64_t n, int64_t inner, int64_t k, bool descending) {
  using K = decltype(order_key(T{}));
  using Item = std::conditional_t<packed, uint64_t, std::pair<uint64_t, int64_t>>;
  const K flip = descending ? K(~K(0)) : K(0);
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n * 8, 1));
  // The network sorts whole lines: for a small k (topk) the partial sort,
  // whose compares mostly agree, is cheaper, unless the keys are built in
  // vectors too (float32 along the last dim).
#if GRAPH_ISA_DISPATCH
  const bool whole = 4 * k > n || (std::is_same_v<T, float> && inner == 1);
  const bool network = packed && n <= kNetMax && whole && cpu::isa() == cpu::kAvx512;
#else
  const bool network = false;
#endif
  cpu::parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
    alignas(64) Item small[kNetMax];  // short lines need no allocation
    std::vector<Item> heap(n > kNetMax ? static_cast<size_t>(n) : 0);
    Item* line = n > kNetMax ? heap.data() : small;
    for (int64_t l = begin; l < end; ++l) {
      const int64_t base = (l / inner) * n * inner + l % inner;
      const auto item = [&](T v, int64_t j) {
        const K key = K(order_key(v) ^ flip);
        if constexpr (packed) return Item(uint64_t(key) << 32 | uint64_t(j));
        else return Item{uint64_t(key), j};
      };
#if GRAPH_ISA_DISPATCH
      if constexpr (std::is_same_v<T, float> && packed) {
        if (network && inner == 1) {
          network_sort_f32(x + base, n, k, descending, line, out + (l / inner) * k);
          continue;
        }
      }
#endif
      if (inner == 1)  // a plain loop for the common last-dim case
        for (int64_t j = 0; j < n; ++j) line[j] = item(x[base + j], j);
      else
        for (int64_t j = 0; j < n; ++j) line[j] = item(x[base + j * inner], j);
      const int64_t at = (l / inner) * k * inner + l % inner;
      if (!network) {
        if (k < n) std::partial_sort(line, line + k, line + n);
        else std::sort(line, line + n);
      }
#if GRAPH_ISA_DISPATCH
      if constexpr (packed)
        if (network) network_sort(line, n);
#endif
      for (int64_t j = 0; j < k; ++j) {
        if constexpr (packed) out[at + j * inner] = int64_t(line[j] & 0xffffffffu);
        else out[at + j * inner] = line[j].second;
      }
    }
  });
}

// argsort's first k indices along dim (k < 0: all of them).
Tensor argsort_impl(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  const char* name = k < 0 ? "argsort" : "topk";
  detail::check_defined(name, x);
  if (x.device() == Device::CUDA)
    throw Error(std::string(name) + ": no CUDA kernel yet, got a cuda tensor of shape " + shape_str(x.sizes()) +
                "; move it with .to(kCPU)");
  const int64_t d = detail::wrap_dim(name, dim, x.sizes());
  if (k >= 0) detail::check_topk(x, k, dim);
  if (x.dim() == 0) return k == 0 ? empty({0}, kInt64) : zeros({}, kInt64);
  const int64_t n = x.size(d);
  if (k < 0) k = n;
  // 16-bit floats sort in float32 (the same order); the rest as they are.
  const Tensor xc = x.to(opmath_dtype(x.dtype())).contiguous();
  Shape shape = x.sizes();
  shape[d] = k;
  Tensor out = empty(shape, kInt64);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.dim(); ++i) (i < d ? outer : inner) *= i == d ? 1 : x.size(i);
  dispatch_opmath(xc.dtype(), [&](auto v) {
    using T = decltype(v);
    int64_t* o = out.data_ptr<int64_t>();
    if constexpr (sizeof(order_key(T{})) <= 4) {
      if (n <= int64_t{1} << 32) return argsort_lines<T, true>(xc.data_ptr<T>(), o, outer, n, inner, k, descending);
    }
    argsort_lines<T, false>(xc.data_ptr<T>(), o, outer, n, inner, k, descending);
  });
  return out;
}

}  // namespace

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  if (detail::tracing())
    return detail::trace_op("argsort", {x}, {{"dim", dim}, {"descending", descending}},
                            [&] { return argsort(x, dim, descending); });
  return argsort_impl(x, dim, descending, -1);
}

Tensor detail::argsort_first(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  if (detail::tracing())
    return detail::trace_op("argsort", {x}, {{"dim", dim}, {"descending", descending}, {"k", k}},
                            [&] { return argsort_first(x, dim, descending, k); });
  return argsort_impl(x, dim, descending, k);
}

namespace detail {

void check_topk(const Tensor& x, int64_t k, int64_t dim) {
  check_defined("topk", x);
  const int64_t d = wrap_dim("topk", dim, x.sizes());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  if (k < 0 || k > n)
    throw Error("topk: k = " + std::to_string(k) + " is out of range for dim " + std::to_string(d) + " of size " +
                std::to_string(n) + " (input shape " + shape_str(x.sizes()) + ")");
}

double norm_p(std::string_view p) {
  if (p == "fro") return 2.0;
  throw Error("norm: p = \"" + std::string(p) +
              "\" is not supported (\"fro\" is; the matrix norm \"nuc\" is not): give p as a number, "
              "2, 1, INFINITY or another value");
}

}  // namespace detail

}  // namespace graph
