// Device queries, memory and copies (cuda.h), over the CUDA runtime API.
#include <cuda_runtime.h>

#include <array>
#include <cstring>
#include <mutex>
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
      l.pdl = p.major >= 9;
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

// Copies to the host are synchronous: on the default stream cudaMemcpy; on
// another stream an async copy and a wait for that stream (which a capture
// refuses, so a graph that reads device values on the host is not captured).
// Copies to the device are asynchronous up to 64 KiB (Staging), else
// synchronous the same way.
namespace {

// Small host-to-device copies (scalar operands: x * 2.0 uploads a 0-d
// tensor; index rows, one-hot targets) go through pinned staging memory, so
// the host does not wait for the stream: a copy from pageable memory first
// waits for all earlier work on its stream (CUDA's documented behaviour),
// which made every such copy a full synchronization. A ring of slots, each
// reused only once the copy that last read it has run (its event).
class Staging {
 public:
  static constexpr size_t kSlotBytes = 64 << 10;
  static constexpr size_t kSlots = 32;

  // False where it does not apply (too large, no pinned memory, a stream
  // being captured: the graph would read a slot later reused); the caller
  // copies synchronously then.
  bool copy(void* dst, const void* src, size_t n, cudaStream_t s) {
    if (n > kSlotBytes) return false;
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (s && cudaStreamIsCapturing(s, &capturing) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    if (capturing != cudaStreamCaptureStatusNone) return false;
    std::lock_guard lock(mu_);
    if (!ready_ && !init()) return false;
    Slot& slot = slots_[next_];
    next_ = (next_ + 1) % kSlots;
    if (slot.used) check(cudaEventSynchronize(slot.done), "copy to the device (staging)");
    std::memcpy(slot.host, src, n);
    check(cudaMemcpyAsync(dst, slot.host, n, cudaMemcpyHostToDevice, s), "copy to the device");
    check(cudaEventRecord(slot.done, s), "copy to the device (staging)");
    slot.used = true;
    return true;
  }

 private:
  struct Slot {
    void* host = nullptr;
    cudaEvent_t done = nullptr;
    bool used = false;
  };

  bool init() {
    if (failed_) return false;
    void* block = nullptr;
    if (cudaHostAlloc(&block, kSlotBytes * kSlots, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      failed_ = true;
      return false;
    }
    for (size_t i = 0; i < kSlots; ++i) {
      slots_[i].host = static_cast<char*>(block) + i * kSlotBytes;
      check(cudaEventCreateWithFlags(&slots_[i].done, cudaEventDisableTiming), "cudaEventCreate");
    }
    ready_ = true;
    return true;
  }

  std::mutex mu_;
  std::array<Slot, kSlots> slots_{};
  size_t next_ = 0;
  bool ready_ = false, failed_ = false;
};

Staging& staging() {
  static Staging* s = new Staging;  // never destroyed, as the allocator
  return *s;
}

}  // namespace

void copy_host_to_device(void* dst, const void* src, size_t n) {
  if (!n) return;
  if (staging().copy(dst, src, n, stream())) return;
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
