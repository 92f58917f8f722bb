// The caching allocator (memory.h).
#include "graph/memory.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

#include "graph/error.h"

namespace graph::memory {

namespace {

constexpr size_t kAlign = 64;
constexpr int kMinShift = 6;   // 64 B
constexpr int kMaxShift = 26;  // 64 MiB
constexpr int kClasses = kMaxShift - kMinShift + 1;

std::atomic<size_t> g_limit{size_t{256} << 20};

// The size class of `n` bytes (its block is 1 << (class + kMinShift) bytes),
// or -1 when it is too large to cache.
int size_class(size_t n) {
  if (n > (size_t{1} << kMaxShift)) return -1;
  if (n <= (size_t{1} << kMinShift)) return 0;
  return std::bit_width(n - 1) - kMinShift;
}

void* system_alloc(size_t bytes) {
  void* p = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  if (!p) throw Error("out of memory: cannot allocate " + std::to_string(bytes) + " bytes");
  return p;
}

// Set when this thread's cache is destroyed. Thread-local objects die before
// static ones, so a global Tensor freed at exit finds the cache gone and must
// go straight to the system.
thread_local bool t_cache_gone = false;

// A cached block links to the next one of its class through its first bytes
// (every block is at least 64 bytes): pushing and popping never allocates.
struct FreeBlock {
  FreeBlock* next;
};

struct Cache {
  FreeBlock* free[kClasses] = {};
  Stats stats;
  ~Cache() {
    clear();
    t_cache_gone = true;
  }
  void clear() {
    for (FreeBlock*& head : free) {
      while (head) std::free(std::exchange(head, head->next));
    }
    stats.bytes_cached = 0;
  }
};

Cache& cache() {
  thread_local Cache c;
  return c;
}

}  // namespace

void* allocate(size_t nbytes) {
  if (t_cache_gone) return system_alloc(nbytes);
  Cache& c = cache();
  ++c.stats.allocations;
  const int cls = size_class(nbytes == 0 ? 1 : nbytes);
  const size_t block = cls < 0 ? nbytes : size_t{1} << (cls + kMinShift);
  c.stats.bytes_in_use += block;
  c.stats.peak_bytes_in_use = std::max(c.stats.peak_bytes_in_use, c.stats.bytes_in_use);
  if (cls < 0) return system_alloc(nbytes);
  if (FreeBlock* p = c.free[cls]) {
    c.free[cls] = p->next;
    ++c.stats.cache_hits;
    c.stats.bytes_cached -= block;
    return p;
  }
  return system_alloc(block);
}

void release(void* p, size_t nbytes) {
  if (!p) return;
  if (t_cache_gone) {
    std::free(p);
    return;
  }
  Cache& c = cache();
  const int cls = size_class(nbytes == 0 ? 1 : nbytes);
  if (cls < 0) {
    c.stats.bytes_in_use -= std::min<uint64_t>(c.stats.bytes_in_use, nbytes);
    std::free(p);
    return;
  }
  const size_t block = size_t{1} << (cls + kMinShift);
  c.stats.bytes_in_use -= std::min<uint64_t>(c.stats.bytes_in_use, block);
  if (c.stats.bytes_cached + block > g_limit.load(std::memory_order_relaxed)) {
    std::free(p);
    return;
  }
  c.free[cls] = new (p) FreeBlock{c.free[cls]};
  c.stats.bytes_cached += block;
}

Stats stats() { return t_cache_gone ? Stats{} : cache().stats; }
void reset_peak() {
  if (!t_cache_gone) cache().stats.peak_bytes_in_use = cache().stats.bytes_in_use;
}
void empty_cache() {
  if (!t_cache_gone) cache().clear();
}
void set_cache_limit(size_t bytes) { g_limit.store(bytes); }
size_t cache_limit() { return g_limit.load(); }

}  // namespace graph::memory
