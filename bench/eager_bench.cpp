// Eager runtime figures for issue 3, each measured in one run beside its
// reference (medians of repeated timings; one thread everywhere):
//   per-op time on 64-element tensors: cxxgraph vs LibTorch (target <= 1/3);
//   16M-float elementwise add: bandwidth vs a triad loop (target >= 0.8);
//   sgemm 1024^3: graph::matmul vs the GEMM library it calls (oneDNN's
//   dnnl_sgemm) called directly (target >= 0.9).
// usage: bench_eager [--quick]
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"

#if CXXGRAPH_HAVE_LIBTORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#endif

namespace {

bool quick = false;

// Median over `reps` runs of the time per call of f, in seconds.
double median_time(const std::function<void()>& f, int calls, int reps = 15) {
  if (quick) reps = 5;
  for (int i = 0; i < calls; ++i) f();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

void row(const char* what, double ours, double ref, const char* ref_name, const char* unit, double scale) {
  std::printf("| %-28s | %10.3f %-4s | %10.3f %-4s | %-22s | %6.2f |\n", what, ours * scale, unit, ref * scale, unit,
              ref_name, ref / ours);
}

void per_op_small() {
  std::printf("\n64-element tensors, time per op (ratio = reference / cxxgraph; higher is better)\n");
  std::printf("| %-28s | %15s | %15s | %-22s | %6s |\n", "op", "cxxgraph", "reference", "reference", "ratio");
  std::printf("|---|---|---|---|---|\n");
  graph::Tensor a = graph::rand({64}), b = graph::rand({64}), m = graph::rand({8, 8});
#if CXXGRAPH_HAVE_LIBTORCH
  at::set_num_threads(1);
  at::Tensor ta = at::rand({64}), tb = at::rand({64}), tm = at::rand({8, 8});
  struct Op { const char* name; std::function<void()> ours, theirs; };
  volatile float sink = 0;
  Op ops[] = {
      {"add", [&] { graph::Tensor r = a + b; }, [&] { at::Tensor r = ta + tb; }},
      {"mul (tensor * scalar)", [&] { graph::Tensor r = a * 1.5f; }, [&] { at::Tensor r = ta * 1.5; }},
      {"relu", [&] { graph::Tensor r = graph::relu(a); }, [&] { at::Tensor r = at::relu(ta); }},
      {"tanh", [&] { graph::Tensor r = graph::tanh(a); }, [&] { at::Tensor r = at::tanh(ta); }},
      {"exp", [&] { graph::Tensor r = graph::exp(a); }, [&] { at::Tensor r = at::exp(ta); }},
      {"sum", [&] { graph::Tensor r = a.sum(); }, [&] { at::Tensor r = ta.sum(); }},
      {"matmul 8x8", [&] { graph::Tensor r = graph::matmul(m, m); }, [&] { at::Tensor r = at::matmul(tm, tm); }},
      {"softmax", [&] { graph::Tensor r = graph::softmax(a, 0); }, [&] { at::Tensor r = at::softmax(ta, 0); }},
  };
  std::vector<double> ratios;
  for (Op& op : ops) {
    double ours = median_time(op.ours, 20000), theirs = median_time(op.theirs, 20000);
    row(op.name, ours, theirs, "LibTorch", "ns", 1e9);
    ratios.push_back(theirs / ours);
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf("median ratio LibTorch / cxxgraph: %.2f (target >= 3)\n", ratios[ratios.size() / 2]);
  (void)sink;
#else
  std::printf("(no LibTorch here: bench_suite and bench_libtorch compare per-op times, tools/bench.sh)\n");
#endif
}

void bandwidth() {
  const int64_t n = 16 << 20;
  std::printf("\n16M float32 elements, memory bandwidth (3 arrays of 64 MiB moved per op)\n");
  std::printf("| %-28s | %15s | %15s | %-22s | %6s |\n", "op", "cxxgraph", "reference", "reference", "ratio");
  std::printf("|---|---|---|---|---|\n");
  std::vector<float> x(n, 1.0f), y(n, 2.0f), z(n);
  const double bytes = 3.0 * 4 * n;
  double triad = median_time([&] {
    float* __restrict zz = z.data();
    const float* __restrict xx = x.data();
    const float* __restrict yy = y.data();
    for (int64_t i = 0; i < n; ++i) zz[i] = xx[i] + 1.5f * yy[i];
  }, 3, 9);
  graph::Tensor a = graph::ones({n}), b = graph::ones({n});
  double add = median_time([&] { graph::Tensor r = a + b; }, 3, 9);
  std::printf("| %-28s | %10.2f GB/s | %10.2f GB/s | %-22s | %6.2f |\n", "add (a + b)", bytes / add / 1e9,
              bytes / triad / 1e9, "triad loop", triad / add);
  std::printf("cxxgraph add reaches %.0f%% of the triad loop's bandwidth (target >= 80%%)\n", 100 * triad / add);
}

void sgemm() {
  const int n = quick ? 512 : 1024;
  std::printf("\nsgemm %d^3 (oneDNN, GRAPH_NUM_THREADS threads)\n", n);
  std::printf("| %-28s | %15s | %15s | %-22s | %6s |\n", "op", "cxxgraph", "reference", "reference", "ratio");
  std::printf("|---|---|---|---|---|\n");
  graph::Tensor a = graph::rand({n, n}), b = graph::rand({n, n});
  std::vector<float> c(static_cast<size_t>(n) * n);
  double ours = median_time([&] { graph::Tensor r = graph::matmul(a, b); }, 2, 7);
  double direct = median_time([&] {
    dnnl_sgemm('N', 'N', n, n, n, 1.0f, a.data_ptr<float>(), n, b.data_ptr<float>(), n, 0.0f, c.data(), n);
  }, 2, 7);
  const double flop = 2.0 * n * n * n;
  std::printf("| %-28s | %10.2f GF/s | %10.2f GF/s | %-22s | %6.2f |\n", "matmul", flop / ours / 1e9,
              flop / direct / 1e9, "dnnl_sgemm direct", direct / ours);
  std::printf("graph::matmul runs at %.2fx of dnnl_sgemm (target >= 0.9)\n", direct / ours);
}

}  // namespace

int main(int argc, char** argv) {
  quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  graph::manual_seed(0);
  std::printf("cxxgraph eager benchmarks (medians)\n");
  per_op_small();
  bandwidth();
  sgemm();
  return 0;
}
