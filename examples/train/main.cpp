// Trains an MLP, a CNN and a small attention + LSTM model on synthetic data
// from the initial weights PyTorch wrote (tests/reference/*.bin), and prints
// our loss per step beside PyTorch's (tests/reference/train_losses.txt,
// written by tests/reference/train_reference.py). Exits non-zero when a
// step's loss differs from PyTorch's by more than 1e-4 relative.
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

// float32 throughout, with another summation order than PyTorch's in matmul,
// conv and the reductions: the curves agree to rounding (as tests/nn_test.cpp
// checks).
constexpr double kTolerance = 1e-4;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : CXXGRAPH_REFERENCE_DIR;
  bool ok = true;
  try {
    auto ours = train_example::run_all(dir, /*print=*/false);
    auto torch = train_example::read_reference(dir + "/train_losses.txt");
    if (ours.size() != torch.size()) throw graph::Error("the reference has other models than ours");
    for (auto& [model, losses] : ours) {
      const auto& ref = torch.at(model);
      double worst = 0;
      std::printf("%s\n  step        cxxgraph         PyTorch   rel. diff\n", model.c_str());
      for (size_t i = 0; i < losses.size(); ++i) {
        const double rel = std::abs(losses[i] - ref.at(i)) / std::max(std::abs(ref.at(i)), 1e-12);
        worst = std::max(worst, rel);
        std::printf("  %4zu  %14.9f  %14.9f  %10.2e\n", i, losses[i], ref.at(i), rel);
      }
      const bool close = worst <= kTolerance;
      ok = ok && close;
      std::printf("  largest relative difference: %.2e (tolerance %.0e): %s\n\n", worst, kTolerance,
                  close ? "OK" : "TOO LARGE");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_train: %s\n", e.what());
    return 1;
  }
  return ok ? 0 : 1;
}
