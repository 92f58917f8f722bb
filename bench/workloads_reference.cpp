// The reference column: what the hardware allows, written by hand. Copy and
// triad loops (the memory bandwidth limit), the 8-op chain as one Eigen
// expression (one vectorized pass, as a person would fuse it), and
// the float GEMM library the runtime calls (oneDNN's dnnl_sgemm, see
// runtime/src/blas.h) called directly. Built with -O3; split over threads() threads.
#include <benchmark/benchmark.h>
#include <dnnl.h>

#include <string>
#include <vector>

#include <Eigen/Core>

#include "suite.h"

namespace bench {

namespace {

float* output_16M() {
  static std::vector<float> out(big().x.numel());
  return out.data();
}

void copy_loop() {
  const float* __restrict x = big().x.data_ptr<float>();
  float* __restrict z = output_16M();
  parallel_for(big().x.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) z[i] = x[i];
  });
  benchmark::ClobberMemory();
}

void triad_loop() {
  const float* __restrict x = big().x.data_ptr<float>();
  const float* __restrict y = big().y.data_ptr<float>();
  float* __restrict z = output_16M();
  parallel_for(big().x.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) z[i] = x[i] + y[i] * 1.5f;
  });
  benchmark::ClobberMemory();
}

// models.cpp's chain8, fused by hand: -sigmoid(exp(tanh(relu((x + y) * 0.5) - y))).
void chain8_eigen() {
  using Array = Eigen::Map<Eigen::ArrayXf>;
  using ConstArray = Eigen::Map<const Eigen::ArrayXf>;
  parallel_for(big().x.numel(), [&](int64_t begin, int64_t end) {
    const int64_t n = end - begin;
    ConstArray x(big().x.data_ptr<float>() + begin, n), y(big().y.data_ptr<float>() + begin, n);
    Array z(output_16M() + begin, n);
    auto t = (((x + y) * 0.5f).max(0.0f) - y).tanh().exp();
    z = -(1.0f / (1.0f + (-t).exp()));
  });
  benchmark::ClobberMemory();
}

void sgemm_direct(int n) {
  static std::vector<float> c(1024 * 1024);
  dnnl_sgemm('N', 'N', n, n, n, 1.0f, gemm(n).a.data_ptr<float>(), n, gemm(n).b.data_ptr<float>(), n, 0.0f,
             c.data(), n);
  benchmark::ClobberMemory();
}

}  // namespace

void register_references() {
  add("copy_16M", "reference", copy_loop);
  add("triad_16M", "reference", triad_loop);
  add("chain8_16M", "reference", chain8_eigen);
  for (int n : {256, 1024}) add("sgemm_" + std::to_string(n), "reference", [n] { sgemm_direct(n); });
  const char* none = "no hand-written version: the reference is LibTorch";
  for (const char* w : {"op64_add", "op64_relu", "op64_tanh", "op64_sum", "op64_softmax", "op_matmul_8x8",
                        "lstm_h64_100steps", "mlp_infer_b64", "mlp_train_step_b64", "transformer_b8_s64_d256",
                        "lenet_b64"})
    add_na(w, "reference", none);
}

}  // namespace bench
