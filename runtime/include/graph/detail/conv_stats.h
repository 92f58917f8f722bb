#pragma once
// Counters of the oneDNN convolution path (runtime/src/dnnl_conv.cpp), for
// tests and tuning: calls that ran each primitive, weight reorders (a new
// weight, or a new Tensor::version of one) and hits (the kept reorder
// reused), cases oneDNN refused (conv.cpp's im2col + GEMM ran instead), and
// reordered weights now held.
#include <cstddef>
#include <cstdint>

namespace graph::detail {

struct DnnlConvStats {
  uint64_t forward = 0, backward_data = 0, backward_weights = 0, weight_reorders = 0, weight_hits = 0, refused = 0;
  size_t weights_held = 0;
};
DnnlConvStats dnnl_conv_stats();
void clear_dnnl_conv_cache();
// Off: every conv2d runs conv.cpp's im2col + GEMM, as before oneDNN's
// primitives (bench/: the "_im2col" rows). Process-wide; on by default.
void set_dnnl_conv_enabled(bool enabled);
// Convolutions of at most `macs` multiply-adds (N * C_out * H_out * W_out *
// C_in / groups * kH * kW) run a direct loop instead (a conv1d over a short
// sequence: oneDNN's set-up alone costs several times the arithmetic); not
// under bf16 autocast.
// Returns the previous limit; tests set 0 to reach the library paths.
int64_t set_direct_conv_limit(int64_t macs);

}  // namespace graph::detail
