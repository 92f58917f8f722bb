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
  ValueStamp stamp;
  int64_t C = 0, ignore = 0;
  ClassTargets result;
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
      if (e.C == C && e.ignore == ignore && e.stamp.matches(targets)) return e.result;
  }
  const ValueStamp stamp(targets);  // before the copy: a later write bumps past it
  const ClassTargets r = check_on_host(op, targets.to(kCPU), C, ignore, shapes);
  std::lock_guard lock(c.mu);
  c.entries[c.next] = Entry{stamp, C, ignore, r};
  c.next = (c.next + 1) % c.entries.size();
  return r;
}

}  // namespace graph::detail
