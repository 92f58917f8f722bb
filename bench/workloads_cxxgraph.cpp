// The cxxgraph columns: each workload's function from models.cpp, called
// under Mode::Eager and Mode::Static (suite.h: add_cxxgraph).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <graph/autocast.h>
#include <graph/detail/conv_stats.h>

#include "models.h"
#include "suite.h"

namespace bench {
using graph::Tensor;

namespace {

void keep(const Tensor& t) { benchmark::DoNotOptimize(t.data_ptr<float>()); }

void elementwise() {
  add("copy_16M", "cxxgraph_eager", [] { keep(big().x.clone()); });
  add_na("copy_16M", "cxxgraph_static", "a graph has no copy op: returning an input returns it as is");
  add_cxxgraph("triad_16M", [] { keep(triad(big().x, big().y)); });
  add_cxxgraph("chain8_16M", [] { keep(chain8(big().x, big().y)); });
  add_cxxgraph("sum_16M", [] { keep(op_sum(big().x)); });
  add_cxxgraph("mse_16M", [] { keep(mse(big().x, big().y)); });
  static const Tensor x2 = big().x.reshape({16384, 1024}), y2 = big().y.reshape({16384, 1024});
  add_cxxgraph("rowsum_16M", [] { keep(row_sum(x2, y2)); });
}

void small_ops() {
  const Small& s = small();
  add_cxxgraph("op64_add", [&] { keep(op_add(s.a, s.b)); });
  add_cxxgraph("op64_relu", [&] { keep(op_relu(s.a)); });
  add_cxxgraph("op64_tanh", [&] { keep(op_tanh(s.a)); });
  add_cxxgraph("op64_sum", [&] { keep(op_sum(s.a)); });
  add_cxxgraph("op64_softmax", [&] { keep(op_softmax(s.a)); });
  add_cxxgraph("op_matmul_8x8", [&] { keep(op_matmul(s.m, s.m)); });
}

void models() {
  add_cxxgraph("lstm_h64_100steps", [] {
    const Lstm& l = lstm_inputs();
    keep(lstm(l.x, l.h, l.c, l.wx, l.wh, l.b, Lstm::steps));
  });
  for (int n : {256, 1024})
    add_cxxgraph("sgemm_" + std::to_string(n), [n] { keep(sgemm(gemm(n).a, gemm(n).b)); });
  add_cxxgraph("mlp_infer_b64", [] {
    const Mlp& m = mlp_inputs();
    keep(mlp(m.x, m.w1, m.b1, m.w2, m.b2, m.w3, m.b3));
  });
  add_cxxgraph("transformer_b8_s64_d256", [] {
    const Transformer& t = transformer_inputs();
    keep(transformer(t.x, t.ln1_w, t.ln1_b, t.wq, t.bq, t.wk, t.bk, t.wv, t.bv, t.wo, t.bo, t.ln2_w, t.ln2_b, t.w1,
                     t.b1, t.w2, t.b2));
  });
  add_cxxgraph("lenet_b64", [] {
    const Lenet& l = lenet_inputs();
    keep(lenet(l.x, l.c1w, l.c1b, l.c2w, l.c2b, l.f1w, l.f1b, l.f2w, l.f2b, l.f3w, l.f3b));
  });
}

// Issue 26. Convolutions: LeNet's second layer alone, and LeNet, through
// oneDNN's primitives and (the "_im2col" rows) through the im2col + GEMM they
// replaced, in one binary so both see the same load. bf16: the GEMM, the
// MLP and the Transformer block under graph::AutocastGuard(kBFloat16).
struct Im2colOnly {
  Im2colOnly() { graph::detail::set_dnnl_conv_enabled(false); }
  ~Im2colOnly() { graph::detail::set_dnnl_conv_enabled(true); }
};

void conv_and_bf16() {
  static const Tensor cx = graph::rand({64, 6, 14, 14}), cw = graph::randn({16, 6, 5, 5}) * 0.08,
                      cb = graph::randn({16}) * 0.08;
  add("conv2d_b64_c6_14x14_k5", "cxxgraph_eager", [] { keep(graph::conv2d(cx, cw, cb)); });
  add("conv2d_b64_c6_14x14_k5_im2col", "cxxgraph_eager", [] {
    Im2colOnly off;
    keep(graph::conv2d(cx, cw, cb));
  });
  add_cxxgraph("lenet_b64_im2col", [] {
    Im2colOnly off;
    const Lenet& l = lenet_inputs();
    keep(lenet(l.x, l.c1w, l.c1b, l.c2w, l.c2b, l.f1w, l.f1b, l.f2w, l.f2b, l.f3w, l.f3b));
  });
  add_cxxgraph("sgemm_1024_bf16", [] {
    graph::AutocastGuard autocast(graph::kBFloat16);
    keep(sgemm(gemm(1024).a, gemm(1024).b));
  });
  add_cxxgraph("mlp_infer_b64_bf16", [] {
    graph::AutocastGuard autocast(graph::kBFloat16);
    const Mlp& m = mlp_inputs();
    keep(mlp(m.x, m.w1, m.b1, m.w2, m.b2, m.w3, m.b3));
  });
  add_cxxgraph("transformer_b8_s64_d256_bf16", [] {
    graph::AutocastGuard autocast(graph::kBFloat16);
    const Transformer& t = transformer_inputs();
    keep(transformer(t.x, t.ln1_w, t.ln1_b, t.wq, t.bq, t.wk, t.bk, t.wv, t.bv, t.wo, t.bo, t.ln2_w, t.ln2_b, t.w1,
                     t.b1, t.w2, t.b2));
  });
}

// Whole SGD steps (lr 0.01) of the Transformer block and LeNet, each one
// graph (TransformerStep/LenetStep::full_step); the eager column runs the
// same body op by op.
template <class Step>
std::vector<Tensor*> params_of(Step& s);
template <>
std::vector<Tensor*> params_of(TransformerStep& s) {
  return {&s.ln1_w, &s.ln1_b, &s.wq, &s.bq, &s.wk, &s.bk, &s.wv, &s.bv,
          &s.wo,    &s.bo,    &s.ln2_w, &s.ln2_b, &s.w1, &s.b1, &s.w2, &s.b2};
}
template <>
std::vector<Tensor*> params_of(LenetStep& s) {
  return {&s.c1w, &s.c1b, &s.c2w, &s.c2b, &s.f1w, &s.f1b, &s.f2w, &s.f2b, &s.f3w, &s.f3b};
}

// Each column of a training row trains its own copy from the same start.
// Thousands of steps on one batch drive the gradients and the momentum into
// denormals, so a column timed after another's steps would time slower
// arithmetic (MLP SGD step with momentum: 1.7 ms static alone, 3.1 ms after
// the eager column's steps).
template <class T>
struct PerMode {
  T eager, compiled;
  template <class Make>
  explicit PerMode(Make make) : eager(make()), compiled(make()) {}
  T& operator()() { return graph::mode() == graph::Mode::Eager ? eager : compiled; }
};

template <class Step>
struct Trained {
  Step net;
  std::unique_ptr<graph::optim::SGD> opt;
  explicit Trained(Step s) : net(std::move(s)) {
    std::vector<Tensor> ps;
    for (Tensor* p : params_of(net)) {
      *p = p->clone().requires_grad_();
      ps.push_back(*p);
    }
    opt = std::make_unique<graph::optim::SGD>(ps, graph::optim::SGDOptions(0.01));
    net.opt = opt.get();
  }
};

void blocks_training() {
  static PerMode<Trained<TransformerStep>> transformer_step([] {
    const Transformer& t = transformer_inputs();
    return Trained<TransformerStep>(TransformerStep{t.ln1_w, t.ln1_b, t.wq, t.bq, t.wk, t.bk, t.wv, t.bv,
                                                    t.wo,    t.bo,    t.ln2_w, t.ln2_b, t.w1, t.b1, t.w2, t.b2});
  });
  static const Tensor target = graph::randn({8, 64, 256});
  add_cxxgraph("transformer_train_fullstep_b8", [] {
    keep(transformer_step().net.full_step(transformer_inputs().x, target));
  });
  static PerMode<Trained<LenetStep>> lenet_step([] {
    const Lenet& l = lenet_inputs();
    return Trained<LenetStep>(LenetStep{l.c1w, l.c1b, l.c2w, l.c2b, l.f1w, l.f1b, l.f2w, l.f2b, l.f3w, l.f3b});
  });
  static const Tensor labels = (graph::rand({64}) * 10).to(graph::kInt64);
  add_cxxgraph("lenet_train_fullstep_b64", [] { keep(lenet_step().net.full_step(lenet_inputs().x, labels)); });
}

// One SGD step: forward (mlp_loss, eager or static), backward, update. The
// static column must give a loss with gradient history, i.e. its graph must
// sit on the eager tape as one node (mixed execution).
void training() {
  struct Model {
    std::vector<Tensor> params;
    graph::optim::SGD opt;
    Tensor loss;
    explicit Model(const Mlp& m) : params(trainable(m)), opt(params, graph::optim::SGDOptions(0.01)) {}
    static std::vector<Tensor> trainable(const Mlp& m) {
      std::vector<Tensor> ps{m.w1.clone(), m.b1.clone(), m.w2.clone(), m.b2.clone(), m.w3.clone(), m.b3.clone()};
      for (Tensor& p : ps) p.requires_grad_();
      return ps;
    }
    void step() {
      const std::vector<Tensor>& p = params;
      loss = mlp_loss(mlp_inputs().x, mlp_inputs().labels, p[0], p[1], p[2], p[3], p[4], p[5]);
      opt.zero_grad();
      if (!loss.requires_grad()) return;  // the check below reports it
      loss.backward();
      opt.step();
    }
  };
  static PerMode<Model> model([] { return Model(mlp_inputs()); });
  add_cxxgraph("mlp_train_step_b64", [] { model().step(); }, [] {
    return model().loss.requires_grad()
               ? std::string()
               : "the compiled graph's loss has no gradient history (a static graph as one node on the eager "
                 "tape, mixed execution, is not built yet)";
  });
  // The same step with forward, loss and backward in one static graph (a
  // static train step: MlpStep::loss_backward); zero_grad and the SGD update
  // stay eager. Its eager column runs the same function's body eagerly.
  struct WholeStep {
    MlpStep net;
    graph::optim::SGD opt;
    explicit WholeStep(const std::vector<Tensor>& p)
        : net{p[0], p[1], p[2], p[3], p[4], p[5]}, opt(p, graph::optim::SGDOptions(0.01)) {}
    void step() {
      opt.zero_grad();
      net.loss_backward(mlp_inputs().x, mlp_inputs().labels);
      opt.step();
    }
  };
  static PerMode<WholeStep> whole([] { return WholeStep(Model::trainable(mlp_inputs())); });
  add_cxxgraph("mlp_train_whole_step_b64", [] { whole().step(); });
  // The whole SGD step with momentum 0.9 in one graph (MlpStep::full_step:
  // zero_grad, forward, backward and the optimizer's update).
  struct FullStep {
    MlpStep net;
    graph::optim::SGD opt;
    explicit FullStep(const std::vector<Tensor>& p)
        : net{p[0], p[1], p[2], p[3], p[4], p[5]}, opt(p, graph::optim::SGDOptions(0.01).momentum(0.9)) {
      net.opt = &opt;
    }
  };
  static PerMode<FullStep> full([] { return FullStep(Model::trainable(mlp_inputs())); });
  add_cxxgraph("mlp_train_fullstep_b64", [] { full().net.full_step(mlp_inputs().x, mlp_inputs().labels); });
  blocks_training();
}

}  // namespace

// --train-digest: 5 steps of the MLP from the bench's weights with SGD, SGD
// with momentum and Adam, each eager and with the static forward: the loss
// of every step and a hash of the final parameters' bits. A change to the
// training path that must keep values identical keeps this output identical.
int print_train_digest() {
  const auto run = [](graph::Mode mode, const char* name, const std::function<graph::optim::Optimizer*(
                                                                std::vector<Tensor>&)>& make) {
    graph::set_mode(mode);
    const Mlp& m = mlp_inputs();
    std::vector<Tensor> p{m.w1.clone(), m.b1.clone(), m.w2.clone(), m.b2.clone(), m.w3.clone(), m.b3.clone()};
    for (Tensor& t : p) t.requires_grad_();
    std::unique_ptr<graph::optim::Optimizer> opt(make(p));
    std::printf("%s %s losses", mode == graph::Mode::Eager ? "eager " : "static", name);
    for (int s = 0; s < 5; ++s) {
      opt->zero_grad();
      Tensor loss = mlp_loss(m.x, m.labels, p[0], p[1], p[2], p[3], p[4], p[5]);
      loss.backward();
      opt->step();
      std::printf(" %.9g", loss.item<double>());
    }
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the parameters' bytes
    for (const Tensor& t : p) {
      const auto* b = reinterpret_cast<const unsigned char*>(t.data_ptr<float>());
      for (size_t i = 0; i < static_cast<size_t>(t.numel()) * sizeof(float); ++i) h = (h ^ b[i]) * 1099511628211ull;
    }
    std::printf(" params %016llx\n", static_cast<unsigned long long>(h));
  };
  for (graph::Mode mode : {graph::Mode::Eager, graph::Mode::Static}) {
    run(mode, "sgd     ", [](std::vector<Tensor>& p) { return new graph::optim::SGD(p, graph::optim::SGDOptions(0.01)); });
    run(mode, "momentum", [](std::vector<Tensor>& p) {
      return new graph::optim::SGD(p, graph::optim::SGDOptions(0.01).momentum(0.9).weight_decay(1e-4));
    });
    run(mode, "adam    ", [](std::vector<Tensor>& p) { return new graph::optim::Adam(p, graph::optim::AdamOptions(1e-3)); });
  }
  return 0;
}

void register_cxxgraph() {
  elementwise();
  small_ops();
  models();
  conv_and_bf16();
  training();
}

}  // namespace bench
