// The float32 GEMM under a bf16 autocast scope (graph/autocast.h): both
// operands rounded to bf16, oneDNN's bf16 matmul primitive, float32 result
// (alpha as its output scale, beta as a sum post-op).
//
// The operands are converted where they lie (row by row of the stored
// matrix, so a transposed operand is read contiguously) and handed to the
// primitive with strides. Primitives are cached per problem and thread count.
#include <dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "blas.h"
#include "dnnl_context.h"
#include "graph/autocast.h"
#include "graph/parallel.h"
#include "x86_intrinsics.h"

namespace graph::cpu {

namespace {

using dnnl::memory;
using dt = memory::data_type;

constexpr size_t kMaxPrimitives = 64;

using dnnl_context::engine;
using dnnl_context::stream;

// float32 to bf16, rounding to nearest even; NaN stays a (quiet) NaN.
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

uint16_t* scratch(int slot, size_t elems) {
  thread_local std::vector<uint16_t> bufs[2];
  if (bufs[slot].size() < elems) bufs[slot].resize(elems);
  return bufs[slot].data();
}

struct Key {
  bool ta, tb;
  int64_t M, N, K, ldc;
  float alpha, beta;
  int threads;
  bool operator==(const Key& o) const {
    return std::tie(ta, tb, M, N, K, ldc, alpha, beta, threads) ==
           std::tie(o.ta, o.tb, o.M, o.N, o.K, o.ldc, o.alpha, o.beta, o.threads);
  }
};

struct Prim {
  Key key;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  uint64_t last_use = 0;
};

struct Cache {
  std::mutex mu;
  uint64_t tick = 0;
  std::vector<std::shared_ptr<Prim>> prims;
};
Cache& cache() {
  engine();
  static Cache c;
  return c;
}

// op(A) [M, K] stored as (ta ? [K, M] : [M, K]) densely: its strides.
memory::dims strides_of(bool trans, int64_t rows, int64_t cols) {
  return trans ? memory::dims{1, rows} : memory::dims{cols, 1};
}

std::shared_ptr<Prim> primitive(const Key& k) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& p : c.prims)
    if (p->key == k) {
      p->last_use = ++c.tick;
      return p;
    }
  const memory::desc a({k.M, k.K}, dt::bf16, strides_of(k.ta, k.M, k.K));
  const memory::desc b({k.K, k.N}, dt::bf16, strides_of(k.tb, k.K, k.N));
  const memory::desc out({k.M, k.N}, dt::f32, memory::dims{k.ldc, 1});
  dnnl::primitive_attr attr;
  if (k.alpha != 1.0f) attr.set_output_scales(0, {k.alpha});
  if (k.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(k.beta);
    attr.set_post_ops(ops);
  }
  auto p = std::make_shared<Prim>();
  p->key = k;
  p->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, out), attr, engine());
  p->prim = dnnl::matmul(p->pd);
  p->last_use = ++c.tick;
  if (c.prims.size() >= kMaxPrimitives)
    c.prims.erase(std::min_element(c.prims.begin(), c.prims.end(),
                                   [](const auto& x, const auto& y) { return x->last_use < y->last_use; }));
  c.prims.push_back(p);
  return p;
}

}  // namespace

namespace {

void round_row(const float* s, uint16_t* d, int64_t n) {
  for (int64_t c = 0; c < n; ++c) d[c] = to_bf16(s[c]);
}

#if GRAPH_ISA_DISPATCH
// to_bf16 on 16 lanes in integer arithmetic: the same bits (denormals kept,
// NaN quieted), where the AVX512_BF16 instruction would flush denormals.
GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void round_row_avx512(const float* s, uint16_t* d, int64_t n) {
  const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m512i u = _mm512_loadu_si512(s + c);
    const __m512i high = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(high, one)), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
    r = _mm512_mask_or_epi32(r, nan, high, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + c), _mm512_cvtepi32_epi16(r));
  }
  round_row(s + c, d + c, n - c);
}
#endif

}  // namespace

void round_to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
#if GRAPH_ISA_DISPATCH
  const bool avx512 = isa() == kAvx512;
#else
  const bool avx512 = false;
#endif
  for (int64_t r = 0; r < rows; ++r) {
#if GRAPH_ISA_DISPATCH
    if (avx512) {
      round_row_avx512(src + r * ld, dst + r * cols, cols);
      continue;
    }
#endif
    round_row(src + r * ld, dst + r * cols, cols);
  }
}

bool gemm_bf16_rowmajor(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                        int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return false;
  try {
    use_blas_threads();
    const std::shared_ptr<Prim> p = primitive({trans_a, trans_b, M, N, K, ldc, alpha, beta, num_threads()});
    // Stored shapes: A is [K, M] when transposed, B [N, K].
    const int64_t ar = trans_a ? K : M, ac = trans_a ? M : K, br = trans_b ? N : K, bc = trans_b ? K : N;
    uint16_t* a16 = scratch(0, static_cast<size_t>(ar * ac));
    uint16_t* b16 = scratch(1, static_cast<size_t>(br * bc));
    round_to_bf16(A, ar, ac, lda, a16);
    round_to_bf16(B, br, bc, ldb, b16);
    memory ma(p->pd.src_desc(), engine(), a16), mb(p->pd.weights_desc(), engine(), b16);
    memory mc(p->pd.dst_desc(), engine(), C);
    p->prim.execute(stream(), {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    stream().wait();
    graph::detail::count_autocast_gemm();
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace graph::cpu
