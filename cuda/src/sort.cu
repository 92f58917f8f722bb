// argsort on the device (tensor_kernels.h): each value becomes the CPU
// kernel's unsigned order key (runtime/src/sort_ops.cpp order_key: NaN the
// largest, -0.0 equal to 0.0, inverted when descending), and CUB's stable
// segmented sort orders (key, position) pairs per row, so ties keep their
// positions as std::sort of (key, position) does on the CPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cub/device/device_segmented_sort.cuh>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/cuda/tensor_kernels.h"
#include "kernel_util.cuh"

namespace graph::cuda {

namespace {

using detail::grid_start;
using detail::grid_step;

template <class T>
struct KeyOf {
  using type = uint32_t;
};
template <>
struct KeyOf<double> {
  using type = uint64_t;
};
template <>
struct KeyOf<int64_t> {
  using type = uint64_t;
};

template <class T>
__device__ inline typename KeyOf<T>::type order_key(T v) {
  using U = typename KeyOf<T>::type;
  if constexpr (std::is_floating_point_v<T>) {
    constexpr U sign = U(1) << (sizeof(T) * 8 - 1);
    if (v != v) return U(~U(0));
    U bits;
    memcpy(&bits, &v, sizeof bits);
    if (v == T(0)) bits = 0;
    return bits >> (sizeof(T) * 8 - 1) ? U(~bits) : U(bits | sign);
  } else if constexpr (std::is_same_v<T, uint8_t>) {  // bool
    return U(v);
  } else {
    constexpr U sign = U(1) << (sizeof(T) * 8 - 1);
    return U(U(v) ^ sign);
  }
}

template <class T, class K>
__global__ void keys_kernel(const T* __restrict__ x, K* __restrict__ keys, int64_t* __restrict__ pos, int64_t total,
                            int64_t n, K flip) {
  for (int64_t e = grid_start(); e < total; e += grid_step()) {
    keys[e] = K(order_key(x[e]) ^ flip);
    pos[e] = e % n;
  }
}

__global__ void offsets_kernel(int64_t* offsets, int64_t lines, int64_t n) {
  for (int64_t l = grid_start(); l <= lines; l += grid_step()) offsets[l] = l * n;
}

// Device scratch from the caching allocator, released on every path.
struct Scratch {
  void* p = nullptr;
  explicit Scratch(size_t bytes) : p(bytes ? device_allocator().allocate(bytes, current_stream()) : nullptr) {}
  ~Scratch() {
    if (p) device_allocator().release(p);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

void check(cudaError_t e) {
  if (e != cudaSuccess) throw Error(std::string("argsort: cub segmented sort: ") + cudaGetErrorString(e));
}

template <class T>
void sort_rows(const T* x, int64_t* out, int64_t lines, int64_t n, bool descending) {
  using K = typename KeyOf<T>::type;
  const int64_t total = lines * n;
  const LaunchConfig c = elementwise_launch(total, 1, device_limits());
  Scratch keys(sizeof(K) * 2 * total), pos(sizeof(int64_t) * total), offsets(sizeof(int64_t) * (lines + 1));
  K* k_in = static_cast<K*>(keys.p);
  int64_t* p_in = static_cast<int64_t*>(pos.p);
  int64_t* off = static_cast<int64_t*>(offsets.p);
  keys_kernel<T, K><<<c.blocks, c.threads, 0, detail::stream()>>>(x, k_in, p_in, total, n,
                                                                   descending ? K(~K(0)) : K(0));
  const LaunchConfig co = elementwise_launch(lines + 1, 1, device_limits());
  offsets_kernel<<<co.blocks, co.threads, 0, detail::stream()>>>(off, lines, n);
  detail::check_launch("argsort");
  size_t bytes = 0;
  check(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, k_in, k_in + total, p_in, out, total, lines, off,
                                                  off + 1, detail::stream()));
  Scratch temp(bytes);
  check(cub::DeviceSegmentedSort::StableSortPairs(temp.p, bytes, k_in, k_in + total, p_in, out, total, lines, off,
                                                  off + 1, detail::stream()));
}

}  // namespace

void argsort_rows(DType t, const void* x, int64_t* out, int64_t lines, int64_t n, bool descending) {
  if (lines == 0 || n == 0) return;
  switch (t) {
    case kFloat32: return sort_rows(static_cast<const float*>(x), out, lines, n, descending);
    case kFloat64: return sort_rows(static_cast<const double*>(x), out, lines, n, descending);
    case kInt32: return sort_rows(static_cast<const int32_t*>(x), out, lines, n, descending);
    case kInt64: return sort_rows(static_cast<const int64_t*>(x), out, lines, n, descending);
    case kBool: return sort_rows(static_cast<const uint8_t*>(x), out, lines, n, descending);
    default: throw Error("argsort: cuda: no kernel for " + std::string(dtype_name(t)));
  }
}

}  // namespace graph::cuda
