// The caching device allocator's bookkeeping (allocator.h): host code only.
#include "graph/cuda/allocator.h"

#include <algorithm>
#include <string>

#include "graph/error.h"

namespace graph::cuda {

size_t BlockCache::round_size(size_t nbytes) {
  const size_t unit = nbytes <= kSmallLimit ? kSmallRound : kLargeRound;
  const size_t n = std::max<size_t>(nbytes, 1);
  if (n > SIZE_MAX - unit) throw Error("cuda allocator: cannot allocate " + std::to_string(nbytes) + " bytes");
  return (n + unit - 1) / unit * unit;
}

BlockCache::~BlockCache() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cached_locked();
}

void* BlockCache::allocate(size_t nbytes, Stream stream) {
  const size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.allocations;
  void* p = nullptr;
  uint64_t pool = 0;
  if (auto op = open_pools_.find(stream); op != open_pools_.end()) pool = op->second;
  auto it = free_.find(Key{stream, size});
  std::vector<void*>* pool_free = nullptr;
  if (pool) {
    auto& v = pools_.at(pool).free[size];
    if (!v.empty()) pool_free = &v;
  }
  if (pool_free) {  // a block this pool released earlier in the capture
    p = pool_free->back();
    pool_free->pop_back();
    stats_.bytes_cached -= size;
    ++stats_.cache_hits;
  } else if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    stats_.bytes_cached -= size;
    ++stats_.cache_hits;
  } else {
    p = backend_.allocate(size);
    if (!p && stats_.bytes_cached > 0) {  // out of memory: give the cache back and retry
      free_cached_locked();
      p = backend_.allocate(size);
    }
    if (!p) {
      --stats_.allocations;
      throw Error("cuda allocator: out of device memory allocating " + std::to_string(nbytes) +
                  " bytes (" + std::to_string(stats_.bytes_in_use) + " bytes in use)");
    }
    ++stats_.device_allocs;
  }
  live_.emplace(p, Block{size, stream, pool});
  stats_.bytes_in_use += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  return p;
}

void BlockCache::release(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) throw Error("cuda allocator: release of a pointer it did not allocate");
  const Block b = it->second;
  live_.erase(it);
  if (auto pit = pools_.find(b.pool); b.pool && pit != pools_.end()) pit->second.free[b.size].push_back(p);
  else free_[Key{b.stream, b.size}].push_back(p);
  stats_.bytes_in_use -= b.size;
  stats_.bytes_cached += b.size;
}

uint64_t BlockCache::open_pool(Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_pools_.count(stream)) throw Error("cuda allocator: a pool is already open on this stream");
  const uint64_t id = next_pool_++;
  pools_[id] = Pool{stream, {}};
  open_pools_[stream] = id;
  return id;
}

void BlockCache::close_pool(Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  open_pools_.erase(stream);
}

void BlockCache::share_pool(Stream other, Stream stream) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_pools_.find(stream);
  if (it == open_pools_.end()) throw Error("cuda allocator: no pool is open on the stream to share");
  if (open_pools_.count(other)) throw Error("cuda allocator: a pool is already open on this stream");
  open_pools_[other] = it->second;
}

void BlockCache::free_pool(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(id);
  if (it == pools_.end()) return;
  for (auto& [stream, open] : open_pools_)
    if (open == id) {
      open_pools_.erase(stream);
      break;
    }
  for (auto& [size, blocks] : it->second.free)
    for (void* p : blocks) free_[Key{it->second.stream, size}].push_back(p);
  pools_.erase(it);
}

size_t BlockCache::pool_blocks(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(id);
  size_t n = 0;
  if (it != pools_.end())
    for (const auto& [size, blocks] : it->second.free) n += blocks.size();
  return n;
}

void BlockCache::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  free_cached_locked();
}

void BlockCache::free_cached_locked() {
  for (auto& [key, blocks] : free_) {
    for (void* p : blocks) {
      backend_.free(p);
      ++stats_.device_frees;
      stats_.bytes_cached -= key.second;
    }
  }
  free_.clear();
}

AllocatorStats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace graph::cuda
