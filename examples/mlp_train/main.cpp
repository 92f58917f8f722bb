// Trains a classifier whose forward is [[graph::static]] (mlp.cpp) on three
// interleaved spirals, twice from the same initial weights: all eager
// (graph::Mode::Eager, as GRAPH_MODE=eager) and with the compiled forward.
// In the static run each forward is one node on the eager tape; backward()
// runs the backward graph generated at build time for it, then the eager
// cross_entropy's. Prints both loss curves step by step, their largest
// difference, the median time per training step, and where the generated
// sources are.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include <graph/graph.h>
#include <graph/optim.h>

#include "../common/compare.h"
#include "mlp.h"

using namespace graph;

namespace {

constexpr int kSteps = 30;
constexpr int64_t kPerClass = 100;
// Both runs compute in float32; the fused kernels sum in another order, and
// the small differences grow over the steps. Per step: |eager - static| must
// stay within kTolerance * (1 + |eager|).
constexpr double kTolerance = 1e-4;

// Points (x, y) on three spiral arms, one per class, with a little Gaussian
// jitter; labels are int64 class indices.
std::pair<Tensor, Tensor> spirals() {
  std::vector<float> points, labels;
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t i = 0; i < kPerClass; ++i) {
      const double r = static_cast<double>(i) / kPerClass, angle = 4 * r + k * 2 * std::numbers::pi / 3;
      points.push_back(static_cast<float>(r * std::cos(angle)));
      points.push_back(static_cast<float>(r * std::sin(angle)));
      labels.push_back(static_cast<float>(k));
    }
  manual_seed(0);
  const Tensor x = from_vector(points, {3 * kPerClass, 2}) + randn({3 * kPerClass, 2}) * 0.03f;
  return {x, from_vector(labels, {3 * kPerClass}).to(kInt64)};
}

struct Run {
  std::vector<double> losses;  // before each step
  double median_step_ms = 0;
  uint64_t graph_runs = 0;  // compiled forwards (and so backwards) that ran
  double accuracy = 0;      // after the last step
};

// Full-batch Adam from the weights manual_seed(1) gives, the forward run as
// `mode` says.
Run train(Mode mode, const Tensor& x, const Tensor& labels) {
  manual_seed(1);
  Mlp net;
  optim::Adam opt(net->parameters(), optim::AdamOptions(0.02));
  set_mode(mode);
  Run run;
  std::vector<double> step_ms;
  const uint64_t before = examples::compiled_graph_runs();
  for (int s = 0; s < kSteps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    opt.zero_grad();
    Tensor loss = cross_entropy(net(x), labels);
    loss.backward();
    opt.step();
    run.losses.push_back(loss.item<double>());
    step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  run.graph_runs = examples::compiled_graph_runs() - before;
  std::nth_element(step_ms.begin(), step_ms.begin() + kSteps / 2, step_ms.end());
  run.median_step_ms = step_ms[kSteps / 2];
  NoGradGuard no_grad;
  run.accuracy = (net(x).argmax(1) == labels).to(kFloat32).mean().item<double>();
  set_mode(Mode::Static);
  return run;
}

}  // namespace

int main() {
  const auto [x, labels] = spirals();
  const Run eager = train(Mode::Eager, x, labels);
  const Run stat = train(Mode::Static, x, labels);

  std::printf("cxxgraph MLP training: 2 -> 64 -> 64 -> 3 (relu, tanh), forward [[graph::static]], "
              "cross_entropy and Adam eager; 300 points on three spirals, full batch\n\n");
  std::printf("%5s %14s %14s %12s\n", "step", "eager loss", "static loss", "|difference|");
  double max_diff = 0, worst_ratio = 0;
  for (int s = 0; s < kSteps; ++s) {
    const double d = std::fabs(eager.losses[s] - stat.losses[s]);
    max_diff = std::max(max_diff, d);
    worst_ratio = std::max(worst_ratio, d / (kTolerance * (1 + std::fabs(eager.losses[s]))));
    std::printf("%5d %14.8f %14.8f %12.3g\n", s, eager.losses[s], stat.losses[s], d);
  }
  const bool close = worst_ratio <= 1, graph_ran = stat.graph_runs == static_cast<uint64_t>(kSteps),
             learned = stat.losses.back() < 0.8 * stat.losses.front();
  std::printf("\n  max |eager loss - static loss| = %.3g (tolerance %.0e * (1 + |eager|)): %s\n", max_diff,
              kTolerance, close ? "OK" : "TOO LARGE");
  std::printf("  accuracy after %d steps: eager %.3f, static %.3f\n", kSteps, eager.accuracy, stat.accuracy);
  std::printf("  time per training step (median of %d): eager %.3f ms, static %.3f ms (eager / static = %.2f)\n",
              kSteps, eager.median_step_ms, stat.median_step_ms, eager.median_step_ms / stat.median_step_ms);
  std::printf("  the compiled forward ran %llu times in the static run (one tape node each)\n",
              static_cast<unsigned long long>(stat.graph_runs));
  if (!graph_ran)
    std::printf("  NO COMPILED GRAPH RAN in %llu of %d static steps: they ran the eager body (rerun with "
                "GRAPH_EXPLAIN=1)\n",
                static_cast<unsigned long long>(kSteps - stat.graph_runs), kSteps);
  if (!learned) std::printf("  THE LOSS DID NOT FALL by 20%% in %d steps\n", kSteps);
  std::printf("\ngenerated sources: %s\n", CXXGRAPH_GENERATED_DIR);
  return close && graph_ran && learned ? 0 : 1;
}
