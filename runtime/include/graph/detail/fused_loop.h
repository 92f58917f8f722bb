#pragma once
// How a generated fused elementwise loop runs (codegen/src/fusion_kernel.cpp
// writes the kernels, the runtime drives them). The kernels are plain
// functions with their element types erased, so that the driving code (the
// split across cores, the stride walk over broadcast and non-contiguous
// operands) is compiled once, here, instead of once per group in every
// generated source: that glue was most of a static source's compile time.
//
// Operands are numbered outputs first, then the tensor inputs, in the order
// the kernels' parameters take them.
#include <cstdint>
#include <initializer_list>

#include "graph/tensor.h"

namespace graph::detail {

struct FusedKernels {
  // Elements [begin, end) of operands that are all dense: operand k's
  // element i at p[k] + i elements. The variant for this CPU (cpu_isa.h).
  void (*dense)(int64_t begin, int64_t end, char* const* p, const void* scalars);
  // n elements, operand k's element i at p[k] + i * st[k] elements.
  void (*strided)(int64_t n, char* const* p, const int64_t* st, const void* scalars);
  // The host values the body reads (a struct the kernels define), or null.
  const void* scalars;
  // The element type of each operand, as the kernels read it.
  const DType* dtypes;
};

// Runs the dense kernel over numel elements, split across cores.
void run_fused_dense(const FusedKernels& k, int64_t numel, char* const* p);

// Runs the loop over `shape`, which the outputs have and every input
// broadcasts to: one dense run when all operands are contiguous there,
// otherwise innermost runs with per-operand strides (0 along broadcast dims),
// whose unit-stride runs still take the dense kernel. A device tensor or a
// dtype other than the kernel's is refused with data_ptr's message.
void run_fused_strided(const FusedKernels& k, const Shape& shape, std::initializer_list<const Tensor*> operands);

// A typed pointer as the kernels' untyped operand pointer.
template <class T>
char* bytes(const T* p) {
  return reinterpret_cast<char*>(const_cast<T*>(p));
}

}  // namespace graph::detail
