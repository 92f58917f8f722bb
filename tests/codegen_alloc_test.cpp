// Steady state of generated code: the second call of a static graph with the
// same input shapes allocates nothing.
//
// What is counted: every call into the C heap made by this process while a
// call is measured (operator new in all its forms, malloc, calloc, realloc,
// aligned_alloc, posix_memalign, memalign: the replacements below forward to
// glibc and count), and the caching allocator's requests
// (graph::memory::stats().allocations, served from a free list or not). The
// graphs' outputs are included: the caller drops the previous call's outputs
// first, and the graph hands the same buffers out again.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "graph/graph.h"
#include "graph/memory.h"
#include "graph/detail/generated_support.h"
#include "graph/static.h"

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {
std::atomic<long> heap_calls{0};
}

extern "C" {
void* malloc(size_t n) {
  heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t s) {
  heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, s);
}
void* realloc(void* p, size_t n) {
  heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
void* memalign(size_t a, size_t n) {
  heap_calls.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void** p, size_t a, size_t n) {
  *p = memalign(a, n);
  return *p ? 0 : ENOMEM;
}
void free(void* p) { __libc_free(p); }
}

// operator new goes through malloc above (libstdc++'s does too, but a
// replacement makes the count independent of that).
void* operator new(size_t n) {
  if (void* p = malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t a) {
  if (void* p = memalign(static_cast<size_t>(a), n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }

namespace {

using graph::Tensor;
using graph::IValue;

Tensor values(const graph::Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.7 * (i + 1) + seed * 1.3));
  return graph::from_vector(v, shape);
}

bool same_values(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  if (a.dtype() != b.dtype()) return false;
  const Tensor x = a.to(graph::kFloat64).contiguous(), y = b.to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.data_ptr<double>()[i] != y.data_ptr<double>()[i]) return false;
  return true;
}

struct Counts {
  long heap;
  uint64_t tensor_buffers;
};

Counts now() { return {heap_calls.load(), graph::memory::stats().allocations}; }

// Calls graph `name` twice with `in` (outputs dropped in between) and
// returns what the second call allocated; checks both calls agree.
Counts second_call(const char* name, const std::vector<IValue>& in, size_t n_out) {
  auto* g = graph::detail::find_graph(name, "test-hash");
  EXPECT_NE(g, nullptr);
  if (!g) return {-1, 0};
  IValue out[4];
  std::string why;
  EXPECT_TRUE(g->fn(in.data(), in.size(), out, &why)) << why;
  const Tensor first = std::get<Tensor>(out[0]).clone();
  for (size_t k = 0; k < n_out; ++k) out[k] = IValue();
  const Counts before = now();
  const bool ok = g->fn(in.data(), in.size(), out, &why);
  const Counts after = now();
  EXPECT_TRUE(ok) << why;
  const Tensor second = std::get<Tensor>(out[0]);
  EXPECT_TRUE(same_values(first, second)) << name;
  return {after.heap - before.heap, after.tensor_buffers - before.tensor_buffers};
}

TEST(SteadyState, ElementwiseChainAllocatesNothing) {
  const Counts c = second_call("cg_chain8", {values({64, 4}, 1), values({4}, 2), 0.5}, 1);
  EXPECT_EQ(c.heap, 0);
  EXPECT_EQ(c.tensor_buffers, 0u);
}

TEST(SteadyState, LargeParallelChainAllocatesNothing) {
  // Big enough for parallel_for to hand chunks to the pool.
  const Counts c = second_call("cg_chain8", {values({100000, 4}, 3), values({4}, 4), 0.5}, 1);
  EXPECT_EQ(c.heap, 0);
  EXPECT_EQ(c.tensor_buffers, 0u);
}

TEST(SteadyState, MlpWithEpiloguesAllocatesNothing) {
  const Counts c = second_call(
      "cg_matmul_epilogue",
      {values({64, 8}, 5), values({16, 8}, 6), values({16}, 7), values({16, 4}, 8), values({4}, 9)}, 1);
  EXPECT_EQ(c.heap, 0);
  EXPECT_EQ(c.tensor_buffers, 0u);
}

TEST(SteadyState, FusedReductionsAllocateNothing) {
  // red_f64 of reduce_nest.graph: four reductions, each one loop nest; one
  // slot over several chunks (their partials in a kept buffer) and many rows,
  // both big enough for the pool.
  for (const graph::Shape& shape : std::vector<graph::Shape>{{1, 200000}, {64, 2048}}) {
    const Counts c = second_call("red_f64", {values(shape, 10).to(graph::kFloat64), values(shape, 11).to(graph::kFloat64)}, 4);
    EXPECT_EQ(c.heap, 0);
    EXPECT_EQ(c.tensor_buffers, 0u);
  }
}

// Linear layers big enough for oneDNN's matmul primitive on packed weights
// (runtime/src/packed_gemm.cpp). A weight is packed on its second use at one
// version, so the steady state starts at the third call: it reuses the
// packed weights, the primitives, their memory objects and the graph's
// buffers. What remains is inside oneDNN: dnnl_primitive_execute builds its
// argument map on the heap (7 blocks per GEMM with oneDNN 2.6, 1, 2 or 4
// threads), which no caller can avoid; dnnl_sgemm, the eager GEMM, makes 1.
TEST(SteadyState, PackedLinearLayersAllocateOnlyInsideOneDnn) {
  const std::vector<IValue> in = {values({64, 96}, 20), values({128, 96}, 21), values({128}, 22), values({128, 128}, 23),
                               values({128}, 24),    values({10, 128}, 25), values({10}, 26)};
  const graph::detail::PackedGemmStats s0 = graph::detail::packed_gemm_stats();
  second_call("cg_packed_mlp", in, 1);  // first use, then packing
  const Counts c = second_call("cg_packed_mlp", in, 1);
  const graph::detail::PackedGemmStats s1 = graph::detail::packed_gemm_stats();
  EXPECT_EQ(s1.calls - s0.calls, 12u);  // 4 calls, 3 layers each
  EXPECT_EQ(s1.hits - s0.hits, 6u);     // calls 3 and 4
  EXPECT_LE(c.heap, 3 * 8);
  EXPECT_EQ(c.tensor_buffers, 0u);
}

// Loop outputs whose lifetimes do not overlap share a slot (codegen's
// loop_slot): still no allocation, and the eager ops' bits.
TEST(SteadyState, SharedLoopSlotsAllocateNothing) {
  const Tensor x = values({32, 8}, 30), w1 = values({8, 8}, 31), w2 = values({8, 8}, 32);
  const Counts c = second_call("stack", {x, w1, w2}, 1);
  EXPECT_EQ(c.heap, 0);
  EXPECT_EQ(c.tensor_buffers, 0u);
  using namespace graph;
  const Tensor h1 = tanh(matmul(x, w1)), h2 = sigmoid(matmul(h1, w2)), h3 = tanh(matmul(h2, w1));
  const Tensor want = add(matmul(h3, w2), x);
  IValue out[1];
  std::string why;
  const std::vector<IValue> in = {x, w1, w2};
  ASSERT_TRUE(graph::detail::find_graph("stack", "test-hash")->fn(in.data(), in.size(), out, &why)) << why;
  EXPECT_TRUE(same_values(std::get<Tensor>(out[0]), want));
}

// GRAPH_BUFFERS=off (read into buffers_off at start-up): every buffer comes
// from the caching allocator, as eagerly; the same values.
TEST(SteadyState, BuffersOffTakesFromTheAllocator) {
  const std::vector<IValue> in = {values({64, 4}, 40), values({4}, 41), 0.5};
  graph::detail::GraphBuffers::buffers_off = true;
  const Counts off = second_call("cg_chain8", in, 1);
  IValue out_off[1];
  std::string why;
  ASSERT_TRUE(graph::detail::find_graph("cg_chain8", "test-hash")->fn(in.data(), in.size(), out_off, &why)) << why;
  graph::detail::GraphBuffers::buffers_off = false;
  EXPECT_GE(off.tensor_buffers, 1u);  // at least the loop's output (kept buffers: none, above)
  IValue out_on[1];
  ASSERT_TRUE(graph::detail::find_graph("cg_chain8", "test-hash")->fn(in.data(), in.size(), out_on, &why)) << why;
  EXPECT_TRUE(same_values(std::get<Tensor>(out_off[0]), std::get<Tensor>(out_on[0])));
  EXPECT_NE(std::get<Tensor>(out_off[0]).data_ptr<float>(), std::get<Tensor>(out_on[0]).data_ptr<float>());
}

TEST(SteadyState, LstmLoopAllocatesNothing) {
  std::vector<IValue> in = {values({1, 8}, 10), values({1, 8}, 11), values({1, 8}, 12)};
  for (int k = 0; k < 4; ++k) in.push_back(values({8, 8}, 13 + k));
  in.push_back(values({8}, 17));
  in.push_back(int64_t{20});
  const Counts c = second_call("lstm", in, 2);
  EXPECT_EQ(c.heap, 0);
  EXPECT_EQ(c.tensor_buffers, 0u);
}

TEST(SteadyState, LstmGateSlicesAllocateNothing) {
  // Four gate slices per step, read in place by the fused cell update.
  const int64_t H = 16;
  const Counts c = second_call("lstm_gates",
                               {values({1, 8}, 20), values({1, H}, 21), values({1, H}, 22), values({8, 4 * H}, 23),
                                values({H, 4 * H}, 24), values({4 * H}, 25), int64_t{20}, H},
                               2);
  EXPECT_EQ(c.heap, 0);
  EXPECT_EQ(c.tensor_buffers, 0u);
}

TEST(SteadyState, OutputsTheCallerKeepsAreNotOverwritten) {
  auto* g = graph::detail::find_graph("cg_chain8", "test-hash");
  ASSERT_NE(g, nullptr);
  std::vector<IValue> in = {values({8, 4}, 18), values({4}, 19), 0.5};
  IValue a[1], b[1];
  std::string why;
  ASSERT_TRUE(g->fn(in.data(), in.size(), a, &why));
  const Tensor kept = std::get<Tensor>(a[0]);
  const Tensor copy = kept.clone();
  in[2] = 2.0;
  ASSERT_TRUE(g->fn(in.data(), in.size(), b, &why));
  EXPECT_NE(std::get<Tensor>(b[0]).data_ptr<float>(), kept.data_ptr<float>());
  EXPECT_TRUE(same_values(kept, copy));
}

}  // namespace
