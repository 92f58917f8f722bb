// The caching allocator: freed blocks are reused, big blocks bypass the
// cache, the cache respects its limit, and everything is 64-byte aligned.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>

#include "graph/graph.h"
#include "graph/memory.h"

namespace {

TEST(Memory, TemporariesReuseFreedBlocks) {
  graph::memory::empty_cache();
  const auto before = graph::memory::stats();
  graph::Tensor x = graph::ones({256});
  for (int i = 0; i < 100; ++i) x = graph::tanh(x * 0.5f + 0.25f);  // two temporaries per step
  const auto after = graph::memory::stats();
  EXPECT_GE(after.allocations - before.allocations, 200u);
  EXPECT_GE(after.cache_hits - before.cache_hits, 190u) << "steady state must not call malloc";
}

TEST(Memory, BlocksAreAlignedAndSizedByClass) {
  for (size_t n : {1u, 63u, 64u, 65u, 1000u, 4096u, 100000u}) {
    void* p = graph::memory::allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    graph::memory::release(p, n);
  }
  graph::memory::empty_cache();
  EXPECT_EQ(graph::memory::stats().bytes_cached, 0u);
  void* a = graph::memory::allocate(100);
  graph::memory::release(a, 100);
  EXPECT_EQ(graph::memory::stats().bytes_cached, 128u);  // the 128-byte class
  void* b = graph::memory::allocate(120);                // same class: reused
  EXPECT_EQ(a, b);
  graph::memory::release(b, 120);
}

TEST(Memory, LargeBlocksBypassTheCacheAndTheLimitHolds) {
  graph::memory::empty_cache();
  void* big = graph::memory::allocate(size_t{80} << 20);
  graph::memory::release(big, size_t{80} << 20);
  EXPECT_EQ(graph::memory::stats().bytes_cached, 0u);
  const size_t old = graph::memory::cache_limit();
  graph::memory::set_cache_limit(1024);
  void* p = graph::memory::allocate(4096);
  graph::memory::release(p, 4096);
  EXPECT_EQ(graph::memory::stats().bytes_cached, 0u);
  graph::memory::set_cache_limit(old);
}

TEST(Memory, TensorsFreedOnAnotherThread) {
  graph::Tensor t = graph::ones({1000});
  std::thread([t = std::move(t)]() mutable { t = graph::Tensor(); }).join();
  graph::Tensor u = graph::zeros({1000});
  EXPECT_EQ(u.sum().item<float>(), 0.0f);
}

TEST(Memory, PeakCountsTheMostInUseSinceReset) {
  graph::memory::reset_peak();
  const uint64_t base = graph::memory::stats().bytes_in_use;
  EXPECT_EQ(graph::memory::stats().peak_bytes_in_use, base);
  void* a = graph::memory::allocate(1000);  // the 1024-byte class
  void* b = graph::memory::allocate(5000);  // the 8192-byte class
  graph::memory::release(a, 1000);
  void* c = graph::memory::allocate(100);  // 128 bytes: below the peak
  EXPECT_EQ(graph::memory::stats().peak_bytes_in_use, base + 1024 + 8192);
  graph::memory::release(b, 5000);
  graph::memory::release(c, 100);
  EXPECT_EQ(graph::memory::stats().bytes_in_use, base);
  graph::memory::reset_peak();
  EXPECT_EQ(graph::memory::stats().peak_bytes_in_use, base);
}

}  // namespace
