// bench_suite's driver: registration helpers, the shared inputs, and main.
//   bench_suite [Google Benchmark flags]   time every workload
//   GRAPH_EXPLAIN=1 bench_suite --check    as JSON: why each static column that did not
//                                          run its graph ran eagerly, and the peak memory
//                                          of eager vs static
//   bench_suite --train-digest             losses and a parameter hash of a few MLP training
//                                          steps (SGD, momentum, Adam; eager and static forward)
// GRAPH_EXPLAIN makes every eager-mode call of an annotated function print a
// line, which would distort the timings: only --check runs with it.
#include "suite.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <graph/memory.h>
#include <graph/static.h>

#include "models.h"

namespace bench {
using graph::Tensor;

int threads() {
  static const int n = [] {
    const char* e = std::getenv("CXXGRAPH_BENCH_THREADS");
    return e && std::atoi(e) > 0 ? std::atoi(e) : 1;
  }();
  return n;
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& body) {
  const int t = threads();
  if (t == 1) return body(0, n);
  std::vector<std::thread> workers;
  const int64_t chunk = (n + t - 1) / t;
  for (int i = 1; i < t; ++i)
    workers.emplace_back(body, std::min(n, i * chunk), std::min(n, (i + 1) * chunk));
  body(0, std::min(n, chunk));
  for (auto& w : workers) w.join();
}

namespace {

uint64_t total_graph_calls() {
  uint64_t n = 0;
  for (const auto* g : graph::detail::registered_graphs()) n += g->calls.load();
  return n;
}

// Runs f with stderr redirected to a file and returns what it wrote (the
// GRAPH_EXPLAIN messages of a call that ran eagerly).
std::string capture_stderr(const std::function<void()>& f) {
  std::fflush(stderr);
  std::FILE* tmp = std::tmpfile();
  const int saved = dup(2);
  dup2(fileno(tmp), 2);
  std::string error;
  try {
    f();
  } catch (const std::exception& e) {
    error = std::string("error: ") + e.what();
  }
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text(static_cast<size_t>(std::ftell(tmp)), '\0');
  std::rewind(tmp);
  text.resize(std::fread(text.data(), 1, text.size(), tmp));
  std::fclose(tmp);
  if (!error.empty()) return error;
  // "graph: <source> ran eagerly: <why>\n" -> "<why>"
  const size_t colon = text.find("ran eagerly: ");
  if (colon != std::string::npos) text = text.substr(colon + 13);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.substr(0, text.find('\n'));
}

// Why a static call did not run its compiled graph, or "" when it did.
std::string static_probe(const std::function<void()>& call) {
  graph::set_mode(graph::Mode::Static);
  const uint64_t before = total_graph_calls();
  std::string why = capture_stderr(call);
  if (total_graph_calls() > before) return "";
  if (why.empty() && graph::detail::explain_enabled())
    why = "the plugin did not lower this function (see its -Wgraph-fallback warning in the build)";
  if (why.empty()) why = "the compiled graph did not run (bench_suite --check says why)";
  return why;
}

// Every static column's call, for --check.
std::vector<std::pair<std::string, std::function<std::string()>>>& static_checks() {
  static std::vector<std::pair<std::string, std::function<std::string()>>> checks;
  return checks;
}

void timed(benchmark::State& state, const std::function<void()>& call) {
  for (int i = 0; i < 2; ++i) call();  // warm-up: caches, allocator, first-call setup
  for (auto _ : state) call();
}

}  // namespace

void add(const std::string& workload, const std::string& library, std::function<void()> call) {
  benchmark::RegisterBenchmark((workload + "/" + library).c_str(),
                               [call](benchmark::State& state) { timed(state, call); })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

void add_na(const std::string& workload, const std::string& library, const std::string& reason) {
  benchmark::RegisterBenchmark((workload + "/" + library).c_str(),
                               [reason](benchmark::State& state) { state.SkipWithError(("n/a: " + reason).c_str()); })
      ->Iterations(1)
      ->Repetitions(1);
}

void add_cxxgraph(const std::string& workload, std::function<void()> call, std::function<std::string()> check) {
  static_checks().emplace_back(workload, [call, check] {
    std::string why = static_probe(call);
    return why.empty() && check ? check() : why;
  });
  add(workload, "cxxgraph_eager", [call] {
    graph::set_mode(graph::Mode::Eager);
    call();
  });
  benchmark::RegisterBenchmark((workload + "/cxxgraph_static").c_str(),
                               [call, check](benchmark::State& state) {
                                 std::string why = static_probe(call);
                                 if (why.empty() && check) why = check();
                                 if (!why.empty()) return state.SkipWithError(("n/a: " + why).c_str());
                                 graph::set_mode(graph::Mode::Static);
                                 timed(state, call);
                               })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

// ---- inputs ----------------------------------------------------------------

namespace {
// randn scaled by 1/sqrt(fan_in), as PyTorch's default initializations roughly do.
Tensor weight(const graph::Shape& shape, int64_t fan_in) { return graph::randn(shape) * (1.0 / std::sqrt(fan_in)); }
}  // namespace

const Big& big() {
  static const Big b{graph::rand({16 << 20}), graph::rand({16 << 20})};
  return b;
}
const Small& small() {
  static const Small s{graph::rand({64}), graph::rand({64}), graph::rand({8, 8})};
  return s;
}
const Lstm& lstm_inputs() {
  constexpr int H = 64;
  static const Lstm l{graph::randn({1, H}), graph::randn({1, H}), graph::randn({1, H}),
                      weight({H, 4 * H}, H), weight({H, 4 * H}, H), weight({4 * H}, H)};
  return l;
}
const Gemm& gemm(int n) {
  static const Gemm g256{graph::rand({256, 256}), graph::rand({256, 256})};
  static const Gemm g1024{graph::rand({1024, 1024}), graph::rand({1024, 1024})};
  return n == 256 ? g256 : g1024;
}
const Mlp& mlp_inputs() {
  static const Mlp m{graph::rand({64, 784}),
                     (graph::rand({64}) * 10).to(graph::kInt64),
                     weight({512, 784}, 784), weight({512}, 784),
                     weight({512, 512}, 512), weight({512}, 512),
                     weight({10, 512}, 512), weight({10}, 512)};
  return m;
}
const Transformer& transformer_inputs() {
  constexpr int D = 256, F = 1024;
  static const Transformer t{graph::randn({8, 64, D}), graph::ones({D}), graph::zeros({D}),
                             weight({D, D}, D), weight({D}, D), weight({D, D}, D), weight({D}, D),
                             weight({D, D}, D), weight({D}, D), weight({D, D}, D), weight({D}, D),
                             graph::ones({D}), graph::zeros({D}),
                             weight({F, D}, D), weight({F}, D), weight({D, F}, F), weight({D}, F)};
  return t;
}
const Lenet& lenet_inputs() {
  static const Lenet l{graph::rand({64, 1, 28, 28}),
                       weight({6, 1, 5, 5}, 25), weight({6}, 25),
                       weight({16, 6, 5, 5}, 150), weight({16}, 150),
                       weight({120, 256}, 256), weight({120}, 256),
                       weight({84, 120}, 120), weight({84}, 120),
                       weight({10, 84}, 84), weight({10}, 84)};
  return l;
}

// ---- --check: static columns and peak memory ------------------------------------

namespace {

// Bytes the allocator had in use at the peak of one call, above what was in
// use before it (the inputs and weights), output included.
uint64_t peak_bytes(graph::Mode mode, const std::function<Tensor()>& call) {
  graph::set_mode(mode);
  call();  // warm-up
  const uint64_t base = graph::memory::stats().bytes_in_use;
  graph::memory::reset_peak();
  Tensor out = call();
  return graph::memory::stats().peak_bytes_in_use - base;
}

// JSON-escaped enough for the messages above (quotes and backslashes).
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') q += '\\';
    q += ch == '\n' ? ' ' : ch;
  }
  return q + "\"";
}

int print_check() {
  std::printf("{\"static\": {");
  const char* sep = "";
  for (const auto& [workload, check] : static_checks()) {
    std::printf("%s\n  %s: %s", sep, quoted(workload).c_str(), quoted(check()).c_str());
    sep = ",";
  }
  struct Case { const char* name; std::function<Tensor()> call; };
  const Case cases[] = {
      {"MLP 784-512-512-10, batch 64", [] {
         const Mlp& m = mlp_inputs();
         return mlp(m.x, m.w1, m.b1, m.w2, m.b2, m.w3, m.b3);
       }},
      {"Transformer block b8 s64 d256", [] {
         const Transformer& t = transformer_inputs();
         return transformer(t.x, t.ln1_w, t.ln1_b, t.wq, t.bq, t.wk, t.bk, t.wv, t.bv, t.wo, t.bo, t.ln2_w,
                            t.ln2_b, t.w1, t.b1, t.w2, t.b2);
       }},
  };
  std::printf("},\n\"memory\": {");
  sep = "";
  for (const Case& c : cases) {
    const uint64_t eager = peak_bytes(graph::Mode::Eager, c.call);
    const std::string why = static_probe([&] { c.call(); });
    std::printf("%s\n  \"%s\": {\"cxxgraph_eager\": %llu, ", sep, c.name, static_cast<unsigned long long>(eager));
    if (why.empty())
      std::printf("\"cxxgraph_static\": %llu}",
                  static_cast<unsigned long long>(peak_bytes(graph::Mode::Static, c.call)));
    else
      std::printf("\"cxxgraph_static\": null, \"reason\": %s}", quoted(why).c_str());
    sep = ",";
  }
  std::printf("\n}}\n");
  return 0;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  graph::manual_seed(0);
  bench::register_cxxgraph();
  bench::register_model_suite();
  if (argc > 1 && std::strcmp(argv[1], "--check") == 0) return bench::print_check();
  if (argc > 1 && std::strcmp(argv[1], "--train-digest") == 0) return bench::print_train_digest();
  bench::register_references();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
