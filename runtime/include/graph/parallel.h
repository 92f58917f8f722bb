#pragma once
// Fork-join parallel loops for CPU kernels (the generated fused loops first).
//
//   graph::cpu::parallel_for(n, graph::cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
//     for (int64_t i = begin; i < end; ++i) out[i] = a[i] + b[i];
//   });
//
// The range is cut into chunks of at least `grain` elements, run by the
// calling thread and a persistent pool (GRAPH_NUM_THREADS threads in all,
// default: the hardware's). A range shorter than two grains runs inline on
// the caller with no synchronization at all, so small tensors pay nothing.
// Nested calls (from inside a chunk) and calls made while another thread's
// loop holds the pool run on the caller alone. Nothing here allocates per
// call, so a static graph's steady state stays allocation-free.
#include <cstdint>
#include <type_traits>
#include <utility>

namespace graph::cpu {

// Elements per chunk for an elementwise loop: enough work (tens of
// microseconds) to dwarf waking a pool thread.
inline constexpr int64_t kElementwiseGrain = 32768;

// Threads a parallel_for may use, the caller included (>= 1).
int num_threads();

namespace detail {
using ChunkFn = void (*)(void* ctx, int64_t begin, int64_t end);
// Runs fn(ctx, b, e) over chunks covering [0, n); returns when all are done.
// Exceptions thrown by a chunk are rethrown on the caller (the first one).
void parallel_run(int64_t n, int64_t grain, ChunkFn fn, void* ctx);
}  // namespace detail

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& body) {
  if (n <= 0) return;
  if (n < 2 * grain) {
    body(int64_t{0}, n);
    return;
  }
  using Body = std::remove_reference_t<F>;
  detail::parallel_run(
      n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<Body*>(ctx))(b, e); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace graph::cpu
