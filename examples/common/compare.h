#pragma once
// Runs a [[graph::static]] function eagerly and as its compiled graph and
// prints what the examples promise: both results, their largest difference
// against a tolerance, median timings, and how often a compiled graph ran.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include <graph/graph.h>

namespace examples {

// The first `n` elements of `t`, flattened: "[0.12, -0.5, ...] (shape [4, 10])".
inline std::string head(const graph::Tensor& t, int64_t n = 6) {
  graph::Tensor flat = t.to(graph::kCPU).contiguous();
  std::string s = "[";
  char buf[32];
  for (int64_t i = 0; i < std::min(n, flat.numel()); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.6f", i ? ", " : "", flat.data_ptr<float>()[i]);
    s += buf;
  }
  s += flat.numel() > n ? ", ...]" : "]";
  std::string shape = " of shape [";
  for (int64_t d = 0; d < t.dim(); ++d) shape += (d ? ", " : "") + std::to_string(t.size(d));
  return s + shape + "]";
}

// CXXGRAPH_EXAMPLE_DEVICE=cuda: the examples that support it (lenet,
// transformer) compute a CPU reference first, then move their model and
// inputs to the GPU and compare eager and static there, and the static
// result with the CPU's (tools/device_check.sh runs them so).
inline graph::Device example_device() {
  const char* e = std::getenv("CXXGRAPH_EXAMPLE_DEVICE");
  return e && std::string(e) == "cuda" ? graph::kCUDA : graph::kCPU;
}

inline uint64_t compiled_graph_runs() {
  uint64_t n = 0;
  for (const auto* g : graph::detail::registered_graphs()) n += g->calls.load();
  return n;
}

// Median wall time of `reps` calls of `fn`, in microseconds. A result on
// the device is copied back inside the timed region: device work is
// asynchronous, and the copy waits for it (the examples' outputs are small).
template <class F>
double median_us(F&& fn, int reps) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if constexpr (std::is_same_v<decltype(fn()), graph::Tensor>) {
      graph::Tensor t = fn();
      if (t.device() != graph::kCPU) (void)t.to(graph::kCPU);
    } else {
      fn();
    }
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[reps / 2];
}

// Times `fn` (a call of a [[graph::static]] function) run eagerly and as its
// compiled graph, and prints both medians; leaves the mode Static.
template <class F>
void print_timings(F&& fn, int reps) {
  graph::set_mode(graph::Mode::Eager);
  const double eager_us = median_us(fn, reps);
  graph::set_mode(graph::Mode::Static);
  const double static_us = median_us(fn, reps);
  std::printf("  time per call (median of %d): eager %.1f us, static %.1f us (eager / static = %.2f)\n", reps,
              eager_us, static_us, eager_us / static_us);
}

// Runs `fn` (a call of a [[graph::static]] function returning a float
// tensor) both ways and prints the comparison. Returns false when the
// results differ by more than `tolerance * (1 + |eager|)` in some element, or
// when no compiled graph ran (the static call fell back to its eager body:
// GRAPH_EXPLAIN=1 says why). With a defined `cpu_reference` (the eager
// result on the CPU, for a run on the device) the static result must also be
// within the tolerance of it.
template <class F>
bool compare_eager_static(F&& fn, double tolerance, int reps = 20, const graph::Tensor& cpu_reference = {}) {
  graph::set_mode(graph::Mode::Eager);
  graph::Tensor eager = fn();
  graph::set_mode(graph::Mode::Static);
  const uint64_t runs_before = compiled_graph_runs();
  graph::Tensor fused = fn();
  const bool graph_ran = compiled_graph_runs() > runs_before;

  // Largest difference, and whether every element is within tolerance.
  auto within = [&](const graph::Tensor& ref, const graph::Tensor& got, const char* what) {
    graph::Tensor e = ref.to(graph::kCPU).contiguous(), s = got.to(graph::kCPU).contiguous();
    double max_diff = 0, worst_ratio = 0;
    for (int64_t i = 0; i < e.numel() && e.sizes() == s.sizes(); ++i) {
      const double ev = e.data_ptr<float>()[i], d = std::fabs(ev - s.data_ptr<float>()[i]);
      max_diff = std::max(max_diff, d);
      worst_ratio = std::max(worst_ratio, d / (tolerance * (1 + std::fabs(ev))));
    }
    const bool close = e.sizes() == s.sizes() && worst_ratio <= 1;  // NaN fails: comparisons with it are false
    std::printf("  max |%s| = %.3g (tolerance %.0e * (1 + |eager|)): %s\n", what, max_diff, tolerance,
                close ? "OK" : "TOO LARGE");
    return close;
  };
  const char* dev = fused.device() == graph::kCUDA ? " (on cuda)" : "";
  std::printf("  eager%s:  %s\n  static%s: %s\n", dev, head(eager).c_str(), dev, head(fused).c_str());
  bool close = within(eager, fused, "eager - static");
  if (cpu_reference.defined()) close = within(cpu_reference, fused, "cpu eager - static on cuda") && close;

  print_timings(fn, reps);
  if (!graph_ran)
    std::printf("  NO COMPILED GRAPH RAN: the static call ran the eager body (rerun with GRAPH_EXPLAIN=1)\n");
  return close && graph_ran;
}

}  // namespace examples
