#pragma once
// The two caches the runtime's oneDNN users keep (packed_gemm.cpp,
// dnnl_conv.cpp), written once:
//  - Primitives: oneDNN primitives per problem. Making one costs far more
//    than running it (kernel generation), so they are kept.
//  - Weights: a weight tensor reordered into a primitive's layout, kept while
//    the weight is unchanged. An entry is keyed on the weight's storage (held
//    by weak_ptr: a freed storage never matches, even when a new one reuses
//    its address), offset, sizes, strides, dtype and Tensor::version (bumped
//    by every in-place write the runtime makes), and on the layout. So an
//    optimizer step makes the next call reorder again.
// Both are bounded, least recently used first out. Neither locks: the owner
// holds its mutex around every call.
#include <dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dnnl_context.h"
#include "graph/tensor.h"
#include "storage.h"

namespace graph::cpu::dnnl_cache {

// `Prim` is the owner's record of a primitive, `Key` its problem (with ==).
template <class Key, class Prim>
class Primitives {
 public:
  explicit Primitives(size_t capacity) : capacity_(capacity) {}

  // The primitive for `key`, made by `make(key)` on a miss. If `make`
  // throws (oneDNN refuses the problem), the cache is unchanged.
  template <class Make>
  std::shared_ptr<Prim> get(const Key& key, Make&& make) {
    ++tick_;
    for (Entry& e : entries_)
      if (e.key == key) {
        e.last_use = tick_;
        return e.prim;
      }
    std::shared_ptr<Prim> p = make(key);
    if (entries_.size() >= capacity_)
      entries_.erase(std::min_element(entries_.begin(), entries_.end(),
                                      [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; }));
    entries_.push_back(Entry{key, p, tick_});
    return p;
  }

  void clear() { entries_.clear(); }

 private:
  struct Entry {
    Key key;
    std::shared_ptr<Prim> prim;
    uint64_t last_use;
  };
  size_t capacity_;
  uint64_t tick_ = 0;
  std::vector<Entry> entries_;
};

// A weight at one version in one layout. `mem` is empty until fill().
struct Weight {
  std::weak_ptr<Storage> storage;
  const Storage* raw = nullptr;
  int64_t offset = 0;
  Shape sizes, strides;
  DType dtype = kFloat32;
  uint64_t version = 0;
  dnnl::memory::desc desc;
  dnnl::memory mem;
  bool filled = false;
  size_t bytes = 0;
  uint64_t last_use = 0;
};

class Weights {
 public:
  Weights(size_t max_entries, size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // The entry of `w` at its current version in layout `desc`, or null.
  std::shared_ptr<Weight> find(const Tensor& w, const dnnl::memory::desc& desc) {
    for (const std::shared_ptr<Weight>& e : entries_)
      if (same(*e, w, desc)) {
        e->last_use = ++tick_;
        return e;
      }
    return nullptr;
  }

  // A new, unfilled entry of `w` at its current version in layout `desc`.
  // Entries of `w` at older versions (or of a dead storage at its address)
  // are stale in every layout: they are dropped now, not when they age out.
  std::shared_ptr<Weight> add(const Tensor& w, const dnnl::memory::desc& desc) {
    for (size_t i = entries_.size(); i-- > 0;) {
      const Weight& e = *entries_[i];
      if (e.raw == w.storage().get() && e.offset == w.storage_offset() && e.sizes == w.sizes() &&
          (e.version != w.version() || e.storage.expired())) {
        bytes_ -= e.bytes;
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    auto e = std::make_shared<Weight>();
    e->storage = w.storage();
    e->raw = w.storage().get();
    e->offset = w.storage_offset();
    e->sizes = w.sizes();
    e->strides = w.strides();
    e->dtype = w.dtype();
    e->version = w.version();  // read before the data: a later write bumps past it
    e->desc = desc;
    e->last_use = ++tick_;
    while (entries_.size() >= max_entries_) evict(nullptr);
    entries_.push_back(e);
    return e;
  }

  // Fills `e` with the float data at `data` (layout `plain`) reordered into
  // e's layout, then evicts other entries while over the byte cap.
  void fill(Weight& e, const dnnl::memory::desc& plain, const float* data) {
    dnnl::engine& eng = dnnl_context::engine();
    dnnl::stream& s = dnnl_context::stream();
    e.mem = dnnl::memory(e.desc, eng);
    dnnl::memory src(plain, eng, const_cast<float*>(data));
    dnnl::reorder(src, e.mem).execute(s, src, e.mem);
    s.wait();
    e.filled = true;
    e.bytes = e.desc.get_size();
    bytes_ += e.bytes;
    while (bytes_ > max_bytes_ && entries_.size() > 1) evict(&e);
  }

  size_t size() const { return entries_.size(); }
  uint64_t evictions() const { return evictions_; }
  void clear() {
    entries_.clear();
    bytes_ = 0;
  }

 private:
  static bool same(const Weight& e, const Tensor& w, const dnnl::memory::desc& desc) {
    if (e.raw != w.storage().get() || e.offset != w.storage_offset() || e.sizes != w.sizes() ||
        e.strides != w.strides() || e.dtype != w.dtype() || e.version != w.version() || !(e.desc == desc))
      return false;
    // The same Storage object, not a new one at a freed one's address.
    return e.storage.lock().get() == w.storage().get();
  }

  // Drops the least recently used entry other than `keep`.
  void evict(const Weight* keep) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), [&](const auto& a, const auto& b) {
      if (a.get() == keep) return false;
      if (b.get() == keep) return true;
      return a->last_use < b->last_use;
    });
    bytes_ -= (*oldest)->bytes;
    entries_.erase(oldest);
    ++evictions_;
  }

  size_t max_entries_, max_bytes_;
  uint64_t tick_ = 0, evictions_ = 0;
  size_t bytes_ = 0;
  std::vector<std::shared_ptr<Weight>> entries_;
};

}  // namespace graph::cpu::dnnl_cache
