#pragma once
// The caching device allocator behind CUDA tensors. cudaMalloc and cudaFree
// synchronize the device and cost tens of microseconds, while eager code frees
// and reallocates the same few sizes at every step; so freed blocks are kept
// and handed out again.
//
// Blocks are cached per stream: a block freed on stream S may still be read
// by kernels queued on S, and only work queued later on S is ordered after
// them, so it is reused only for allocations on S (PyTorch's rule). Sizes
// round up to a size class (round_size) and a request is served by a cached
// block of exactly its class.
//
// BlockCache is the bookkeeping alone, over a Backend that really allocates:
// the CUDA build gives it cudaMalloc/cudaFree (device_allocator()), the unit
// tests a host fake, so the logic is tested without a GPU. Thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graph::cuda {

using Stream = void*;  // a cudaStream_t; nullptr is the default stream

struct AllocatorStats {
  uint64_t allocations = 0;     // requests served
  uint64_t cache_hits = 0;      // served from a free list
  uint64_t device_allocs = 0;   // calls to the backend's allocate
  uint64_t device_frees = 0;    // calls to the backend's free
  uint64_t bytes_in_use = 0;    // handed out, not yet released (rounded sizes)
  uint64_t bytes_cached = 0;    // held in free lists
  uint64_t peak_bytes_in_use = 0;
};

class BlockCache {
 public:
  struct Backend {
    std::function<void*(size_t)> allocate;  // nullptr when out of memory
    std::function<void(void*)> free;
  };

  // Requests up to kSmallLimit round to 512 bytes, larger ones to 2 MiB:
  // small tensors waste little, large ones reuse each other's blocks.
  static constexpr size_t kSmallLimit = size_t{1} << 20;
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kLargeRound = size_t{2} << 20;
  static size_t round_size(size_t nbytes);

  explicit BlockCache(Backend backend) : backend_(std::move(backend)) {}
  ~BlockCache();  // returns every cached block (blocks in use are leaked, not freed under a kernel)
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of at least `nbytes` (0 gives a valid, distinct block of one
  // class) for use on `stream`. When the backend is out of memory, frees every
  // cached block and retries once; then throws graph::Error naming the size
  // and what is in use and cached.
  void* allocate(size_t nbytes, Stream stream = nullptr);
  // Returns a block from allocate() to its stream's free list; throws
  // graph::Error for a pointer this cache did not hand out.
  void release(void* p);
  void empty_cache();  // every cached block back to the backend
  AllocatorStats stats() const;

  // Private pools for CUDA Graph capture. A captured graph keeps writing,
  // at every replay, the blocks its kernels used while it was captured; so
  // while a pool is open on a stream, the blocks allocated on that stream
  // belong to it, and once released they are kept for it (reused only by
  // later allocations of the same open pool, which run in stream order
  // inside the graph) instead of going back to the cache, until free_pool.
  // Returns the pool's id (never 0).
  uint64_t open_pool(Stream stream);
  void close_pool(Stream stream);  // no new blocks join; its blocks stay its own
  // Makes the blocks allocated on `other` join the pool open on `stream`
  // too (the stream that captures a conditional node's body, whose work
  // replays inside the same graph); close_pool(other) ends that.
  void share_pool(Stream other, Stream stream);
  // The pool's released blocks go back to the cache; its blocks still in
  // use become ordinary ones (cached when released).
  void free_pool(uint64_t id);
  size_t pool_blocks(uint64_t id) const;  // released blocks kept for the pool

 private:
  struct Block {
    size_t size;
    Stream stream;
    uint64_t pool = 0;
  };
  using Key = std::pair<Stream, size_t>;  // (stream, rounded size)

  void free_cached_locked();

  Backend backend_;
  mutable std::mutex mu_;
  std::map<Key, std::vector<void*>> free_;
  std::unordered_map<void*, Block> live_;
  AllocatorStats stats_;
  uint64_t next_pool_ = 1;
  std::map<Stream, uint64_t> open_pools_;
  struct Pool {
    Stream stream;
    std::map<size_t, std::vector<void*>> free;  // released, kept for the pool
  };
  std::map<uint64_t, Pool> pools_;  // not yet freed
};

}  // namespace graph::cuda
