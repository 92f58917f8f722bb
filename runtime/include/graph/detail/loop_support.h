#pragma once
// What the generated fused loops need, and nothing more: a generated source's
// loops are compiled in a translation unit of their own (<name>.loops.cpp,
// beside the graph functions' <name>.graph.cpp), so that the build runs the
// two in parallel and the loops' unit parses no tensor or ops headers.
#include <cstdint>

#include "graph/cpu_isa.h"     // the instruction-set variants' attributes
#include "graph/dtype.h"       // Half, BFloat16 element types
#include "graph/scalar_ops.h"  // the loop bodies: graph::scalar::<op>

// Stands before each dense fused loop (codegen/src/fusion_kernel.cpp). Its
// operands are __restrict pointers, but GCC does not take __restrict from
// pointers declared inside a lambda (the parallel_for body): it versions the
// loop with a run-time overlap test per pair of operands and, past 10 pairs
// (--param vect-max-version-for-alias-checks), leaves the loop scalar. Every
// iteration reads and writes element i only and no output overlaps another
// operand, so telling the compiler there is no loop-carried dependence is
// what __restrict already says.
// Clang needs no hint: the loop sits in a function whose pointer parameters
// are __restrict (fusion_kernel.cpp), which it takes as noalias, and it
// vectorizes the same loops without one. Its hint, vectorize(assume_safety),
// would also force vectorization, and a loop that cannot be vectorized (a
// call to erf in gelu) would then warn at every build
// (-Wpass-failed=transform-warning).
#if defined(__clang__)
#define GRAPH_DENSE_LOOP
#elif defined(__GNUC__)
#define GRAPH_DENSE_LOOP _Pragma("GCC ivdep")
#else
#define GRAPH_DENSE_LOOP
#endif

namespace graph::detail {

// The entry points of one fused loop (a generated kernel struct), as the
// loops' unit exports them to the graph functions' unit; FusedKernels
// (fused_loop.h) takes the variant for this CPU and the strided walk.
struct FusedEntries {
  void (*baseline)(int64_t begin, int64_t end, char* const* p, const void* scalars);
  void (*avx2)(int64_t begin, int64_t end, char* const* p, const void* scalars);
  void (*avx512)(int64_t begin, int64_t end, char* const* p, const void* scalars);
  void (*strided)(int64_t n, char* const* p, const int64_t* st, const void* scalars);
};

}  // namespace graph::detail
