// Eager matmul with PyTorch's semantics (1-D operands as vectors, batch dims
// broadcast), through the CPU GEMM of blas.h, one call per batch matrix
// (tiny float products use a plain loop instead, see small_gemm).
// The core is a batched product of equal-rank operands with equal batch
// dims; vectors and broadcasting are views around it (unsqueeze, expand,
// squeeze), so autograd flows through them without extra formulas.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <string>

#include "blas.h"
#include "device.h"
#include "graph/autocast.h"
#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/cpu_loop.h"
#include "graph/ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// How one matrix is handed to BLAS: row-major as is (NoTrans), as the
// transpose of a row-major matrix (Trans, e.g. the result of t()), or, for any
// other layout, a contiguous copy kept alive in `owner`.
struct BlasOperand {
  Tensor owner;
  bool trans = false;
  int64_t ld = 1;
};

// Row-major leading dimension of an [r, c] view with strides (s0, s1), or 0
// if the view is not row-major with unit inner stride. Size-1 dims are never
// stepped, so their strides do not matter.
int64_t row_major_ld(int64_t r, int64_t c, int64_t s0, int64_t s1) {
  const int64_t min_ld = std::max<int64_t>(c, 1);
  if (c > 1 && s1 != 1) return 0;
  if (r <= 1) return min_ld;
  return s0 >= min_ld ? s0 : 0;
}

BlasOperand blas_operand(const Tensor& t) {
  const int64_t r = t.size(0), c = t.size(1), s0 = t.stride(0), s1 = t.stride(1);
  BlasOperand op;
  if (int64_t ld = row_major_ld(r, c, s0, s1); ld > 0 && ld <= INT_MAX) {
    op.owner = t;
    op.ld = ld;
  } else if (int64_t ldt = row_major_ld(c, r, s1, s0); ldt > 0 && ldt <= INT_MAX) {
    op.owner = t;
    op.trans = true;
    op.ld = ldt;
  } else {
    op.owner = t.clone();
    op.ld = std::max<int64_t>(c, 1);
  }
  return op;
}

// Products up to this many multiply-adds (32 x 32 x 32) skip BLAS: its
// per-call overhead (argument checks, buffer setup, packing) dominates there.
constexpr int64_t kSmallGemm = 32 * 32 * 32;

// The small kernels below are written once and compiled for three x86
// instruction sets (SSE2, AVX2, AVX-512), picked at run time; the others
// get the baseline. Every variant does the same multiplies and adds in the
// same order (this file is compiled with -ffp-contract=off, so AVX-512's
// fused multiply-add is never used), so the result does not depend on the
// machine, and the eager op and the generated code (both call gemm below)
// agree bit for bit.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define GRAPH_SMALL_GEMM_ISA 1
#define GRAPH_INLINE_BODY inline __attribute__((always_inline))
#else
#define GRAPH_INLINE_BODY inline
#endif

// Lanes of the dot kernel: a fixed count, the same on every instruction set,
// so its partial sums, and the result, do not depend on the machine.
constexpr int64_t kDotLanes = 16;
// Columns of out the dot kernel computes together (they share the loads of
// a's row, and their independent sums hide the add latency).
constexpr int64_t kDotCols = 4;

// W values of T as one GCC/Clang vector: element-wise + and *, which the
// compiler maps to whatever registers the instruction set has (4 SSE, 2 AVX2
// or 1 AVX-512 register for 16 floats), same lanes, same order.
template <class T, int64_t W>
struct Lanes {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
};

// The pairwise sum of v's lanes in a fixed order: lane l + lane l + W/2, then
// the same on that half, down to one value.
template <class T, int64_t W>
GRAPH_INLINE_BODY T fold_lanes(const typename Lanes<T, W>::type& v) {
  if constexpr (W == 2) {
    return v[0] + v[1];
  } else {
    typename Lanes<T, W / 2>::type lo, hi;
    std::memcpy(&lo, &v, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
    const typename Lanes<T, W / 2>::type sum = lo + hi;
    return fold_lanes<T, W / 2>(sum);
  }
}

// out[n, m] = a[n, k] @ b[k, m] with unit stride along k in both operands (a
// row-major, b the transpose of a row-major [m, k], e.g. linear's weight.t()):
// each out[i, j] is the dot product of two contiguous rows. Lane l sums the
// products at p = l, l + kDotLanes, ... in order; the lanes then add up
// pairwise (l with l + 8, then + 4, + 2, + 1), then the leftover p past the
// last whole group of lanes, in order. Vectorizes across lanes, and rows of b
// are read contiguously where the i-p-j kernel would step through them.
template <class T, int64_t Cols>
GRAPH_INLINE_BODY void dot_columns(int64_t k, const T* __restrict arow, const T* pb, int64_t bs1,
                                   T* __restrict out) {
  using V = typename Lanes<T, kDotLanes>::type;
  const int64_t whole = k - k % kDotLanes;
  V lane[Cols] = {};
  for (int64_t p = 0; p < whole; p += kDotLanes) {
    V av;
    std::memcpy(&av, arow + p, sizeof av);
    for (int64_t c = 0; c < Cols; ++c) {
      V bv;
      std::memcpy(&bv, pb + c * bs1 + p, sizeof bv);
      lane[c] += av * bv;
    }
  }
  for (int64_t c = 0; c < Cols; ++c) {
    T s = fold_lanes<T, kDotLanes>(lane[c]);
    for (int64_t p = whole; p < k; ++p) s += arow[p] * pb[c * bs1 + p];
    out[c] = s;
  }
}

// Columns [j0, m) of R out rows (i0 on, a dense out of row length m) in
// vectors of W values while W fit: the columns a block of small_gemm_body
// leaves, all of them when m is narrower than a block (bmm of 8 x 8
// matrices, which a scalar loop made 4x slower). The R rows share each
// vector of b and their independent sums hide the add latency. Each
// out[i, j] sums over p in order from 0, as the scalar loop. Returns the
// first column not done.
template <class T, int64_t W, int64_t R>
GRAPH_INLINE_BODY int64_t vector_columns(int64_t i0, int64_t j0, int64_t m, int64_t k, const T* pa, int64_t as0,
                                         int64_t as1, const T* pb, int64_t bs0, T* __restrict po) {
  using V = typename Lanes<T, W>::type;
  for (; j0 + W <= m; j0 += W) {
    V acc[R] = {};
    for (int64_t p = 0; p < k; ++p) {
      V bv;
      std::memcpy(&bv, pb + p * bs0 + j0, sizeof bv);
      for (int64_t r = 0; r < R; ++r) acc[r] += pa[(i0 + r) * as0 + p * as1] * bv;
    }
    for (int64_t r = 0; r < R; ++r) std::memcpy(po + (i0 + r) * m + j0, &acc[r], sizeof acc[r]);
  }
  return j0;
}

// Rows [i0, i0 + R) of a product narrower than a column block: vectors of 32
// then 16 bytes, then the scalar loop for what is left.
template <class T, int64_t R>
GRAPH_INLINE_BODY void narrow_rows(int64_t i0, int64_t m, int64_t k, const T* pa, int64_t as0, int64_t as1,
                                   const T* pb, int64_t bs0, T* __restrict po) {
  int64_t j0 = vector_columns<T, 32 / sizeof(T), R>(i0, 0, m, k, pa, as0, as1, pb, bs0, po);
  j0 = vector_columns<T, 16 / sizeof(T), R>(i0, j0, m, k, pa, as0, as1, pb, bs0, po);
  for (int64_t r = 0; r < R && j0 < m; ++r) {
    T* __restrict orow = po + (i0 + r) * m;
    const T* arow = pa + (i0 + r) * as0;
    for (int64_t j = j0; j < m; ++j) orow[j] = 0;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = j0; j < m; ++j) orow[j] += arow[p * as1] * pb[p * bs0 + j];
  }
}

// out[n, m] = a[n, k] @ b[k, m], any strides for a and b, out dense. i-p-j
// order: the inner loop runs along a row of b and of out (unit stride when
// UnitB), so it vectorizes; columns go in blocks of Block whose sums stay in
// registers across p (Block is one instruction set's register budget, it does
// not change the result). Each out[i, j] sums over p in order, as the naive
// loop.
template <class T, bool UnitB, int64_t Block>
GRAPH_INLINE_BODY void small_gemm_body(int64_t n, int64_t k, int64_t m, const T* pa, int64_t as0, int64_t as1,
                                       const T* pb, int64_t bs0, int64_t bs1, T* __restrict po) {
  const int64_t step = UnitB ? 1 : bs1;
  if constexpr (UnitB) {
    if (m < Block) {  // no whole block in a row: rows in fours (see vector_columns)
      int64_t i = 0;
      for (; i + 4 <= n; i += 4) narrow_rows<T, 4>(i, m, k, pa, as0, as1, pb, bs0, po);
      for (; i < n; ++i) narrow_rows<T, 1>(i, m, k, pa, as0, as1, pb, bs0, po);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    T* __restrict orow = po + i * m;
    const T* arow = pa + i * as0;
    int64_t j0 = 0;
    if constexpr (UnitB) {  // explicit vectors: the block's sums stay in registers
      using V = typename Lanes<T, 64 / sizeof(T)>::type;
      constexpr int64_t W = 64 / sizeof(T), R = Block / W;
      static_assert(R * W == Block);
      for (; j0 + Block <= m; j0 += Block) {
        V acc[R] = {};
        for (int64_t p = 0; p < k; ++p) {
          const T av = arow[p * as1];
          const T* brow = pb + p * bs0 + j0;
          for (int64_t r = 0; r < R; ++r) {
            V bv;
            std::memcpy(&bv, brow + r * W, sizeof bv);
            acc[r] += av * bv;
          }
        }
        std::memcpy(orow + j0, acc, sizeof acc);
      }
      j0 = vector_columns<T, 32 / sizeof(T), 1>(i, j0, m, k, pa, as0, as1, pb, bs0, po);
      j0 = vector_columns<T, 16 / sizeof(T), 1>(i, j0, m, k, pa, as0, as1, pb, bs0, po);
    } else {  // strided rows of b: 8 scalar sums at a time
      constexpr int64_t S = 8;
      for (; j0 + S <= m; j0 += S) {
        T acc[S] = {};
        for (int64_t p = 0; p < k; ++p) {
          const T av = arow[p * as1];
          const T* brow = pb + p * bs0 + j0 * step;
          for (int64_t w = 0; w < S; ++w) acc[w] += av * brow[w * step];
        }
        for (int64_t w = 0; w < S; ++w) orow[j0 + w] = acc[w];
      }
    }
    if (j0 == m) continue;
    for (int64_t j = j0; j < m; ++j) orow[j] = 0;
    for (int64_t p = 0; p < k; ++p) {
      const T av = arow[p * as1];
      const T* brow = pb + p * bs0;
      for (int64_t j = j0; j < m; ++j) orow[j] += av * brow[j * step];
    }
  }
}

template <class T>
GRAPH_INLINE_BODY void small_dot_body(int64_t n, int64_t k, int64_t m, const T* pa, int64_t as0, const T* pb,
                                      int64_t bs1, T* __restrict po) {
  for (int64_t i = 0; i < n; ++i) {
    const T* arow = pa + i * as0;
    T* orow = po + i * m;
    int64_t j = 0;
    for (; j + kDotCols <= m; j += kDotCols) dot_columns<T, kDotCols>(k, arow, pb + j * bs1, bs1, orow + j);
    for (; j < m; ++j) dot_columns<T, 1>(k, arow, pb + j * bs1, bs1, orow + j);
  }
}

// The two kernels' signatures, for the per-instruction-set tables.
template <class T>
using GemmKernel = void (*)(int64_t, int64_t, int64_t, const T*, int64_t, int64_t, const T*, int64_t, int64_t, T*);
template <class T>
using DotKernel = void (*)(int64_t, int64_t, int64_t, const T*, int64_t, const T*, int64_t, T*);

// The column block of small_gemm_body per instruction set, in bytes of out
// row: 128 (8 SSE or 4 AVX2 registers of sums), 256 on AVX-512 (4 registers).
template <class T, bool UnitB>
void small_gemm_base(int64_t n, int64_t k, int64_t m, const T* pa, int64_t as0, int64_t as1, const T* pb,
                     int64_t bs0, int64_t bs1, T* po) {
  small_gemm_body<T, UnitB, 128 / sizeof(T)>(n, k, m, pa, as0, as1, pb, bs0, bs1, po);
}
template <class T>
void small_dot_base(int64_t n, int64_t k, int64_t m, const T* pa, int64_t as0, const T* pb, int64_t bs1, T* po) {
  small_dot_body<T>(n, k, m, pa, as0, pb, bs1, po);
}
#ifdef GRAPH_SMALL_GEMM_ISA
template <class T, bool UnitB>
__attribute__((target("avx2"))) void small_gemm_avx2(int64_t n, int64_t k, int64_t m, const T* pa, int64_t as0,
                                                     int64_t as1, const T* pb, int64_t bs0, int64_t bs1, T* po) {
  small_gemm_body<T, UnitB, 128 / sizeof(T)>(n, k, m, pa, as0, as1, pb, bs0, bs1, po);
}
template <class T, bool UnitB>
__attribute__((target("avx512f"))) void small_gemm_avx512(int64_t n, int64_t k, int64_t m, const T* pa,
                                                          int64_t as0, int64_t as1, const T* pb, int64_t bs0,
                                                          int64_t bs1, T* po) {
  small_gemm_body<T, UnitB, 256 / sizeof(T)>(n, k, m, pa, as0, as1, pb, bs0, bs1, po);
}
template <class T>
__attribute__((target("avx2"))) void small_dot_avx2(int64_t n, int64_t k, int64_t m, const T* pa, int64_t as0,
                                                    const T* pb, int64_t bs1, T* po) {
  small_dot_body<T>(n, k, m, pa, as0, pb, bs1, po);
}
template <class T>
__attribute__((target("avx512f"))) void small_dot_avx512(int64_t n, int64_t k, int64_t m, const T* pa,
                                                         int64_t as0, const T* pb, int64_t bs1, T* po) {
  small_dot_body<T>(n, k, m, pa, as0, pb, bs1, po);
}
#endif

// The best instruction set this CPU has: 0 baseline, 1 AVX2, 2 AVX-512.
int best_small_gemm_isa() {
#ifdef GRAPH_SMALL_GEMM_ISA
  return __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  return 0;
#endif
}

// The one in use (tests lower it: detail::set_small_matmul_isa).
std::atomic<int>& small_gemm_isa_in_use() {
  static std::atomic<int> isa{best_small_gemm_isa()};
  return isa;
}

int small_gemm_isa() { return small_gemm_isa_in_use().load(std::memory_order_relaxed); }

template <class T, bool UnitB>
GemmKernel<T> small_gemm_kernel() {
#ifdef GRAPH_SMALL_GEMM_ISA
  static const GemmKernel<T> kernels[] = {small_gemm_base<T, UnitB>, small_gemm_avx2<T, UnitB>,
                                          small_gemm_avx512<T, UnitB>};
  return kernels[small_gemm_isa()];
#else
  return small_gemm_base<T, UnitB>;
#endif
}

template <class T>
DotKernel<T> small_dot_kernel() {
#ifdef GRAPH_SMALL_GEMM_ISA
  static const DotKernel<T> kernels[] = {small_dot_base<T>, small_dot_avx2<T>, small_dot_avx512<T>};
  return kernels[small_gemm_isa()];
#else
  return small_dot_base<T>;
#endif
}

// One small product out = a @ b (out dense): the dot kernel when a's rows
// and b's columns are contiguous, else the i-p-j kernel.
template <class T>
void small_gemm(int64_t n, int64_t k, int64_t m, const T* pa, const int64_t* as, const T* pb, const int64_t* bs,
                T* po) {
  const bool a_rows = as[1] == 1 || k == 1, b_cols = bs[0] == 1 || k == 1;
  if (a_rows && b_cols && k >= kDotLanes)
    small_dot_kernel<T>()(n, k, m, pa, as[0], pb, bs[1], po);
  else if (bs[1] == 1 || m == 1)
    small_gemm_kernel<T, true>()(n, k, m, pa, as[0], as[1], pb, bs[0], 1, po);
  else
    small_gemm_kernel<T, false>()(n, k, m, pa, as[0], as[1], pb, bs[0], bs[1], po);
}
template <class T>
void small_gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  // 2-D operands: sizes()/strides() directly (size(d) checks d per call).
  small_gemm<T>(a.sizes()[0], a.sizes()[1], b.sizes()[1], a.data_ptr<T>(), a.strides().data(), b.data_ptr<T>(),
                b.strides().data(), out.data_ptr<T>());
}

// Whether an [n, k] @ [k, m] product takes the small kernels; under bf16
// autocast every float product takes the bf16 GEMM instead.
template <class T>
bool small_product(int64_t n, int64_t k, int64_t m) {
  return n * k * m <= kSmallGemm && !(std::is_same_v<T, float> && autocast_bf16());
}

// out[n, m] = a[n, k] @ b[k, m] for one matrix of each.
template <class T>
void gemm(const Tensor& a, const Tensor& b, const Tensor& out) {
  const int64_t n = a.sizes()[0], k = a.sizes()[1], m = b.sizes()[1];  // 2-D
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (small_product<T>(n, k, m)) return small_gemm<T>(a, b, out);
  }
  const BlasOperand x = blas_operand(a), y = blas_operand(b);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    cpu::gemm_rowmajor(x.trans, y.trans, n, m, k, T(1), x.owner.data_ptr<T>(), x.ld, y.owner.data_ptr<T>(), y.ld,
                       T(0), out.data_ptr<T>(), m);
  } else {  // integers: no BLAS; a plain triple loop, accumulating in T
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        T s = 0;
        for (int64_t p = 0; p < k; ++p) s += pa[i * a.stride(0) + p * a.stride(1)] * pb[p * b.stride(0) + j * b.stride(1)];
        po[i * m + j] = s;
      }
  }
}

// Where batch element `index` of a [..., r, c] tensor starts, in elements
// from its data pointer.
int64_t matrix_offset(const Tensor& t, int64_t index) {
  const Shape& size = t.sizes();  // not size(d), which wraps d per call
  const Shape& stride = t.strides();
  int64_t off = 0;
  for (int64_t d = t.dim() - 3; d >= 0; --d) {
    off += (index % size[d]) * stride[d];
    index /= size[d];
  }
  return off;
}

// The [r, c] matrix of batch element `index` of a [..., r, c] tensor.
Tensor matrix(const Tensor& t, int64_t index) {
  return Tensor(t.storage(), t.storage_offset() + matrix_offset(t, index), {t.size(-2), t.size(-1)},
                {t.stride(-2), t.stride(-1)}, t.dtype());
}

// a [..., n, k] @ b [..., k, m] with equal batch dims, equal dtypes.
Tensor batched(const Tensor& a, const Tensor& b) {
  if (a.device() == Device::CUDA) return detail::cuda_matmul(a, b);
  Shape shape = a.sizes();
  shape.back() = b.sizes().back();
  Tensor out = empty(shape, a.dtype());
  if (out.numel() == 0) return out;
  if (a.sizes().back() == 0) return zeros(shape, a.dtype());  // BLAS rejects k = 0
  if (shape.size() == 2) {  // one product: no batch views
    dispatch_dtype(a.dtype(), [&](auto v) {
      using T = decltype(v);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                    std::is_same_v<T, int64_t>) {
        gemm<T>(a, b, out);
      }
    });
    return out;
  }
  const int64_t batches = out.numel() / (shape[shape.size() - 2] * shape.back());
  dispatch_dtype(a.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t>) {
      const size_t r = shape.size();  // a's and b's rank too
      const int64_t n = a.sizes()[r - 2], k = a.sizes()[r - 1], m = b.sizes()[r - 1];
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        // Small products: no Tensor per batch matrix (its cost is the product's).
        if (small_product<T>(n, k, m)) {
          const int64_t as[2] = {a.strides()[r - 2], a.strides()[r - 1]};
          const int64_t bs[2] = {b.strides()[r - 2], b.strides()[r - 1]};
          const T* pa = a.data_ptr<T>();
          const T* pb = b.data_ptr<T>();
          T* po = out.data_ptr<T>();  // dense: batch i at i * n * m
          for (int64_t i = 0; i < batches; ++i)
            small_gemm<T>(n, k, m, pa + matrix_offset(a, i), as, pb + matrix_offset(b, i), bs, po + i * n * m);
          return;
        }
      }
      // Only here: a reshape's view was a tenth of a small bmm's time.
      const Tensor o3 = out.reshape({batches, shape[r - 2], shape[r - 1]});
      for (int64_t i = 0; i < batches; ++i) gemm<T>(matrix(a, i), matrix(b, i), matrix(o3, i));
    }
  });
  return out;
}

Tensor record_batched(const Tensor& a, const Tensor& b) {
  Tensor out = batched(a, b);
  if (!autograd::needs_grad({&a, &b})) return out;
  Tensor as = a.detach(), bs = b.detach();
  const detail::GradMask mask = (a.requires_grad() ? 1u : 0u) | (b.requires_grad() ? 2u : 0u);
  autograd::record("matmul", out, {a, b}, [as, bs, mask](const Tensor& g) {
    return detail::matmul_backward(g, as, bs, mask);
  });
  return out;
}

void check_operands(const Tensor& a, const Tensor& b) {
  detail::check_defined("matmul", a);
  detail::check_defined("matmul", b);
  // The message text is built only on failure (this runs on every call).
  const auto shapes = [&] { return shape_str(a.sizes()) + " and " + shape_str(b.sizes()); };
  if (a.dim() == 0 || b.dim() == 0) throw Error("matmul: both operands need at least 1 dim, got shapes " + shapes());
  detail::common_device("matmul", a, b);
  if (a.dtype() != b.dtype())
    throw Error("matmul: expected operands of one dtype, got " + std::string(dtype_name(a.dtype())) + " and " +
                std::string(dtype_name(b.dtype())) + " (shapes " + shapes() + ")");
  if (a.dtype() == kBool) throw Error("matmul: bool operands are not supported (shapes " + shapes() + ")");
  const Shape& bsz = b.sizes();  // sizes() directly: size(d) wraps d per call
  const int64_t ka = a.sizes().back(), kb = bsz[bsz.size() - (b.dim() == 1 ? 1 : 2)];
  if (ka != kb) throw Error("matmul: shapes " + shapes() + " cannot be multiplied");
  for (const Tensor* t : {&a, &b})
    for (int64_t s : t->sizes())
      if (s > INT_MAX) throw Error("matmul: shapes " + shapes() + " exceed the BLAS int range");
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (detail::tracing())
    return detail::trace_op("matmul", {a, b}, {}, [&] { return matmul(a, b); });
  check_operands(a, b);
  if (is_reduced_float(a.dtype()))  // 16-bit floats multiply in float32
    return matmul(a.to(kFloat32), b.to(kFloat32)).to(a.dtype());
  if (a.dim() == 1 && b.dim() == 1) return matmul(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  if (a.dim() == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  if (b.dim() == 1) return matmul(a, b.unsqueeze(1)).squeeze(-1);
  if (a.dim() == 2 && b.dim() == 2) return record_batched(a, b);
  // [..., n, k] @ [k, m]: the batch folds into the rows of one product.
  if (b.dim() == 2 && a.dim() > 2) {
    Shape out_shape = a.sizes();
    out_shape.back() = b.size(1);
    return matmul(a.reshape({-1, a.size(-1)}), b).reshape(out_shape);
  }
  // Equal batch dims (bmm's case): no broadcast shapes to build.
  if (a.dim() == b.dim() && std::equal(a.sizes().begin(), a.sizes().end() - 2, b.sizes().begin()))
    return record_batched(a, b);
  // Broadcast the batch dims, then one product per batch matrix.
  const Shape ba(a.sizes().begin(), a.sizes().end() - 2), bb(b.sizes().begin(), b.sizes().end() - 2);
  Shape batch = cpu::broadcast_shapes("matmul", {ba, bb});
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {a.size(-2), a.size(-1)});
  sb.insert(sb.end(), {b.size(-2), b.size(-1)});
  return record_batched(a.sizes() == sa ? a : a.expand(sa), b.sizes() == sb ? b : b.expand(sb));
}

}  // namespace graph

namespace graph::detail {

// For generated code (generated_support.h: gemm): the 2-D product the eager
// matmul computes, with the same kernel, into a given dense buffer, so static
// and eager results agree bit for bit.
void matmul_2d_into(const Tensor& a, const Tensor& b, const Tensor& out) {
  dispatch_dtype(a.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) gemm<T>(a, b, out);
  });
}

// dA = G B^T, dB = A^T G through matmul itself, so every shape rule (1-D
// operands, a batch folded into rows, broadcast batch dims) and the CUDA
// path come with it; B^T and A^T are views the GEMM reads with its
// transpose flag, never copies.
std::vector<Tensor> matmul_backward(const Tensor& grad, const Tensor& a, const Tensor& b, GradMask mask) {
  observe_grad_mask("matmul_backward", mask);
  check_operands(a, b);
  // As matmul: a 1-D a is a row, a 1-D b a column; grad gets those dims back.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  Tensor g = grad;
  if (a.dim() == 1) g = g.unsqueeze(b.dim() == 1 ? 0 : -2);
  if (b.dim() == 1) g = g.unsqueeze(-1);
  Tensor ga, gb;
  if (b2.dim() == 2) {  // [..., n, k] @ [k, m]: one product over the rows of every batch
    const Tensor g2 = g.reshape({-1, g.size(-1)});
    if (wants(mask, 0)) ga = matmul(g2, b2.t()).reshape(a2.sizes());
    if (wants(mask, 1)) gb = matmul(a2.reshape({-1, a2.size(-1)}).t(), g2);
  } else {
    if (wants(mask, 0)) ga = sum_to_backward(matmul(g, b2.transpose(-1, -2)), a2);
    if (wants(mask, 1)) gb = sum_to_backward(matmul(a2.transpose(-1, -2), g), b2);
  }
  if (ga.defined()) ga = ga.reshape(a.sizes());
  if (gb.defined()) gb = gb.reshape(b.sizes());
  return {ga, gb};
}

// For tests: run the small kernels with instruction set `isa` (0 baseline, 1
// AVX2, 2 AVX-512), at most the CPU's best; returns the one now in use.
int set_small_matmul_isa(int isa) {
  const int chosen = std::clamp(isa, 0, best_small_gemm_isa());
  small_gemm_isa_in_use().store(chosen);
  return chosen;
}

}  // namespace graph::detail
