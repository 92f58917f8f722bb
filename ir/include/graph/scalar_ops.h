#pragma once
// Per-element kernel bodies generated from ops.def: graph::scalar::relu(x),
// graph::scalar::add(a, b), ... The eager CPU kernels and the generated fused
// loops call the same functions, so the math is written once. Arguments are
// already converted to the op's compute type (op_table.h: compute_dtype).
// Always inlined: a body left a call (elu's, with expm1's exp and log) runs
// one element at a time in a loop that would otherwise vectorize.
#include <cmath>
#include <type_traits>

#include "graph/fast_math.h"  // graph::math::exp/tanh, used by ops.def bodies

#if defined(__CUDACC__)
#define GRAPH_HOST_DEVICE __host__ __device__
#else
#define GRAPH_HOST_DEVICE
#endif

namespace graph::scalar {

template <class T, bool ToBool> using result_t = std::conditional_t<ToBool, bool, T>;

#define GRAPH_RULE_IS_BOOL_Same false
#define GRAPH_RULE_IS_BOOL_ToFloat false
#define GRAPH_RULE_IS_BOOL_ToBool true
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                           \
  template <class T>                                                  \
  GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE result_t<T, GRAPH_RULE_IS_BOOL_##rule> name(T x) { \
    return static_cast<result_t<T, GRAPH_RULE_IS_BOOL_##rule>>(body); \
  }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                  \
  template <class T>                                                         \
  GRAPH_HOST_DEVICE GRAPH_MATH_FORCE_INLINE result_t<T, GRAPH_RULE_IS_BOOL_##rule> name(T a, T b) { \
    return static_cast<result_t<T, GRAPH_RULE_IS_BOOL_##rule>>(body);        \
  }
#include "graph/ops.def"
#undef GRAPH_RULE_IS_BOOL_Same
#undef GRAPH_RULE_IS_BOOL_ToFloat
#undef GRAPH_RULE_IS_BOOL_ToBool

}  // namespace graph::scalar
