// Trains an MLP, a CNN and a small attention + LSTM model on synthetic data
// from the initial weights PyTorch wrote (tests/reference/*.bin), and prints
// our loss per step beside PyTorch's (tests/reference/train_losses.txt,
// written by tests/reference/train_reference.py).
//
//   example_train [reference-dir]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>

#include "train.h"

#ifndef CXXGRAPH_REFERENCE_DIR
#define CXXGRAPH_REFERENCE_DIR "tests/reference"
#endif

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : CXXGRAPH_REFERENCE_DIR;
  try {
    auto ours = train_example::run_all(dir, /*print=*/false);
    auto torch = train_example::read_reference(dir + "/train_losses.txt");
    for (auto& [model, losses] : ours) {
      const auto& ref = torch.at(model);
      double worst = 0;
      std::printf("%s\n  step        cxxgraph         PyTorch   rel. diff\n", model.c_str());
      for (size_t i = 0; i < losses.size(); ++i) {
        const double rel = std::abs(losses[i] - ref.at(i)) / std::max(std::abs(ref.at(i)), 1e-12);
        worst = std::max(worst, rel);
        std::printf("  %4zu  %14.9f  %14.9f  %10.2e\n", i, losses[i], ref.at(i), rel);
      }
      std::printf("  largest relative difference: %.2e\n\n", worst);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
