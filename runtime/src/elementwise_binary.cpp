// Eager binary ops. Every binary op of ops.def gets its three public entry
// points (tensor-tensor, tensor-scalar, scalar-tensor) from the X-macro below;
// the math is graph::scalar::<op>, shared with generated fused code. The three
// entry points share one functor type per op, so each op's kernels are
// instantiated once, not once per entry point (elementwise_impl.h).
#include "elementwise_impl.h"

namespace graph {

using namespace elementwise;

namespace {
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)     \
  struct name##_fn {                                           \
    template <class X, class Y>                                \
    auto operator()(X x, Y y) const { return scalar::name(x, y); } \
  };
#include "graph/ops.def"
}  // namespace

// ---- public ops, three per ops.def binary entry -------------------------

#define GRAPH_BINARY_ENTRY(name, compute, A, B)                                                    \
  Tensor name(A a, B b) {                                                                          \
    if (detail::tracing()) return detail::trace_op(#name, {a, b}, {}, [&] { return name(a, b); }); \
    return compute_and_record(                                                                     \
        [&] { return compute(OpId::name, a, b, name##_fn{}); },                                    \
        [&](Tensor& out) { record_binary(OpId::name, out, a, b, derivatives::name##_backward<Tensor>); }); \
  }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)          \
  GRAPH_BINARY_ENTRY(name, binary_tt, const Tensor&, const Tensor&) \
  GRAPH_BINARY_ENTRY(name, binary_ts, const Tensor&, Scalar)        \
  GRAPH_BINARY_ENTRY(name, binary_st, Scalar, const Tensor&)
#include "graph/ops.def"
#undef GRAPH_BINARY_ENTRY

}  // namespace graph
