#pragma once
// Launch geometry for the eager CUDA kernels, as plain host functions (no
// CUDA headers) so that unit tests check it without a GPU.
//
// Every elementwise kernel walks its operands through a Geometry: the output
// shape with one stride row per operand, after dropping size-1 dims and
// merging dims that are contiguous for every operand (the same collapse the
// CPU's StridedLoop does). A fully contiguous op is one dim of stride 1,
// which the kernels read with 16-byte vector loads when every pointer is
// aligned; anything else is a grid-stride loop that decomposes the linear
// index once per element.
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define GRAPH_CUDA_HD __host__ __device__
#else
#define GRAPH_CUDA_HD
#endif

namespace graph::cuda {

inline constexpr int kMaxDims = 8;      // after collapsing; more is an error
inline constexpr int kMaxOperands = 3;  // output + two inputs

// A shape with one stride row per operand, after collapsing (collapse()):
// the eager kernels' Geometry (MaxOperands = kMaxOperands) and the generated
// kernels' FusedGeometry (fused.h).
template <int MaxOperands>
struct BasicGeometry {
  int ndim = 0;  // 0: a single element
  int operands = 0;
  int64_t numel = 1;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[MaxOperands][kMaxDims] = {};  // in elements

  // Every operand dense (stride 1) over one dim, or a single element: a
  // kernel may index every operand with the element index itself.
  GRAPH_CUDA_HD bool contiguous() const {
    if (ndim == 0) return true;
    if (ndim != 1) return false;
    for (int k = 0; k < operands; ++k)
      if (strides[k][0] != 1) return false;
    return true;
  }
};
using Geometry = BasicGeometry<kMaxOperands>;

// The Geometry of `operands` tensors viewed at `shape` (rank `ndim`) with
// element strides strides[k][d]; size-1 dims dropped and adjacent dims merged
// where every operand is contiguous across them. Throws graph::Error naming
// `op` when more than kMaxDims dims remain.
Geometry collapse(const char* op, int ndim, const int64_t* shape, int operands,
                  const int64_t* const* strides);

struct LaunchConfig {
  int64_t blocks = 0;  // 0: nothing to launch (numel 0)
  int threads = 0;
  int vec = 1;  // elements per vector load (1 for the strided kernel)
  // Launch as a programmatic dependent launch (fused.h launch_fused): the
  // kernel may start while the previous one in the stream finishes.
  bool pdl = false;
};

// What the launch heuristics read from the device (cudaDeviceProp).
struct DeviceLimits {
  int sm_count = 108;                // A100
  int max_threads_per_sm = 2048;
  int64_t max_grid_x = 2147483647;
  bool pdl = false;  // compute capability 9.0 or newer: programmatic dependent launch
};

// Elements per 16-byte load for dtype size `elem` when every pointer in
// `ptrs` (n of them) is 16-byte aligned; 1 otherwise.
int vector_width(size_t elem, const void* const* ptrs, int n);

// Threads per block and a grid that fills every SM a few waves deep without
// launching more blocks than there is work: grid-stride loops cover the rest.
LaunchConfig elementwise_launch(int64_t numel, int vec, const DeviceLimits& limits);

// One block per output row for row-wise kernels (reductions, softmax):
// threads a power of two in [32, 1024], no more than the row needs.
LaunchConfig row_launch(int64_t rows, int64_t row_length, const DeviceLimits& limits);

// The launch of a fused device reduction (a reduce FusionGroup whose
// producers are computed in registers, graph::detail::fused_reduction_shape
// qualified): `rows` output slots of `row_length` elements each, accumulated
// in `acc_size`-byte accumulators.
//  - rows > 1: one block per output row (grid-stride over rows past
//    max_grid_x), threads as row_launch; single stage, no scratch.
//  - rows == 1 (reduction over everything): stage 1 has `blocks` blocks
//    writing one partial each into `scratch_bytes` of scratch, stage 2 one
//    block of `stage2_threads` threads reducing the partials in block order
//    (deterministic, no float atomics). At most 1024 partials, so stage 2
//    is one pass. A single stage-1 block writes the result directly
//    (blocks == 1: no stage 2, no scratch).
//  - rows == 0: nothing to launch (blocks 0). row_length 0 still launches
//    (one block per row writes the empty reduction's value).
// Throws graph::Error for negative sizes or acc_size 0.
struct ReduceLaunch {
  int64_t blocks = 0;  // stage 1 (0: nothing to launch)
  int threads = 0;
  bool two_stage = false;
  int stage2_threads = 0;    // 0 without stage 2
  size_t scratch_bytes = 0;  // partials: blocks * acc_size when two_stage
};
ReduceLaunch fused_reduce_launch(int64_t rows, int64_t row_length, size_t acc_size, const DeviceLimits& limits);

}  // namespace graph::cuda
