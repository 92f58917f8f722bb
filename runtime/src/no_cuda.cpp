// The CUDA entry points of device.h in a build without the CUDA backend:
// no tensor can reach the device, so only to(kCUDA) and allocation are
// reachable, and they say how to get a CUDA build.
#include <string>

#include "device.h"
#include "graph/generated_support.h"
#include "graph/memory.h"

namespace graph::detail {

namespace {

[[noreturn]] void no_backend(const std::string& what, const std::string& tail = "") {
  throw Error(what + ": this build has no CUDA backend (configure with -DCXXGRAPH_CUDA=ON on a machine "
              "with the CUDA toolkit)" + tail);
}

}  // namespace

}  // namespace graph::detail

namespace graph {
bool cuda_is_available() { return false; }
}  // namespace graph

namespace graph::detail {

void* device_allocate(Device d, size_t nbytes) {
  if (d == Device::CPU) return memory::allocate(nbytes);
  no_backend("allocate");
}
void device_release(Device, void* p, size_t nbytes) { memory::release(p, nbytes); }

Tensor cuda_to(const Tensor& t, Device) {
  no_backend("to(kCUDA)", "; the tensor of shape " + shape_str(t.sizes()) + " stays on the CPU");
}
void cuda_copy_into(const Tensor&, const Tensor&) { no_backend("copy"); }
Tensor cuda_unary(OpId op, const Tensor&, DType) { no_backend(std::string(op_info(op).name)); }
Tensor cuda_binary(OpId op, const Tensor&, const Tensor&, const Shape&, DType) {
  no_backend(std::string(op_info(op).name));
}
Tensor cuda_reduce(std::string_view op, const Tensor&, const std::vector<int64_t>&, const Shape&, DType) {
  no_backend(std::string(op));
}
Tensor cuda_softmax(bool log, const Tensor&, int64_t) { no_backend(log ? "log_softmax" : "softmax"); }
Tensor cuda_matmul(const Tensor&, const Tensor&) { no_backend("matmul"); }

}  // namespace graph::detail

namespace graph::detail {

std::vector<Tensor> cuda_fused(const char*, const char* kernel, const Shape&, std::initializer_list<DType>,
                               std::initializer_list<const Tensor*>, std::initializer_list<HostScalar>) {
  no_backend(std::string(kernel));
}

}  // namespace graph::detail
