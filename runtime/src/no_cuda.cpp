// The CUDA entry points of device.h in a build without the CUDA backend:
// no tensor can reach the device, so only to(kCUDA) and allocation are
// reachable, and they say how to get a CUDA build.
#include <string>

#include "device.h"
#include "device_ops.h"
#include "graph/detail/generated_support.h"
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
Tensor cuda_linear_bias(const Tensor&, const Tensor&, const Tensor&) { no_backend("linear"); }
void cuda_sgd_update(const Tensor&, const Tensor&, const Tensor&, const optim::SGDOptions&, bool) {
  no_backend("SGD");
}
void cuda_adam_update(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                      const optim::AdamOptions&, int64_t) {
  no_backend("Adam");
}
void require_cuda(const std::string& what) { no_backend(what); }
Tensor full_on(Device d, const Shape& sizes, Scalar value, DType dtype) {
  if (d == Device::CPU) return full(sizes, value, dtype);
  no_backend("full(kCUDA)");
}
Tensor cuda_conv2d(const Tensor&, const Tensor&, const Conv2dParams&) { no_backend("conv2d"); }
Tensor cuda_conv2d_grad_input(const Tensor&, const Tensor&, const Shape&, const Conv2dParams&) { no_backend("conv2d"); }
Tensor cuda_conv2d_grad_weight(const Tensor&, const Tensor&, const Shape&, const Conv2dParams&) { no_backend("conv2d"); }
Tensor cuda_pool2d(const Tensor&, const Pool2dParams& p, const Shape&) { no_backend(p.max ? "max_pool2d" : "avg_pool2d"); }
Tensor cuda_pool2d_backward(const Tensor&, const Tensor&, const Tensor&, const Pool2dParams& p) {
  no_backend(p.max ? "max_pool2d" : "avg_pool2d");
}
std::vector<Tensor> cuda_layer_norm(const Tensor&, const Tensor&, const Tensor&, int64_t, double) {
  no_backend("layer_norm");
}
std::vector<Tensor> cuda_layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                             int64_t, bool, bool, bool) {
  no_backend("layer_norm");
}
Tensor cuda_where(const Tensor&, const Tensor&, const Tensor&, const Shape&) { no_backend("where"); }
Tensor cuda_embedding(const Tensor&, const Tensor&, const std::string&, bool) { no_backend("embedding"); }
Tensor cuda_embedding_backward(const Tensor&, const Tensor&, const Shape&, DType) { no_backend("embedding"); }
int64_t cuda_first_bad_index(const Tensor&, int64_t) { no_backend("index check"); }
void cuda_index_walk(bool scatter_add, const Tensor&, const Tensor&, const Tensor&, const Shape&, const Shape&, int64_t,
                     bool, int64_t) {
  no_backend(scatter_add ? "scatter_add" : "gather");
}
Tensor cuda_triangle(const Tensor&, int64_t, bool upper) { no_backend(upper ? "triu" : "tril"); }
Tensor cuda_cumsum(const Tensor&, int64_t, bool) { no_backend("cumsum"); }
Tensor cuda_argsort_rows(const Tensor&, bool) { no_backend("argsort"); }
void cuda_bn_stats(const Tensor&, int64_t, int64_t, int64_t, const Tensor&, const Tensor&) { no_backend("batch_norm"); }
void cuda_bn_finish(const Tensor&, const Tensor&, const Tensor&, double, const Tensor&, const Tensor&, double, double) {
  no_backend("batch_norm");
}
void cuda_bn_normalize(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t,
                       int64_t, int64_t) {
  no_backend("batch_norm");
}
void cuda_bn_backward(bool, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                      const Tensor&, const Tensor&, int64_t, int64_t, int64_t) {
  no_backend("batch_norm");
}
void cuda_interpolate(bool, const Tensor&, const Tensor&, const DeviceResize&) { no_backend("interpolate"); }

}  // namespace graph::detail

namespace graph::detail {

int cuda_run_captured(const CompiledGraph&, const IValue*, size_t, IValue*, size_t, std::string*) { return 0; }

Tensor cuda_gemm_epilogue(const Tensor&, const Tensor&, bool, const Tensor&, GemmEpilogue) {
  no_backend("matmul epilogue");
}

std::vector<Tensor> cuda_fused(const char*, const char* kernel, const Shape&, std::initializer_list<DType>,
                               std::initializer_list<const Tensor*>, std::initializer_list<HostScalar>) {
  no_backend(std::string(kernel));
}

Tensor cuda_fused_reduce(const char*, const char* kernel, const Shape&, int64_t, int64_t, DType,
                         std::initializer_list<const Tensor*>, std::initializer_list<HostScalar>) {
  no_backend(std::string(kernel));
}

}  // namespace graph::detail
