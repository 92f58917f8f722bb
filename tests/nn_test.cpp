// graph::nn modules, graph::optim optimizers and parameter files:
// registration and dotted names, holders, train/eval, each module's forward
// against hand-computed values, gradients reaching every parameter (and
// matching finite differences in float64), SGD/Adam steps against the
// formulas, save/load round trips and every load error, and three trainings
// against PyTorch's loss curves (tests/reference, see train_reference.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "graph/graph.h"
#include "train.h"

namespace {

using graph::Error;
using graph::Shape;
using graph::Tensor;
namespace nn = graph::nn;
namespace optim = graph::optim;

#ifndef CXXGRAPH_REFERENCE_DIR
#error "CXXGRAPH_REFERENCE_DIR must name tests/reference"
#endif

// Writes `v` into a float32 or float64 tensor's own storage (no autograd).
void set(const Tensor& t, const std::vector<double>& v) {
  ASSERT_TRUE(t.is_contiguous());
  ASSERT_EQ(static_cast<int64_t>(v.size()), t.numel());
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype() == graph::kFloat32)
      t.data_ptr<float>()[i] = static_cast<float>(v[i]);
    else
      t.data_ptr<double>()[i] = v[i];
  }
  t.bump_version();  // writes through data_ptr are not tracked by themselves
}

std::vector<double> vec(const Tensor& t) {
  Tensor c = t.detach().to(graph::kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  std::vector<double> got = vec(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "element " << i;
}

// Deterministic values in [lo, hi).
std::vector<double> values(size_t n, double lo, double hi, int seed) {
  std::vector<double> v(n);
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (double& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
  return v;
}

Tensor filled(const Shape& shape, double lo, double hi, int seed, graph::DType dt = graph::kFloat32) {
  Tensor t = graph::empty(shape, dt);
  set(t, values(static_cast<size_t>(t.numel()), lo, hi, seed));
  return t;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no graph::Error>";
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "cxxgraph_nn_test_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// ---- registration ---------------------------------------------------------------

struct BlockImpl : nn::Module {
  BlockImpl() : Module("Block") {
    scale = register_parameter("scale", graph::ones({3}));
    register_buffer("count", graph::zeros({1}, graph::kInt64));
    fc = register_module("fc", nn::Linear(3, 3));
  }
  Tensor forward(const Tensor& x) { return fc(x) * scale; }
  Tensor scale;
  nn::Linear fc{nullptr};
};
GRAPH_MODULE(Block);

struct NetImpl : nn::Module {
  NetImpl()
      : fc1(register_module("fc1", nn::Linear(2, 3))),
        block(register_module("block", Block())),
        fc2(register_module("fc2", nn::Linear(3, 1, /*bias=*/false))) {
    offset = register_parameter("offset", graph::zeros({1}));
  }
  Tensor forward(const Tensor& x) { return fc2(block(graph::tanh(fc1(x)))) + offset; }
  nn::Linear fc1;
  Block block;
  nn::Linear fc2;
  Tensor offset;
};
GRAPH_MODULE(Net);

std::vector<std::string> names(const nn::NamedTensors& named) {
  std::vector<std::string> v;
  for (auto& [n, t] : named) v.push_back(n);
  return v;
}

TEST(Module, DottedNamesInRegistrationOrder) {
  Net net;
  // Own parameters first, then each submodule's, as PyTorch orders them.
  EXPECT_EQ(names(net->named_parameters()),
            (std::vector<std::string>{"offset", "fc1.weight", "fc1.bias", "block.scale", "block.fc.weight",
                                      "block.fc.bias", "fc2.weight"}));
  EXPECT_EQ(names(net->named_parameters(/*recurse=*/false)), std::vector<std::string>{"offset"});
  EXPECT_EQ(names(net->named_buffers()), std::vector<std::string>{"block.count"});
  EXPECT_EQ(net->parameters().size(), 7u);
  for (auto& [n, p] : net->named_parameters()) {
    EXPECT_TRUE(p.requires_grad()) << n;
    EXPECT_TRUE(p.is_leaf()) << n;
  }
  EXPECT_FALSE(net->named_buffers()[0].second.requires_grad());
  auto children = net->named_children();
  ASSERT_EQ(children.size(), 3u);
  EXPECT_EQ(children[1].first, "block");
  EXPECT_EQ(children[1].second.get(), net->block.ptr().get());
  std::vector<std::string> mods;
  for (auto& [n, m] : net->named_modules()) mods.push_back(n);
  EXPECT_EQ(mods, (std::vector<std::string>{"", "fc1", "block", "block.fc", "fc2"}));
  EXPECT_EQ(net->fc1->name(), "Linear");
}

TEST(Module, HandlesShareDataAndGradients) {
  Net net;
  Tensor w = net->named_parameters()[1].second;
  EXPECT_EQ(w.storage(), net->fc1->weight.storage());
  net(graph::ones({4, 2})).sum().backward();
  ASSERT_TRUE(net->fc1->weight.grad().defined());
  EXPECT_EQ(w.grad().storage(), net->fc1->weight.grad().storage());
  net->zero_grad();
  for (auto& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, SharedParametersAreListedOnce) {
  nn::Linear shared(2, 2);
  nn::Sequential seq(shared, nn::ReLU(), shared);
  EXPECT_EQ(names(seq->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
}

TEST(Module, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", graph::zeros({2}));
  EXPECT_NE(error_of([&] { m.register_parameter("w", graph::zeros({2})); }).find("already registered"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.register_buffer("w", graph::zeros({2})); }).find("already registered"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.register_module("w", nn::ReLU()); }).find("already registered"), std::string::npos);
  EXPECT_NE(error_of([&] { m.register_parameter("a.b", graph::zeros({2})); }).find("must not contain '.'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.register_parameter("", graph::zeros({2})); }).find("must not be empty"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.register_parameter("i", graph::zeros({2}, graph::kInt64)); }).find("floating"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.register_module("e", nn::Linear(nullptr)); }).find("empty module holder"),
            std::string::npos);
  // An integer tensor can be a parameter that does not require grad.
  EXPECT_FALSE(m.register_parameter("steps", graph::zeros({1}, graph::kInt64), false).requires_grad());
}

TEST(Module, RegisteredTensorIsDetachedLeaf) {
  Tensor a = graph::ones({2}).requires_grad_();
  Tensor b = a * 2;  // not a leaf
  nn::Module m;
  Tensor& p = m.register_parameter("p", b);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_TRUE(p.requires_grad());
  (p * 3).sum().backward();
  EXPECT_FALSE(a.grad().defined());
  expect_near(p.grad(), {3, 3});
}

TEST(Holder, ForwardCallAndEmptyHolder) {
  nn::Linear fc(3, 2);
  nn::Linear same = fc;  // copies the handle
  EXPECT_EQ(same.get(), fc.get());
  EXPECT_EQ(fc->weight.sizes(), (Shape{2, 3}));
  Tensor x = filled({4, 3}, -1, 1, 1);
  expect_near(fc(x), vec(fc->forward(x)), 0);
  nn::Linear empty(nullptr);
  EXPECT_TRUE(empty.is_empty());
  EXPECT_NE(error_of([&] { empty(x); }).find("empty module holder"), std::string::npos);
  empty = fc;
  EXPECT_FALSE(empty.is_empty());
}

TEST(Module, TrainEvalPropagates) {
  Net net;
  EXPECT_TRUE(net->is_training());
  net->eval();
  EXPECT_FALSE(net->is_training());
  EXPECT_FALSE(net->block->is_training());
  EXPECT_FALSE(net->block->fc->is_training());
  net->train();
  EXPECT_TRUE(net->block->fc->is_training());

  nn::Dropout drop(0.5);
  Tensor x = filled({1000}, 1, 2, 3);
  drop->eval();
  expect_near(drop(x), vec(x), 0);
  drop->train();
  std::vector<double> y = vec(drop(x)), xs = vec(x);
  int zeros = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(y[i], 2 * xs[i], 1e-5);
    }
  }
  EXPECT_GT(zeros, 400);
  EXPECT_LT(zeros, 600);
  EXPECT_NE(error_of([] { nn::Dropout(1.5); }).find("p must be in [0, 1]"), std::string::npos);
}

TEST(Module, ToFloat64KeepsLeavesAndMembers) {
  Net net;
  std::vector<double> w = vec(net->fc1->weight);
  net->to(graph::kFloat64);
  EXPECT_EQ(net->fc1->weight.dtype(), graph::kFloat64);  // the member itself
  for (auto& [n, p] : net->named_parameters()) {
    EXPECT_EQ(p.dtype(), graph::kFloat64) << n;
    EXPECT_TRUE(p.requires_grad() && p.is_leaf()) << n;
  }
  EXPECT_EQ(net->named_buffers()[0].second.dtype(), graph::kInt64);  // integer buffers stay
  expect_near(net->fc1->weight, w, 1e-7);
  Tensor y = net(filled({2, 2}, -1, 1, 4, graph::kFloat64));
  EXPECT_EQ(y.dtype(), graph::kFloat64);
  y.sum().backward();
  EXPECT_EQ(net->fc1->weight.grad().dtype(), graph::kFloat64);
}

// ---- module forwards against hand-computed values ---------------------------------

TEST(Linear, ForwardAndInit) {
  nn::Linear fc(3, 2);
  set(fc->weight, {1, 2, 3, 4, 5, 6});
  set(fc->bias, {0.5, -1});
  Tensor x = graph::tensor<float>({{1, 0, -1}, {2, 1, 0}});
  expect_near(fc(x), {-1.5, -3, 4.5, 12});
  nn::Linear nb(3, 2, false);
  EXPECT_FALSE(nb->bias.defined());
  EXPECT_EQ(nb->parameters().size(), 1u);
  // uniform(+-1/sqrt(fan_in)), and not degenerate.
  nn::Linear big(100, 50);
  for (const Tensor& p : big->parameters()) {
    std::vector<double> v = vec(p);
    double lo = 1, hi = -1;
    for (double e : v) lo = std::min(lo, e), hi = std::max(hi, e);
    EXPECT_GE(lo, -0.1);
    EXPECT_LE(hi, 0.1);
    EXPECT_LT(lo, -0.08);
    EXPECT_GT(hi, 0.08);
  }
  EXPECT_NE(error_of([] { nn::Linear(0, 2); }).find("in_features must be positive"), std::string::npos);
}

TEST(Conv2d, ForwardAndInit) {
  nn::Conv2d conv(1, 1, 2);
  EXPECT_EQ(conv->weight.sizes(), (Shape{1, 1, 2, 2}));
  set(conv->weight, {1, 1, 1, 1});
  set(conv->bias, {0.5});
  Tensor x = graph::arange(1, 10).to(graph::kFloat32).reshape({1, 1, 3, 3});
  expect_near(conv(x), {12.5, 16.5, 24.5, 28.5});
  nn::Conv2d padded(1, 1, 2, /*stride=*/2, /*padding=*/1);
  set(padded->weight, {1, 1, 1, 1});
  set(padded->bias, {0.5});
  Tensor y = padded(x);
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 2, 2}));
  expect_near(y, {1.5, 5.5, 11.5, 28.5});
  nn::Conv2d grouped(4, 6, Shape{3, 1}, 1, Shape{1, 0}, 1, /*groups=*/2);
  EXPECT_EQ(grouped->weight.sizes(), (Shape{6, 2, 3, 1}));
  EXPECT_EQ(grouped(filled({2, 4, 5, 5}, -1, 1, 5)).sizes(), (Shape{2, 6, 5, 5}));
  const double bound = 1 / std::sqrt(2.0 * 3 * 1);
  for (double e : vec(grouped->weight)) EXPECT_LE(std::fabs(e), bound);
  EXPECT_NE(error_of([] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }).find("divisible by groups"), std::string::npos);
  EXPECT_NE(error_of([] { nn::Conv2d(3, 4, Shape{3, 3, 3}); }).find("kernel_size must be one number or two"),
            std::string::npos);
}

TEST(LayerNorm, Forward) {
  nn::LayerNorm ln(Shape{4});
  expect_near(ln->weight, {1, 1, 1, 1}, 0);
  expect_near(ln->bias, {0, 0, 0, 0}, 0);
  set(ln->weight, {1, 1, 2, 2});
  set(ln->bias, {0, 0, 1, 1});
  Tensor x = graph::tensor<float>({{1, 2, 3, 4}, {2, 2, 2, 2}});
  const double s = 1 / std::sqrt(1.25 + 1e-5);
  expect_near(ln(x), {-1.5 * s, -0.5 * s, 2 * 0.5 * s + 1, 2 * 1.5 * s + 1, 0, 0, 1, 1}, 1e-5);
  nn::LayerNorm plain(Shape{2, 2}, 1e-5, /*elementwise_affine=*/false);
  EXPECT_TRUE(plain->parameters().empty());
  EXPECT_EQ(plain(graph::ones({3, 2, 2})).sizes(), (Shape{3, 2, 2}));
}

TEST(Embedding, Forward) {
  nn::Embedding emb(4, 3);
  set(emb->weight, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32});
  Tensor idx = graph::tensor<int64_t>({{2, 0}, {3, 3}});
  Tensor y = emb(idx);
  EXPECT_EQ(y.sizes(), (Shape{2, 2, 3}));
  expect_near(y, {20, 21, 22, 0, 1, 2, 30, 31, 32, 30, 31, 32}, 0);
  // normal(0, 1) init: plausible moments.
  nn::Embedding big(200, 50);
  std::vector<double> v = vec(big->weight);
  double mean = 0, sq = 0;
  for (double e : v) mean += e, sq += e * e;
  mean /= v.size();
  sq /= v.size();
  EXPECT_NEAR(mean, 0, 0.05);
  EXPECT_NEAR(sq, 1, 0.05);
}

double sigm(double x) { return 1 / (1 + std::exp(-x)); }

TEST(LSTMCell, ForwardByHand) {
  nn::LSTMCell cell(1, 1);
  EXPECT_EQ(cell->weight_ih.sizes(), (Shape{4, 1}));
  set(cell->weight_ih, {0.5, -0.25, 1.0, 0.75});
  set(cell->weight_hh, {0.1, 0.2, -0.3, 0.4});
  set(cell->bias_ih, {0.0, 0.5, 0.0, -0.5});
  set(cell->bias_hh, {0.1, 0.0, 0.2, 0.0});
  const double x = 2, h = -1, c = 0.5;
  auto [h2, c2] = cell(graph::full({1, 1}, x), {graph::full({1, 1}, h), graph::full({1, 1}, c)});
  const double i = sigm(0.5 * x + 0.1 * h + 0.1), f = sigm(-0.25 * x + 0.2 * h + 0.5);
  const double g = std::tanh(1.0 * x - 0.3 * h + 0.2), o = sigm(0.75 * x + 0.4 * h - 0.5);
  const double cn = f * c + i * g;
  expect_near(c2, {cn});
  expect_near(h2, {o * std::tanh(cn)});
  // A zero initial state by default; shapes [N, H].
  nn::LSTMCell big(3, 5);
  auto [hb, cb] = big(filled({4, 3}, -1, 1, 6));
  EXPECT_EQ(hb.sizes(), (Shape{4, 5}));
  EXPECT_EQ(cb.sizes(), (Shape{4, 5}));
}

TEST(MultiheadAttention, MatchesLoops) {
  const int64_t N = 2, L = 3, S = 4, E = 4, H = 2, D = 2;
  nn::MultiheadAttention mha(E, H);
  EXPECT_EQ(names(mha->named_parameters()), (std::vector<std::string>{"in_proj_weight", "in_proj_bias",
                                                                      "out_proj.weight", "out_proj.bias"}));
  expect_near(mha->in_proj_bias, std::vector<double>(3 * E, 0.0), 0);
  expect_near(mha->out_proj->bias, std::vector<double>(E, 0.0), 0);
  set(mha->in_proj_bias, values(3 * E, -0.5, 0.5, 7));
  set(mha->out_proj->bias, values(E, -0.5, 0.5, 8));
  Tensor q = filled({N, L, E}, -1, 1, 9), k = filled({N, S, E}, -1, 1, 10), v = filled({N, S, E}, -1, 1, 11);
  Tensor y = mha(q, k, v);
  ASSERT_EQ(y.sizes(), (Shape{N, L, E}));

  std::vector<double> W = vec(mha->in_proj_weight), B = vec(mha->in_proj_bias);
  std::vector<double> Wo = vec(mha->out_proj->weight), Bo = vec(mha->out_proj->bias);
  std::vector<double> Q = vec(q), K = vec(k), V = vec(v);
  auto proj = [&](const std::vector<double>& X, int64_t rows, int64_t part) {
    std::vector<double> out(rows * E);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < E; ++o) {
        double s = B[part * E + o];
        for (int64_t e = 0; e < E; ++e) s += X[r * E + e] * W[(part * E + o) * E + e];
        out[r * E + o] = s;
      }
    return out;
  };
  std::vector<double> want;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> qn(Q.begin() + n * L * E, Q.begin() + (n + 1) * L * E);
    std::vector<double> kn(K.begin() + n * S * E, K.begin() + (n + 1) * S * E);
    std::vector<double> vn(V.begin() + n * S * E, V.begin() + (n + 1) * S * E);
    std::vector<double> pq = proj(qn, L, 0), pk = proj(kn, S, 1), pv = proj(vn, S, 2);
    std::vector<double> attn(L * E, 0.0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> w(S);
        double mx = -1e300, z = 0;
        for (int64_t s = 0; s < S; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += pq[l * E + h * D + d] * pk[s * E + h * D + d];
          w[s] = dot / std::sqrt(double(D));
          mx = std::max(mx, w[s]);
        }
        for (double& e : w) z += (e = std::exp(e - mx));
        for (int64_t d = 0; d < D; ++d)
          for (int64_t s = 0; s < S; ++s) attn[l * E + h * D + d] += w[s] / z * pv[s * E + h * D + d];
      }
    for (int64_t l = 0; l < L; ++l)
      for (int64_t o = 0; o < E; ++o) {
        double s = Bo[o];
        for (int64_t e = 0; e < E; ++e) s += attn[l * E + e] * Wo[o * E + e];
        want.push_back(s);
      }
  }
  expect_near(y, want, 1e-5);
  EXPECT_NE(error_of([] { nn::MultiheadAttention(6, 4); }).find("divisible by num_heads"), std::string::npos);
}

TEST(Sequential, NamesAndForward) {
  nn::Sequential seq(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(names(seq->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  Tensor x = filled({5, 2}, -1, 1, 12);
  auto& fc0 = seq->at<nn::LinearImpl>(0);
  auto& fc2 = seq->at<nn::LinearImpl>(2);
  expect_near(seq(x), vec(graph::linear(graph::relu(graph::linear(x, fc0.weight, fc0.bias)), fc2.weight, fc2.bias)),
              1e-6);
  EXPECT_NE(error_of([&] { seq->at<nn::LinearImpl>(1); }).find("not of the requested type"), std::string::npos);
  seq->push_back("out", nn::Sigmoid());
  EXPECT_EQ(seq->named_children().back().first, "out");
  std::vector<double> s = vec(seq(x));
  for (double e : s) EXPECT_TRUE(e > 0 && e < 1);
}

TEST(Pooling, Modules) {
  Tensor x = graph::arange(16).to(graph::kFloat32).reshape({1, 1, 4, 4});
  expect_near(nn::MaxPool2d(2)(x), {5, 7, 13, 15}, 0);
  expect_near(nn::AvgPool2d(2)(x), {2.5, 4.5, 10.5, 12.5}, 1e-6);
  EXPECT_EQ(nn::MaxPool2d(2, 1)(x).sizes(), (Shape{1, 1, 3, 3}));
  EXPECT_EQ(nn::Flatten()(x).sizes(), (Shape{1, 16}));
}

// ---- gradients -----------------------------------------------------------------

// backward() reaches every parameter, and (in float64) matches central
// differences of the loss with respect to each parameter element.
template <class Holder, class F>
void check_module_gradients(Holder m, F&& loss_of) {
  m->to(graph::kFloat64);
  m->zero_grad();
  loss_of().backward();
  for (auto& [name, p] : m->named_parameters()) {
    Tensor g = p.grad();
    ASSERT_TRUE(g.defined()) << name << " got no gradient";
    ASSERT_EQ(g.sizes(), p.sizes()) << name;
    std::vector<double> gv = vec(g);
    double* data = p.template data_ptr<double>();
    const double eps = 1e-6;
    bool nonzero = false;
    for (size_t i = 0; i < gv.size(); ++i) {
      nonzero |= gv[i] != 0;
      const double keep = data[i];
      double up, down;
      {
        graph::NoGradGuard ng;
        data[i] = keep + eps;
        up = loss_of().template item<double>();
        data[i] = keep - eps;
        down = loss_of().template item<double>();
        data[i] = keep;
      }
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(gv[i], numeric, 1e-6 * (1 + std::fabs(numeric))) << name << " element " << i;
    }
    EXPECT_TRUE(nonzero) << name << " has an all-zero gradient";
  }
}

Tensor weights_for(const Shape& s) { return filled(s, 0.5, 1.5, 99, graph::kFloat64); }

TEST(Gradients, ReachEveryParameterAndMatchFiniteDifferences) {
  {
    nn::Linear m(3, 2);
    Tensor x = filled({4, 3}, -1, 1, 20, graph::kFloat64);
    check_module_gradients(m, [&] { return (m(x) * weights_for({4, 2})).sum(); });
  }
  {
    nn::Conv2d m(2, 4, 3, 1, 1, 1, 2);
    Tensor x = filled({2, 2, 4, 4}, -1, 1, 21, graph::kFloat64);
    check_module_gradients(m, [&] { return (m(x) * weights_for({2, 4, 4, 4})).sum(); });
  }
  {
    nn::LayerNorm m(Shape{5});
    Tensor x = filled({3, 5}, -1, 1, 22, graph::kFloat64);
    check_module_gradients(m, [&] { return (m(x) * weights_for({3, 5})).sum(); });
  }
  {
    nn::Embedding m(5, 3);
    Tensor idx = graph::tensor<int64_t>({0, 1, 2, 3, 4, 1});
    check_module_gradients(m, [&] { return (m(idx) * weights_for({6, 3})).sum(); });
  }
  {
    nn::LSTMCell m(3, 2);
    Tensor x = filled({4, 3}, -1, 1, 23, graph::kFloat64);
    Tensor h = filled({4, 2}, -1, 1, 24, graph::kFloat64), c = filled({4, 2}, -1, 1, 25, graph::kFloat64);
    check_module_gradients(m, [&] {
      auto [h2, c2] = m(x, {h, c});
      return (h2 * weights_for({4, 2})).sum() + (c2 * c2).sum();
    });
  }
  {
    nn::MultiheadAttention m(4, 2);
    Tensor q = filled({2, 3, 4}, -1, 1, 26, graph::kFloat64), kv = filled({2, 5, 4}, -1, 1, 27, graph::kFloat64);
    check_module_gradients(m, [&] { return (m(q, kv, kv) * weights_for({2, 3, 4})).sum(); });
  }
  {
    train_example::Seq m;
    Tensor tokens = graph::tensor<int64_t>({{1, 2, 3}, {4, 5, 6}});
    check_module_gradients(m, [&] { return (m(tokens) * weights_for({2})).sum(); });
  }
}

// ---- optimizers ----------------------------------------------------------------

// A parameter p and a loss whose gradient is c * p + d (so it changes as p does).
struct Problem {
  Tensor p = graph::tensor<float>({1.0f, -2.0f, 0.5f}).requires_grad_();
  std::vector<double> c{0.5, 1.5, -1.0}, d{0.25, -0.5, 0.75};
  std::vector<double> grad_at(const std::vector<double>& x) const {
    std::vector<double> g(x.size());
    for (size_t i = 0; i < x.size(); ++i) g[i] = c[i] * x[i] + d[i];
    return g;
  }
  void backward() {
    Tensor ct = graph::from_vector({0.5f, 1.5f, -1.0f}, {3}), dt = graph::from_vector({0.25f, -0.5f, 0.75f}, {3});
    (ct * p * p * 0.5 + dt * p).sum().backward();
  }
};

// Runs `steps` steps of `opt` on the problem and of `reference` (which updates
// x in double from the gradient at x) and compares.
template <class Opt, class Ref>
void compare_steps(Problem& pr, Opt& opt, int steps, Ref reference, double tol = 1e-6) {
  std::vector<double> x = vec(pr.p);
  const void* storage = pr.p.storage().get();
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    pr.backward();
    const uint64_t version = pr.p.version();
    opt.step();
    EXPECT_GT(pr.p.version(), version);  // an in-place write (Tensor::version)
    reference(x, pr.grad_at(x));
    expect_near(pr.p, x, tol);
  }
  EXPECT_EQ(pr.p.storage().get(), storage);  // updated in place
  EXPECT_TRUE(pr.p.is_leaf() && pr.p.requires_grad());
}

TEST(SGD, PlainStepByHand) {
  Problem pr;
  optim::SGD opt({pr.p}, optim::SGDOptions(0.1));
  pr.backward();  // g = c*p + d = {0.75, -3.5, 0.25}
  opt.step();
  expect_near(pr.p, {1 - 0.075, -2 + 0.35, 0.5 - 0.025});
}

TEST(SGD, WeightDecayMomentumDampening) {
  Problem pr;
  optim::SGD opt({pr.p}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.2).weight_decay(0.01));
  std::vector<double> buf;
  compare_steps(pr, opt, 4, [&](std::vector<double>& x, std::vector<double> g) {
    for (size_t i = 0; i < x.size(); ++i) g[i] += 0.01 * x[i];
    if (buf.empty()) {
      buf = g;  // the first step takes the gradient as it is (no dampening)
    } else {
      for (size_t i = 0; i < x.size(); ++i) buf[i] = 0.9 * buf[i] + 0.8 * g[i];
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] -= 0.1 * buf[i];
  });
}

TEST(SGD, Nesterov) {
  Problem pr;
  optim::SGD opt({pr.p}, optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
  std::vector<double> buf;
  compare_steps(pr, opt, 4, [&](std::vector<double>& x, std::vector<double> g) {
    if (buf.empty()) {
      buf = g;
    } else {
      for (size_t i = 0; i < x.size(); ++i) buf[i] = 0.9 * buf[i] + g[i];
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] -= 0.05 * (g[i] + 0.9 * buf[i]);
  });
}

TEST(SGD, ErrorsAndSkipsParametersWithoutGradient) {
  Tensor p = graph::ones({2}).requires_grad_();
  EXPECT_NE(error_of([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }).find("nesterov"), std::string::npos);
  EXPECT_NE(error_of([&] { optim::SGD({p}, optim::SGDOptions(-1)); }).find("invalid learning rate"), std::string::npos);
  Tensor q = p * 2;
  EXPECT_NE(error_of([&] { optim::SGD({q}, optim::SGDOptions(0.1)); }).find("not a leaf"), std::string::npos);
  EXPECT_NE(error_of([&] { optim::SGD({graph::ones({2}, graph::kInt64)}, optim::SGDOptions(0.1)); }).find("float32 or float64"),
            std::string::npos);
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  const uint64_t version = p.version();
  opt.step();  // no gradient yet: nothing happens
  expect_near(p, {1, 1}, 0);
  EXPECT_EQ(p.version(), version);
}

TEST(Adam, FirstStepIsLrTimesSign) {
  Problem pr;
  optim::Adam opt({pr.p}, optim::AdamOptions(0.1));
  pr.backward();
  opt.step();
  // m_hat = g, v_hat = g^2: the step is lr * g / (|g| + eps).
  expect_near(pr.p, {1 - 0.1, -2 + 0.1, 0.5 - 0.1}, 1e-6);
  EXPECT_EQ(opt.step_count(0), 1);
}

// Adam as the PyTorch documentation writes it, in double.
auto adam_reference(double lr, double b1, double b2, double eps, double wd, bool amsgrad) {
  struct State {
    std::vector<double> m, v, vmax;
    int t = 0;
  };
  auto st = std::make_shared<State>();
  return [=](std::vector<double>& x, std::vector<double> g) {
    if (st->m.empty()) st->m = st->v = st->vmax = std::vector<double>(x.size(), 0.0);
    ++st->t;
    for (size_t i = 0; i < x.size(); ++i) {
      g[i] += wd * x[i];
      st->m[i] = b1 * st->m[i] + (1 - b1) * g[i];
      st->v[i] = b2 * st->v[i] + (1 - b2) * g[i] * g[i];
      st->vmax[i] = std::max(st->vmax[i], st->v[i]);
      const double mhat = st->m[i] / (1 - std::pow(b1, st->t));
      const double vhat = (amsgrad ? st->vmax[i] : st->v[i]) / (1 - std::pow(b2, st->t));
      x[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  };
}

TEST(Adam, BiasCorrectionAndWeightDecayOverSteps) {
  Problem pr;
  optim::Adam opt({pr.p}, optim::AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-3).weight_decay(0.1));
  compare_steps(pr, opt, 6, adam_reference(0.05, 0.8, 0.99, 1e-3, 0.1, false), 2e-6);
}

TEST(Adam, Amsgrad) {
  Problem pr;
  optim::Adam opt({pr.p}, optim::AdamOptions(0.2).amsgrad(true));
  compare_steps(pr, opt, 8, adam_reference(0.2, 0.9, 0.999, 1e-8, 0, true), 2e-6);
}

TEST(Adam, Float64AndErrors) {
  Tensor p = graph::full({2}, 3.0, graph::kFloat64).requires_grad_();
  optim::Adam opt({p}, optim::AdamOptions(0.5).eps(0));
  (p * p).sum().backward();
  opt.step();
  EXPECT_EQ(p.dtype(), graph::kFloat64);
  expect_near(p, {2.5, 2.5}, 1e-14);
  EXPECT_NE(error_of([&] { optim::Adam({p}, optim::AdamOptions().betas({1.0, 0.9})); }).find("beta parameter at index 0"),
            std::string::npos);
}

TEST(Optim, ModuleSeesUpdatesAndZeroGrad) {
  nn::Linear fc(2, 1);
  set(fc->weight, {1, 1});
  set(fc->bias, {0});
  optim::SGD opt(fc->parameters(), optim::SGDOptions(0.5));
  fc(graph::tensor<float>({{1, 2}})).sum().backward();
  opt.step();
  expect_near(fc->weight, {0.5, 0}, 0);
  expect_near(fc->bias, {-0.5}, 0);
  opt.zero_grad();
  EXPECT_FALSE(fc->weight.grad().defined());
}

// ---- saving and loading -----------------------------------------------------------

TEST(Serialize, RoundTripIntoExistingTensors) {
  const std::string path = temp_path("roundtrip.bin");
  Net a, b;
  a->named_buffers()[0].second.data_ptr<int64_t>()[0] = 42;
  nn::save(*a, path);
  Tensor w = b->fc1->weight;
  optim::SGD opt(b->parameters(), optim::SGDOptions(0.1));
  const uint64_t version = w.version();
  nn::load(*b, path);
  EXPECT_GT(w.version(), version);  // loading writes the parameters in place
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) expect_near(pb[i].second, vec(pa[i].second), 0);
  EXPECT_EQ(b->named_buffers()[0].second.data_ptr<int64_t>()[0], 42);
  EXPECT_EQ(w.storage(), b->fc1->weight.storage());  // loaded in place
  EXPECT_TRUE(b->fc1->weight.requires_grad() && b->fc1->weight.is_leaf());
  // A float64 module loads a float32 file (converted).
  Net c;
  c->to(graph::kFloat64);
  nn::load(*c, path);
  expect_near(c->fc2->weight, vec(a->fc2->weight), 0);
  std::remove(path.c_str());
}

TEST(Serialize, TensorsOfEveryDtypeAndShape) {
  const std::string path = temp_path("tensors.bin");
  nn::NamedTensors in{{"f", filled({2, 3}, -1, 1, 30)},
                      {"d", filled({4}, -1, 1, 31, graph::kFloat64)},
                      {"i", graph::tensor<int64_t>({-5, 7, 1LL << 40})},
                      {"b", graph::tensor({true, false, true})},
                      {"s", graph::full({}, 2.5)},
                      {"empty", graph::zeros({0, 3})},
                      {"view", filled({3, 2}, -1, 1, 32).t()}};
  in.push_back({"h", graph::ones({2}).to(graph::kFloat16)});
  in.push_back({"i32", graph::arange(3).to(graph::kInt32)});
  nn::save_tensors(in, path);
  nn::NamedTensors out = nn::load_tensors(path);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.dtype(), in[i].second.dtype()) << in[i].first;
    EXPECT_EQ(out[i].second.sizes(), in[i].second.sizes()) << in[i].first;
    EXPECT_EQ(vec(out[i].second), vec(in[i].second)) << in[i].first;
  }
  // The documented layout: magic, version 1, count, then the first record.
  const std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 40u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("CXGRAPH\0", 8));
  EXPECT_EQ(bytes.substr(8, 4), std::string("\1\0\0\0", 4));
  EXPECT_EQ(bytes.substr(12, 8), std::string("\x9\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(bytes.substr(20, 5), std::string("\1\0\0\0f", 5));
  EXPECT_EQ(bytes[25], 0);  // float32
  std::remove(path.c_str());
}

TEST(Serialize, LoadErrorsNameTheProblemAndLeaveTheModuleAlone) {
  const std::string path = temp_path("errors.bin");
  nn::Sequential small(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  nn::save(*small, path);
  nn::Sequential target(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1));
  const std::vector<double> before = vec(target->at<nn::LinearImpl>(0).weight);

  nn::Sequential missing(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1), nn::Linear(1, 1));
  std::string e = error_of([&] { nn::load(*missing, path); });
  EXPECT_NE(e.find("missing '3.weight', '3.bias'"), std::string::npos) << e;

  nn::Sequential extra(nn::Linear(2, 3), nn::ReLU(), nn::Linear(3, 1, false));
  e = error_of([&] { nn::load(*extra, path); });
  EXPECT_NE(e.find("unexpected '2.bias'"), std::string::npos) << e;

  nn::Sequential shapes(nn::Linear(2, 4), nn::ReLU(), nn::Linear(4, 1));
  e = error_of([&] { nn::load(*shapes, path); });
  EXPECT_NE(e.find("shape mismatch '0.weight': file [3, 2], module [4, 2]"), std::string::npos) << e;
  EXPECT_NE(e.find("'2.weight': file [1, 3], module [1, 4]"), std::string::npos) << e;

  e = error_of([&] { nn::load(*target, temp_path("does_not_exist.bin")); });
  EXPECT_NE(e.find("cannot open"), std::string::npos) << e;

  const std::string good = read_bytes(path);
  auto load_bytes = [&](const std::string& bytes) {
    write_bytes(path, bytes);
    return error_of([&] { nn::load(*target, path); });
  };
  EXPECT_NE(load_bytes("hello, world, not a file").find("bad magic"), std::string::npos);
  std::string v2 = good;
  v2[8] = 2;
  EXPECT_NE(load_bytes(v2).find("unsupported format version 2"), std::string::npos);
  EXPECT_NE(load_bytes(good + "x").find("1 unexpected bytes after the last tensor"), std::string::npos);
  std::string bad_dtype = good;
  bad_dtype[20 + 4 + 8] = 9;  // first record: name_len(4) "0.weight"(8), then dtype
  EXPECT_NE(load_bytes(bad_dtype).find("unknown dtype code 9"), std::string::npos);
  std::string bad_len = good;
  bad_len[20 + 4 + 8 + 1 + 4 + 16] = 7;  // nbytes of the [3, 2] float tensor (24)
  EXPECT_NE(load_bytes(bad_len).find("does not match shape [3, 2]"), std::string::npos);
  std::string huge_count = good;
  huge_count[19] = 0x7f;
  EXPECT_NE(load_bytes(huge_count).find("exceeds the file size"), std::string::npos);
  std::string huge_name = good;
  huge_name[23] = 0x7f;
  EXPECT_NE(load_bytes(huge_name).find("name length"), std::string::npos);
  // Every truncation is a clean error.
  for (size_t n = 0; n < good.size(); ++n) {
    e = load_bytes(good.substr(0, n));
    EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("bad magic") != std::string::npos ||
                e.find("exceeds the file size") != std::string::npos)
        << "prefix " << n << ": " << e;
  }
  expect_near(target->at<nn::LinearImpl>(0).weight, before, 0);
  // Duplicates are refused on both sides.
  EXPECT_NE(error_of([&] { nn::save_tensors({{"a", graph::ones({1})}, {"a", graph::ones({1})}}, path); })
                .find("duplicate tensor name 'a'"),
            std::string::npos);
  std::remove(path.c_str());
}

// ---- training against PyTorch -------------------------------------------------------

// Full-batch trainings from PyTorch's initial weights; tests/reference/
// train_losses.txt holds PyTorch 1.13's losses for the same steps. float32
// throughout, with a different summation order in matmul, conv and the
// reductions, so the curves agree to rounding: 1e-4 relative per step.
TEST(Training, MatchesPyTorchLossCurves) {
  const std::string dir = CXXGRAPH_REFERENCE_DIR;
  auto ours = train_example::run_all(dir, /*print=*/false);
  auto torch = train_example::read_reference(dir + "/train_losses.txt");
  ASSERT_EQ(ours.size(), 3u);
  for (auto& [model, losses] : ours) {
    ASSERT_TRUE(torch.count(model)) << model;
    const auto& ref = torch.at(model);
    ASSERT_EQ(losses.size(), ref.size()) << model;
    double worst = 0;
    for (size_t i = 0; i < losses.size(); ++i) {
      const double rel = std::fabs(losses[i] - ref[i]) / std::fabs(ref[i]);
      worst = std::max(worst, rel);
      EXPECT_LT(rel, 1e-4) << model << " step " << i << ": ours " << losses[i] << ", PyTorch " << ref[i];
    }
    std::printf("%s: %zu steps, loss %.6f -> %.6f, largest relative difference to PyTorch %.2e\n", model.c_str(),
                losses.size(), losses.front(), losses.back(), worst);
    EXPECT_LT(losses.back(), 0.5 * losses.front()) << model << ": the loss must fall";
  }
}

}  // namespace
