#pragma once
// bf16 mixed precision on the CPU, after torch.autocast("cpu", torch.bfloat16).
//
//   {
//     graph::AutocastGuard autocast(graph::kBFloat16);
//     Tensor y = model.forward(x);   // eager code and [[graph::static]] graphs alike
//   }
//
// Inside the scope (thread-local, like NoGradGuard) the float32 products run
// with bf16 operands and float32 accumulation:
//   - matmul, linear (eager, and the GEMMs of static graphs): both operands
//     rounded to bf16 (round to nearest even), oneDNN's bf16 matmul
//     primitive, float32 result;
//   - conv2d forward: input and weight in bf16, oneDNN's bf16 convolution,
//     float32 result, bias and relu post-op in float32.
//   - scaled_dot_product_attention of heads with more than 2^20 products
//     (L * S * E): its two products as matmul above. Smaller heads keep the
//     fused float32 kernel, which is faster there than rounding and bf16
//     GEMMs (and exact in float32).
// Everything else (elementwise ops, reductions, softmax, layer_norm, losses)
// stays float32, and results are float32 tensors. Differences from PyTorch:
// PyTorch's autocast returns bf16 tensors from these ops (so the following
// elementwise ops see bf16-rounded values); here the product's float32 sum is
// kept. conv2d's backward stays float32; matmul's backward GEMMs follow the
// scope when backward() runs inside it. float64 and integer tensors are
// untouched, as in PyTorch.
//
// Whether it is faster depends on the CPU: with AMX (Sapphire Rapids and
// later, where the OS enables it) oneDNN's bf16 kernels are several times
// faster than float32; with AVX512_BF16 alone (vdpbf16ps) they may be slower
// (docs/bench/2026-11-27-cpu-conv-bf16.md). detail::autocast_stats() counts
// the bf16 primitives that ran.
#include <cstdint>

#include "graph/tensor.h"

namespace graph {

class AutocastGuard {
 public:
  // dtype: kBFloat16 (anything else is refused with a graph::Error);
  // enabled = false makes an inner scope run in float32, as
  // torch.autocast(enabled=False).
  explicit AutocastGuard(DType dtype, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_;
};

// Whether this thread is inside an enabled bf16 autocast scope.
bool autocast_bf16();

namespace detail {

// bf16 primitives run under autocast since the start (tests, tuning).
struct AutocastStats {
  uint64_t gemms = 0, convs = 0;
};
AutocastStats autocast_stats();
void count_autocast_gemm();
void count_autocast_conv();

}  // namespace detail
}  // namespace graph
