// argsort (issue 19), the kernel of sort and topk (inline in ops.h: argsort,
// all of it or its first k, then gather), and the eager checks of topk and
// norm's string p. Lines of at most 64 keys of 32 bits sort in a bitonic
// network on AVX-512 (float32 along the last dim: keys built in vectors too);
// topk with k <= 8 keeps only the lowest 8 (float32 lines of any length).
// On the device, CUB's stable segmented sort of the same keys (cuda/src/sort.cu).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <numeric>
#include <utility>
#include <string>
#include <vector>

#include "x86_intrinsics.h"

#include "graph/cpu_isa.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "device_ops.h"
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
  // The partners by immediate shuffles (swap qwords in 128-bit lanes, 128-bit
  // halves of 256, 256-bit halves), cheaper than a permute by an index vector
  // and on the network's dependency chains.
  const __m512i p = j == 1   ? _mm512_shuffle_epi32(v, _MM_PERM_BADC)
                    : j == 2 ? _mm512_permutex_epi64(v, 0x4E)
                             : _mm512_shuffle_i64x2(v, v, 0x4E);
  const __mmask8 lower = j == 1 ? 0x55 : j == 2 ? 0x33 : 0x0F;
  // The min everywhere, the max over it where kept: 3 instructions, not 4.
  return _mm512_mask_max_epu64(_mm512_min_epu64(v, p), static_cast<__mmask8>(lower ^ up), v, p);
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

// order_key of 16 floats (the lanes of `valid`; ~0 elsewhere, which sorts
// last), inverted when descending, in vectors: the scalar loop was as costly
// as the network.
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i f32_keys(const float* x, __mmask16 valid, __m512i flip) {
  const __m512i sign = _mm512_set1_epi32(INT32_MIN), ones = _mm512_set1_epi32(-1);
  const __m512 f = _mm512_maskz_loadu_ps(valid, x);
  const __mmask16 zero = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_EQ_OQ);
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  const __m512i bits = _mm512_maskz_mov_epi32(static_cast<__mmask16>(~zero), _mm512_castps_si512(f));  // -0.0 is 0.0
  __m512i key = _mm512_xor_si512(bits, _mm512_or_si512(_mm512_srai_epi32(bits, 31), sign));
  key = _mm512_xor_si512(_mm512_mask_mov_epi32(key, nan, ones), flip);  // NaN the largest
  return _mm512_mask_mov_epi32(ones, valid, key);
}

// Keys 0-7 (half 0) or 8-15 (half 1) of f32_keys packed with their positions
// pos + lane; padding lanes all ~0.
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i f32_pack(__m512i key, int half, __mmask16 valid, int64_t pos) {
  const __m256i k8 = half == 0 ? _mm512_castsi512_si256(key) : _mm512_extracti64x4_epi64(key, 1);
  const __m512i hi = _mm512_slli_epi64(_mm512_cvtepu32_epi64(k8), 32);
  const __m512i lane = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(pos + 8 * half));
  const __mmask8 v = static_cast<__mmask8>(valid >> (8 * half));
  return _mm512_mask_or_epi64(_mm512_set1_epi64(-1), v, hi, lane);
}

GRAPH_ISA_INLINE __mmask16 first_lanes(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xFFFF : n <= 0 ? 0 : (1u << n) - 1);
}

// float32 items of x[0, n) (positions base + j) into items[0, padded).
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 void f32_items(const float* x, int64_t n, int64_t padded, int64_t base,
                                                    bool descending, uint64_t* items) {
  const __m512i flip = descending ? _mm512_set1_epi32(-1) : _mm512_setzero_si512();
  for (int64_t j = 0; j < padded; j += 16) {
    const __mmask16 valid = first_lanes(n - j);
    const __m512i key = f32_keys(x + j, valid, flip);
    _mm512_storeu_si512(items + j, f32_pack(key, 0, valid, base + j));
    if (j + 8 < padded) _mm512_storeu_si512(items + j + 8, f32_pack(key, 1, valid, base + j));
  }
}

// The positions (low halves) of the first k items, 8 at a time.
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 void store_positions(const uint64_t* items, int64_t k, int64_t* out) {
  const __m512i low = _mm512_set1_epi64(0xFFFFFFFF);
  for (int64_t j = 0; j < k; j += 8) {
    const __mmask8 m = static_cast<__mmask8>(k - j >= 8 ? 0xFF : (1u << (k - j)) - 1);
    _mm512_mask_storeu_epi64(out + j, m, _mm512_and_si512(_mm512_loadu_si512(items + j), low));
  }
}

// A float32 line along the last dim, whole on AVX-512: keys built, sorted, and
// the first k positions written.
GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void network_sort_f32(const float* x, int64_t n, int64_t k, bool descending,
                                                           uint64_t* items, int64_t* out) {
  const int64_t regs = (n + 7) / 8;
  const int64_t padded = regs <= 1 ? 8 : regs <= 2 ? 16 : regs <= 4 ? 32 : 64;
  f32_items(x, n, padded, 0, descending, items);
  if (padded == 8) bitonic_sort<1>(items);
  else if (padded == 16) bitonic_sort<2>(items);
  else if (padded == 32) bitonic_sort<4>(items);
  else bitonic_sort<8>(items);
  store_positions(items, k, out);
}

// Top-k for k <= 8 (topk's usual case): only the lowest 8 items are kept, so
// each register is sorted alone (6 lane steps) and two sorted registers merge
// into their lower half (a min with the other reversed: a bitonic sequence,
// then 3 lane steps), about half of a whole sort's steps on 64 keys. The
// packed keys are distinct, so the 8 kept are the whole sort's first 8.
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i sort8(__m512i v) {
  v = lane_step(v, 1, 0x33);
  v = lane_step(v, 2, 0x0F);
  v = lane_step(v, 1, 0x0F);
  v = lane_step(v, 4, 0xFF);
  v = lane_step(v, 2, 0xFF);
  return lane_step(v, 1, 0xFF);
}

GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i merge_low(__m512i a, __m512i b) {
  const __m512i rev = _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  __m512i v = _mm512_min_epu64(a, _mm512_permutexvar_epi64(rev, b));
  v = lane_step(v, 4, 0xFF);
  v = lane_step(v, 2, 0xFF);
  return lane_step(v, 1, 0xFF);
}

// The lowest 8 of 8 R items, sorted; the merges in a tree (depth log2 R, not
// a chain of R dependent merges), written as a recursion so that every
// register stays a register (a loop over an array of them spilled it).
template <int R>
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i lowest8(const uint64_t* items);

GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 void exchange(__m512i& a, __m512i& b) {
  const __m512i lo = _mm512_min_epu64(a, b);
  b = _mm512_max_epu64(a, b);
  a = lo;
}

// 64 items: the 8 columns (lane c of each register) sorted at once by a
// 19-exchange network of register min/max, then the 8 x 8 block transposed so
// that each register holds a sorted column: 62 instructions with no chain of
// dependent shuffles, where sorting the 8 registers alone is 48 lane steps.
template <>
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i lowest8<8>(const uint64_t* items) {
  __m512i v0 = _mm512_loadu_si512(items), v1 = _mm512_loadu_si512(items + 8), v2 = _mm512_loadu_si512(items + 16);
  __m512i v3 = _mm512_loadu_si512(items + 24), v4 = _mm512_loadu_si512(items + 32);
  __m512i v5 = _mm512_loadu_si512(items + 40), v6 = _mm512_loadu_si512(items + 48), v7 = _mm512_loadu_si512(items + 56);
  exchange(v0, v2), exchange(v1, v3), exchange(v4, v6), exchange(v5, v7);
  exchange(v0, v4), exchange(v1, v5), exchange(v2, v6), exchange(v3, v7);
  exchange(v0, v1), exchange(v2, v3), exchange(v4, v5), exchange(v6, v7);
  exchange(v2, v4), exchange(v3, v5);
  exchange(v1, v4), exchange(v3, v6);
  exchange(v1, v2), exchange(v3, v4), exchange(v5, v6);
  const __m512i t0 = _mm512_unpacklo_epi64(v0, v1), t1 = _mm512_unpackhi_epi64(v0, v1);
  const __m512i t2 = _mm512_unpacklo_epi64(v2, v3), t3 = _mm512_unpackhi_epi64(v2, v3);
  const __m512i t4 = _mm512_unpacklo_epi64(v4, v5), t5 = _mm512_unpackhi_epi64(v4, v5);
  const __m512i t6 = _mm512_unpacklo_epi64(v6, v7), t7 = _mm512_unpackhi_epi64(v6, v7);
  const __m512i u0 = _mm512_shuffle_i64x2(t0, t2, 0x88), u1 = _mm512_shuffle_i64x2(t1, t3, 0x88);
  const __m512i u2 = _mm512_shuffle_i64x2(t0, t2, 0xDD), u3 = _mm512_shuffle_i64x2(t1, t3, 0xDD);
  const __m512i u4 = _mm512_shuffle_i64x2(t4, t6, 0x88), u5 = _mm512_shuffle_i64x2(t5, t7, 0x88);
  const __m512i u6 = _mm512_shuffle_i64x2(t4, t6, 0xDD), u7 = _mm512_shuffle_i64x2(t5, t7, 0xDD);
  const __m512i c0 = _mm512_shuffle_i64x2(u0, u4, 0x88), c1 = _mm512_shuffle_i64x2(u1, u5, 0x88);
  const __m512i c2 = _mm512_shuffle_i64x2(u2, u6, 0x88), c3 = _mm512_shuffle_i64x2(u3, u7, 0x88);
  const __m512i c4 = _mm512_shuffle_i64x2(u0, u4, 0xDD), c5 = _mm512_shuffle_i64x2(u1, u5, 0xDD);
  const __m512i c6 = _mm512_shuffle_i64x2(u2, u6, 0xDD), c7 = _mm512_shuffle_i64x2(u3, u7, 0xDD);
  return merge_low(merge_low(merge_low(c0, c1), merge_low(c2, c3)), merge_low(merge_low(c4, c5), merge_low(c6, c7)));
}

template <int R>
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i lowest8(const uint64_t* items) {
  if constexpr (R == 1) return sort8(_mm512_loadu_si512(items));
  else return merge_low(lowest8<R / 2>(items), lowest8<R / 2>(items + 4 * R));
}

GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 __m512i lowest8_padded(uint64_t* items, int64_t n) {
  const int64_t regs = (n + 7) / 8;
  const int64_t padded = regs <= 1 ? 8 : regs <= 2 ? 16 : regs <= 4 ? 32 : 64;
  for (int64_t i = n; i < padded; ++i) items[i] = ~uint64_t{0};
  return padded == 8 ? lowest8<1>(items) : padded == 16 ? lowest8<2>(items) : padded == 32 ? lowest8<4>(items)
                                                                                       : lowest8<8>(items);
}

// topk (k <= 8) of a line of at most kNetMax prebuilt items: the first 8
// items become the line's lowest 8, in order.
GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void network_top8(uint64_t* items, int64_t n) {
  _mm512_storeu_si512(items, lowest8_padded(items, n));
}

// topk (k <= 8) of a float32 line along the last dim of any length: the
// lowest 8 of the first kNetMax keys, then 16 keys at a time, and only the
// keys below the 8th kept one's go in (equal keys lose on position): a few
// inserted one by one, more as sorted halves merged. On random data few are,
// so a long line costs little more than building its keys; it needs no
// buffer of its own.
GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void network_top8_f32(const float* x, int64_t n, int64_t k, bool descending,
                                                           uint64_t* items, int64_t* out) {
  const int64_t m = std::min(kNetMax, n), regs = (m + 7) / 8;
  const int64_t padded = regs <= 1 ? 8 : regs <= 2 ? 16 : regs <= 4 ? 32 : 64;
  f32_items(x, m, padded, 0, descending, items);
  __m512i best = padded == 8 ? lowest8<1>(items) : padded == 16 ? lowest8<2>(items)
                 : padded == 32                  ? lowest8<4>(items)
                                                 : lowest8<8>(items);
  const __m512i flip = descending ? _mm512_set1_epi32(-1) : _mm512_setzero_si512();
  const __m512i last = _mm512_set1_epi32(15);  // the high half of item 7
  for (int64_t j = m; j < n; j += 16) {
    const __mmask16 valid = first_lanes(n - j);
    const __m512i key = f32_keys(x + j, valid, flip);
    const __mmask16 below = _mm512_cmplt_epu32_mask(key, _mm512_permutexvar_epi32(last, best));  // the 8th kept key
    if (below == 0) continue;
    if (std::popcount(unsigned(below)) <= 3) {
      // One or a few: each inserted alone, new[i] = min(best[i], max(x, best[i - 1])),
      // three steps where a sort and merge is ten.
      alignas(64) uint32_t keys[16];
      _mm512_store_si512(keys, key);
      for (unsigned b = below; b != 0; b &= b - 1) {
        const int i = std::countr_zero(b);
        const __m512i item = _mm512_set1_epi64(int64_t(uint64_t(keys[i]) << 32 | uint64_t(j + i)));
        const __m512i prev = _mm512_alignr_epi64(best, _mm512_setzero_si512(), 7);  // best[i - 1], 0 in lane 0
        best = _mm512_min_epu64(best, _mm512_max_epu64(item, prev));
      }
      continue;
    }
    if (below & 0xFF) best = merge_low(best, sort8(f32_pack(key, 0, valid, j)));
    if (below >> 8) best = merge_low(best, sort8(f32_pack(key, 1, valid, j)));
  }
  _mm512_storeu_si512(items, best);
  store_positions(items, k, out);
}

// topk (k <= 8) of two float32 lines of n <= kNetMax along the last dim (x
// and x + n; items and items + kNetMax): both networks in one body. One
// line's network is mostly a chain of dependent steps (its merges); two
// chains side by side fill the vector units a single one leaves idle.
template <int R>
GRAPH_ISA_INLINE GRAPH_TARGET_AVX512 void top8_f32_two(const float* x, int64_t n, int64_t k, bool descending,
                                                       uint64_t* items, int64_t* out) {
  f32_items(x, n, 8 * R, 0, descending, items);  // a constant padded length: unrolled
  f32_items(x + n, n, 8 * R, 0, descending, items + kNetMax);
  const __m512i a = lowest8<R>(items), b = lowest8<R>(items + kNetMax);
  _mm512_storeu_si512(items, a);
  _mm512_storeu_si512(items + kNetMax, b);
  store_positions(items, k, out);
  store_positions(items + kNetMax, k, out + k);
}

GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void network_top8_f32_two(const float* x, int64_t n, int64_t k,
                                                               bool descending, uint64_t* items, int64_t* out) {
  const int64_t regs = (n + 7) / 8;
  if (n == kNetMax) top8_f32_two<8>(x, kNetMax, k, descending, items, out);  // no partial vectors: plain loads
  else if (regs <= 1) top8_f32_two<1>(x, n, k, descending, items, out);
  else if (regs <= 2) top8_f32_two<2>(x, n, k, descending, items, out);
  else if (regs <= 4) top8_f32_two<4>(x, n, k, descending, items, out);
  else top8_f32_two<8>(x, n, k, descending, items, out);
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
  // vectors too (float32 along the last dim) or only 8 are kept (top8).
#if GRAPH_ISA_DISPATCH
  const bool avx512 = packed && cpu::isa() == cpu::kAvx512;
  const bool f32_last = std::is_same_v<T, float> && inner == 1;
  const bool top8_f32 = avx512 && f32_last && k <= 8;  // any length, in blocks
  const bool top8 = avx512 && n <= kNetMax && k <= 8;
  const bool network = avx512 && n <= kNetMax && (4 * k > n || f32_last);
#else
  const bool top8_f32 = false, top8 = false, network = false;
#endif
  cpu::parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
    alignas(64) Item small[2 * kNetMax];  // short lines (two at a time) need no allocation
    std::vector<Item> heap(n > kNetMax && !top8_f32 ? static_cast<size_t>(n) : 0);
    Item* line = n > kNetMax && !top8_f32 ? heap.data() : small;
    for (int64_t l = begin; l < end; ++l) {
      const int64_t base = (l / inner) * n * inner + l % inner;
      const auto item = [&](T v, int64_t j) {
        const K key = K(order_key(v) ^ flip);
        if constexpr (packed) return Item(uint64_t(key) << 32 | uint64_t(j));
        else return Item{uint64_t(key), j};
      };
#if GRAPH_ISA_DISPATCH
      if constexpr (std::is_same_v<T, float> && packed) {
        if (top8_f32 && n <= kNetMax && l + 1 < end) {  // two lines at once (inner is 1)
          network_top8_f32_two(x + base, n, k, descending, line, out + l * k);
          ++l;
          continue;
        }
        if (top8_f32) {
          network_top8_f32(x + base, n, k, descending, line, out + (l / inner) * k);
          continue;
        }
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
      if (!network && !top8) {
        if (k < n) std::partial_sort(line, line + k, line + n);
        else std::sort(line, line + n);
      }
#if GRAPH_ISA_DISPATCH
      if constexpr (packed) {
        if (top8) network_top8(line, n);
        else if (network) network_sort(line, n);
      }
#endif
      for (int64_t j = 0; j < k; ++j) {
        if constexpr (packed) out[at + j * inner] = int64_t(line[j] & 0xffffffffu);
        else out[at + j * inner] = line[j].second;
      }
    }
  });
}

// On the device: the rows along dim sorted whole by CUB (device_ops.h),
// then the first k kept.
Tensor argsort_cuda(const Tensor& x, int64_t d, bool descending, int64_t k) {
  const int64_t last = x.dim() - 1;
  const Tensor xc = x.to(opmath_dtype(x.dtype()));
  const Tensor rows = d == last ? xc.contiguous() : xc.transpose(d, last).contiguous();
  Tensor perm = detail::cuda_argsort_rows(rows, descending);
  if (k < x.size(d)) perm = perm.slice(last, 0, k);
  return d == last ? perm.contiguous() : perm.transpose(d, last).contiguous();
}

// argsort's first k indices along dim (k < 0: all of them).
Tensor argsort_impl(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  const char* name = k < 0 ? "argsort" : "topk";
  detail::check_defined(name, x);
  const int64_t d = detail::wrap_dim(name, dim, x.sizes());
  if (k >= 0) detail::check_topk(x, k, dim);
  if (x.dim() == 0) return (k == 0 ? empty({0}, kInt64) : zeros({}, kInt64)).to(x.device());
  const int64_t n = x.size(d);
  if (k < 0) k = n;
  if (x.device() == Device::CUDA) return argsort_cuda(x, d, descending, k);
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
