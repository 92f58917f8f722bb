// Eager binary ops. Every binary op of ops.def gets its three public entry
// points (tensor-tensor, tensor-scalar, scalar-tensor) from the X-macro below;
// the math is graph::scalar::<op>, shared with generated fused code. The three
// entry points share one functor type per op, so each op's kernels are
// instantiated once, not once per entry point (elementwise_impl.h).
#include <algorithm>
#include <bit>

#include "elementwise_impl.h"

#include "x86_intrinsics.h"

namespace graph {

using namespace elementwise;

namespace {
// Always inlined into the loops (elu's body, with expm1's exp and log, was
// left a call per element).
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)     \
  struct name##_fn {                                           \
    template <class X, class Y>                                \
    [[gnu::always_inline]] auto operator()(X x, Y y) const { return scalar::name(x, y); } \
  };
#include "graph/ops.def"
}  // namespace

// ---- elu of float32 on AVX-512: only the lanes that need expm1 --------------

// elu(x) is x where x > 0; only the other lanes (x <= 0, NaN) need expm1's
// exp, log and division, which are most of elu's time. Each block of up to
// kEluBlock elements is split: those lanes packed into whole vectors
// (vcompressps), elu_fn computed over them (the same function of the same
// values: the same bits), and each output vector written once, x's lanes
// with the packed results expanded into theirs (vexpandps). Random signs
// halve the vectors of math (a third less time on 1000 elements, a little
// on 64); writing x > 0 lanes first by masked stores, then the rest, was
// slower than the plain loop. Float64 and the other instruction sets keep
// the plain loop.
#if GRAPH_ISA_DISPATCH
constexpr int64_t kEluBlock = 256;

GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 void elu_split_f32(int64_t n, float* o, const float* a, float alpha) {
  alignas(64) float packed[kEluBlock + 16];
  __mmask16 rest[kEluBlock / 16];
  for (int64_t s = 0; s < n; s += kEluBlock) {
    const int64_t len = std::min(kEluBlock, n - s);
    int64_t m = 0;
    for (int64_t i = 0; i < len; i += 16) {
      const __mmask16 valid = static_cast<__mmask16>(len - i >= 16 ? 0xFFFF : (1u << (len - i)) - 1);
      const __m512 x = _mm512_maskz_loadu_ps(valid, a + s + i);
      const __mmask16 pos = _mm512_mask_cmp_ps_mask(valid, x, _mm512_setzero_ps(), _CMP_GT_OQ);
      const __mmask16 r = static_cast<__mmask16>(valid & ~pos);
      rest[i / 16] = r;
      _mm512_storeu_ps(packed + m, _mm512_maskz_compress_ps(r, x));  // register form: the memory one is slow on Zen 4
      m += std::popcount(static_cast<unsigned>(r));
    }
    // The lanes past m up to a whole vector are zeros: they were whatever an
    // earlier call left on the stack, and some of those values (subnormal
    // results) made a 64-element elu 30% slower after a topk.
    _mm512_storeu_ps(packed + m, _mm512_setzero_ps());
    for (int64_t j = 0; j < m; j += 16)
      for (int64_t l = 0; l < 16; ++l) packed[j + l] = elu_fn{}(packed[j + l], alpha);  // past m: unused lanes
    m = 0;
    for (int64_t i = 0; i < len; i += 16) {  // x > 0 lanes from x, the rest in order from `packed`
      const __mmask16 r = rest[i / 16];
      const __mmask16 valid = static_cast<__mmask16>(len - i >= 16 ? 0xFFFF : (1u << (len - i)) - 1);
      const __m512 x = _mm512_maskz_loadu_ps(valid, a + s + i);
      _mm512_mask_storeu_ps(o + s + i, valid, _mm512_mask_expand_ps(x, r, _mm512_loadu_ps(packed + m)));
      m += std::popcount(static_cast<unsigned>(r));
    }
  }
}
#endif

namespace elementwise {
// elu(float32 tensor, scalar alpha), the dense loop: AVX-512 splits the lanes.
template <>
struct BinaryDense<float, float, elu_fn, 1, 0> {
  GRAPH_ISA_KERNEL static void baseline(int64_t n, float* o, const float* a, const float* b, elu_fn f) {
    binary_dense<float, float, elu_fn, 1, 0>(n, o, a, b, f);
  }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX2 static void avx2(int64_t n, float* o, const float* a, const float* b, elu_fn f) {
    binary_dense<float, float, elu_fn, 1, 0>(n, o, a, b, f);
  }
  static void avx512(int64_t n, float* o, const float* a, const float* b, [[maybe_unused]] elu_fn f) {
#if GRAPH_ISA_DISPATCH
    elu_split_f32(n, o, a, *b);
#else
    binary_dense<float, float, elu_fn, 1, 0>(n, o, a, b, f);
#endif
  }
};
}  // namespace elementwise

// ---- a floating tensor times a bool mask ----------------------------------

// `x * mask` with a bool mask of x's shape, both dense on the CPU (relu's
// backward, grad * (result > 0), eager and generated alike): one pass, where
// the generic path converts the mask to x's dtype first (another pass and a
// tensor). The same products: the mask as 0 or 1 times x.
bool is_dense_mask_product(const Tensor& x, const Tensor& mask) {
  return mask.dtype() == kBool && (x.dtype() == kFloat32 || x.dtype() == kFloat64) && x.sizes() == mask.sizes() &&
         x.device() == Device::CPU && mask.device() == Device::CPU && x.is_contiguous() && mask.is_contiguous();
}

Tensor mask_product(const Tensor& x, const Tensor& mask) {
  Tensor out = empty(x.sizes(), x.dtype());
  dispatch_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      const T* __restrict px = x.data_ptr<T>();
      const bool* __restrict pm = mask.data_ptr<bool>();
      T* __restrict po = out.data_ptr<T>();
      cpu::parallel_for(x.numel(), cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = scalar::mul(px[i], static_cast<T>(pm[i]));
      });
    }
  });
  return out;
}

template <class F>
Tensor binary_tt_or_mask(OpId id, const Tensor& a, const Tensor& b, F f) {
  if (id == OpId::mul && !detail::tracing() && a.defined() && b.defined()) {
    if (is_dense_mask_product(a, b)) return mask_product(a, b);
    if (is_dense_mask_product(b, a)) return mask_product(b, a);
  }
  return binary_tt(id, a, b, f);
}

// ---- public ops, three per ops.def binary entry -------------------------

#define GRAPH_BINARY_ENTRY(name, compute, A, B)                                                    \
  Tensor name(A a, B b) {                                                                          \
    if (detail::tracing()) return detail::trace_op(#name, {a, b}, {}, [&] { return name(a, b); }); \
    return compute_and_record(                                                                     \
        [&] { return compute(OpId::name, a, b, name##_fn{}); },                                    \
        [&](Tensor& out) { record_binary(OpId::name, out, a, b, derivatives::name##_backward<Tensor>); }); \
  }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)          \
  GRAPH_BINARY_ENTRY(name, binary_tt_or_mask, const Tensor&, const Tensor&) \
  GRAPH_BINARY_ENTRY(name, binary_ts, const Tensor&, Scalar)        \
  GRAPH_BINARY_ENTRY(name, binary_st, Scalar, const Tensor&)
#include "graph/ops.def"
#undef GRAPH_BINARY_ENTRY

}  // namespace graph
