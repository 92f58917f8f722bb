#pragma once
// Run-time instruction-set dispatch for the CPU elementwise loops: the
// generated fused loops (codegen/src/fusion_kernel.cpp) and the eager
// elementwise kernels (runtime/src/elementwise_impl.h) are compiled for
// baseline x86-64 (SSE2), AVX2 and AVX-512, and each call runs the best one
// this CPU has (cpuid, once).
//
// Results are bitwise the same whichever variant runs: the variants compile
// the same scalar bodies (graph/scalar_ops.h) with floating-point
// contraction off (no fused multiply-add: a * b + c rounds twice everywhere),
// and IEEE single operations (+ - * / sqrt, selects) give the same bits in a
// vector lane as in scalar code. Only the vector width differs.
#include <cstdint>

namespace graph::cpu {

enum Isa : int { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// The best variant this CPU runs (kBaseline off x86-64 or without GCC/clang).
int best_isa();
// The variant in use: best_isa(), or lower when the environment variable
// GRAPH_CPU_ISA (baseline, avx2, avx512) or set_isa asks for it.
int isa();
// For tests and benchmarks: use variant `isa`, at most best_isa(); returns
// the one now in use.
int set_isa(int isa);
// "baseline", "avx2", "avx512".
const char* isa_name(int isa);

// One function per variant, picked at each call.
template <class F>
inline F pick_isa(F baseline, F avx2, F avx512) {
  const int i = isa();
  return i == kAvx512 ? avx512 : i == kAvx2 ? avx2 : baseline;
}

}  // namespace graph::cpu

// The attributes of the variants. GRAPH_ISA_KERNEL goes on each variant's
// function: GCC optimizes it at -O3 (its -O2 vectorizes only the cheapest
// loops) with contraction off, whatever the file's flags; clang's -O2
// vectorizes, and -ffp-contract=off comes from the build
// (cmake/CxxGraphStaticGraphs.cmake, runtime/CMakeLists.txt). The body the
// variants share is GRAPH_ISA_INLINE, so it is compiled inside each.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GRAPH_ISA_DISPATCH 1
#define GRAPH_TARGET_AVX2 __attribute__((target("avx2")))
#define GRAPH_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq")))
#else
#define GRAPH_ISA_DISPATCH 0
#define GRAPH_TARGET_AVX2
#define GRAPH_TARGET_AVX512
#endif
// Sanitizer builds define GRAPH_ISA_FILE_FLAGS: the variants keep the file's
// -O1 there, since instrumented code forced to -O3 three times over took most
// of those builds' time, and the sanitizers look for bugs, not speed.
#if defined(__clang__) || defined(GRAPH_ISA_FILE_FLAGS)
#define GRAPH_ISA_KERNEL
#define GRAPH_ISA_INLINE __attribute__((always_inline)) inline
#elif defined(__GNUC__)
#define GRAPH_ISA_KERNEL __attribute__((optimize("O3", "fp-contract=off")))
#define GRAPH_ISA_INLINE __attribute__((always_inline)) inline
#else
#define GRAPH_ISA_KERNEL
#define GRAPH_ISA_INLINE inline
#endif
