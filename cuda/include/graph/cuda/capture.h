#pragma once
// CUDA Graph capture of static graphs: the bookkeeping.
//
// A compiled static graph whose inputs are on the device is captured once
// per input signature (every tensor's dtype, device, sizes and strides and
// every scalar's value: what the generated code decides on the host) into a
// cudaGraphExec, then replayed: one launch instead of one per kernel.
//
// GraphCaptureCache decides per call (plan): the first `warmup_calls` calls
// of a signature run uncaptured (lazy initialisation, cuDNN's algorithm
// queries, the allocator's first blocks happen there, not in a capture);
// the next one captures; later ones replay. A capture that fails (the graph
// synchronized with the host, or anything else threw while capturing)
// blocks its signature for good: its calls run uncaptured, and
// blocked_reason says why. At most `capacity` executables are kept, least
// recently used evicted first; invalidate() drops one or all.
//
// Like the allocator's BlockCache, the bookkeeping runs over a Backend that
// does the CUDA calls: capture.cpp gives it cudaStreamBeginCapture and
// friends, the unit tests a host fake. Thread-safe (captures serialize).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/dtype.h"

namespace graph::cuda {

// The signature of one call, as a string key.
class SignatureKey {
 public:
  explicit SignatureKey(const std::string& prefix) : s_(prefix) {}
  void tensor(DType dtype, int device, int ndim, const int64_t* sizes, const int64_t* strides);
  void undefined_tensor() { s_ += "|u"; }
  void list(size_t n) { s_ += "|l" + std::to_string(n); }
  void integer(int64_t v) { s_ += "|i" + std::to_string(v); }
  void real(double v);  // by bits: 0.1 and 0.1000000001 differ, -0.0 and 0.0 differ
  void boolean(bool v) { s_ += v ? "|b1" : "|b0"; }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

class GraphCaptureCache {
 public:
  // Opaque handles: cudaStream_t, cudaGraph_t, cudaGraphExec_t.
  struct Backend {
    std::function<void*()> create_stream;          // the capture and replay stream, made once
    std::function<void(void* stream)> begin;        // starts capturing the stream
    std::function<void*(void* stream)> end;         // ends it: the graph, nullptr when the capture broke
    std::function<void*(void* graph)> instantiate;  // nullptr when it fails
    std::function<void(void* exec, void* stream)> launch;
    std::function<void(void* graph, void* exec)> destroy;  // either may be nullptr
  };
  struct Options {
    size_t warmup_calls = 1;
    size_t capacity = 64;
  };
  enum class Action { Eager, Capture, Replay };
  struct Stats {
    uint64_t warmups = 0, captures = 0, replays = 0, failures = 0, evictions = 0, invalidations = 0, blocked_calls = 0;
  };

  explicit GraphCaptureCache(Backend backend) : GraphCaptureCache(std::move(backend), Options{}) {}
  GraphCaptureCache(Backend backend, Options options);
  ~GraphCaptureCache();  // destroys every graph and executable
  GraphCaptureCache(const GraphCaptureCache&) = delete;
  GraphCaptureCache& operator=(const GraphCaptureCache&) = delete;

  // What this call of `key` does; counts it.
  Action plan(const std::string& key);
  // Captures the work `record` queues on stream() (the caller makes that
  // stream current for it) and instantiates it, keeping `payload` (the
  // static inputs and outputs the executable reads and writes) with it.
  // False, with the key blocked and why set, when `record` threw or the
  // capture or instantiation failed; the capture is always ended.
  bool capture(const std::string& key, const std::function<void()>& record, std::shared_ptr<void> payload,
               std::string* why = nullptr);
  // Launches the key's executable on stream(); its payload (nullptr and no
  // launch when there is none).
  std::shared_ptr<void> replay(const std::string& key);
  // The payload kept with the key's executable (nullptr when none).
  std::shared_ptr<void> payload(const std::string& key) const;
  // Blocks a key without trying (the caller found a reason not to capture).
  void block(const std::string& key, const std::string& why);
  std::string blocked_reason(const std::string& key) const;  // "" when not blocked
  void invalidate(const std::string& key);                   // also forgets a block
  void invalidate_all();
  void* stream();
  size_t size() const;  // executables kept
  Stats stats() const;

 private:
  struct Entry {
    void* graph = nullptr;
    void* exec = nullptr;
    std::shared_ptr<void> payload;
    std::list<std::string>::iterator lru;
  };
  void drop_locked(std::map<std::string, Entry>::iterator it);

  Backend backend_;
  Options options_;
  mutable std::mutex mu_;
  void* stream_ = nullptr;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recently used first
  std::map<std::string, size_t> seen_;  // uncaptured calls per key
  std::map<std::string, std::string> blocked_;
  Stats stats_;
};

// The process-wide cache over the CUDA runtime (capture.cpp).
GraphCaptureCache& graph_capture_cache();
// Makes `to` wait for the work queued so far on `from` (an event; nothing
// when they are the same stream).
void stream_wait(void* to, void* from);

}  // namespace graph::cuda
