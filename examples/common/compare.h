#pragma once
// Runs a [[graph::static]] function eagerly and as its compiled graph and
// prints what the examples promise: both results, their largest difference
// against a tolerance, median timings, and how often a compiled graph ran.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <graph/graph.h>

namespace examples {

// The first `n` elements of `t`, flattened: "[0.12, -0.5, ...] (shape [4, 10])".
inline std::string head(const graph::Tensor& t, int64_t n = 6) {
  graph::Tensor flat = t.contiguous();
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

inline uint64_t compiled_graph_runs() {
  uint64_t n = 0;
  for (const auto* g : graph::detail::registered_graphs()) n += g->calls.load();
  return n;
}

// Median wall time of `reps` calls of `fn`, in microseconds.
template <class F>
double median_us(F&& fn, int reps) {
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
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
// GRAPH_EXPLAIN=1 says why).
template <class F>
bool compare_eager_static(F&& fn, double tolerance, int reps = 20) {
  graph::set_mode(graph::Mode::Eager);
  graph::Tensor eager = fn();
  graph::set_mode(graph::Mode::Static);
  const uint64_t runs_before = compiled_graph_runs();
  graph::Tensor fused = fn();
  const bool graph_ran = compiled_graph_runs() > runs_before;

  graph::Tensor e = eager.contiguous(), s = fused.contiguous();
  double max_diff = 0, worst_ratio = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double ev = e.data_ptr<float>()[i], d = std::fabs(ev - s.data_ptr<float>()[i]);
    max_diff = std::max(max_diff, d);
    worst_ratio = std::max(worst_ratio, d / (tolerance * (1 + std::fabs(ev))));
  }
  const bool close = e.sizes() == s.sizes() && worst_ratio <= 1;
  std::printf("  eager:  %s\n  static: %s\n", head(eager).c_str(), head(fused).c_str());
  std::printf("  max |eager - static| = %.3g (tolerance %.0e * (1 + |eager|)): %s\n", max_diff, tolerance,
              close ? "OK" : "TOO LARGE");

  print_timings(fn, reps);
  if (!graph_ran)
    std::printf("  NO COMPILED GRAPH RAN: the static call ran the eager body (rerun with GRAPH_EXPLAIN=1)\n");
  return close && graph_ran;
}

}  // namespace examples
