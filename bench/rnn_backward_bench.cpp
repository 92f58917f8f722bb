// Eager forward + backward of nn::GRU and nn::LSTM over a sequence (issue 19):
// the modules take each step's input projection with unbind (one backward
// stack, O(T)); "slice" is the previous forward, a slice per step (a
// full-size gradient per step, O(T^2)), kept here to compare. Median of runs.
//   build/bench/bench_rnn_backward [runs]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "graph/graph.h"

using namespace graph;

namespace {

// One layer, the per-step slice of the forward before unbind.
Tensor gru_slices(nn::GRU& m, const Tensor& x) {
  const int64_t H = m->hidden_size;
  Tensor gi = linear(x, m->weight_ih[0], m->bias_ih[0]);
  Tensor h = zeros({x.size(1), H});
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < x.size(0); ++t) {
    h = nn::detail::gru_step(gi.slice(0, t, t + 1).squeeze(0), h, m->weight_hh[0], m->bias_hh[0], H);
    outs.push_back(h);
  }
  return stack(outs, 0);
}

Tensor lstm_slices(nn::LSTM& m, const Tensor& x) {
  const int64_t H = m->hidden_size;
  Tensor gi = linear(x, m->weight_ih[0], m->bias_ih[0]);
  Tensor h = zeros({x.size(1), H}), c = zeros({x.size(1), H});
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < x.size(0); ++t) {
    auto [h2, c2] = nn::detail::lstm_step(gi.slice(0, t, t + 1).squeeze(0), h, c, m->weight_hh[0], m->bias_hh[0], H);
    h = h2;
    c = c2;
    outs.push_back(h);
  }
  return stack(outs, 0);
}

double median_ms(int runs, const std::function<Tensor()>& forward) {
  std::vector<double> ms;
  for (int r = 0; r <= runs; ++r) {  // run 0 warms up
    const auto t0 = std::chrono::steady_clock::now();
    forward().sum().backward();
    const double d = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) ms.push_back(d);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 7;
  const int64_t N = 8, H = 128;
  manual_seed(0);
  nn::GRU gru(nn::GRUOptions(H, H));
  nn::LSTM lstm(nn::LSTMOptions(H, H));
  std::printf("forward + backward, batch %lld, input = hidden = %lld, median of %d runs (ms)\n",
              static_cast<long long>(N), static_cast<long long>(H), runs);
  std::printf("%-6s %6s %10s %10s\n", "module", "T", "slice", "unbind");
  for (int64_t T : {64, 256}) {
    const Tensor x = randn({T, N, H});
    const double g0 = median_ms(runs, [&] { return gru_slices(gru, x); });
    const double g1 = median_ms(runs, [&] { return std::get<0>(gru(x)); });
    std::printf("%-6s %6lld %10.2f %10.2f\n", "GRU", static_cast<long long>(T), g0, g1);
    const double l0 = median_ms(runs, [&] { return lstm_slices(lstm, x); });
    const double l1 = median_ms(runs, [&] { return std::get<0>(lstm(x)); });
    std::printf("%-6s %6lld %10.2f %10.2f\n", "LSTM", static_cast<long long>(T), l0, l1);
  }
}
