// Eager binary ops. Every binary op of ops.def gets its three public entry
// points (tensor-tensor, tensor-scalar, scalar-tensor) from the X-macro below;
// the math is graph::scalar::<op>, shared with generated fused code. The three
// entry points share one functor type per op, so each op's kernels are
// instantiated once, not once per entry point (elementwise_impl.h).
#include "elementwise_impl.h"

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
