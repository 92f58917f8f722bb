// graph::AutocastGuard (graph/autocast.h): a thread-local flag that the GEMM
// (blas.cpp) and conv2d (dnnl_conv.cpp) read.
#include "graph/autocast.h"

#include <atomic>
#include <string>

#include "graph/error.h"

namespace graph {

namespace {

thread_local bool bf16_scope = false;

std::atomic<uint64_t> gemms{0}, convs{0};

}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : prev_(bf16_scope) {
  if (dtype != kBFloat16)
    throw Error("AutocastGuard: only kBFloat16 is supported on the CPU, got " + std::string(dtype_name(dtype)));
  bf16_scope = enabled;
}

AutocastGuard::~AutocastGuard() { bf16_scope = prev_; }

bool autocast_bf16() { return bf16_scope; }

namespace detail {

AutocastStats autocast_stats() { return {gemms.load(), convs.load()}; }
void count_autocast_gemm() { gemms.fetch_add(1, std::memory_order_relaxed); }
void count_autocast_conv() { convs.fetch_add(1, std::memory_order_relaxed); }

}  // namespace detail
}  // namespace graph
