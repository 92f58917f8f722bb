// Runs the seed RNN step eagerly and as its compiled graph, with inputs that
// take each side of its data-dependent branch; prints both results and the
// time per call.
#include <cstdio>

#include "../common/compare.h"
#include "../common/show.h"
#include "rnn.h"

using examples::max_abs_diff;
using examples::pattern;
using graph::Tensor;

int main() {
  const int64_t H = 6, I = 4;
  Tensor W_h = pattern({H, H}, 0.21f, -0.4f);
  Tensor x = pattern({1, I}, 0.5f, -0.3f);
  Tensor prev_h = pattern({1, H}, 0.3f, 0.1f);

  std::printf("cxxgraph seed RNN step: h = tanh(W_h @ prev_h^T [+ w_x @ x^T if sum(W_h @ prev_h^T) > sum(w_x)])\n");
  struct Case { const char* name; float shift; };
  bool graph_ran = true;
  for (Case c : {Case{"sum(h2h) > sum(w_x): the branch adds i2h", -0.9f},
                 Case{"sum(h2h) <= sum(w_x): the branch is skipped", 0.9f}}) {
    Tensor w_x = pattern({H, I}, 0.05f, c.shift);
    graph::set_mode(graph::Mode::Static);
    const uint64_t runs_before = examples::compiled_graph_runs();
    Tensor fused = rnn_step(x, prev_h, W_h, w_x);
    graph_ran = graph_ran && examples::compiled_graph_runs() > runs_before;
    graph::set_mode(graph::Mode::Interpret);  // the same graph, run by the interpreter
    Tensor interpreted = rnn_step(x, prev_h, W_h, w_x);
    graph::set_mode(graph::Mode::Eager);
    Tensor eager = rnn_step(x, prev_h, W_h, w_x);
    std::printf("\n%s\n  eager:  %s\n  static: %s\n  max |eager - static| = %g\n"
                "  max |eager - interpreted graph| = %g\n",
                c.name, eager.t().to_string().c_str(), fused.t().to_string().c_str(), max_abs_diff(eager, fused),
                max_abs_diff(eager, interpreted));
    examples::print_timings([&] { return rnn_step(x, prev_h, W_h, w_x); }, 200);
  }
  std::printf("\n");
  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  if (!graph_ran)
    std::printf("NO COMPILED GRAPH RAN: a static call ran the eager body (rerun with GRAPH_EXPLAIN=1)\n");
  return graph_ran ? 0 : 1;
}
