// Class-index target checks (class_targets.h), with a small cache for device
// targets keyed as dnnl_cache.h keys packed weights.
#include "class_targets.h"

#include <array>
#include <memory>
#include <mutex>

#include "graph/error.h"
#include "storage.h"

namespace graph::detail {

namespace {

struct Entry {
  std::weak_ptr<Storage> storage;
  const Storage* raw = nullptr;
  int64_t offset = 0;
  Shape sizes, strides;
  uint64_t version = 0;
  int64_t C = 0, ignore = 0;
  ClassTargets result;

  bool matches(const Tensor& t, int64_t c, int64_t ig) const {
    return raw == t.storage().get() && !storage.expired() && offset == t.storage_offset() && version == t.version() &&
           C == c && ignore == ig && sizes == t.sizes() && strides == t.strides();
  }
};

// A few entries: the labels of a step are checked by the forward and the
// backward; more than one loss per step is rare.
struct Cache {
  std::mutex mu;
  std::array<Entry, 8> entries;
  size_t next = 0;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: device storage outlives statics
  return *c;
}

ClassTargets check_on_host(const char* op, const Tensor& host, int64_t C, int64_t ignore, const std::string& shapes) {
  const Tensor t = host.contiguous();
  const int64_t* p = t.data_ptr<int64_t>();
  ClassTargets r;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (p[i] == ignore) {
      r.any_ignored = true;
      continue;
    }
    if (p[i] < 0 || p[i] >= C)
      throw Error(std::string(op) + ": target " + std::to_string(p[i]) + " is out of range for " + std::to_string(C) +
                  " classes (" + shapes + ")");
    ++r.count;
  }
  return r;
}

}  // namespace

ClassTargets check_class_targets(const char* op, const Tensor& targets, int64_t C, int64_t ignore,
                                 const std::string& shapes) {
  if (targets.device() != Device::CUDA) return check_on_host(op, targets, C, ignore, shapes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mu);
    for (const Entry& e : c.entries)
      if (e.matches(targets, C, ignore)) return e.result;
  }
  const uint64_t version = targets.version();  // read before the copy: a later write bumps past it
  const ClassTargets r = check_on_host(op, targets.to(kCPU), C, ignore, shapes);
  std::lock_guard lock(c.mu);
  Entry& e = c.entries[c.next];
  c.next = (c.next + 1) % c.entries.size();
  e = Entry{targets.storage(), targets.storage().get(), targets.storage_offset(), targets.sizes(), targets.strides(),
            version, C, ignore, r};
  return r;
}

}  // namespace graph::detail
