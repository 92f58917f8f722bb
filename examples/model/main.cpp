// Runs the seed model eagerly and as its compiled graph, for both branches,
// and prints the results side by side and the time per call. The call
// `model(X, flag)` is an ordinary call from another translation unit: the
// prologue the generator put into model's body sends it to the compiled graph.
#include <cstdio>

#include "../common/compare.h"
#include "../common/show.h"
#include "model.h"

using examples::max_abs_diff;
using examples::pattern;
using graph::Tensor;

int main() {
  W1 = pattern({4, 3}, 0.37f, -0.5f);
  W2 = pattern({4, 3}, -0.23f, 0.8f);
  b = pattern({4, 1}, 0.9f, -1.2f);
  Tensor X = pattern({3, 5}, 0.11f, -0.7f);

  std::printf("cxxgraph seed model: relu((flag > 0 ? W1 : W2) @ X + b)\n");
  bool graph_ran = true;
  for (int flag : {1, -1}) {
    graph::set_mode(graph::Mode::Static);
    const uint64_t runs_before = examples::compiled_graph_runs();
    Tensor fused = model(X, flag);
    graph_ran = graph_ran && examples::compiled_graph_runs() > runs_before;
    graph::set_mode(graph::Mode::Interpret);  // the same graph, run by the interpreter
    Tensor interpreted = model(X, flag);
    graph::set_mode(graph::Mode::Eager);
    Tensor eager = model(X, flag);
    std::printf("\nflag = %d\n  eager:  %s\n  static: %s\n  max |eager - static| = %g\n"
                "  max |eager - interpreted graph| = %g\n",
                flag, eager.to_string().c_str(), fused.to_string().c_str(), max_abs_diff(eager, fused),
                max_abs_diff(eager, interpreted));
    examples::print_timings([&] { return model(X, flag); }, 200);
  }
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source,
                static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  if (!graph_ran)
    std::printf("NO COMPILED GRAPH RAN: a static call ran the eager body (rerun with GRAPH_EXPLAIN=1)\n");
  return graph_ran ? 0 : 1;
}
