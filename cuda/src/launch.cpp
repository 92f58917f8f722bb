// Launch geometry (launch.h): host code only, tested without a GPU.
#include "graph/cuda/launch.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "graph/error.h"

namespace graph::cuda {

Geometry collapse(const char* op, int ndim, const int64_t* shape, int operands,
                  const int64_t* const* strides) {
  if (operands < 1 || operands > kMaxOperands)
    throw Error(std::string(op) + ": cuda: " + std::to_string(operands) + " operands (at most " +
                std::to_string(kMaxOperands) + ")");
  Geometry g;
  g.operands = operands;
  int64_t sizes[64];
  int64_t st[kMaxOperands][64];
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    g.numel *= shape[d];
    if (shape[d] == 1) continue;
    // Merge into the previous dim when every operand steps across the pair
    // as one: stride(prev) == stride(d) * size(d).
    bool merge = n > 0;
    for (int k = 0; merge && k < operands; ++k)
      merge = st[k][n - 1] == strides[k][d] * shape[d];
    if (merge) {
      sizes[n - 1] *= shape[d];
      for (int k = 0; k < operands; ++k) st[k][n - 1] = strides[k][d];
      continue;
    }
    if (n == 64) throw Error(std::string(op) + ": cuda: more than 64 dims");
    sizes[n] = shape[d];
    for (int k = 0; k < operands; ++k) st[k][n] = strides[k][d];
    ++n;
  }
  if (n > kMaxDims)
    throw Error(std::string(op) + ": cuda: " + std::to_string(n) +
                " non-mergeable dims after collapsing (the CUDA kernels take at most " +
                std::to_string(kMaxDims) + "); make the operands contiguous first");
  g.ndim = n;
  for (int d = 0; d < n; ++d) {
    g.sizes[d] = sizes[d];
    for (int k = 0; k < operands; ++k) g.strides[k][d] = st[k][d];
  }
  return g;
}

int vector_width(size_t elem, const void* const* ptrs, int n) {
  if (elem == 0 || elem > 16 || 16 % elem != 0) return 1;
  for (int i = 0; i < n; ++i)
    if (reinterpret_cast<uintptr_t>(ptrs[i]) % 16 != 0) return 1;
  return static_cast<int>(16 / elem);
}

LaunchConfig elementwise_launch(int64_t numel, int vec, const DeviceLimits& limits) {
  LaunchConfig c;
  if (numel <= 0) return c;
  c.vec = std::max(vec, 1);
  c.threads = 256;
  const int64_t items = (numel + c.vec - 1) / c.vec;  // one vector per thread-iteration
  const int64_t needed = (items + c.threads - 1) / c.threads;
  // Four waves of resident blocks hide latency; beyond that the grid-stride
  // loop is cheaper than more blocks.
  const int64_t resident = int64_t{limits.sm_count} * (limits.max_threads_per_sm / c.threads);
  c.blocks = std::clamp<int64_t>(needed, 1, std::min<int64_t>(resident * 4, limits.max_grid_x));
  return c;
}

LaunchConfig row_launch(int64_t rows, int64_t row_length, const DeviceLimits& limits) {
  LaunchConfig c;
  if (rows <= 0) return c;
  c.threads = 32;
  while (c.threads < 1024 && c.threads < row_length) c.threads *= 2;
  c.blocks = std::min<int64_t>(rows, limits.max_grid_x);
  return c;
}

}  // namespace graph::cuda
