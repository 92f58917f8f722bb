#pragma once
// If and Loop on device conditions while a static graph is captured into a
// CUDA Graph: CUDA conditional nodes instead of a host decision.
//
// Uncaptured, the generated code reads an If or Loop condition on the host
// (truth(), which waits for the device). While cuda_run_captured captures
// the graph, a DeviceControlScope is active on the thread, and the
// generated code hands an If or Loop whose condition is a device tensor
// (ir/device_control.h says which nodes qualify) to device_if / device_loop:
//
//   If:   a kernel sets a conditional handle from the condition, then one
//         If node with two bodies (then, else: CUDA 12.8+) is added; each
//         branch is captured into its body, ending with a copy of its
//         outputs into buffers allocated once, so the rest of the graph
//         reads the same memory whichever branch ran. The branches must give
//         outputs of equal shapes and dtypes (else the capture fails).
//   Loop: the carried values move into buffers allocated once; a kernel
//         sets the handle to `trips > 0 && cond` (and zeroes a device
//         counter when the trip count is finite), then a While node whose
//         body is the loop body, ending with copies of its results into the
//         carried buffers and a kernel setting the handle to the body's
//         condition (and ++counter < trips). Carried values must keep their
//         shapes and dtypes.
//
// Nested nodes nest: a body is captured on a stream of its own per depth.
// The CUDA calls go through a ConditionalBackend (cuda_dispatch.cpp gives
// the CUDA runtime's; the unit tests a host fake).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace graph::detail {

// A condition as the generated code has it: a tensor (one element, read on
// the device when it lives there) or a host value.
struct Condition {
  Tensor tensor;  // undefined: `host` holds
  bool host = false;
};
inline Condition to_condition(const Tensor& t) { return Condition{t, false}; }
inline Condition to_condition(bool b) { return Condition{Tensor(), b}; }
inline Condition to_condition(int64_t v) { return Condition{Tensor(), v != 0}; }
inline Condition to_condition(double v) { return Condition{Tensor(), v != 0.0}; }

// The CUDA calls, on opaque handles (cudaStream_t, cudaGraph_t); a handle is
// a cudaGraphConditionalHandle.
struct ConditionalBackend {
  enum class Kind { If, While };
  enum class Counter { None = 0, Reset = 1, Increment = 2 };  // as conditional.h numbers them
  // A conditional handle of the graph being captured on `stream`.
  std::function<uint64_t(void* stream)> create_handle;
  // Adds a conditional node after the work captured so far on `stream`
  // (later work there depends on it); its body graphs (If: 2, While: 1).
  std::function<std::vector<void*>(void* stream, uint64_t handle, Kind kind, int bodies)> add_node;
  // The stream that captures bodies at nesting depth `depth` (1, 2, ...).
  std::function<void*(int depth)> body_stream;
  // Starts capturing `stream` into `body`; the blocks it allocates join the
  // capture pool of `parent`. end_body ends it (throws when the body broke).
  std::function<void(void* stream, void* body, void* parent)> begin_body;
  std::function<void(void* stream)> end_body;
  // Queues on `stream` a kernel setting `handle` to the condition (a device
  // tensor's one element, or `host` when `data` is null); with a counter
  // (a device int64): Reset sets it to 0, Increment adds 1, and the handle
  // is also false once the counter reaches `trips`.
  std::function<void(void* stream, uint64_t handle, const void* data, DType dtype, bool host, Counter counter,
                     int64_t* count, int64_t trips)>
      set;
  std::function<void*()> current_stream;
  std::function<void(void*)> set_current_stream;
  // Whether the tensor lives where the captured kernels run (CUDA: on the device).
  std::function<bool(const Tensor&)> on_device;
};

// Active while a capture runs g.fn on this thread; nests nothing itself
// (device_if / device_loop track the depth).
class DeviceControlScope {
 public:
  explicit DeviceControlScope(const ConditionalBackend* backend);
  ~DeviceControlScope();
  DeviceControlScope(const DeviceControlScope&) = delete;
  DeviceControlScope& operator=(const DeviceControlScope&) = delete;

 private:
  const ConditionalBackend* prev_;
  int prev_depth_;
};

// Whether a node on this condition becomes a conditional node now: a
// capture is active and the condition is a tensor on the device.
bool device_control(const Tensor& cond);
inline bool device_control(bool) { return false; }
inline bool device_control(int64_t) { return false; }
inline bool device_control(double) { return false; }
// A Loop: its first condition or, when that is a host value, its carried
// tensors (the body's condition is then a tensor, computed from them).
bool device_control_loop(const Condition& first, std::initializer_list<const Tensor*> carried);

// The If: `branch(0)` runs the then-branch, `branch(1)` the else-branch,
// each assigning *outs. `where` names the node for messages.
void device_if(const Tensor& cond, const std::function<void(int)>& branch, std::initializer_list<Tensor*> outs,
               const char* where);
// The Loop: `body()` runs one iteration (binding its parameters to
// *carried, assigning *carried its results) and gives its condition.
void device_loop(int64_t trips, const Condition& first, const std::function<Condition()>& body,
                 std::initializer_list<Tensor*> carried, const char* where);

}  // namespace graph::detail
