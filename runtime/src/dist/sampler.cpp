// graph::dist::DistributedSampler (dist.h), as torch's DistributedSampler.
#include <cstdint>
#include <numeric>
#include <random>

#include "graph/dist.h"
#include "graph/error.h"

namespace graph::dist {

DistributedSampler::DistributedSampler(int64_t dataset_size, int rank, int world_size, SamplerOptions options)
    : size_(dataset_size), rank_(rank), world_(world_size), opt_(options) {
  if (world_size < 1) throw Error("DistributedSampler: world_size must be positive, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size)
    throw Error("DistributedSampler: rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) +
                ")");
  if (dataset_size < 0) throw Error("DistributedSampler: the dataset size is negative");
  if (options.drop_last && dataset_size < world_size)
    throw Error("DistributedSampler: drop_last with " + std::to_string(dataset_size) + " examples for " +
                std::to_string(world_size) + " ranks leaves every rank nothing");
}

DistributedSampler::DistributedSampler(int64_t dataset_size, const ProcessGroup& pg, SamplerOptions options)
    : DistributedSampler(dataset_size, pg.rank(), pg.world_size(), options) {}

int64_t DistributedSampler::num_samples() const {
  return opt_.drop_last ? size_ / world_ : (size_ + world_ - 1) / world_;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all(static_cast<size_t>(size_));
  std::iota(all.begin(), all.end(), 0);
  if (opt_.shuffle) {
    // Our own Fisher-Yates over mt19937_64: std::shuffle's order is the
    // library's choice, and every rank must draw the same permutation.
    std::mt19937_64 rng(opt_.seed + epoch_);
    for (size_t i = all.size(); i > 1; --i) {
      const uint64_t bound = i, limit = UINT64_MAX - UINT64_MAX % bound;
      uint64_t x;
      do x = rng();
      while (x >= limit);  // unbiased
      std::swap(all[i - 1], all[x % bound]);
    }
  }
  const size_t total = static_cast<size_t>(num_samples() * world_);
  // Pad by wrapping around (repeatedly when the dataset is smaller than the world).
  for (size_t i = 0; all.size() < total; ++i) all.push_back(all[i]);
  all.resize(total);
  std::vector<int64_t> mine;
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(world_)) mine.push_back(all[i]);
  return mine;
}

}  // namespace graph::dist
