// The bookkeeping of CUDA Graph capture (capture.h): host code only, tested
// over a fake backend.
#include <cstring>
#include <string>

#include "graph/cuda/capture.h"
#include "graph/error.h"

namespace graph::cuda {

void SignatureKey::tensor(DType dtype, int device, int ndim, const int64_t* sizes, const int64_t* strides) {
  s_ += "|t";
  s_ += dtype_name(dtype);
  s_ += '@' + std::to_string(device) + '[';
  for (int d = 0; d < ndim; ++d) s_ += (d ? "," : "") + std::to_string(sizes[d]);
  s_ += "]/[";
  for (int d = 0; d < ndim; ++d) s_ += (d ? "," : "") + std::to_string(strides[d]);
  s_ += ']';
}

void SignatureKey::real(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  s_ += "|f" + std::to_string(bits);
}

GraphCaptureCache::GraphCaptureCache(Backend backend, Options options)
    : backend_(std::move(backend)), options_(options) {
  if (options_.capacity == 0) options_.capacity = 1;
}

GraphCaptureCache::~GraphCaptureCache() {
  std::lock_guard lock(mu_);
  while (!entries_.empty()) drop_locked(entries_.begin());
}

void GraphCaptureCache::drop_locked(std::map<std::string, Entry>::iterator it) {
  backend_.destroy(it->second.graph, it->second.exec);
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

GraphCaptureCache::Action GraphCaptureCache::plan(const std::string& key) {
  std::lock_guard lock(mu_);
  if (blocked_.count(key)) {
    ++stats_.blocked_calls;
    return Action::Eager;
  }
  auto it = entries_.find(key);
  if (it != entries_.end()) return Action::Replay;
  size_t& seen = seen_[key];
  if (seen < options_.warmup_calls) {
    ++seen;
    ++stats_.warmups;
    return Action::Eager;
  }
  return Action::Capture;
}

void* GraphCaptureCache::stream() {
  std::lock_guard lock(mu_);
  if (!stream_) stream_ = backend_.create_stream();
  return stream_;
}

bool GraphCaptureCache::capture(const std::string& key, const std::function<void()>& record,
                                std::shared_ptr<void> payload, std::string* why) {
  void* s = stream();
  std::lock_guard lock(mu_);
  const auto fail = [&](const std::string& reason) {
    blocked_[key] = reason;
    seen_.erase(key);
    ++stats_.failures;
    if (why) *why = reason;
    return false;
  };
  if (entries_.count(key)) return true;  // captured meanwhile
  backend_.begin(s);
  std::string error;
  try {
    record();
  } catch (const std::exception& e) {
    error = e.what();
  }
  void* graph = backend_.end(s);  // always ends the capture, even after a throw
  if (!error.empty()) {
    backend_.destroy(graph, nullptr);
    return fail("the capture failed: " + error);
  }
  if (!graph) return fail("the capture was invalidated (an operation the stream capture does not allow)");
  void* exec = backend_.instantiate(graph);
  if (!exec) {
    backend_.destroy(graph, nullptr);
    return fail("cudaGraphInstantiate failed");
  }
  while (entries_.size() >= options_.capacity) {  // least recently used out
    drop_locked(entries_.find(lru_.back()));
    ++stats_.evictions;
  }
  lru_.push_front(key);
  entries_[key] = Entry{graph, exec, std::move(payload), lru_.begin()};
  seen_.erase(key);
  ++stats_.captures;
  return true;
}

std::shared_ptr<void> GraphCaptureCache::replay(const std::string& key) {
  void* s = stream();
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  backend_.launch(it->second.exec, s);
  ++stats_.replays;
  return it->second.payload;
}

std::shared_ptr<void> GraphCaptureCache::payload(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second.payload;
}

void GraphCaptureCache::block(const std::string& key, const std::string& why) {
  std::lock_guard lock(mu_);
  blocked_[key] = why;
}

std::string GraphCaptureCache::blocked_reason(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = blocked_.find(key);
  return it == blocked_.end() ? std::string() : it->second;
}

void GraphCaptureCache::invalidate(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    drop_locked(it);
    ++stats_.invalidations;
  }
  blocked_.erase(key);
  seen_.erase(key);
}

void GraphCaptureCache::invalidate_all() {
  std::lock_guard lock(mu_);
  stats_.invalidations += entries_.size();
  while (!entries_.empty()) drop_locked(entries_.begin());
  blocked_.clear();
  seen_.clear();
}

size_t GraphCaptureCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

GraphCaptureCache::Stats GraphCaptureCache::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace graph::cuda
