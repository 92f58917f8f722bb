// bench_libtorch: the LibTorch column of tools/bench.sh, each workload of
// bench/models.cpp written with ATen ops as a LibTorch C++ user would, timed
// as bench_suite times the others (Google Benchmark, "<workload>/libtorch",
// two warm-up calls), with at::set_num_threads(CXXGRAPH_BENCH_THREADS).
//
// A program of its own, linked with the PyTorch 2.x wheel's libtorch_cpu and
// nothing of cxxgraph: libtorch_cpu exports its own oneDNN (dnnl_*) and MKL's
// BLAS (sgemm_, cblas_*). In one process with the runtime's oneDNN and
// OpenBLAS, whichever library comes first on the link line serves the other's
// calls: ATen's GEMMs then ran OpenBLAS's SSE3 kernels (4x slower), or the
// runtime's dnnl_sgemm ran the wheel's oneDNN and failed. So the inputs are
// its own, of the same shapes and distributions as bench/suite.cpp's (as the
// TorchScript column's are).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <benchmark/benchmark.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "libtorch_bench.h"

namespace libtorch_bench {

void add(const std::string& workload, std::function<void()> call) {
  benchmark::RegisterBenchmark((workload + "/libtorch").c_str(),
                               [call](benchmark::State& state) {
                                 for (int i = 0; i < 2; ++i) call();  // warm-up, as bench_suite
                                 for (auto _ : state) call();
                               })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime();
}

void keep(const at::Tensor& t) { benchmark::DoNotOptimize(t.data_ptr()); }

at::Tensor weight(at::IntArrayRef shape, int64_t fan_in) { return at::randn(shape) / std::sqrt(double(fan_in)); }

}  // namespace libtorch_bench

namespace {
using libtorch_bench::add;
using libtorch_bench::keep;
using libtorch_bench::weight;

int threads() {
  const char* e = std::getenv("CXXGRAPH_BENCH_THREADS");
  return e && std::atoi(e) > 0 ? std::atoi(e) : 1;
}

const at::Tensor& big_x() {
  static const at::Tensor t = at::rand({16 << 20});
  return t;
}
const at::Tensor& big_y() {
  static const at::Tensor t = at::rand({16 << 20});
  return t;
}

void elementwise() {
  static const at::Tensor& x = big_x();
  static const at::Tensor& y = big_y();
  add("copy_16M", [] { keep(x.clone()); });
  add("triad_16M", [] { keep(x + y * 1.5); });
  add("chain8_16M", [] {
    at::Tensor t = x + y;
    t = t * 0.5;
    t = at::relu(t);
    t = t - y;
    t = at::tanh(t);
    t = at::exp(t);
    t = at::sigmoid(t);
    keep(-t);
  });
  add("sum_16M", [] { keep(x.sum()); });
  add("mse_16M", [] { keep(((x - y) * (x - y)).mean()); });
  static const at::Tensor x2 = x.reshape({16384, 1024}), y2 = y.reshape({16384, 1024});
  add("rowsum_16M", [] { keep(at::relu(x2 * y2 + 1).sum(-1)); });
}

void small_ops() {
  static const at::Tensor a = at::rand({64}), b = at::rand({64}), m = at::rand({8, 8});
  add("op64_add", [] { keep(a + b); });
  add("op64_relu", [] { keep(at::relu(a)); });
  add("op64_tanh", [] { keep(at::tanh(a)); });
  add("op64_sum", [] { keep(a.sum()); });
  add("op64_softmax", [] { keep(at::softmax(a, 0)); });
  add("op_matmul_8x8", [] { keep(at::matmul(m, m)); });
}

at::Tensor lstm(const at::Tensor& x, at::Tensor h, at::Tensor c, const at::Tensor& wx, const at::Tensor& wh,
                const at::Tensor& b, int steps) {
  constexpr int H = 64;
  at::Tensor xw = at::matmul(x, wx) + b;
  for (int i = 0; i < steps; ++i) {
    at::Tensor gates = xw + at::matmul(h, wh);
    at::Tensor in = at::sigmoid(gates.slice(1, 0, H));
    at::Tensor forget = at::sigmoid(gates.slice(1, H, 2 * H));
    at::Tensor cell = at::tanh(gates.slice(1, 2 * H, 3 * H));
    at::Tensor out = at::sigmoid(gates.slice(1, 3 * H, 4 * H));
    c = forget * c + in * cell;
    h = out * at::tanh(c);
  }
  return h;
}

struct MlpParams { at::Tensor w1, b1, w2, b2, w3, b3; };

at::Tensor mlp_input() { return at::rand({64, 784}); }
MlpParams mlp_params() {
  return {weight({512, 784}, 784), weight({512}, 784), weight({512, 512}, 512),
          weight({512}, 512),      weight({10, 512}, 512), weight({10}, 512)};
}

at::Tensor mlp_logits(const at::Tensor& x, const MlpParams& p) {
  at::Tensor h = at::relu(at::linear(x, p.w1, p.b1));
  h = at::relu(at::linear(h, p.w2, p.b2));
  return at::linear(h, p.w3, p.b3);
}

at::Tensor transformer(const at::Tensor& x, const std::vector<at::Tensor>& p) {
  constexpr int D = 256, Heads = 4, Dh = 64;
  at::Tensor n1 = at::layer_norm(x, {D}, p[0], p[1], 1e-5);
  at::Tensor q = at::linear(n1, p[2], p[3]).reshape({8, 64, Heads, Dh}).transpose(1, 2);
  at::Tensor k = at::linear(n1, p[4], p[5]).reshape({8, 64, Heads, Dh}).transpose(1, 2);
  at::Tensor v = at::linear(n1, p[6], p[7]).reshape({8, 64, Heads, Dh}).transpose(1, 2);
  at::Tensor probs = at::softmax(at::matmul(q, k.transpose(2, 3)) * 0.125, 3);
  at::Tensor ctx = at::matmul(probs, v).transpose(1, 2).reshape({8, 64, D});
  at::Tensor r1 = x + at::linear(ctx, p[8], p[9]);
  at::Tensor n2 = at::layer_norm(r1, {D}, p[10], p[11], 1e-5);
  return r1 + at::linear(at::gelu(at::linear(n2, p[12], p[13])), p[14], p[15]);
}

struct TransformerInputs {
  at::Tensor x;
  std::vector<at::Tensor> p;
};
const TransformerInputs& transformer_inputs() {
  constexpr int D = 256, F = 1024;
  static const TransformerInputs t{at::randn({8, 64, D}),
                                   {at::ones({D}), at::zeros({D}), weight({D, D}, D), weight({D}, D),
                                    weight({D, D}, D), weight({D}, D), weight({D, D}, D), weight({D}, D),
                                    weight({D, D}, D), weight({D}, D), at::ones({D}), at::zeros({D}),
                                    weight({F, D}, D), weight({F}, D), weight({D, F}, F), weight({D}, F)}};
  return t;
}

at::Tensor lenet(const at::Tensor& x, const std::vector<at::Tensor>& p) {
  at::Tensor h = at::max_pool2d(at::relu(at::conv2d(x, p[0], p[1])), {2, 2});
  h = at::max_pool2d(at::relu(at::conv2d(h, p[2], p[3])), {2, 2});
  h = at::relu(at::linear(h.flatten(1), p[4], p[5]));
  h = at::relu(at::linear(h, p[6], p[7]));
  return at::linear(h, p[8], p[9]);
}

std::vector<at::Tensor> lenet_params() {
  return {weight({6, 1, 5, 5}, 25), weight({6}, 25),       weight({16, 6, 5, 5}, 150), weight({16}, 150),
          weight({120, 256}, 256), weight({120}, 256),    weight({84, 120}, 120),     weight({84}, 120),
          weight({10, 84}, 84),    weight({10}, 84)};
}

void models() {
  add("lstm_h64_100steps", [] {
    static const at::Tensor x = at::randn({1, 64}), h = at::randn({1, 64}), c = at::randn({1, 64}),
                            wx = weight({64, 256}, 64), wh = weight({64, 256}, 64), b = weight({256}, 64);
    keep(lstm(x, h, c, wx, wh, b, 100));
  });
  for (int n : {256, 1024}) {
    add("sgemm_" + std::to_string(n), [n] {
      static const at::Tensor a256 = at::rand({256, 256}), b256 = at::rand({256, 256});
      static const at::Tensor a1024 = at::rand({1024, 1024}), b1024 = at::rand({1024, 1024});
      keep(n == 256 ? at::matmul(a256, b256) : at::matmul(a1024, b1024));
    });
  }
  add("mlp_infer_b64", [] {
    static const at::Tensor x = mlp_input();
    static const MlpParams p = mlp_params();
    keep(at::log_softmax(mlp_logits(x, p), 1));
  });
  add("transformer_b8_s64_d256", [] {
    const TransformerInputs& t = transformer_inputs();
    keep(transformer(t.x, t.p));
  });
  add("lenet_b64", [] {
    static const at::Tensor x = at::rand({64, 1, 28, 28});
    static const std::vector<at::Tensor> p = lenet_params();
    keep(lenet(x, p));
  });
}

// Issue 26: LeNet's second conv layer alone; the GEMM, the MLP and the Transformer block under
// autocast (torch.autocast("cpu", torch.bfloat16) in C++: the results are
// bf16 tensors, as PyTorch's autocast gives them).
struct Autocast {
  Autocast() {
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCPU, true);
  }
  ~Autocast() {
    at::autocast::set_autocast_enabled(at::kCPU, false);
    at::autocast::clear_cache();
  }
};

void conv_and_bf16() {
  add("conv2d_b64_c6_14x14_k5", [] {
    static const at::Tensor x = at::rand({64, 6, 14, 14}), w = weight({16, 6, 5, 5}, 150), b = weight({16}, 150);
    keep(at::conv2d(x, w, b));
  });
  add("sgemm_1024_bf16", [] {
    static const at::Tensor a = at::rand({1024, 1024}), b = at::rand({1024, 1024});
    Autocast autocast;
    keep(at::matmul(a, b));
  });
  add("mlp_infer_b64_bf16", [] {
    static const at::Tensor x = mlp_input();
    static const MlpParams p = mlp_params();
    Autocast autocast;
    keep(at::log_softmax(mlp_logits(x, p), 1));
  });
  add("transformer_b8_s64_d256_bf16", [] {
    const TransformerInputs& t = transformer_inputs();
    Autocast autocast;
    keep(transformer(t.x, t.p));
  });
}

// The Transformer block's and LeNet's SGD steps (lr 0.01), the rows of
// issue 18 ("whole static step at least 1.2x LibTorch 2.x").
void sgd_step(std::vector<at::Tensor>& params, const std::function<at::Tensor()>& loss_of) {
  for (at::Tensor& t : params) t.mutable_grad() = at::Tensor();
  at::Tensor loss = loss_of();
  loss.backward();
  c10::NoGradGuard no_grad;
  for (at::Tensor& t : params) t.sub_(t.grad(), 0.01);
}

std::vector<at::Tensor> trainable(const std::vector<at::Tensor>& p) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : p) out.push_back(t.clone().requires_grad_());
  return out;
}

void blocks_training() {
  add("transformer_train_fullstep_b8", [] {
    static std::vector<at::Tensor> p = trainable(transformer_inputs().p);
    static const at::Tensor target = at::randn({8, 64, 256});
    sgd_step(p, [] { return at::mse_loss(transformer(transformer_inputs().x, p), target); });
  });
  add("lenet_train_fullstep_b64", [] {
    static std::vector<at::Tensor> p = trainable(lenet_params());
    static const at::Tensor x = at::rand({64, 1, 28, 28}), labels = (at::rand({64}) * 10).to(at::kLong);
    sgd_step(p, [] { return at::cross_entropy_loss(lenet(x, p), labels); });
  });
}

// One SGD step (lr 0.01), as torch::optim::SGD does it: zero_grad (PyTorch
// 2.x sets the gradients to none), forward, backward, p -= lr * grad.
void training() {
  // The same step for both rows: LibTorch has one way to run it.
  for (const char* name : {"mlp_train_step_b64", "mlp_train_whole_step_b64"}) add(name, [] {
    static const at::Tensor x = mlp_input(), labels = (at::rand({64}) * 10).to(at::kLong);
    static MlpParams p = [] {
      MlpParams q = mlp_params();
      for (at::Tensor* t : {&q.w1, &q.b1, &q.w2, &q.b2, &q.w3, &q.b3}) *t = t->clone().requires_grad_();
      return q;
    }();
    at::Tensor* params[] = {&p.w1, &p.b1, &p.w2, &p.b2, &p.w3, &p.b3};
    for (at::Tensor* t : params) t->mutable_grad() = at::Tensor();
    at::Tensor loss = at::cross_entropy_loss(mlp_logits(x, p), labels);
    loss.backward();
    c10::NoGradGuard no_grad;
    for (at::Tensor* t : params) t->sub_(t->grad(), 0.01);
  });
  // SGD with momentum 0.9, as torch.optim.SGD's single-tensor path: the
  // buffer is the gradient on the first step, then buf = 0.9 buf + grad.
  add("mlp_train_fullstep_b64", [] {
    static const at::Tensor x = mlp_input(), labels = (at::rand({64}) * 10).to(at::kLong);
    static MlpParams p = [] {
      MlpParams q = mlp_params();
      for (at::Tensor* t : {&q.w1, &q.b1, &q.w2, &q.b2, &q.w3, &q.b3}) *t = t->clone().requires_grad_();
      return q;
    }();
    static at::Tensor buf[6];
    at::Tensor* params[] = {&p.w1, &p.b1, &p.w2, &p.b2, &p.w3, &p.b3};
    for (at::Tensor* t : params) t->mutable_grad() = at::Tensor();
    at::Tensor loss = at::cross_entropy_loss(mlp_logits(x, p), labels);
    loss.backward();
    c10::NoGradGuard no_grad;
    for (int i = 0; i < 6; ++i) {
      const at::Tensor& g = params[i]->grad();
      if (!buf[i].defined())
        buf[i] = g.clone();
      else
        buf[i].mul_(0.9).add_(g);
      params[i]->sub_(buf[i], 0.01);
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  at::manual_seed(0);
  at::set_num_threads(threads());
  elementwise();
  small_ops();
  models();
  conv_and_bf16();
  training();
  blocks_training();
  libtorch_bench::register_models();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
