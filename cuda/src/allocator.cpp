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
  auto it = free_.find(Key{stream, size});
  if (it != free_.end() && !it->second.empty()) {
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
  live_.emplace(p, Block{size, stream});
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
  free_[Key{b.stream, b.size}].push_back(p);
  stats_.bytes_in_use -= b.size;
  stats_.bytes_cached += b.size;
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
    }
  }
  free_.clear();
  stats_.bytes_cached = 0;
}

AllocatorStats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace graph::cuda
