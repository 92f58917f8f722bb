// CUDA conditional graph nodes (conditional.h): the handle, the node, the
// capture of its bodies and the kernel that sets the condition.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "graph/cuda/conditional.h"
#include "graph/cuda/fused.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string("cuda conditional node: ") + what + ": " + cudaGetErrorString(e));
  }
}

#if CUDART_VERSION >= 12040
// How the one element of a condition is read: 0 bool, 1..8 an integer of
// that many bytes, 9 float, 10 double, 11 a 16-bit float (any bit but the sign).
int element_kind(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Float32: return 9;
    case DType::Float64: return 10;
    case DType::Float16:
    case DType::BFloat16: return 11;
  }
  return 0;
}

__global__ void set_condition_kernel(cudaGraphConditionalHandle handle, const void* data, int kind, bool host,
                                     int counter, long long* count, long long trips) {
  bool go = host;
  if (data) {
    switch (kind) {
      case 0: go = *static_cast<const unsigned char*>(data) != 0; break;
      case 4: go = *static_cast<const int*>(data) != 0; break;
      case 8: go = *static_cast<const long long*>(data) != 0; break;
      case 9: go = *static_cast<const float*>(data) != 0.0f; break;
      case 10: go = *static_cast<const double*>(data) != 0.0; break;
      default: go = (*static_cast<const unsigned short*>(data) & 0x7fffu) != 0; break;
    }
  }
  if (counter != 0) {
    const long long k = counter == 1 ? 0 : *count + 1;
    *count = k;
    go = go && k < trips;
  }
  cudaGraphSetConditional(handle, go ? 1u : 0u);
}

// The graph being captured on `s` and the nodes its next node depends on.
void capture_info(cudaStream_t s, cudaGraph_t* graph, const cudaGraphNode_t** deps, size_t* n) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
#if CUDART_VERSION >= 13000
  check(cudaStreamGetCaptureInfo(s, &status, nullptr, graph, deps, nullptr, n), "cudaStreamGetCaptureInfo");
#else
  check(cudaStreamGetCaptureInfo_v3(s, &status, nullptr, graph, deps, nullptr, n), "cudaStreamGetCaptureInfo");
#endif
  if (status != cudaStreamCaptureStatusActive) throw Error("cuda conditional node: the stream is not capturing");
}
#endif

}  // namespace

#if CUDART_VERSION >= 12040

uint64_t conditional_handle(Stream stream) {
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  capture_info(static_cast<cudaStream_t>(stream), &graph, &deps, &n);
  cudaGraphConditionalHandle h = 0;
  check(cudaGraphConditionalHandleCreate(&h, graph, 0, 0), "cudaGraphConditionalHandleCreate");
  return static_cast<uint64_t>(h);
}

std::vector<void*> add_conditional_node(Stream stream, uint64_t handle, bool loop, int bodies) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t n = 0;
  capture_info(s, &graph, &deps, &n);
  cudaGraphNodeParams params = {};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = static_cast<cudaGraphConditionalHandle>(handle);
  params.conditional.type = loop ? cudaGraphCondTypeWhile : cudaGraphCondTypeIf;
  params.conditional.size = static_cast<unsigned>(bodies);
  cudaGraphNode_t node = nullptr;
  const std::vector<cudaGraphNode_t> after(deps, deps + n);  // deps is only valid until the next call
#if CUDART_VERSION >= 13000
  check(cudaGraphAddNode(&node, graph, after.data(), nullptr, after.size(), &params), "cudaGraphAddNode");
  check(cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1, cudaStreamSetCaptureDependencies),
        "cudaStreamUpdateCaptureDependencies");
#else
  check(cudaGraphAddNode(&node, graph, after.data(), after.size(), &params), "cudaGraphAddNode");
  check(cudaStreamUpdateCaptureDependencies(s, &node, 1, cudaStreamSetCaptureDependencies),
        "cudaStreamUpdateCaptureDependencies");
#endif
  std::vector<void*> out;
  for (int i = 0; i < bodies; ++i) out.push_back(params.conditional.phGraph_out[i]);
  return out;
}

void begin_body_capture(Stream stream, void* body) {
  check(cudaStreamBeginCaptureToGraph(static_cast<cudaStream_t>(stream), static_cast<cudaGraph_t>(body), nullptr,
                                      nullptr, 0, cudaStreamCaptureModeRelaxed),
        "cudaStreamBeginCaptureToGraph");
  suspend_pdl(true);  // a conditional body's graph takes no programmatic edges
}

void end_body_capture(Stream stream) {
  suspend_pdl(false);
  cudaGraph_t g = nullptr;
  check(cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &g),
        "the capture of a conditional body broke (cudaStreamEndCapture)");
}

void set_conditional(Stream stream, uint64_t handle, const void* data, DType dtype, bool host, int counter,
                     int64_t* count, int64_t trips) {
  set_condition_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<cudaGraphConditionalHandle>(handle), data, element_kind(dtype), host, counter,
      reinterpret_cast<long long*>(count), static_cast<long long>(trips));
  check(cudaGetLastError(), "the kernel setting the condition");
}

#else  // conditional nodes need CUDA 12.4

[[noreturn]] void too_old() {
  throw Error("cuda conditional node: needs CUDA 12.4 or newer (built with CUDA runtime " +
              std::to_string(CUDART_VERSION) + ")");
}
uint64_t conditional_handle(Stream) { too_old(); }
std::vector<void*> add_conditional_node(Stream, uint64_t, bool, int) { too_old(); }
void begin_body_capture(Stream, void*) { too_old(); }
void end_body_capture(Stream) { too_old(); }
void set_conditional(Stream, uint64_t, const void*, DType, bool, int, int64_t*, int64_t) { too_old(); }

#endif

Stream conditional_body_stream(int depth) {
  thread_local std::vector<cudaStream_t> streams;
  if (depth < 1) throw Error("cuda conditional node: body depth must be at least 1");
  while (static_cast<int>(streams.size()) < depth) {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    streams.push_back(s);
  }
  return streams[depth - 1];
}

}  // namespace graph::cuda
