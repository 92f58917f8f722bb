// The LibTorch column (Debian's libtorch-dev): each workload written with
// ATen ops as a LibTorch C++ user would, on the very same input memory
// (at::from_blob over the cxxgraph tensors), at::set_num_threads(threads()).
#include "suite.h"

#if CXXGRAPH_HAVE_LIBTORCH
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>
#endif

namespace bench {

#if CXXGRAPH_HAVE_LIBTORCH
namespace {

at::Tensor wrap(const graph::Tensor& t) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  if (t.dtype() == graph::kInt64)
    return at::from_blob(const_cast<int64_t*>(t.data_ptr<int64_t>()), sizes, at::kLong);
  return at::from_blob(const_cast<float*>(t.data_ptr<float>()), sizes, at::kFloat);
}

void keep(const at::Tensor& t) { benchmark::DoNotOptimize(t.data_ptr()); }

void elementwise() {
  static const at::Tensor x = wrap(big().x), y = wrap(big().y);
  add("copy_16M", "libtorch", [] { keep(x.clone()); });
  add("triad_16M", "libtorch", [] { keep(x + y * 1.5); });
  add("chain8_16M", "libtorch", [] {
    at::Tensor t = x + y;
    t = t * 0.5;
    t = at::relu(t);
    t = t - y;
    t = at::tanh(t);
    t = at::exp(t);
    t = at::sigmoid(t);
    keep(-t);
  });
  add("sum_16M", "libtorch", [] { keep(x.sum()); });
  add("mse_16M", "libtorch", [] { keep(((x - y) * (x - y)).mean()); });
  static const at::Tensor x2 = x.reshape({16384, 1024}), y2 = y.reshape({16384, 1024});
  add("rowsum_16M", "libtorch", [] { keep(at::relu(x2 * y2 + 1).sum(-1)); });
}

void small_ops() {
  static const at::Tensor a = wrap(small().a), b = wrap(small().b), m = wrap(small().m);
  add("op64_add", "libtorch", [] { keep(a + b); });
  add("op64_relu", "libtorch", [] { keep(at::relu(a)); });
  add("op64_tanh", "libtorch", [] { keep(at::tanh(a)); });
  add("op64_sum", "libtorch", [] { keep(a.sum()); });
  add("op64_softmax", "libtorch", [] { keep(at::softmax(a, 0)); });
  add("op_matmul_8x8", "libtorch", [] { keep(at::matmul(m, m)); });
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

at::Tensor lenet(const at::Tensor& x, const std::vector<at::Tensor>& p) {
  at::Tensor h = at::max_pool2d(at::relu(at::conv2d(x, p[0], p[1])), {2, 2});
  h = at::max_pool2d(at::relu(at::conv2d(h, p[2], p[3])), {2, 2});
  h = at::relu(at::linear(h.flatten(1), p[4], p[5]));
  h = at::relu(at::linear(h, p[6], p[7]));
  return at::linear(h, p[8], p[9]);
}

void models() {
  add("lstm_h64_100steps", "libtorch", [] {
    static const Lstm& l = lstm_inputs();
    static const at::Tensor x = wrap(l.x), h = wrap(l.h), c = wrap(l.c), wx = wrap(l.wx), wh = wrap(l.wh),
                            b = wrap(l.b);
    keep(lstm(x, h, c, wx, wh, b, Lstm::steps));
  });
  for (int n : {256, 1024}) {
    add("sgemm_" + std::to_string(n), "libtorch", [n] {
      static const at::Tensor a256 = wrap(gemm(256).a), b256 = wrap(gemm(256).b);
      static const at::Tensor a1024 = wrap(gemm(1024).a), b1024 = wrap(gemm(1024).b);
      keep(n == 256 ? at::matmul(a256, b256) : at::matmul(a1024, b1024));
    });
  }
  add("mlp_infer_b64", "libtorch", [] {
    static const Mlp& m = mlp_inputs();
    static const at::Tensor x = wrap(m.x);
    static const MlpParams p{wrap(m.w1), wrap(m.b1), wrap(m.w2), wrap(m.b2), wrap(m.w3), wrap(m.b3)};
    keep(at::log_softmax(mlp_logits(x, p), 1));
  });
  add("transformer_b8_s64_d256", "libtorch", [] {
    static const Transformer& t = transformer_inputs();
    static const at::Tensor x = wrap(t.x);
    static const std::vector<at::Tensor> p{wrap(t.ln1_w), wrap(t.ln1_b), wrap(t.wq), wrap(t.bq), wrap(t.wk),
                                           wrap(t.bk),    wrap(t.wv),    wrap(t.bv), wrap(t.wo), wrap(t.bo),
                                           wrap(t.ln2_w), wrap(t.ln2_b), wrap(t.w1), wrap(t.b1), wrap(t.w2),
                                           wrap(t.b2)};
    keep(transformer(x, p));
  });
  add("lenet_b64", "libtorch", [] {
    static const Lenet& l = lenet_inputs();
    static const at::Tensor x = wrap(l.x);
    static const std::vector<at::Tensor> p{wrap(l.c1w), wrap(l.c1b), wrap(l.c2w), wrap(l.c2b), wrap(l.f1w),
                                           wrap(l.f1b), wrap(l.f2w), wrap(l.f2b), wrap(l.f3w), wrap(l.f3b)};
    keep(lenet(x, p));
  });
}

// One SGD step (lr 0.01), as torch::optim::SGD does it: zero the gradients,
// forward, backward, p -= lr * grad.
void training() {
  add("mlp_train_step_b64", "libtorch", [] {
    static const Mlp& m = mlp_inputs();
    static const at::Tensor x = wrap(m.x), labels = wrap(m.labels);
    static MlpParams p{wrap(m.w1).clone().requires_grad_(), wrap(m.b1).clone().requires_grad_(),
                       wrap(m.w2).clone().requires_grad_(), wrap(m.b2).clone().requires_grad_(),
                       wrap(m.w3).clone().requires_grad_(), wrap(m.b3).clone().requires_grad_()};
    at::Tensor* params[] = {&p.w1, &p.b1, &p.w2, &p.b2, &p.w3, &p.b3};
    for (at::Tensor* t : params)
      if (t->grad().defined()) t->mutable_grad().zero_();
    at::Tensor loss = at::cross_entropy_loss(mlp_logits(x, p), labels);
    loss.backward();
    at::NoGradGuard no_grad;
    for (at::Tensor* t : params) t->sub_(t->grad(), 0.01);
  });
}

}  // namespace

void register_libtorch() {
  at::set_num_threads(threads());
  elementwise();
  small_ops();
  models();
  training();
}

#else

void register_libtorch() {
  for (const char* w : {"copy_16M", "triad_16M", "chain8_16M", "sum_16M", "mse_16M", "rowsum_16M", "op64_add", "op64_relu", "op64_tanh", "op64_sum",
                        "op64_softmax", "op_matmul_8x8", "lstm_h64_100steps", "sgemm_256", "sgemm_1024",
                        "mlp_infer_b64", "mlp_train_step_b64", "transformer_b8_s64_d256", "lenet_b64"})
    add_na(w, "libtorch", "built without LibTorch (apt-get install libtorch-dev)");
}

#endif

}  // namespace bench
