// Fused float32 attention on the CPU (attention_cpu.h).
//
// One task per (batch-head, block of kBlockQ queries), spread over the
// runtime's thread pool. A task walks the keys in blocks of kBlockK: scores
// S = Q K^T (K's block packed transposed so that the product runs along
// contiguous columns), scale, mask, then the online softmax: each query row
// keeps its running max m and sum l, rescales its accumulator by
// exp(m_old - m_new) and adds P V. Only a [kBlockQ, kBlockK] tile of scores
// exists at a time, in the task's thread-local scratch.
//
// The two products are one register-blocked kernel (4 rows x 16 or 32 columns of
// sums held in registers), compiled for baseline x86-64, AVX2 + FMA and
// AVX-512, picked per call (graph/cpu_isa.h). A BLAS call per tile was not
// used: at these tile sizes (64 x 64 x 64) its per-call cost is of the order
// of the product, and BLAS's OpenMP team cannot nest in the runtime's pool.
#include "attention_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "graph/cpu_isa.h"
#include "graph/fast_math.h"
#include "graph/parallel.h"

namespace graph::cpu {

namespace {

constexpr int64_t kBlockQ = 64, kBlockK = 128, kLanes = 16, kRows = 4;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

// Unlike the elementwise kernels these need not be bitwise equal across
// instruction sets (the math path's BLAS is not either): contraction on.
#if defined(__GNUC__) && !defined(__clang__) && !defined(GRAPH_ISA_FILE_FLAGS)
#define ATTN_KERNEL __attribute__((optimize("O3", "fp-contract=fast")))
#else
#define ATTN_KERNEL
#endif
#if GRAPH_ISA_DISPATCH
#define ATTN_AVX2 __attribute__((target("avx2,fma")))
#define ATTN_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma")))
#else
#define ATTN_AVX2
#define ATTN_AVX512
#endif

// Where one batch-head's operands are: element offsets per batch-head and
// the row stride (the last dim is dense).
struct Operand {
  const float* data = nullptr;
  std::vector<int64_t> off;
  int64_t ld = 0;
};

struct Problem {
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  float scale = 1;
  bool causal = false;
  Operand q, k, v;
  // Mask: bool (true keeps) or float (added); offsets per batch-head, strides
  // along L and S (0 where broadcast).
  const bool* mask_bool = nullptr;
  const float* mask_float = nullptr;
  std::vector<int64_t> mask_off;
  int64_t mask_si = 0, mask_sj = 0;
  float* out = nullptr;  // [BH, L, Ev] dense
};

// By reference: a 64-byte vector passed by value changes the ABI (-Wpsabi).
GRAPH_ISA_INLINE void load(Vec& v, const float* p) { std::memcpy(&v, p, sizeof v); }
GRAPH_ISA_INLINE void store(float* p, const Vec& v) { std::memcpy(p, &v, sizeof v); }

// Rows [i, i + kRows) x columns [j, j + NV * kLanes) of c += a @ b: the sums
// stay in registers over the whole inner dim.
template <int NV>
GRAPH_ISA_INLINE void tile_block(int64_t i, int64_t j, int64_t k, const float* a, int64_t lda, const float* b,
                                 int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  Vec s[kRows][NV];
  for (int64_t r = 0; r < kRows; ++r)
    for (int v = 0; v < NV; ++v) {
      s[r][v] = Vec{};
      if (accumulate) load(s[r][v], c + (i + r) * ldc + j + v * kLanes);
    }
  const float* ar = a + i * lda;
  for (int64_t p = 0; p < k; ++p) {
    Vec bv[NV];
    for (int v = 0; v < NV; ++v) load(bv[v], b + p * ldb + j + v * kLanes);
    for (int64_t r = 0; r < kRows; ++r) {
      const float x = ar[r * lda + p];
      for (int v = 0; v < NV; ++v) s[r][v] += x * bv[v];
    }
  }
  for (int64_t r = 0; r < kRows; ++r)
    for (int v = 0; v < NV; ++v) store(c + (i + r) * ldc + j + v * kLanes, s[r][v]);
}

// c[m, n] = (accumulate ? c : 0) + a[m, k] @ b[k, n], rows lda, ldb, ldc
// apart, all row-major with dense rows. NV: vectors per column block (2 where
// there are 32 vector registers).
template <int NV>
GRAPH_ISA_INLINE void tile_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                                int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  const int64_t m4 = m - m % kRows;
  if constexpr (NV > 1)
    for (; j + NV * kLanes <= n; j += NV * kLanes)
      for (int64_t i = 0; i < m4; i += kRows) tile_block<NV>(i, j, k, a, lda, b, ldb, c, ldc, accumulate);
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t i = 0; i < m4; i += kRows) tile_block<1>(i, j, k, a, lda, b, ldb, c, ldc, accumulate);
  // Rows past the last multiple of kRows, over the vector columns.
  for (int64_t i = m4; i < m; ++i)
    for (int64_t jv = 0; jv < j; jv += kLanes) {
      Vec s{}, bv;
      if (accumulate) load(s, c + i * ldc + jv);
      for (int64_t p = 0; p < k; ++p) {
        load(bv, b + p * ldb + jv);
        s += a[i * lda + p] * bv;
      }
      store(c + i * ldc + jv, s);
    }
  if (j == n) return;
  for (int64_t i = 0; i < m; ++i)  // the last n % 16 columns
    for (int64_t jj = j; jj < n; ++jj) {
      float s = accumulate ? c[i * ldc + jj] : 0.0f;
      for (int64_t p = 0; p < k; ++p) s += a[i * lda + p] * b[p * ldb + jj];
      c[i * ldc + jj] = s;
    }
}

// Scratch of one thread, grown on demand (a steady state allocates nothing).
struct Scratch {
  std::vector<float> kt, s, acc, m, l;
};

// Scale, mask and exponentiate one row of scores; returns the row's new
// running max and updates l and the accumulator row for it.
GRAPH_ISA_INLINE void softmax_step(const Problem& p, int64_t bh, int64_t i, int64_t j0, int64_t bk, float* s,
                                   float& m, float& l, float* acc) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < bk; ++j) s[j] *= p.scale;
  if (p.mask_bool) {
    const bool* mr = p.mask_bool + p.mask_off[bh] + i * p.mask_si + j0 * p.mask_sj;
    for (int64_t j = 0; j < bk; ++j) s[j] = mr[j * p.mask_sj] ? s[j] : minus_inf;
  } else if (p.mask_float) {
    const float* mr = p.mask_float + p.mask_off[bh] + i * p.mask_si + j0 * p.mask_sj;
    for (int64_t j = 0; j < bk; ++j) s[j] += mr[j * p.mask_sj];
  }
  if (p.causal)
    for (int64_t j = std::max<int64_t>(i + 1 - j0, 0); j < bk; ++j) s[j] = minus_inf;
  // Max and sum in kLanes independent lanes (a float reduction in one
  // accumulator does not vectorize). NaN scores are skipped by the max, as
  // std::max(m, nan) does, and reach the sum.
  const int64_t bv = bk - bk % kLanes;
  Vec vmax, x;
  for (int64_t l = 0; l < kLanes; ++l) vmax[l] = minus_inf;
  for (int64_t j = 0; j < bv; j += kLanes) {
    load(x, s + j);
    vmax = x > vmax ? x : vmax;
  }
  float mx = minus_inf;
  for (int64_t l = 0; l < kLanes; ++l) mx = std::max(mx, vmax[l]);
  for (int64_t j = bv; j < bk; ++j) mx = std::max(mx, s[j]);
  const float m_new = std::max(m, mx);
  if (m_new == minus_inf) {  // every key so far masked: this block adds nothing
    std::fill(s, s + bk, 0.0f);
    return;
  }
  for (int64_t j = 0; j < bk; ++j) s[j] = math::exp(s[j] - m_new);
  Vec vsum{};
  for (int64_t j = 0; j < bv; j += kLanes) {
    load(x, s + j);
    vsum += x;
  }
  float sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += vsum[l];
  for (int64_t j = bv; j < bk; ++j) sum += s[j];
  const float corr = math::exp(m - m_new);  // 0 for the first block (m = -inf)
  if (corr != 1.0f)
    for (int64_t e = 0; e < p.Ev; ++e) acc[e] *= corr;
  l = l * corr + sum;
  m = m_new;
}

// Task t: batch-head t / query_blocks, queries from (t % query_blocks) * kBlockQ.
template <int NV>
GRAPH_ISA_INLINE void attend(const Problem& p, int64_t t, Scratch& w) {
  const int64_t qblocks = (p.L + kBlockQ - 1) / kBlockQ;
  const int64_t bh = t / qblocks, i0 = (t % qblocks) * kBlockQ, bq = std::min(kBlockQ, p.L - i0);
  const int64_t E = p.E, Ev = p.Ev;
  w.kt.resize(static_cast<size_t>(E * kBlockK));
  w.s.resize(static_cast<size_t>(kBlockQ * kBlockK));
  w.acc.assign(static_cast<size_t>(bq * Ev), 0.0f);
  w.m.assign(static_cast<size_t>(bq), -std::numeric_limits<float>::infinity());
  w.l.assign(static_cast<size_t>(bq), 0.0f);
  const float* q = p.q.data + p.q.off[bh] + i0 * p.q.ld;
  const float* k = p.k.data + p.k.off[bh];
  const float* v = p.v.data + p.v.off[bh];
  // Causal: the block's last query sees keys up to its own index.
  const int64_t s_end = p.causal ? std::min(p.S, i0 + bq) : p.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += kBlockK) {
    const int64_t bk = std::min(kBlockK, s_end - j0);
    float* kt = w.kt.data();
    for (int64_t j = 0; j < bk; ++j) {
      const float* kr = k + (j0 + j) * p.k.ld;
      for (int64_t e = 0; e < E; ++e) kt[e * bk + j] = kr[e];
    }
    tile_gemm<NV>(bq, bk, E, q, p.q.ld, kt, bk, w.s.data(), bk, false);
    for (int64_t r = 0; r < bq; ++r)
      softmax_step(p, bh, i0 + r, j0, bk, w.s.data() + r * bk, w.m[r], w.l[r], w.acc.data() + r * Ev);
    tile_gemm<NV>(bq, Ev, bk, w.s.data(), bk, v + j0 * p.v.ld, p.v.ld, w.acc.data(), Ev, true);
  }
  float* out = p.out + (bh * p.L + i0) * Ev;
  for (int64_t r = 0; r < bq; ++r) {
    const float inv = 1.0f / w.l[r];  // l = 0 (all masked): 0 * inf = NaN, as the math path
    for (int64_t e = 0; e < Ev; ++e) out[r * Ev + e] = w.acc[r * Ev + e] * inv;
  }
}

using AttendFn = void (*)(const Problem&, int64_t, int64_t);
ATTN_KERNEL void attend_base(const Problem& p, int64_t b, int64_t e) {
  thread_local Scratch w;
  for (int64_t t = b; t < e; ++t) attend<1>(p, t, w);
}
#if GRAPH_ISA_DISPATCH
ATTN_AVX2 ATTN_KERNEL void attend_avx2(const Problem& p, int64_t b, int64_t e) {
  thread_local Scratch w;
  for (int64_t t = b; t < e; ++t) attend<1>(p, t, w);
}
ATTN_AVX512 ATTN_KERNEL void attend_avx512(const Problem& p, int64_t b, int64_t e) {
  thread_local Scratch w;
  for (int64_t t = b; t < e; ++t) attend<2>(p, t, w);
}
#endif

// The element offset in `t` (whose leading dims are `batch`) of each of the
// `count` batch-heads, in row-major order of `batch`.
std::vector<int64_t> batch_offsets(const Tensor& t, const Shape& batch, int64_t count) {
  std::vector<int64_t> offsets(static_cast<size_t>(count));
  const int64_t nb = static_cast<int64_t>(batch.size());
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      off += (rest % batch[d]) * t.stride(d);
      rest /= batch[d];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  return offsets;
}

// t broadcast to batch + its last two dims (as a view), the offsets of its
// batch-heads and its row stride; rows made dense first where they are not.
Operand operand(const Tensor& t_in, const Shape& batch, int64_t bh_count) {
  Tensor t = t_in.detach();
  if (t.stride(-1) != 1 && t.size(-1) != 1) t = t.contiguous();
  Shape full = batch;
  full.insert(full.end(), {t.size(-2), t.size(-1)});
  t = t.expand(full);
  Operand o;
  o.data = t.data_ptr<float>();
  o.ld = t.stride(-2);
  o.off = batch_offsets(t, batch, bh_count);
  return o;
}

}  // namespace

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask, bool is_causal,
                       double scale, const Shape& batch) {
  int64_t bh = 1;
  for (int64_t s : batch) bh *= s;
  Problem p;
  p.L = q.size(-2), p.S = k.size(-2), p.E = q.size(-1), p.Ev = v.size(-1);
  p.scale = static_cast<float>(scale);
  p.causal = is_causal;
  p.q = operand(q, batch, bh), p.k = operand(k, batch, bh), p.v = operand(v, batch, bh);
  Tensor mask_view;  // keeps a dense copy alive where the mask had to be copied
  if (attn_mask.defined()) {
    Shape full = batch;
    full.insert(full.end(), {p.L, p.S});
    mask_view = attn_mask.detach().expand(full);
    const int64_t nb = static_cast<int64_t>(batch.size());
    p.mask_si = mask_view.stride(nb), p.mask_sj = mask_view.stride(nb + 1);
    p.mask_off = batch_offsets(mask_view, batch, bh);
    if (mask_view.dtype() == kBool)
      p.mask_bool = mask_view.data_ptr<bool>();
    else
      p.mask_float = mask_view.data_ptr<float>();
  }
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {p.L, p.Ev});
  Tensor out = empty(out_shape, kFloat32);
  p.out = out.data_ptr<float>();
  AttendFn fn = attend_base;
#if GRAPH_ISA_DISPATCH
  fn = pick_isa<AttendFn>(attend_base, attend_avx2, attend_avx512);
#endif
  const int64_t tasks = bh * ((p.L + kBlockQ - 1) / kBlockQ);
  parallel_for(tasks, 1, [&](int64_t b, int64_t e) { fn(p, b, e); });
  return out;
}

}  // namespace graph::cpu
