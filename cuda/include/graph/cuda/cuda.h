#pragma once
// The CUDA backend's host API: device queries, memory, and the eager kernels
// over raw device pointers. Plain C++ (no CUDA headers, no Tensor), so the
// runtime can call it without including CUDA; the runtime turns tensors into
// pointers and a Geometry (runtime/src/cuda_dispatch.cpp).
//
// Kernels are queued on the default stream and are asynchronous; the copies
// to the host synchronize.
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/cuda/allocator.h"
#include "graph/cuda/launch.h"
#include "graph/dtype.h"
#include "graph/op_table.h"

namespace graph::cuda {

// The number of CUDA devices; 0 when there is none or the driver fails, with
// `why` (when given) set to cudaGetDeviceCount's error string.
int device_count(std::string* why = nullptr);
// Throws graph::Error "<what>: no CUDA device (cudaGetDeviceCount: <error>)".
void require_device(const std::string& what);
DeviceLimits device_limits();  // of the current device, queried once

// The process-wide caching allocator over cudaMalloc/cudaFree.
BlockCache& device_allocator();

void copy_host_to_device(void* dst, const void* src, size_t nbytes);
void copy_device_to_host(void* dst, const void* src, size_t nbytes);
void copy_device_to_device(void* dst, const void* src, size_t nbytes);
void memset_zero(void* dst, size_t nbytes);
void synchronize();

// ---- elementwise kernels (elementwise.cu) ------------------------------
// Operand 0 of the geometry is the output, then the inputs. `compute` is the
// op's compute dtype (op_table.h compute_dtype); inputs already have it and
// the output has the scalar body's natural result type (bool for ToBool).
void unary(OpId op, DType compute, void* out, const void* x, const Geometry& g);
void binary(OpId op, DType compute, void* out, const void* a, const void* b, const Geometry& g);
// out = convert<out_t>(in) elementwise (to(dtype), contiguous(), clone()).
void convert(DType out_t, void* out, DType in_t, const void* in, const Geometry& g);

// ---- row-wise kernels (reduce.cu) ---------------------------------------
// Over `rows` contiguous rows of `n` elements each: one result per row.
enum class Reduction { Sum, Mean, Max, Min, ArgMax };
// `in_t` float32/float64/int32/int64/bool; `out_t` as the op table says
// (sum of integers: int64, argmax: int64).
void reduce_rows(Reduction r, DType in_t, const void* in, DType out_t, void* out, int64_t rows,
                 int64_t n);
// softmax (or log_softmax) of each row; float32 or float64.
void softmax_rows(bool log, DType t, const void* in, void* out, int64_t rows, int64_t n);

// ---- library calls (blas.cpp, via cuBLAS) --------------------------------
// Row-major, contiguous: C[i] = A[i] (m x k) * B[i] (k x n) for i < batch,
// with element strides a_batch/b_batch between consecutive A and B (0
// broadcasts one matrix). float32 or float64.
void gemm(DType t, const void* a, const void* b, void* c, int64_t batch, int64_t m, int64_t n,
          int64_t k, int64_t a_batch, int64_t b_batch);

}  // namespace graph::cuda
