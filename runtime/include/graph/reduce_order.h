#pragma once
// The order in which sum, mean, amax and amin accumulate a dense run of
// elements into one output slot, shared by the eager reductions
// (runtime/src/reduce.cpp) and the reductions that generated code fuses with
// their elementwise producers (codegen/src/fused_groups.cpp), so eager and
// static results are bitwise equal. Fixed by the element's position only:
// the same on every instruction set and for every thread count.
//
// A run of n elements into one slot is cut into chunks of kChunk elements
// (the last one shorter). Within a chunk, element i goes to lane i % kLanes
// (kLanes accumulators, each starting at the identity), and the lanes are
// combined by a fixed tree: lane k with lane k + 8, then k + 4, k + 2, k + 1.
// The slot's accumulator (starting at the identity) then takes each chunk's
// partial in chunk order. Chunks are independent, so one big slot can reduce
// them on several threads and combine the partials afterwards in order.
//
// Floats accumulate in double. Integers and bools sum in uint64_t (wrapping
// like PyTorch's int64). amax/amin propagate NaN: once a lane or a partial
// is NaN it stays NaN. The per-lane statements are plain selects and adds,
// which the compilers vectorize (16 double lanes: two AVX-512 registers).
//
// Generated code computes its producers into blocks of a multiple of kLanes
// elements and feeds them to lanes_add one after the other: the same order.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "graph/cpu_isa.h"

namespace graph::reduce_order {

inline constexpr int kLanes = 16;
inline constexpr int64_t kChunk = 65536;  // a multiple of kLanes and of the generated blocks

struct Sum {
  template <class A>
  static constexpr A identity() {
    return A(0);
  }
  template <class A>
  GRAPH_ISA_INLINE static A combine(A a, A b) {
    return a + b;
  }
};

// a if a is NaN, else the larger, b on ties (and b when b is NaN): NaN wins.
struct Max {
  template <class A>
  static constexpr A identity() {
    if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::lowest();
  }
  template <class A>
  GRAPH_ISA_INLINE static A combine(A a, A b) {
    return (a != a || a > b) ? a : b;  // NOLINT: a != a is the NaN test (no libm call, vectorizes)
  }
};

struct Min {
  template <class A>
  static constexpr A identity() {
    if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
    else return std::numeric_limits<A>::max();
  }
  template <class A>
  GRAPH_ISA_INLINE static A combine(A a, A b) {
    return (a != a || a < b) ? a : b;  // NOLINT
  }
};

template <class Op, class Acc>
GRAPH_ISA_INLINE void lanes_init(Acc* lane) {
  for (int k = 0; k < kLanes; ++k) lane[k] = Op::template identity<Acc>();
}

// Elements x[0, n) into the lanes, x[i] into lane i % kLanes: x must start
// at a multiple of kLanes within its chunk.
template <class Op, class Acc, class In>
GRAPH_ISA_INLINE void lanes_add(Acc* __restrict lane, const In* __restrict x, int64_t n) {
  Acc l[kLanes];
  for (int k = 0; k < kLanes; ++k) l[k] = lane[k];
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) l[k] = Op::combine(l[k], static_cast<Acc>(x[i + k]));
  for (int k = 0; i + k < n; ++k) l[k] = Op::combine(l[k], static_cast<Acc>(x[i + k]));
  for (int k = 0; k < kLanes; ++k) lane[k] = l[k];
}

// The lanes combined by the fixed tree.
template <class Op, class Acc>
GRAPH_ISA_INLINE Acc lanes_finish(const Acc* lane) {
  Acc t[kLanes];
  for (int k = 0; k < kLanes; ++k) t[k] = lane[k];
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int k = 0; k < w; ++k) t[k] = Op::combine(t[k], t[k + w]);
  return t[0];
}

// The partial of one chunk x[0, n), n <= kChunk.
template <class Op, class Acc, class In>
GRAPH_ISA_INLINE Acc chunk_body(const In* x, int64_t n) {
  Acc lane[kLanes];
  lanes_init<Op>(lane);
  lanes_add<Op>(lane, x, n);
  return lanes_finish<Op>(lane);
}

// chunk_body compiled per instruction set (graph/cpu_isa.h), picked at run
// time; every variant gives the same bits (no contraction, lane-wise IEEE ops).
template <class Op, class Acc, class In>
struct ChunkKernel {
  GRAPH_ISA_KERNEL static Acc baseline(const In* x, int64_t n) { return chunk_body<Op, Acc>(x, n); }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX2 static Acc avx2(const In* x, int64_t n) { return chunk_body<Op, Acc>(x, n); }
  GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static Acc avx512(const In* x, int64_t n) {
    return chunk_body<Op, Acc>(x, n);
  }
  static Acc run(const In* x, int64_t n) { return cpu::pick_isa(&baseline, &avx2, &avx512)(x, n); }
};

// acc combined with the partials of the chunks of the dense run x[0, n), in order.
template <class Op, class Acc, class In>
Acc dense(Acc acc, const In* x, int64_t n) {
  for (int64_t c = 0; c < n; c += kChunk)
    acc = Op::combine(acc, ChunkKernel<Op, Acc, In>::run(x + c, n - c < kChunk ? n - c : kChunk));
  return acc;
}

// Number of chunks of a run of n elements.
inline int64_t num_chunks(int64_t n) { return (n + kChunk - 1) / kChunk; }

}  // namespace graph::reduce_order
