// bench_dtypes and bench_dtypes_specialized: what a call in float64 costs
// when the generated code is float32's. Both build a copy of models.cpp; the
// first with `DTYPES float64`, so a float64 call runs its float64 variant's
// generated code, the second without, so a float64 call runs the graph
// specialized at run time (on the interpreter). Eager is the reference, and
// float32 rows are beside them. Each row family first checks that the static
// result equals eager's.
//
//   ninja -C build bench_dtypes bench_dtypes_specialized
//   build/bench/bench_dtypes --benchmark_repetitions=5
//   build/bench/bench_dtypes_specialized --benchmark_filter=f64 --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <graph/graph.h>

#include "models.h"

namespace {

using graph::Tensor;

Tensor weight(graph::Shape s, int64_t fan_in, graph::DType d) {
  return ((graph::rand(s) * 2 - 1) * (1.0 / std::sqrt(static_cast<double>(fan_in)))).to(d);
}

struct Mlp {
  Tensor x, w1, b1, w2, b2, w3, b3;
  explicit Mlp(graph::DType d)
      : x(graph::rand({64, 784}).to(d)), w1(weight({512, 784}, 784, d)), b1(weight({512}, 784, d)),
        w2(weight({512, 512}, 512, d)), b2(weight({512}, 512, d)), w3(weight({10, 512}, 512, d)),
        b3(weight({10}, 512, d)) {}
  Tensor run() const { return bench::mlp(x, w1, b1, w2, b2, w3, b3); }
};

struct Block {
  Tensor x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2;
  explicit Block(graph::DType d) {
    constexpr int D = 256, F = 1024;
    x = graph::randn({8, 64, D}).to(d);
    ln1_w = ln2_w = graph::ones({D}, d);
    ln1_b = ln2_b = graph::zeros({D}, d);
    wq = weight({D, D}, D, d), bq = weight({D}, D, d), wk = weight({D, D}, D, d), bk = weight({D}, D, d);
    wv = weight({D, D}, D, d), bv = weight({D}, D, d), wo = weight({D, D}, D, d), bo = weight({D}, D, d);
    w1 = weight({F, D}, D, d), b1 = weight({F}, D, d), w2 = weight({D, F}, F, d), b2 = weight({D}, F, d);
  }
  Tensor run() const {
    return bench::transformer(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2);
  }
};

double max_difference(const Tensor& a, const Tensor& b) {
  const Tensor d = a.to(graph::kFloat64) - b.to(graph::kFloat64);
  return graph::amax(graph::abs(d)).item<double>();
}

template <class W>
void add_rows(const std::string& name, graph::DType d) {
  static std::vector<W*> keep;
  W* w = new W(d);  // one per row family, alive for the run
  keep.push_back(w);
  graph::set_mode(graph::Mode::Eager);
  const Tensor eager = w->run();
  graph::set_mode(graph::Mode::Static);
  const double diff = max_difference(w->run(), eager);
  if (!(diff < (d == graph::kFloat64 ? 1e-9 : 1e-3))) {
    std::fprintf(stderr, "bench_dtypes: %s in %s: static differs from eager by %g\n", name.c_str(),
                 std::string(graph::dtype_name(d)).c_str(), diff);
    std::exit(1);
  }
  const std::string dt = d == graph::kFloat64 ? "f64" : "f32";
  for (graph::Mode m : {graph::Mode::Static, graph::Mode::Eager}) {
    const std::string mode = m == graph::Mode::Eager ? "eager" : d == graph::kFloat64 ? CXXGRAPH_F64_STATIC : "static";
    benchmark::RegisterBenchmark((name + "_" + dt + "/" + mode).c_str(), [w, m](benchmark::State& s) {
      graph::set_mode(m);
      for (auto _ : s) benchmark::DoNotOptimize(w->run());
      graph::set_mode(graph::Mode::Static);
    })->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  graph::manual_seed(0);
  for (graph::DType d : {graph::kFloat32, graph::kFloat64}) {
    add_rows<Mlp>("mlp_infer_b64", d);
    add_rows<Block>("transformer_b8_s64_d256", d);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
