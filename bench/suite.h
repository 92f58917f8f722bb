#pragma once
// bench_suite: every workload of tools/bench.sh measured in C++ with Google
// Benchmark, as "<workload>/<library>". Each library's file registers its
// columns; a column that cannot run a workload registers its reason instead
// (the report prints "n/a" with it).
#include <cstdint>
#include <functional>
#include <string>

#include <graph/graph.h>

namespace bench {

// The thread count every library is given (CXXGRAPH_BENCH_THREADS, default 1).
int threads();
// body(begin, end) over [0, n) split across threads() threads.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body);

// Times `call` per invocation as "<workload>/<library>".
void add(const std::string& workload, const std::string& library, std::function<void()> call);
// A column that does not apply or cannot run yet, with the reason.
void add_na(const std::string& workload, const std::string& library, const std::string& reason);
// The cxxgraph columns: `call` runs once under graph::Mode::Eager and once
// under Mode::Static. The static column is timed only if its first call
// really ran a compiled graph (the registry's call counts); otherwise its
// reason is what GRAPH_EXPLAIN printed, or that the plugin did not lower the
// function. `check` may refuse a result that ran (returns a reason).
void add_cxxgraph(const std::string& workload, std::function<void()> call,
                  std::function<std::string()> check = nullptr);

// The inputs, made once and shared by the cxxgraph and reference columns
// (the reference loops read the same memory through Eigen::Map; LibTorch
// runs in its own program, bench_libtorch, on inputs of the same shapes).
struct Big { graph::Tensor x, y; };  // 16M float32 each
struct Small { graph::Tensor a, b, m; };  // [64], [64], [8, 8]
struct Lstm { graph::Tensor x, h, c, wx, wh, b; static constexpr int steps = 100; };
struct Gemm { graph::Tensor a, b; };
struct Mlp { graph::Tensor x, labels, w1, b1, w2, b2, w3, b3; };
struct Transformer { graph::Tensor x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2; };
struct Lenet { graph::Tensor x, c1w, c1b, c2w, c2b, f1w, f1b, f2w, f2b, f3w, f3b; };
const Big& big();
const Small& small();
const Lstm& lstm_inputs();
const Gemm& gemm(int n);
const Mlp& mlp_inputs();
const Transformer& transformer_inputs();
const Lenet& lenet_inputs();

void register_cxxgraph();
void register_model_suite();  // issue 19's models and per-op rows (model_suite.cpp)
int print_train_digest();    // bench_suite --train-digest (workloads_cxxgraph.cpp)
void register_references();  // hand-written loops, Eigen, cblas_sgemm

}  // namespace bench
