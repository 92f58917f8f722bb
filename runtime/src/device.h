#pragma once
// Private to the runtime: where tensor data lives, and the entry points of
// the CUDA backend for the eager ops. The CUDA versions are in
// cuda_dispatch.cpp (built when CXXGRAPH_HAS_CUDA) and otherwise in
// no_cuda.cpp, whose functions throw; the runtime itself never includes a
// CUDA header.
#include <cstddef>
#include <string_view>
#include <vector>

#include "graph/op_table.h"
#include "graph/tensor.h"

namespace graph::detail {

void* device_allocate(Device d, size_t nbytes);
void device_release(Device d, void* p, size_t nbytes);

// A contiguous, uninitialized tensor on `d`.
Tensor empty_on(Device d, const Shape& sizes, DType dtype);

// The device `op` runs on for operands a and b. A 0-d CPU tensor goes with
// a tensor on any device (a host scalar, as in PyTorch); any other mix throws
// "<op>: expected tensors on one device, got cpu [2, 3] and cuda [3]".
Device common_device(std::string_view op, const Tensor& a, const Tensor& b);

// ---- the CUDA backend ----------------------------------------------------
// A copy of `t` on `d` (one of them the CPU); throws graph::Error
// "to(kCUDA): no CUDA device (cudaGetDeviceCount: ...)" without a device.
Tensor cuda_to(const Tensor& t, Device d);
// copy_into for tensors on the device: dst = convert(src broadcast).
void cuda_copy_into(const Tensor& dst, const Tensor& src);
// Elementwise op `op` computing in `compute` (the inputs already have it),
// output of the scalar body's natural type (bool for comparisons).
Tensor cuda_unary(OpId op, const Tensor& x, DType compute);
Tensor cuda_binary(OpId op, const Tensor& a, const Tensor& b, const Shape& shape, DType compute);
// Reduction `op` (sum, mean, amax, amin, argmax) over `dims` (sorted,
// wrapped; argmax: exactly one) giving `out_shape` of dtype `out_dtype`.
Tensor cuda_reduce(std::string_view op, const Tensor& x, const std::vector<int64_t>& dims,
                   const Shape& out_shape, DType out_dtype);
Tensor cuda_softmax(bool log, const Tensor& x, int64_t dim);  // dim wrapped
// [..., n, k] @ [..., k, m] with equal batch dims and dtypes.
Tensor cuda_matmul(const Tensor& a, const Tensor& b);

}  // namespace graph::detail
