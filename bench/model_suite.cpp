// Issue 19's speed rows: the model suite's forwards (tests/models, the GRU
// language model of tests/rnn, the message-passing network of
// tests/model_graph: the very sources the tests check against PyTorch, built
// here through the plugin again), eager and static, at the sizes such models
// are trained at; and the per-op cost of the ops that issue added, eager, on
// small tensors. bench_libtorch has the same rows in LibTorch
// (libtorch_models.cpp). Forwards run under NoGradGuard, as inference; the
// loss a forward returns is part of the row on both sides.
#include <benchmark/benchmark.h>

#include <functional>
#include <string>

#include "model_functions.h"
#include "mpnn.h"
#include "rnn_functions.h"
#include "suite.h"

namespace bench {
using graph::Tensor;
namespace nn = graph::nn;

namespace {

void keep(const Tensor& t) { benchmark::DoNotOptimize(t.raw_data()); }

// A forward without a tape, in whichever mode add_cxxgraph set.
void infer(const std::function<Tensor()>& f) {
  graph::NoGradGuard g;
  keep(f());
}

Tensor ids(const graph::Shape& shape, int64_t vocab) { return (graph::rand(shape) * vocab).to(graph::kInt64); }

void models() {
  add_cxxgraph("model_gpt_b8_t64_c128", [] {  // vocab 65, 4 heads
    static models::GPTBlock m(65, 64, 128, 4);
    static const Tensor x = ids({8, 64}, 65), y = ids({8, 64}, 65);
    infer([] { return std::get<1>(m(x, y)); });
  });
  add_cxxgraph("model_resnet_w16_b8_32x32_eval", [] {
    static models::ResNet m = [] {
      models::ResNet r(16, 10);
      r->eval();
      return r;
    }();
    static const Tensor x = graph::randn({8, 3, 32, 32}), y = ids({8}, 10);
    infer([] { return std::get<1>(m(x, y)); });
  });
  add_cxxgraph("model_tcn_b16_c64_l256", [] {
    static models::TemporalCNN m(8, 64, 3, 4);
    static const Tensor x = graph::randn({16, 8, 256}), y = graph::randn({16, 4});
    infer([] { return std::get<1>(m(x, y)); });
  });
  add_cxxgraph("model_vae_b64_784_400_20", [] {
    static models::VAE m(784, 400, 20);
    static const Tensor x = graph::rand({64, 784}), eps = graph::randn({64, 20});
    infer([] { return std::get<1>(m(x, eps)); });
  });
  add_cxxgraph("model_dcgan_b16_nz100_g32", [] {
    static models::DCGANGenerator m = [] {
      models::DCGANGenerator g(100, 32);
      g->eval();
      return g;
    }();
    static const Tensor z = graph::randn({16, 100, 1, 1});
    infer([] { return std::get<1>(m(z)); });
  });
  add_cxxgraph("model_seq2seq_v32_h64_20steps", [] {  // eos -1: always max_len tokens
    static models::Seq2Seq m(32, 32, 64);
    static const Tensor src = ids({16}, 32);
    infer([] { return std::get<2>(m(src, 0, -1, 20)); });
  });
  add_cxxgraph("model_gru_lm_t32_b8_h128_2l", [] {  // vocab 65, embedding 32
    static rnn::GRULM m(65, 32, 128, 2);
    static const Tensor x = ids({32, 8}, 65), y = ids({32, 8}, 65);
    infer([] { return m(x, y); });
  });
  add_cxxgraph("model_mpnn_n1000_e5000", [] {  // 32 features, 64 hidden, 8 classes
    static model_graph::MPNN m(32, 64, 8);
    static const Tensor x = graph::randn({1000, 32}), edges = ids({2, 5000}, 1000);
    infer([] { return m(x, edges); });
  });
}

// One eager op on small tensors (64 elements, or a few rows of 64): the
// fixed cost per call. Issue 19's target is at most 1/3 of LibTorch's.
void small_ops() {
  static const Tensor v = graph::randn({64}), m = graph::randn({8, 64}), b3 = graph::randn({4, 8, 8});
  static const Tensor idx = ids({8, 16}, 64), idx1 = ids({16}, 8), mask = graph::rand({8, 64}) > 0.5;
  static const Tensor img = graph::randn({1, 4, 8, 8}), seq = graph::randn({1, 4, 16}), cw = graph::randn({4, 4, 3});
  static const Tensor rm = graph::zeros({4}), rv = graph::ones({4});
  const auto op = [](const std::string& name, std::function<Tensor()> f) {
    add("op_" + name, "cxxgraph_eager", [f] { keep(f()); });
    add_na("op_" + name, "cxxgraph_static", "the per-op rows time eager calls");
  };
  op("gather_8x64", [] { return graph::gather(m, 1, idx); });
  op("index_select_8x64", [] { return graph::index_select(m, 0, idx1); });
  op("scatter_add_8x64", [] { return m.scatter_add(1, idx, m.slice(1, 0, 16)); });
  op("topk5_8x64", [] { return std::get<0>(graph::topk(m, 5)); });
  op("topk5_8x1000", [] {  // a longer line
    static const Tensor m1k = graph::randn({8, 1000});
    return std::get<0>(graph::topk(m1k, 5));
  });
  op("sort_8x64", [] { return std::get<0>(graph::sort(m, 1)); });
  op("cumsum_8x64", [] { return graph::cumsum(m, 1); });
  op("masked_fill_8x64", [] { return m.masked_fill(mask, 0.0); });
  op("where_scalar_8x64", [] { return graph::where(mask, m, 0.0); });
  op("max_dim_8x64", [] { return std::get<0>(graph::max(m, 1)); });
  op("var_8x64", [] { return graph::var(m, {1}); });
  op("logsumexp_8x64", [] { return graph::logsumexp(m, {1}); });
  op("bmm_4x8x8", [] { return graph::bmm(b3, b3); });
  op("triu_8x64", [] { return graph::triu(m, 1); });
  op("one_hot_16", [] { return graph::one_hot(idx1, 8); });
  op("pad_8x64", [] { return graph::pad(m, {1, 1}); });
  op("leaky_relu_64", [] { return graph::leaky_relu(v, 0.01); });
  op("softplus_64", [] { return graph::softplus(v); });
  op("elu_64", [] { return graph::elu(v); });
  op("log1p_64", [] { return graph::log1p(v.abs()); });
  op("batch_norm_eval_4x8x8", [] { return graph::batch_norm(img, rm, rv, Tensor(), Tensor(), false, 0.1, 1e-5); });
  op("conv1d_c4_l16_k3", [] { return graph::conv1d(seq, cw); });
  op("interpolate_nearest_8x8_x2", [] {
    return graph::interpolate(img, {16, 16}, graph::kNearest);
  });
  op("adaptive_avg_pool2d_8x8_to_3", [] { return graph::adaptive_avg_pool2d(img, {3, 3}); });
}

}  // namespace

void register_model_suite() {
  models();
  small_ops();
}

}  // namespace bench
