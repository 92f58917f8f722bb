#pragma once
// <immintrin.h> for the runtime's hand-vectorized AVX-512 variants, where the
// ISA dispatch exists (graph/cpu_isa.h: x86-64 with GCC or clang).
#include "graph/cpu_isa.h"

#if GRAPH_ISA_DISPATCH
// GCC 12 warns of the intrinsics' own `__Y = __Y` placeholders once inlined
// into AVX-512 code (a false positive, at the header's lines).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
