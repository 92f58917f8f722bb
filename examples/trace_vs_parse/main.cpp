// Trace vs parse, on the seed's RNN step (examples/rnn/rnn.cpp):
//
//   - graph::trace runs rnn_step once and records the ops it ran. The `if`
//     on tensor values took one side, so the trace holds that side only, and
//     graph::trace warns, naming the line of the `if`.
//   - The plugin parsed rnn_step's source at build time: its graph has an If
//     node with both branches and decides at run time.
//
// On inputs that take the other side, the trace gives the frozen (wrong)
// result and the compiled static function gives eager's.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <graph/interpreter.h>
#include <graph/trace.h>

#include "../common/compare.h"
#include "../common/show.h"
#include "../rnn/rnn.h"

using examples::max_abs_diff;
using examples::pattern;
using graph::Tensor;

namespace {

// The inputs of examples/rnn: w_x shifted by -0.9 makes sum(h2h) > sum(w_x)
// (the branch adds i2h); by +0.9 the branch is skipped.
std::vector<Tensor> rnn_inputs(float shift) {
  const int64_t H = 6, I = 4;
  return {pattern({1, I}, 0.5f, -0.3f), pattern({1, H}, 0.3f, 0.1f), pattern({H, H}, 0.21f, -0.4f),
          pattern({H, I}, 0.05f, shift)};
}

template <class F>
double microseconds(F f, int reps = 2000) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / reps;
}

}  // namespace

int main() {
  const std::vector<Tensor> taken = rnn_inputs(-0.9f), skipped = rnn_inputs(0.9f);
  auto step = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rnn_step(in[0], in[1], in[2], in[3])}; };

  std::printf("1. Tracing rnn_step on inputs that take the branch (sum(h2h) > sum(w_x)):\n\n");
  // While tracing, rnn_step runs its eager body (the tracer sees eager ops).
  graph::TraceOptions options;
  options.name = "rnn_step_traced";
  options.input_names = {"x", "prev_h", "W_h", "w_x"};
  std::fflush(stdout);  // the warning goes to stderr
  graph::TracedGraph traced = graph::trace(step, taken, options);  // prints the warning
  std::printf("\nThe trace (only the taken path; no If node):\n\n%s\n", graph::ir::print(*traced.graph).c_str());

  std::printf("2. Running on inputs that SKIP the branch (sum(h2h) <= sum(w_x)):\n\n");
  graph::set_mode(graph::Mode::Eager);
  const Tensor eager = step(skipped)[0];
  const Tensor from_trace = traced.run(skipped)[0];
  graph::set_mode(graph::Mode::Static);
  const Tensor from_static = step(skipped)[0];
  std::printf("  eager:              %s\n", eager.t().to_string().c_str());
  std::printf("  trace:              %s\n", from_trace.t().to_string().c_str());
  std::printf("  [[graph::static]]:  %s\n\n", from_static.t().to_string().c_str());
  const float trace_skipped = max_abs_diff(eager, from_trace), static_skipped = max_abs_diff(eager, from_static);
  std::printf("  max |eager - trace|  = %g   (the trace froze the branch: wrong)\n", trace_skipped);
  std::printf("  max |eager - static| = %g   (the parsed graph kept both branches)\n\n", static_skipped);

  std::printf("3. On the traced side all three agree:\n\n");
  graph::set_mode(graph::Mode::Eager);
  const Tensor eager_taken = step(taken)[0];
  graph::set_mode(graph::Mode::Static);
  const uint64_t runs_before = examples::compiled_graph_runs();
  const float static_taken = max_abs_diff(eager_taken, step(taken)[0]);
  const bool graph_ran = examples::compiled_graph_runs() > runs_before;
  std::printf("  max |eager - trace|  = %g\n", max_abs_diff(eager_taken, traced.run(taken)[0]));
  std::printf("  max |eager - static| = %g\n\n", static_taken);

  std::printf("Timings per call (inputs that skip the branch):\n");
  graph::set_mode(graph::Mode::Eager);
  std::printf("  eager body:         %8.2f us\n", microseconds([&] { step(skipped); }));
  std::printf("  trace, interpreted: %8.2f us\n", microseconds([&] { traced.run(skipped); }));
  graph::set_mode(graph::Mode::Static);
  std::printf("  [[graph::static]]:  %8.2f us\n\n", microseconds([&] { step(skipped); }));

  for (const auto* g : graph::detail::registered_graphs())
    std::printf("compiled graph %s ran %llu times\n", g->source, static_cast<unsigned long long>(g->calls.load()));
  std::printf("generated sources (the parsed graph, rnn_rnn/rnn_step.graph): %s\n", CXXGRAPH_GENERATED_DIR);
  // What the example shows, checked: the parsed graph agrees with eager on
  // both sides, the trace is off on the side it did not see, and tracing
  // warned once.
  const float static_diff = std::max(static_skipped, static_taken);
  const bool close = static_diff <= 1e-6f, trace_wrong = trace_skipped > 1e-3f, warned = traced.warnings.size() == 1;
  std::printf("max |eager - static| on both sides = %g (tolerance 1e-6): %s\n", static_diff,
              close ? "OK" : "TOO LARGE");
  if (!trace_wrong) std::printf("THE TRACE DID NOT FREEZE THE BRANCH: max |eager - trace| = %g\n", trace_skipped);
  if (!warned) std::printf("TRACING WARNED %zu TIMES, NOT ONCE\n", traced.warnings.size());
  if (!graph_ran)
    std::printf("NO COMPILED GRAPH RAN: rnn_step ran its eager body (rerun with GRAPH_EXPLAIN=1)\n");
  return close && trace_wrong && warned && graph_ran ? 0 : 1;
}
