#pragma once
// The generated CUDA kernels of fusion groups (codegen's <source>.graph.cu)
// and what connects them to the runtime. Light on purpose: every generated
// .cu includes this and graph/scalar_ops.h only, so nvcc compiles each in
// about a second. No CUDA headers are needed to use the host part (geometry,
// launch configuration, registry), which cuda_host_test checks without a GPU.
//
// One fusion group = one __global__ kernel plus a host launcher
// `void launch_<kernel>(const FusedArgs&)` that unpacks FusedArgs into the
// kernel's typed parameters and launches it with `launch`. The launcher is
// registered at static-initialization time under the group's key
// "<mangled name>#<body hash>/group<k>", k counting the graph's elementwise
// FusionGroups in the order the CPU writer visits them (nested If/Loop
// blocks included); the generated CPU function asks the runtime
// (graph::detail::cuda_fused) to run that key when its inputs are on the
// device.
#include <cstddef>
#include <cstdint>

#include "graph/cuda/launch.h"

namespace graph::cuda {

inline constexpr int kMaxFusedOperands = 32;  // outputs + tensor inputs of one group (codegen: kernel_plan)
inline constexpr int kMaxFusedScalars = 16;   // host scalars the element body reads

// The output shape of a group with one stride row per operand (outputs
// first, then tensor inputs), after the same collapse as the eager kernels'
// Geometry: size-1 dims dropped, dims merged where every operand is
// contiguous across them.
using FusedGeometry = BasicGeometry<kMaxFusedOperands>;

// What a kernel of N operands receives: FusedGeometry cut to its N rows, so
// the kernel parameter stays small.
template <int N>
struct FusedIndex {
  int ndim;
  bool contiguous;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];
};

template <int N>
FusedIndex<N> fused_index(const FusedGeometry& g) {
  FusedIndex<N> ix{};
  ix.ndim = g.ndim;
  ix.contiguous = g.contiguous();
  for (int d = 0; d < kMaxDims; ++d) {
    ix.sizes[d] = g.sizes[d];
    for (int k = 0; k < N; ++k) ix.strides[k][d] = g.strides[k][d];
  }
  return ix;
}

#if defined(__CUDACC__)
// Element offsets of every operand for linear output index i: the index
// decomposed over the collapsed dims, innermost last (kernel_util.cuh's
// offset_of, for N operands at once: one division per dim, not per operand).
template <int N>
__device__ inline void fused_offsets(const FusedIndex<N>& ix, int64_t i, int64_t (&off)[N]) {
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = ix.ndim - 1; d >= 0; --d) {
    const int64_t size = ix.sizes[d];
    const int64_t q = i / size;
    const int64_t r = i - q * size;
    for (int k = 0; k < N; ++k) off[k] += r * ix.strides[k][d];
    i = q;
  }
}
#endif

// V elements of T loaded or stored as one (16 bytes or less) vector access;
// the generated dense path uses it when fused_vectorizable says so.
template <class T, int V>
struct alignas(sizeof(T) * V) FusedPack {
  T v[V];
};

// A host scalar the element body reads (an int, float or bool input of the
// group, or a value computed once before the loop): the launcher reads `i`
// for int64_t and bool, `f` for double.
struct FusedScalar {
  int64_t i = 0;
  double f = 0;
};

// What a fused reduce kernel (codegen: reduce_kernel) reads besides data
// (the output, then the tensor inputs, all dense and of one shape) and
// scalars: `rows` output slots of `count` elements, the launch plan
// (fused_reduce_launch) and, when plan.two_stage, plan.blocks doubles of
// device scratch for the stage-1 partials.
struct FusedReduce {
  int64_t rows = 0, count = 0;
  ReduceLaunch plan;
  void* partials = nullptr;
};

struct FusedArgs {
  void* data[kMaxFusedOperands] = {};  // outputs, then tensor inputs
  FusedScalar scalars[kMaxFusedScalars] = {};
  FusedGeometry geometry;
  LaunchConfig launch;
  void* stream = nullptr;  // the cudaStream_t to launch on (cuda.h current_stream)
  FusedReduce reduce;      // fused reduce kernels only
};

#if defined(__CUDACC__)
// Programmatic dependent launch (Hopper): a kernel launched by launch_fused
// with LaunchConfig::pdl may start while the kernel before it in the stream
// still runs. It waits here, before reading anything, until that kernel has
// finished and its writes are visible, then lets the next kernel launch (which
// waits the same way). Without the launch attribute both are no-ops. Measured
// on an H200, an LSTM step of two small kernels in a CUDA graph: 2.5 us
// instead of 3.5.
__device__ __forceinline__ void fused_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

// Launches `kernel` on `launch`'s grid and `stream` (a cudaStream_t), as a
// programmatic dependent launch when launch.pdl. A launch error is left for
// cudaGetLastError (run_fused).
template <class... P, class... A>
void launch_fused(void (*kernel)(P...), const LaunchConfig& launch, void* stream, A&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(launch.blocks));
  cfg.blockDim = dim3(static_cast<unsigned>(launch.threads));
  cfg.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = launch.pdl ? 1 : 0;
  (void)cudaLaunchKernelEx(&cfg, kernel, static_cast<A&&>(args)...);
}

// The accumulators of fused reduce kernels (double), as graph/reduce_order.h
// combines: a + b; max and min with NaN winning (a if a is NaN, else the
// larger/smaller, b on ties and when b is NaN).
struct FusedSum {
  __device__ static double identity() { return 0.0; }
  __device__ static double combine(double a, double b) { return a + b; }
};
struct FusedMax {
  __device__ static double identity() { return __longlong_as_double(static_cast<long long>(0xfff0000000000000ULL)); }
  __device__ static double combine(double a, double b) { return (a != a || a > b) ? a : b; }  // NOLINT
};
struct FusedMin {
  __device__ static double identity() { return __longlong_as_double(static_cast<long long>(0x7ff0000000000000ULL)); }
  __device__ static double combine(double a, double b) { return (a != a || a < b) ? a : b; }  // NOLINT
};

// The combination of every thread's `v` in a block of a power-of-two
// number of threads (>= 32): a shuffle tree per warp, the warps' values
// through shared memory, a shuffle tree over them. The same order for the
// same launch, every run. Thread 0 holds the result; every thread of the
// block must call it (it synchronizes).
template <class Op>
__device__ inline double fused_block_reduce(double v) {
  __shared__ double warp_value[32];
  for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = static_cast<int>(threadIdx.x & 31u), warp = static_cast<int>(threadIdx.x >> 5);
  if (lane == 0) warp_value[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = static_cast<int>((blockDim.x + 31u) >> 5);
    v = lane < warps ? warp_value[lane] : Op::identity();
    for (int o = 16; o > 0; o >>= 1) v = Op::combine(v, __shfl_down_sync(0xffffffffu, v, o));
  }
  __syncthreads();  // warp_value is reused by the caller's next row
  return v;
}

// Stage 2 of a single-output fused reduction: one block combines the `n`
// stage-1 partials (n <= blockDim.x) in block order and writes
// out[0] = result / divisor (the count for mean, else 1).
template <class Op, class T>
__global__ void fused_reduce_final(const double* __restrict__ partials, int64_t n, T* __restrict__ out,
                                   double divisor) {
  double v = static_cast<int64_t>(threadIdx.x) < n ? partials[threadIdx.x] : Op::identity();
  v = fused_block_reduce<Op>(v);
  if (threadIdx.x == 0) out[0] = static_cast<T>(v / divisor);
}
#endif

using FusedLauncher = void (*)(const FusedArgs&);

// The geometry of `operands` operands viewed at `shape` (rank `ndim`) with
// element strides strides[k][d]. Throws graph::Error naming `what` for more
// than kMaxFusedOperands operands or more than kMaxDims dims after collapsing.
FusedGeometry collapse_fused(const char* what, int ndim, const int64_t* shape, int operands,
                             const int64_t* const* strides);

// Blocks and threads for a grid-stride kernel over `items` work items (the
// elements, or the 16-byte packs of the dense path): 256 threads, one item
// per thread, never more blocks than max_grid_x (the grid-stride loop does
// the rest). A whole grid streams faster than a few waves of a grid-stride
// loop: an 8-op chain on 256M floats ran at 104% of cudaMemcpy's bandwidth on
// an H200, against 98% with four waves.
LaunchConfig fused_launch(int64_t items, const DeviceLimits& limits);

// Whether kernels launched now may use programmatic dependent launch: the
// device has it (DeviceLimits::pdl), GRAPH_CUDA_PDL is not 0, and no
// conditional node's body is being captured on this thread (its graph takes
// no programmatic edges).
bool pdl_allowed();
// Brackets the capture of a conditional node's body (conditional.cu).
void suspend_pdl(bool suspend);

// The registry of generated launchers, keyed by "<mangled>#<hash>/group<k>".
// Registering a key twice keeps the first launcher (the same generated
// source linked twice) and returns false.
bool register_fused_kernel(const char* key, FusedLauncher launcher);
FusedLauncher find_fused_kernel(const char* key);  // nullptr when none
size_t fused_kernel_count();

// Whether the dense path of a generated kernel may read and write its n
// operands through FusedPack: the geometry contiguous and every pointer
// 16-byte aligned (which any pack of at most 16 bytes needs).
bool fused_vectorizable(const FusedGeometry& g, void* const* data, int n);

// Runs `launcher` on `args` (nothing when args.launch.blocks is 0) and turns
// a launch error into graph::Error naming `what`.
void run_fused(const char* what, FusedLauncher launcher, const FusedArgs& args);

// Registers at static-initialization time (one per generated kernel).
struct FusedRegistrar {
  FusedRegistrar(const char* key, FusedLauncher launcher) { register_fused_kernel(key, launcher); }
};

}  // namespace graph::cuda
