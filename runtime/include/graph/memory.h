#pragma once
// The caching allocator behind every tensor's storage. Eager code allocates
// and frees many short-lived temporaries of a few recurring sizes; freed
// blocks are kept in per-thread free lists by size class (powers of two from
// 64 bytes to 64 MiB) and handed out again instead of going back to malloc.
// Larger blocks go straight to the system. Each thread keeps at most
// cache_limit() bytes; memory freed on another thread joins that thread's cache.
#include <cstddef>
#include <cstdint>

namespace graph::memory {

struct Stats {
  uint64_t allocations = 0;   // requests served
  uint64_t cache_hits = 0;    // served from a free list
  uint64_t bytes_in_use = 0;  // this thread: handed out and not yet freed
  uint64_t bytes_cached = 0;  // this thread: held in free lists
  uint64_t peak_bytes_in_use = 0;  // this thread: most in use at once since reset_peak()
};

// 64-byte aligned; never null (throws graph::Error when the system is out of memory).
void* allocate(size_t nbytes);
void release(void* p, size_t nbytes);

Stats stats();              // this thread's counters
void reset_peak();          // peak_bytes_in_use = bytes_in_use (bench/ measures peaks)
void empty_cache();         // returns this thread's cached blocks to the system
void set_cache_limit(size_t bytes);
size_t cache_limit();

}  // namespace graph::memory
