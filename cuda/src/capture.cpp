// The CUDA runtime behind GraphCaptureCache (capture.h): stream capture in
// relaxed mode on a non-blocking stream of its own, instantiate, launch.
#include <cuda_runtime.h>

#include <string>

#include "graph/cuda/capture.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda graph: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

GraphCaptureCache& graph_capture_cache() {
  // Never destroyed (as the allocator): executables outlive static tensors.
  static GraphCaptureCache* cache = new GraphCaptureCache(GraphCaptureCache::Backend{
      [] {
        cudaStream_t s = nullptr;
        check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        return static_cast<void*>(s);
      },
      [](void* s) {
        // Relaxed: cudaMalloc (a new block of the caching allocator) is
        // allowed while capturing; host synchronization still breaks it.
        check(cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeRelaxed),
              "cudaStreamBeginCapture");
      },
      [](void* s) -> void* {
        cudaGraph_t g = nullptr;
        if (cudaStreamEndCapture(static_cast<cudaStream_t>(s), &g) != cudaSuccess) {
          cudaGetLastError();
          if (g) cudaGraphDestroy(g);
          return nullptr;
        }
        return g;
      },
      [](void* g) -> void* {
        cudaGraphExec_t e = nullptr;
        if (cudaGraphInstantiate(&e, static_cast<cudaGraph_t>(g), 0) != cudaSuccess) {
          cudaGetLastError();
          return nullptr;
        }
        return e;
      },
      [](void* e, void* s) {
        check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(e), static_cast<cudaStream_t>(s)), "cudaGraphLaunch");
      },
      [](void* g, void* e) {
        if (e) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e));
        if (g) cudaGraphDestroy(static_cast<cudaGraph_t>(g));
      }});
  return *cache;
}

void stream_wait(void* to, void* from) {
  if (to == from) return;
  cudaEvent_t ev = nullptr;
  check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
  const cudaError_t r = cudaEventRecord(ev, static_cast<cudaStream_t>(from));
  const cudaError_t w = r == cudaSuccess ? cudaStreamWaitEvent(static_cast<cudaStream_t>(to), ev, 0) : r;
  cudaEventDestroy(ev);  // released once the wait is satisfied
  check(w, "stream wait");
}

}  // namespace graph::cuda
