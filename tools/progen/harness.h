#pragma once
// The harness of a generated batch: runs each function as the compiled graph,
// on the interpreter and eagerly, under every CPU instruction-set variant,
// forward and (for float inputs requiring grad) backward, and reports every
// difference beyond the function's tolerance, every error one way but not
// the other, and every call that ran no compiled graph.
#include <cstdint>
#include <tuple>
#include <vector>

#include <graph/graph.h>

namespace progen {

struct InputSpec {
  const char* name;
  std::vector<int64_t> shape;
  bool is_int;     // int64 indices in [0, int_hi); otherwise float32 in [-2, 2]
  int64_t int_hi;
};

using RunFn = std::vector<graph::Tensor> (*)(const std::vector<graph::Tensor>& in, int n, double s);

struct Case {
  const char* name;
  std::vector<InputSpec> inputs;
  std::vector<std::pair<int, double>> hosts;  // the (n, s) variants
  double tol;                                 // forward; gradients 10x
  bool grad_runs_eagerly;                     // a documented refusal of the static backward
  const char* known;                          // a known finding its grad calls hit, or ""
  RunFn run;
};

inline std::vector<graph::Tensor> outputs(graph::Tensor t) { return {std::move(t)}; }
template <class... T>
std::vector<graph::Tensor> outputs(const std::tuple<T...>& t) {
  return std::apply([](const auto&... x) { return std::vector<graph::Tensor>{x...}; }, t);
}

// Cases compiled into the same binary besides the generated ones (the
// findings' regression cases, findings/findings.cpp); run after them.
struct Registrar {
  Registrar(const Case* cases, size_t num_cases);
};

// Runs every case; prints one line per finding and a summary. Returns 0 when
// there was no finding. Arguments: --only NAME.
int run_cases(const Case* cases, size_t num_cases, uint64_t seed, int argc, char** argv);

// The GPU check's run (harness_device.cpp): every case on CUDA tensors, as
// the compiled graph (its CUDA kernels), on the interpreter and eagerly,
// against eager mode on the CPU with the same inputs, forward and backward.
// Without a device it says so and returns 0. Arguments: --only NAME,
// --budget SECONDS (no case starts after that; the summary says how many ran),
// --device cpu (the same runs and checks with the CPU as the device: the
// harness tested without a GPU). run_cases hands --device to it.
int run_device_cases(const Case* cases, size_t num_cases, uint64_t seed, int argc, char** argv);

}  // namespace progen
