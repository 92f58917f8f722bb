// Dim collapsing shared by the eager kernels' Geometry (launch.cpp) and the
// generated kernels' FusedGeometry (fused.cpp), which differ only in their
// operand limits and in how their errors name the kernels. Host code.
#pragma once

#include <cstdint>
#include <string>

#include "graph/error.h"

namespace graph::cuda::detail {

// Fills g from a shape and per-operand strides (the caller has checked the
// operand count and that ndim <= 64): size-1 dims are dropped, and a dim is
// merged into the previous one when every operand steps across the pair as
// one, stride(prev) == stride(d) * size(d). More than MaxDims dims left is an
// error naming `what` and `kernels`.
template <int MaxOperands, int MaxDims, class G>
void collapse_into(G& g, const char* what, const char* kernels, int ndim, const int64_t* shape, int operands,
                   const int64_t* const* strides) {
  g.operands = operands;
  int64_t sizes[64];
  int64_t st[MaxOperands][64];
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    g.numel *= shape[d];
    if (shape[d] == 1) continue;
    bool merge = n > 0;
    for (int k = 0; merge && k < operands; ++k) merge = st[k][n - 1] == strides[k][d] * shape[d];
    if (merge) {
      sizes[n - 1] *= shape[d];
      for (int k = 0; k < operands; ++k) st[k][n - 1] = strides[k][d];
      continue;
    }
    sizes[n] = shape[d];
    for (int k = 0; k < operands; ++k) st[k][n] = strides[k][d];
    ++n;
  }
  if (n > MaxDims)
    throw Error(std::string(what) + ": cuda: " + std::to_string(n) + " non-mergeable dims after collapsing (" +
                kernels + " take at most " + std::to_string(MaxDims) + "); make the operands contiguous first");
  g.ndim = n;
  for (int d = 0; d < n; ++d) {
    g.sizes[d] = sizes[d];
    for (int k = 0; k < operands; ++k) g.strides[k][d] = st[k][d];
  }
}

}  // namespace graph::cuda::detail
