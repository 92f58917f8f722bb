// Private to the eager elementwise ops (elementwise_unary.cpp,
// elementwise_binary.cpp): the kernels over whole tensors, the generic entry
// points with their dtype rules, and autograd recording. Two translation units
// instead of one: the kernels are instantiated per op and dtype, and one file
// held the build's longest compile (several minutes under sanitizers).
#pragma once

#include <array>
#include <string>

#include "graph/autograd.h"
#include "graph/cpu_isa.h"
#include "graph/cpu_loop.h"
#include "graph/derivatives.h"
#include "graph/op_table.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "graph/scalar_ops.h"
#include "device.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph::elementwise {

using cpu::StridedLoop;

// ---- inner runs ---------------------------------------------------------
// Each run is n elements; operand k steps by st[k]. When the loop is simple
// (loop.simple()) there is one run covering everything and each stride is 1
// (dense) or 0 (a single broadcast value), which the first branches turn into
// plain indexed loops over raw pointers that the compiler vectorizes.
//
// Those dense loops of float and double ops are compiled once per
// instruction set (baseline, AVX2, AVX-512) and each run calls the variant
// this CPU has (graph/cpu_isa.h), as the generated fused loops do; no FMA
// contraction anywhere, so every variant, and the generated code, give the
// same bits. Integral and bool ops keep the one baseline loop.

// The dense loops: x (or a, b) indexed by i, or a broadcast value when the
// stride flag is 0.
template <class R, class C, class F>
GRAPH_ISA_INLINE void unary_dense(int64_t n, R* __restrict o, const C* __restrict x, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}
template <class R, class C, class F, int SA, int SB>
GRAPH_ISA_INLINE void binary_dense(int64_t n, R* __restrict o, const C* __restrict a, const C* __restrict b, F f) {
  if constexpr (SA == 0) {
    const C av = *a;
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else if constexpr (SB == 0) {
    const C bv = *b;
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  }
}

// The variants of each dense loop.
template <class R, class C, class F>
struct UnaryDense {
  GRAPH_ISA_KERNEL static void baseline(int64_t n, R* o, const C* x, F f) { unary_dense(n, o, x, f); }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX2 static void avx2(int64_t n, R* o, const C* x, F f) { unary_dense(n, o, x, f); }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static void avx512(int64_t n, R* o, const C* x, F f) {
    unary_dense(n, o, x, f);
  }
};
template <class R, class C, class F, int SA, int SB>
struct BinaryDense {
  GRAPH_ISA_KERNEL static void baseline(int64_t n, R* o, const C* a, const C* b, F f) {
    binary_dense<R, C, F, SA, SB>(n, o, a, b, f);
  }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX2 static void avx2(int64_t n, R* o, const C* a, const C* b, F f) {
    binary_dense<R, C, F, SA, SB>(n, o, a, b, f);
  }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static void avx512(int64_t n, R* o, const C* a, const C* b, F f) {
    binary_dense<R, C, F, SA, SB>(n, o, a, b, f);
  }
};

template <class C>
inline constexpr bool kIsaVariants = std::is_same_v<C, float> || std::is_same_v<C, double>;

template <class R, class C, class F>
void unary_dense_isa(int64_t n, R* o, const C* x, F f) {
  if constexpr (kIsaVariants<C>) {
    using V = UnaryDense<R, C, F>;
    cpu::pick_isa(&V::baseline, &V::avx2, &V::avx512)(n, o, x, f);
  } else {
    unary_dense(n, o, x, f);
  }
}
template <int SA, int SB, class R, class C, class F>
void binary_dense_isa(int64_t n, R* o, const C* a, const C* b, F f) {
  if constexpr (kIsaVariants<C>) {
    using V = BinaryDense<R, C, F, SA, SB>;
    cpu::pick_isa(&V::baseline, &V::avx2, &V::avx512)(n, o, a, b, f);
  } else {
    binary_dense<R, C, F, SA, SB>(n, o, a, b, f);
  }
}

template <class R, class C, class F>
void unary_run(int64_t n, R* __restrict o, const C* x, const std::array<int64_t, 2>& st, F f) {
  if (st[0] == 1 && st[1] == 1) {
    unary_dense_isa(n, o, x, f);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(x[i * st[1]]);
  }
}

template <class R, class C, class F>
void binary_run(int64_t n, R* __restrict o, const C* a, const C* b,
                const std::array<int64_t, 3>& st, F f) {
  if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
    binary_dense_isa<1, 1>(n, o, a, b, f);
  } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
    binary_dense_isa<1, 0>(n, o, a, b, f);
  } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
    binary_dense_isa<0, 1>(n, o, a, b, f);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i * st[0]] = f(a[i * st[1]], b[i * st[2]]);
  }
}

// ---- kernels over whole tensors ----------------------------------------
// Split across cores by graph::cpu::parallel_for like the generated fused
// loops (inline on the caller below two grains, so small tensors pay
// nothing). Each element is computed alone, so the split changes no bit.

// out = f(x); `x` already has dtype C and broadcasts to out's shape.
template <class R, class C, class F>
void unary_kernel(const Tensor& out, const Tensor& x, F f) {
  R* o = out.data_ptr<R>();
  const C* px = x.data_ptr<C>();
  if (detail::dense_at(x, out.sizes())) {  // out is fresh, hence dense
    cpu::parallel_for(out.numel(), cpu::kElementwiseGrain,
                      [&](int64_t begin, int64_t end) { unary_run(end - begin, o + begin, px + begin, {1, 1}, f); });
    return;
  }
  const StridedLoop<2> loop(out.sizes(), {out.strides(), cpu::broadcast_strides(x, out.sizes())});
  cpu::parallel_for(loop.numel(), cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    loop.run_range(begin, end, [&](int64_t n, const auto& off, const auto& st) {
      unary_run(n, o + off[0], px + off[1], st, f);
    });
  });
}

// out = f(a, b); `a` and `b` already have dtype C and broadcast to out's shape.
template <class R, class C, class F>
void binary_kernel(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  R* o = out.data_ptr<R>();
  const C* pa = a.data_ptr<C>();
  const C* pb = b.data_ptr<C>();
  const Shape& shape = out.sizes();
  // out is fresh, hence dense; a one-element operand is a broadcast value.
  const int64_t n = out.numel();
  const bool a_dense = detail::dense_at(a, shape), b_dense = detail::dense_at(b, shape);
  if (a_dense && (b_dense || b.numel() == 1)) {
    const int64_t sb = b_dense ? 1 : 0;
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
      binary_run(end - begin, o + begin, pa + begin, pb + begin * sb, {1, 1, sb}, f);
    });
    return;
  }
  if (b_dense && a.numel() == 1) {
    cpu::parallel_for(n, cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
      binary_run(end - begin, o + begin, pa, pb + begin, {1, 0, 1}, f);
    });
    return;
  }
  const StridedLoop<3> loop(
      shape, {out.strides(), cpu::broadcast_strides(a, shape), cpu::broadcast_strides(b, shape)});
  cpu::parallel_for(loop.numel(), cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    loop.run_range(begin, end, [&](int64_t n, const auto& off, const auto& st) {
      binary_run(n, o + off[0], pa + off[1], pb + off[2], st, f);
    });
  });
}

// ---- dtype checks shared by the entry points ---------------------------

// PyTorch rejects these rather than giving a surprising answer.
inline void check_bool_operands(const OpInfo& op, DType a, DType b) {
  if (op.id == OpId::sub && (a == kBool || b == kBool)) {
    throw Error(
        "sub: subtraction with a bool operand is not supported; use logical_not or "
        "the ! operator to invert a mask");
  }
}

inline Tensor scalar_tensor(Scalar s, DType dtype) { return full({}, s, dtype); }

// ---- generic entry points ----------------------------------------------

template <class F>
Tensor unary_op(OpId id, const Tensor& x, F f) {
  const OpInfo& op = op_info(id);
  detail::check_defined(op.name, x);
  if (id == OpId::neg && x.dtype() == kBool) {
    throw Error("neg: negation of a bool tensor (shape " + shape_str(x.sizes()) +
                ") is not supported; use logical_not or the ! operator");
  }
  const DType compute = compute_dtype(op, x.dtype());
  // Integral inputs of float ops convert once, up front (no copy otherwise).
  const Tensor converted = x.dtype() == compute ? Tensor() : x.to(compute);
  const Tensor& in = converted.defined() ? converted : x;
  // The kernel writes its natural result type; 16-bit results round after.
  // One prvalue either way: the result is constructed in place (no move).
  Tensor out = in.device() == Device::CUDA ? detail::cuda_unary(id, in, compute) : dispatch_opmath(compute, [&](auto c) {
    using C = decltype(c);
    using R = decltype(f(C{}));
    Tensor r = empty(x.sizes(), dtype_of<R>::value);
    unary_kernel<R, C>(r, in, f);
    return r;
  });
  const DType want = result_dtype(op, x.dtype());
  if (out.dtype() != want) out = out.to(want);
  return out;  // one named result throughout: NRVO, no move
}

// a and b are defined; `promoted` is their promoted dtype (for a Scalar
// operand, after the wrapped-number rule).
template <class F>
Tensor binary_op(const OpInfo& op, const Tensor& a, const Tensor& b, DType promoted, F f) {
  const Device device = detail::common_device(op.name, a, b);
  const Shape shape = cpu::broadcast_shapes(op.name, {a.sizes(), b.sizes()});
  const DType compute = compute_dtype(op, promoted);
  const Tensor ca_owned = a.dtype() == compute ? Tensor() : a.to(compute);
  const Tensor cb_owned = b.dtype() == compute ? Tensor() : b.to(compute);
  const Tensor& ca = ca_owned.defined() ? ca_owned : a;
  const Tensor& cb = cb_owned.defined() ? cb_owned : b;
  Tensor out = device == Device::CUDA ? detail::cuda_binary(op.id, ca, cb, shape, compute) : dispatch_opmath(compute, [&](auto c) {
    using C = decltype(c);
    using R = decltype(f(C{}, C{}));
    Tensor r = empty(shape, dtype_of<R>::value);
    binary_kernel<R, C>(r, ca, cb, f);
    return r;
  });
  const DType want = result_dtype(op, promoted);
  if (out.dtype() != want) out = out.to(want);
  return out;
}

// PyTorch's promotion of two tensors: a 0-d tensor takes part only if it is
// of a higher category than the dimensioned one (dtype.h; infer_types gives
// graphs the same rule).
inline DType promote_operands(const Tensor& a, const Tensor& b) {
  if ((a.dim() == 0) == (b.dim() == 0)) return promote_types(a.dtype(), b.dtype());
  return a.dim() == 0 ? promote_with_zero_dim(b.dtype(), a.dtype()) : promote_with_zero_dim(a.dtype(), b.dtype());
}

template <class F>
Tensor binary_tt(OpId id, const Tensor& a, const Tensor& b, F f) {
  const OpInfo& op = op_info(id);
  detail::check_defined(op.name, a);
  detail::check_defined(op.name, b);
  check_bool_operands(op, a.dtype(), b.dtype());
  return binary_op(op, a, b, promote_operands(a, b), f);
}

// A Scalar mixed with a tensor keeps the tensor's dtype unless it is of a
// higher category (promote_with_scalar, PyTorch's wrapped-number rule).
// A dense float tensor on the CPU with a Scalar that keeps its dtype (x * 2.0,
// leaky_relu's and elu's parameter): the kernel binary_op would run, with the
// scalar read from the stack rather than from a 0-d tensor, whose allocation
// was a fifth of a small op's fixed cost. The value is scalar_tensor's (full's
// scalar_as), so the results are the same bits.
inline bool dense_with_scalar(const OpInfo& op, const Tensor& a, DType promoted) {
  const DType compute = compute_dtype(op, promoted);
  return a.device() == Device::CPU && a.dtype() == compute && (compute == kFloat32 || compute == kFloat64) &&
         result_dtype(op, promoted) == compute && a.is_contiguous();
}

// The result built in place and returned by name (an assignment into an
// empty Tensor cost as much as the allocation). R is C at run time
// (dense_with_scalar); bool for comparisons is only instantiated.
template <class C, class F>
Tensor with_scalar(const Tensor& a, Scalar b, F f) {
  using R = decltype(f(C{}, C{}));
  Tensor r = empty(a.sizes(), dtype_of<R>::value);
  R* o = r.data_ptr<R>();
  const C* pa = a.data_ptr<C>();
  const C bv = detail::scalar_as<C>(b);
  cpu::parallel_for(r.numel(), cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    binary_run(end - begin, o + begin, pa + begin, &bv, {1, 1, 0}, f);
  });
  return r;
}

template <class F>
Tensor binary_ts(OpId id, const Tensor& a, Scalar b, F f) {
  const OpInfo& op = op_info(id);
  detail::check_defined(op.name, a);
  check_bool_operands(op, a.dtype(), b.dtype());
  const DType promoted = promote_with_scalar(a.dtype(), b.dtype());
  if (dense_with_scalar(op, a, promoted))
    return a.dtype() == kFloat32 ? with_scalar<float>(a, b, f) : with_scalar<double>(a, b, f);
  return binary_op(op, a, scalar_tensor(b, compute_dtype(op, promoted)), promoted, f);
}

template <class F>
Tensor binary_st(OpId id, Scalar a, const Tensor& b, F f) {
  const OpInfo& op = op_info(id);
  detail::check_defined(op.name, b);
  check_bool_operands(op, a.dtype(), b.dtype());
  const DType promoted = promote_with_scalar(b.dtype(), a.dtype());
  return binary_op(op, scalar_tensor(a, compute_dtype(op, promoted)), b, promoted, f);
}

// ---- autograd: the table's gradient formulas (derivatives.h) ---------------
// `out` is recorded in place, so that the entry points return it by NRVO.

template <class Backward>
void record_unary(OpId id, Tensor& out, const Tensor& x, Backward backward) {
  if (!autograd::needs_grad({&x}) || !is_floating(out.dtype())) return;
  Tensor xs = x.detach(), rs = out.detach();
  autograd::record(std::string(op_info(id).name), out, {x}, [xs, rs, backward](const Tensor& grad) {
    return std::vector<Tensor>{backward(grad, xs, rs)};
  });
}

inline Tensor wrap(Scalar s) { return full({}, s, s.is_floating() ? kFloat64 : s.dtype()); }

// A binary op's operand as autograd sees it: a Scalar has no gradient and
// becomes a 0-d tensor for the formulas only once a gradient is recorded.
inline bool tracks_grad(const Tensor& t) { return autograd::needs_grad({&t}); }
inline bool tracks_grad(Scalar) { return false; }
inline const Tensor& as_tensor(const Tensor& t) { return t; }
inline Tensor as_tensor(Scalar s) { return wrap(s); }

// `inputs` that are tensors get edges; a Scalar operand gets none.
template <class A, class B, class Backward>
void record_binary(OpId id, Tensor& out, const A& a_in, const B& b_in, Backward backward) {
  if (!(tracks_grad(a_in) || tracks_grad(b_in)) || !is_floating(out.dtype())) return;
  const Tensor& a = as_tensor(a_in);
  const Tensor& b = as_tensor(b_in);
  Tensor as = a.detach(), bs = b.detach(), rs = out.detach();
  autograd::record(std::string(op_info(id).name), out, {a, b}, [as, bs, rs, backward](const Tensor& grad) {
    auto g = backward(grad, as, bs, rs);
    return std::vector<Tensor>{g[0], g[1]};
  });
}

// The eager body of a public op: compute, then record for autograd. Apart
// from the entry points' tracing branch so that `out` is returned by NRVO
// (GCC elides the copy only when every return names the same object).
template <class Op, class Record>
Tensor compute_and_record(Op op, Record record) {
  Tensor out = op();
  record(out);
  return out;
}

}  // namespace graph::elementwise
