// The pool behind parallel_for (parallel.h).
//
// One loop runs on the pool at a time. Its chunks are claimed through one
// atomic word holding (generation << 32 | next chunk): a worker that wakes
// late for a loop that has finished cannot claim a chunk of the next one,
// because the generation no longer matches. The caller claims chunks too,
// then waits until every chunk is done, so the loop body (on the caller's
// stack) outlives every use.
#include "graph/parallel.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace graph::cpu {

namespace {

int threads_from_env() {
  if (const char* env = std::getenv("GRAPH_NUM_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 1024) return static_cast<int>(v);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

thread_local bool in_chunk = false;  // nested loops run inline

class Pool {
 public:
  static Pool& get() {
    // Leaked on purpose: workers stay parked at exit.
    static Pool* pool = new Pool(threads_from_env() - 1);
    return *pool;
  }

  int threads() const { return static_cast<int>(workers_) + 1; }

  void run(int64_t n, int64_t grain, detail::ChunkFn fn, void* ctx) {
    std::unique_lock<std::mutex> busy(call_mu_, std::try_to_lock);
    if (workers_ == 0 || in_chunk || !busy.owns_lock()) return run_inline(n, fn, ctx);
    // A few chunks per thread balance a loaded machine; each at least `grain`.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(n / grain, 4 * threads()));
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = {fn, ctx, n, chunks};
      done_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      ++gen_;
      next_.store(gen_ << 32, std::memory_order_release);
    }
    wake_.notify_all();
    work(gen_, job_);
    std::unique_lock<std::mutex> lock(mu_);
    finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == chunks; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  explicit Pool(int workers) : workers_(static_cast<size_t>(std::max(0, workers))) {
    for (size_t i = 0; i < workers_; ++i) std::thread([this] { worker(); }).detach();
  }

  static void run_inline(int64_t n, detail::ChunkFn fn, void* ctx) {
    const bool outer = in_chunk;
    in_chunk = true;
    try {
      fn(ctx, 0, n);
    } catch (...) {
      in_chunk = outer;
      throw;
    }
    in_chunk = outer;
  }

  // Chunk `c` of `chunks` over [0, n), boundaries on multiples of 16
  // elements so vector loops start aligned with the buffer.
  static int64_t bound(int64_t c, int64_t chunks, int64_t n) {
    if (c >= chunks) return n;
    return std::min(n, (n / chunks * c) & ~int64_t{15});
  }

  struct Job {
    detail::ChunkFn fn = nullptr;
    void* ctx = nullptr;
    int64_t n = 0, chunks = 0;
  };

  // Claims and runs chunks of loop `gen` (described by `job`, a copy taken
  // under the lock) until none are left.
  void work(uint64_t gen, Job job) {
    in_chunk = true;
    for (;;) {
      uint64_t cur = next_.load(std::memory_order_acquire);
      uint64_t c;
      do {
        c = cur & 0xffffffffu;
        if ((cur >> 32) != (gen & 0xffffffffu) || static_cast<int64_t>(c) >= job.chunks) {
          in_chunk = false;
          return;
        }
      } while (!next_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel));
      const int64_t b = bound(static_cast<int64_t>(c), job.chunks, job.n);
      const int64_t e = bound(static_cast<int64_t>(c) + 1, job.chunks, job.n);
      try {
        if (b < e) job.fn(job.ctx, b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.chunks) {
        std::lock_guard<std::mutex> lock(mu_);  // the caller may be about to wait
        finished_.notify_all();
      }
    }
  }

  void worker() {
    uint64_t seen = 0;
    for (;;) {
      uint64_t gen;
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return gen_ != seen; });
        seen = gen = gen_;
        job = job_;
      }
      work(gen, job);
    }
  }

  const size_t workers_;
  std::mutex call_mu_;  // one loop on the pool at a time
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  uint64_t gen_ = 0;
  Job job_;  // the current loop; written under mu_ with the generation
  std::atomic<uint64_t> next_{0};
  std::atomic<int64_t> done_{0};
  std::exception_ptr error_;
};

}  // namespace

int num_threads() { return Pool::get().threads(); }

namespace detail {
void parallel_run(int64_t n, int64_t grain, ChunkFn fn, void* ctx) { Pool::get().run(n, grain, fn, ctx); }
}  // namespace detail

}  // namespace graph::cpu
