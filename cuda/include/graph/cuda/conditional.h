#pragma once
// CUDA conditional graph nodes (CUDA 12.4+; If with an else body: 12.8+)
// for If and Loop on device conditions while a static graph is captured
// (runtime/include/graph/device_control.h holds the logic; these are its
// CUDA calls). Every function acts on the graph being captured on `stream`.
#include <cstdint>
#include <vector>

#include "graph/cuda/allocator.h"
#include "graph/dtype.h"

namespace graph::cuda {

// A cudaGraphConditionalHandle of the graph being captured on `stream`
// (default value 0, not reset at launch: a kernel sets it before the node).
uint64_t conditional_handle(Stream stream);
// Adds an If (bodies 1 or 2) or While (bodies 1) conditional node after the
// work captured on `stream` so far, makes it what later work on `stream`
// depends on, and gives its body graphs (cudaGraph_t).
std::vector<void*> add_conditional_node(Stream stream, uint64_t handle, bool loop, int bodies);
// The stream capturing bodies at nesting depth `depth` >= 1, made once per
// thread (non-blocking).
Stream conditional_body_stream(int depth);
// cudaStreamBeginCaptureToGraph of `stream` into `body` (relaxed mode);
// end_body_capture ends it and throws graph::Error when it broke.
void begin_body_capture(Stream stream, void* body);
void end_body_capture(Stream stream);
// Queues the kernel setting `handle`: the one element at `data` (of dtype
// `dtype`) is non-zero, or `host` when `data` is null; with `count`
// (counter 1: reset to 0, 2: increment) also `*count < trips`.
void set_conditional(Stream stream, uint64_t handle, const void* data, DType dtype, bool host, int counter,
                     int64_t* count, int64_t trips);

}  // namespace graph::cuda
