// Eager transcendentals and the losses built on them, on a [2048, 1024]
// float32 tensor: median of 15 calls, in ms. bench/eager_math_torch.py times
// the same calls with PyTorch; run both with one thread:
//   ninja -C build bench_eager_math && GRAPH_NUM_THREADS=1 build/bench/bench_eager_math
//   python bench/eager_math_torch.py   (a venv with the PyTorch wheel)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "graph/graph.h"

namespace {

double median_ms(const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
  }
  std::nth_element(t.begin(), t.begin() + 7, t.end());
  return t[7];
}

}  // namespace

int main() {
  using namespace graph;
  const Tensor x = randn({2048, 1024}) * 3.0;
  const Tensor p = rand({2048, 1024}) + 0.01;
  const Tensor y = rand({2048, 1024});
  std::printf("log         %8.2f ms\n", median_ms([&] { Tensor r = log(p); }));
  std::printf("log1p       %8.2f ms\n", median_ms([&] { Tensor r = log1p(p); }));
  std::printf("softplus    %8.2f ms\n", median_ms([&] { Tensor r = softplus(x); }));
  std::printf("bce_logits  %8.2f ms\n", median_ms([&] { Tensor r = binary_cross_entropy_with_logits(x, y); }));
  std::printf("bce         %8.2f ms\n", median_ms([&] { Tensor r = binary_cross_entropy(sigmoid(x), y); }));
}
