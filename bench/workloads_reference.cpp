// The reference column: what the hardware allows, written by hand. Copy and
// triad loops (the memory bandwidth limit), the 8-op chain as one Eigen
// expression (one vectorized pass, as a person would fuse it), and
// the float GEMM library the runtime calls (oneDNN's dnnl_sgemm, see
// runtime/src/blas.h) called directly, and its bf16 matmul primitive on
// operands already in bf16 (the library's bf16 rate, with AMX where the CPU
// has it). Built with -O3; split over threads() threads.
#include <benchmark/benchmark.h>
#include <dnnl.h>

#include <cstdint>
#include <cstring>
#include <dnnl.hpp>

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

// The reductions by hand, one pass each: float lanes (Eigen's vectorized
// sum) per 64K block, blocks added in double, blocks split over the threads.
template <class F>
double blocked_sum(F block_sum) {
  constexpr int64_t kBlock = 1 << 16;
  const int64_t n = big().x.numel(), blocks = n / kBlock;
  static std::vector<double> partial(static_cast<size_t>(blocks));
  parallel_for(blocks, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) partial[b] = block_sum(b * kBlock, kBlock);
  });
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

using ConstArray = Eigen::Map<const Eigen::ArrayXf>;

void sum_loop() {
  const double s = blocked_sum([](int64_t at, int64_t n) { return double(ConstArray(big().x.data_ptr<float>() + at, n).sum()); });
  benchmark::DoNotOptimize(s);
}

void mse_loop() {
  const double s = blocked_sum([](int64_t at, int64_t n) {
    ConstArray x(big().x.data_ptr<float>() + at, n), y(big().y.data_ptr<float>() + at, n);
    return double((x - y).square().sum());
  });
  benchmark::DoNotOptimize(s / static_cast<double>(big().x.numel()));
}

void rowsum_loop() {
  static std::vector<float> out(16384);
  parallel_for(16384, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      ConstArray x(big().x.data_ptr<float>() + r * 1024, 1024), y(big().y.data_ptr<float>() + r * 1024, 1024);
      out[r] = (x * y + 1.0f).max(0.0f).sum();
    }
  });
  benchmark::ClobberMemory();
}

void sgemm_direct(int n) {
  static std::vector<float> c(1024 * 1024);
  dnnl_sgemm('N', 'N', n, n, n, 1.0f, gemm(n).a.data_ptr<float>(), n, gemm(n).b.data_ptr<float>(), n, 0.0f,
             c.data(), n);
  benchmark::ClobberMemory();
}

// C = A B at 1024^3 with A and B stored as bf16 (rounded once, here) and C
// float32: oneDNN's matmul primitive, plain row-major layouts, as the
// runtime's autocast GEMM calls it but without converting the operands.
void sgemm_bf16_direct() {
  using dnnl::memory;
  constexpr int n = 1024;
  struct Prim {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{eng};
    memory::desc a{{n, n}, memory::data_type::bf16, memory::format_tag::ab};
    memory::desc c{{n, n}, memory::data_type::f32, memory::format_tag::ab};
    dnnl::matmul::primitive_desc pd{dnnl::matmul::desc(a, a, c), eng};
    dnnl::matmul prim{pd};
    memory ma{a, eng}, mb{a, eng}, mc{c, eng};
    Prim() {
      for (auto [m, src] : {std::pair{&ma, &gemm(n).a}, std::pair{&mb, &gemm(n).b}}) {
        auto* dst = static_cast<uint16_t*>(m->get_data_handle());
        const float* f = src->data_ptr<float>();
        for (int64_t i = 0; i < int64_t{n} * n; ++i) {  // truncation: these are the reference's inputs only
          uint32_t u;
          std::memcpy(&u, &f[i], 4);
          dst[i] = static_cast<uint16_t>(u >> 16);
        }
      }
    }
  };
  static Prim p;
  p.prim.execute(p.stream, {{DNNL_ARG_SRC, p.ma}, {DNNL_ARG_WEIGHTS, p.mb}, {DNNL_ARG_DST, p.mc}});
  p.stream.wait();
  benchmark::ClobberMemory();
}

}  // namespace

void register_references() {
  add("copy_16M", "reference", copy_loop);
  add("triad_16M", "reference", triad_loop);
  add("chain8_16M", "reference", chain8_eigen);
  add("sum_16M", "reference", sum_loop);
  add("mse_16M", "reference", mse_loop);
  add("rowsum_16M", "reference", rowsum_loop);
  for (int n : {256, 1024}) add("sgemm_" + std::to_string(n), "reference", [n] { sgemm_direct(n); });
  add("sgemm_1024_bf16", "reference", sgemm_bf16_direct);
  const char* none = "no hand-written version: the reference is LibTorch";
  for (const char* w : {"op64_add", "op64_relu", "op64_tanh", "op64_sum", "op64_softmax", "op_matmul_8x8",
                        "lstm_h64_100steps", "mlp_infer_b64", "mlp_train_step_b64", "mlp_train_whole_step_b64",
                        "mlp_train_fullstep_b64",
                        "transformer_b8_s64_d256",
                        "lenet_b64", "mlp_infer_b64_bf16", "transformer_b8_s64_d256_bf16",
                        "transformer_train_fullstep_b8", "lenet_train_fullstep_b64"})
    add_na(w, "reference", none);
}

}  // namespace bench
