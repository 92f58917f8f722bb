#pragma once
// The oneDNN CPU engine and the calling thread's stream, shared by the
// runtime's oneDNN users (packed_gemm.cpp, dnnl_conv.cpp, bf16_gemm.cpp). A
// cache of primitives or memory calls engine() before it is built, so that
// the engine, made first, is destroyed after it at exit.
#include <dnnl.hpp>

namespace graph::cpu::dnnl_context {

inline dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

}  // namespace graph::cpu::dnnl_context
