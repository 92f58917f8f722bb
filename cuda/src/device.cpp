// Device queries, memory and copies (cuda.h), over the CUDA runtime API.
#include <cuda_runtime.h>

#include <string>

#include "graph/cuda/cuda.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky error so later calls report their own
    return 0;
  }
  if (n == 0 && why) *why = "no devices";
  return n;
}

void require_device(const std::string& what) {
  std::string why;
  if (device_count(&why) == 0) throw Error(what + ": no CUDA device (cudaGetDeviceCount: " + why + ")");
}

DeviceLimits device_limits() {
  static const DeviceLimits limits = [] {
    DeviceLimits l;
    int dev = 0;
    cudaDeviceProp p{};
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
      l.sm_count = p.multiProcessorCount;
      l.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
      l.max_grid_x = p.maxGridSize[0];
    }
    return l;
  }();
  return limits;
}

BlockCache& device_allocator() {
  // Never destroyed: tensors held by static objects are freed after any
  // function-local static would be, and the driver may already be shutting
  // down then.
  static BlockCache* cache = new BlockCache(BlockCache::Backend{
      [](size_t n) -> void* {
        void* p = nullptr;
        if (cudaMalloc(&p, n) != cudaSuccess) {
          cudaGetLastError();
          return nullptr;
        }
        return p;
      },
      [](void* p) { cudaFree(p); }});
  return *cache;
}

namespace {
thread_local Stream g_stream = nullptr;
cudaStream_t stream() { return static_cast<cudaStream_t>(g_stream); }
}  // namespace

Stream current_stream() { return g_stream; }
void set_current_stream(Stream s) { g_stream = s; }

// Host copies are synchronous: on the default stream cudaMemcpy; on another
// stream an async copy and a wait for that stream (which a capture refuses,
// so a graph that reads device values on the host is not captured).
void copy_host_to_device(void* dst, const void* src, size_t n) {
  if (!n) return;
  if (!g_stream) return check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "copy to the device");
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, stream()), "copy to the device");
  check(cudaStreamSynchronize(stream()), "copy to the device");
}
void copy_device_to_host(void* dst, const void* src, size_t n) {
  if (!n) return;
  if (!g_stream) return check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "copy to the host");
  check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream()), "copy to the host");
  check(cudaStreamSynchronize(stream()), "copy to the host");
}
void copy_device_to_device(void* dst, const void* src, size_t n) {
  if (n) check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream()), "device copy");
}
void memset_zero(void* dst, size_t n) {
  if (n) check(cudaMemsetAsync(dst, 0, n, stream()), "memset");
}
void synchronize() { check(cudaDeviceSynchronize(), "synchronize"); }

}  // namespace graph::cuda
