// Static functions called from many threads at once (label `concurrency`,
// also run under ThreadSanitizer by tools/dev.sh): every result must equal
// the serial result bit for bit, every call must run the compiled graph, and
// first calls (registry lookups) and mode switches may race with calls.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

#include "functions.h"
#include "support.h"

namespace {

using graph::Tensor;

constexpr int kThreads = 8;
constexpr int kRounds = 200;  // calls per thread; TSan makes each ~10x slower

// Runs f(thread index) on kThreads threads released together.
template <class F>
void on_threads(F f) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      f(t);
    });
  for (auto& th : threads) th.join();
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const std::vector<float> x = rel::values(a), y = rel::values(b);
  for (size_t i = 0; i < x.size(); ++i)
    if (!rel::same_value(x[i], y[i])) return false;
  return true;
}

struct LayerInputs {
  Tensor W = rel::random_tensor({16, 12}, 1), b = rel::random_tensor({16, 1}, 2);
  std::vector<Tensor> x;
  LayerInputs() {
    for (int t = 0; t < kThreads; ++t) x.push_back(rel::random_tensor({12, 5 + t}, 100 + t));
  }
};

TEST(Concurrency, OneFunctionFromEightThreads) {
  LayerInputs in;
  std::vector<Tensor> serial;
  for (int t = 0; t < kThreads; ++t) serial.push_back(rel::layer(in.x[t], in.W, in.b));
  const uint64_t before = rel::graph_runs("layer");
  ASSERT_EQ(before, uint64_t{kThreads}) << "the serial calls ran the compiled graph";

  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    for (int r = 0; r < kRounds; ++r)
      if (!same(rel::layer(in.x[t], in.W, in.b), serial[t])) ++wrong;
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rel::graph_runs("layer"), before + kThreads * kRounds);
}

TEST(Concurrency, DifferentFunctionsAtOnce) {
  LayerInputs in;
  std::vector<Tensor> serial;
  for (int t = 0; t < kThreads; ++t)
    serial.push_back(t % 2 ? rel::iterate(in.x[t], t) : rel::layer(in.x[t], in.W, in.b));
  const uint64_t before = rel::graph_runs("layer") + rel::graph_runs("iterate");

  std::atomic<int> wrong{0};
  on_threads([&](int t) {
    for (int r = 0; r < kRounds; ++r) {
      Tensor got = t % 2 ? rel::iterate(in.x[t], t) : rel::layer(in.x[t], in.W, in.b);
      if (!same(got, serial[t])) ++wrong;
    }
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(rel::graph_runs("layer") + rel::graph_runs("iterate"), before + kThreads * kRounds);
}

// first_call_a/b are called nowhere else: their function-local dispatch
// objects are built, and the registry searched, by eight threads at once,
// while other threads list the registry.
TEST(Concurrency, ConcurrentFirstCalls) {
  std::vector<Tensor> x;
  for (int t = 0; t < kThreads; ++t) x.push_back(rel::random_tensor({3, 4}, 200 + t));
  std::vector<Tensor> got(kThreads);
  std::atomic<size_t> listed{0};
  on_threads([&](int t) {
    listed += graph::detail::registered_graphs().size();
    got[t] = t % 2 ? rel::first_call_b(x[t]) : rel::first_call_a(x[t]);
    listed += graph::detail::registered_graphs().size();
  });
  EXPECT_EQ(rel::graph_runs("first_call_a"), uint64_t{kThreads / 2});
  EXPECT_EQ(rel::graph_runs("first_call_b"), uint64_t{kThreads / 2});
  EXPECT_GT(listed.load(), 0u);
  for (int t = 0; t < kThreads; ++t) {
    Tensor want = t % 2 ? graph::exp(-x[t]) + 1.0f : graph::sigmoid(x[t]) * 2.0f;
    EXPECT_TRUE(same(got[t], want)) << "thread " << t;
  }
}

// One thread flips the mode between Static and Eager while the others call:
// each call runs either way and gives the same result.
TEST(Concurrency, SetModeWhileOthersCall) {
  LayerInputs in;
  std::vector<Tensor> serial;
  for (int t = 0; t < kThreads; ++t)
    serial.push_back(t % 2 ? rel::iterate(in.x[t], 3) : rel::layer(in.x[t], in.W, in.b));

  std::atomic<int> wrong{0};
  std::atomic<bool> done{false};
  std::thread flipper([&] {
    for (int i = 0; !done.load(); ++i) {
      graph::set_mode(i % 2 ? graph::Mode::Eager : graph::Mode::Static);
      std::this_thread::yield();
    }
  });
  on_threads([&](int t) {
    for (int r = 0; r < kRounds; ++r) {
      Tensor got = t % 2 ? rel::iterate(in.x[t], 3) : rel::layer(in.x[t], in.W, in.b);
      if (!same(got, serial[t])) ++wrong;
    }
  });
  done = true;
  flipper.join();
  graph::set_mode(graph::Mode::Static);
  EXPECT_EQ(wrong.load(), 0) << "static and eager results differ, or a call misbehaved";
}

}  // namespace
