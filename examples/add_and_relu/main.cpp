// Mixed execution, as MindSpore's ms_function example: an eager model whose
// forward calls the static add_and_relu (add_and_relu.cpp). Trained with SGD,
// the static call is one node on the eager tape and its backward is the
// backward graph generated at build time. The same model runs twice from the
// same weights: once calling the graph, once eagerly (GRAPH_MODE=eager for
// that call), and the losses are printed side by side.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <graph/graph.h>
#include <graph/optim.h>

#include "add_and_relu.h"

using namespace graph;

struct NetImpl : nn::Module {
  NetImpl() : fc1(register_module("fc1", nn::Linear(8, 16))), fc2(register_module("fc2", nn::Linear(16, 1))) {
    shift = register_parameter("shift", zeros({16}));
  }
  Tensor forward(const Tensor& x) { return fc2(add_and_relu(fc1(x), shift)); }  // eager, static, eager
  nn::Linear fc1, fc2;
  Tensor shift;
};
GRAPH_MODULE(Net);

std::vector<double> train(Mode mode, const Tensor& x, const Tensor& y, int steps, double* ms) {
  manual_seed(1);  // the same initial weights for both runs
  Net net;
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.05));
  set_mode(mode);
  std::vector<double> losses;
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = mse_loss(net(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  set_mode(Mode::Static);
  return losses;
}

int main() {
  manual_seed(0);
  const Tensor x = randn({64, 8});
  const Tensor y = tanh(x.sum(1, true));
  const int steps = 40;
  double ms_static = 0, ms_eager = 0;
  const uint64_t before = detail::graph_calls("_Z12add_and_reluN5graph6TensorES0_");
  std::vector<double> stat = train(Mode::Static, x, y, steps, &ms_static);
  const uint64_t graph_runs = detail::graph_calls("_Z12add_and_reluN5graph6TensorES0_") - before;
  std::vector<double> eager = train(Mode::Eager, x, y, steps, &ms_eager);

  std::printf("an eager model calling the static add_and_relu(x, y), trained with SGD\n");
  std::printf("%5s %14s %14s\n", "step", "eager loss", "static loss");
  double worst = 0;
  for (int s = 0; s < steps; ++s) {
    worst = std::max(worst, std::fabs(stat[s] - eager[s]));
    if (s % 5 == 0 || s == steps - 1) std::printf("%5d %14.8f %14.8f\n", s, eager[s], stat[s]);
  }
  const bool close = worst < 1e-5, graph_ran = graph_runs == static_cast<uint64_t>(steps),
             learned = stat.back() < stat.front();
  std::printf("max |eager loss - static loss| = %g (tolerance 1e-5): %s\n", worst, close ? "OK" : "TOO LARGE");
  std::printf("the compiled graph ran %llu times (one tape node each)\n", static_cast<unsigned long long>(graph_runs));
  std::printf("time per step (mean of %d): eager %.3f ms, static %.3f ms\n", steps, ms_eager / steps,
              ms_static / steps);
  std::printf("generated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  if (!graph_ran)
    std::printf("NO COMPILED GRAPH RAN in %d of %d static steps (rerun with GRAPH_EXPLAIN=1)\n",
                steps - static_cast<int>(std::min<uint64_t>(graph_runs, steps)), steps);
  if (!learned) std::printf("THE LOSS DID NOT FALL\n");
  return close && graph_ran && learned ? 0 : 1;
}
