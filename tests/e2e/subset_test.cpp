// End to end for the C++ subset (subset_functions.cpp): each function runs as
// its compiled graph (asserting the graph ran) and as its eager body, on the
// same inputs, and the results must agree. Inputs that C++ leaves undefined
// (an integer division by zero) are errors inside the graph.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graph_calls.h"
#include "subset_functions.h"

namespace {

using graph::Tensor;

using e2e::pattern;

void expect_close(const Tensor& eager, const Tensor& fused) {
  ASSERT_EQ(eager.defined(), fused.defined());
  if (!eager.defined()) return;
  ASSERT_EQ(eager.sizes(), fused.sizes());
  ASSERT_EQ(eager.dtype(), fused.dtype());
  Tensor a = eager.to(graph::kFloat32).contiguous(), b = fused.to(graph::kFloat32).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    float x = a.data_ptr<float>()[i], y = b.data_ptr<float>()[i];
    ASSERT_NEAR(x, y, 1e-5f * (1 + std::fabs(x))) << "element " << i;
  }
}
void expect_close(int eager, int fused) { EXPECT_EQ(eager, fused); }
template <class... T>
void expect_close(const std::tuple<T...>& eager, const std::tuple<T...>& fused) {
  [&]<size_t... I>(std::index_sequence<I...>) {
    (expect_close(std::get<I>(eager), std::get<I>(fused)), ...);
  }(std::index_sequence_for<T...>{});
}
template <class A, class B>
void expect_close(const std::pair<A, B>& eager, const std::pair<A, B>& fused) {
  expect_close(eager.first, fused.first);
  expect_close(eager.second, fused.second);
}

using e2e::calls;
using e2e::compiled_mode;

// Runs `f` as the compiled graph (which must run once) and eagerly, and
// compares the results.
template <class F>
void static_vs_eager(const std::string& fragment, F&& f) {
  graph::set_mode(compiled_mode());
  uint64_t before = calls(fragment);
  auto fused = f();
  EXPECT_EQ(calls(fragment), before + 1) << fragment << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  auto eager = f();
  graph::set_mode(compiled_mode());
  expect_close(eager, fused);
}

struct LSTMWeights {
  Tensor W = pattern({3, 16}, 0.37f, -0.4f), U = pattern({4, 16}, 0.21f, 0.3f), b = pattern({16}, 0.5f, -1.f);
  Tensor h = pattern({2, 4}, 0.3f, 0.1f), c = pattern({2, 4}, -0.2f, 0.4f);
};

TEST(Subset, TupleLocalsBindingsTieAndGet) {
  LSTMWeights w;
  Tensor x0 = pattern({2, 3}, 0.4f, 0.f), x1 = pattern({2, 3}, -0.3f, 0.2f);
  static_vs_eager("lstm_steps", [&] { return subset::lstm_steps(x0, x1, w.h, w.c, w.W, w.U, w.b); });
}

TEST(Subset, UserLSTMOverASequence) {
  LSTMWeights w;
  std::vector<Tensor> xs = {pattern({2, 3}, 0.4f, 0.f), pattern({2, 3}, -0.3f, 0.2f), pattern({2, 3}, 0.1f, 0.5f)};
  static_vs_eager("lstm_sequence", [&] { return subset::lstm_sequence(xs, w.h, w.c, w.W, w.U, w.b); });
}

TEST(Subset, TuplesMergeThroughBranchesAndAlias) {
  Tensor x = pattern({3, 2}, 0.5f, -0.2f);
  for (int k : {0, 1}) static_vs_eager("tuple_branches", [&] { return subset::tuple_branches(x, k); });
  static_vs_eager("tuple_param", [&] { return subset::tuple_param({x, 4}, x); });
  auto [t, n] = subset::tuple_param({x, 4}, x);
  EXPECT_EQ(n, 10);
}

TEST(Subset, LSTMCellModuleAndLinearWithoutBias) {
  graph::manual_seed(3);
  auto net = std::make_shared<subset::LSTMNetImpl>();
  ASSERT_FALSE(net->head->bias.defined());
  Tensor x = pattern({2, 3}, 0.4f, 0.f), h = pattern({2, 4}, 0.3f, 0.1f), c = pattern({2, 4}, -0.2f, 0.4f);
  // Inference: here the forward graph itself is checked (the gate slices are
  // slice_dyn, whose gradient is slice_backward with run-time bounds).
  graph::autograd::NoGradGuard no_grad;
  static_vs_eager("LSTMNetImpl7forward", [&] { return net->forward(x, h, c); });
  net->cell->weight_ih = net->cell->weight_ih * 0.5;  // parameters are read at each call
  static_vs_eager("LSTMNetImpl7forward", [&] { return net->forward(x, h, c); });
}

TEST(Subset, OptionalTensors) {
  Tensor x = pattern({2, 3}, 0.5f, -0.5f);
  static_vs_eager("maybe_bias", [&] { return subset::maybe_bias(x, Tensor()); });
  static_vs_eager("maybe_bias", [&] { return subset::maybe_bias(x, pattern({3}, 1.f, 0.f)); });
  for (bool use : {false, true})
    static_vs_eager("bias_on_one_path",
                    [&] { return subset::bias_on_one_path(x, pattern({4, 3}, 0.4f, 0.1f), use); });
  graph::manual_seed(1);
  auto net = std::make_shared<subset::NoBiasImpl>();
  static_vs_eager("NoBiasImpl7forward", [&] { return net->forward(pattern({5, 4}, 0.2f, -0.3f)); });
}

TEST(Subset, ShapesAsHostInts) {
  for (graph::Shape s : {graph::Shape{2, 3, 4}, graph::Shape{5, 2}, graph::Shape{1, 6, 1, 2}}) {
    Tensor x = pattern(s, 0.3f, -0.1f);
    static_vs_eager("flatten_batch", [&] { return subset::flatten_batch(x); });
    static_vs_eager("halves", [&] { return subset::halves(x); });
  }
  Tensor odd = pattern({3, 5}, 0.3f, 0.f);  // size 5: halves of 2
  static_vs_eager("halves", [&] { return subset::halves(odd); });
}

TEST(Subset, BadSizesAreErrorsInBothModes) {
  Tensor x = pattern({2, 3}, 0.3f, 0.f);
  for (graph::Mode m : {compiled_mode(), graph::Mode::Eager}) {
    graph::set_mode(m);
    try {
      subset::size_out_of_range(x);
      ADD_FAILURE() << "no error";
    } catch (const graph::Error& e) {
      EXPECT_NE(std::string(e.what()).find("size"), std::string::npos) << e.what();
    }
  }
  graph::set_mode(compiled_mode());
}

TEST(Subset, IntegerDivisionAndRemainderTruncate) {
  Tensor x = pattern({4}, 0.5f, 0.f);
  for (auto [a, b] : {std::pair{7, 2}, {-7, 2}, {7, -2}, {-7, -2}, {0, 5}, {5, 7}})
    static_vs_eager("int_ops", [&, a = a, b = b] { return subset::int_ops(x, a, b); });
  // C++ leaves these undefined; in the graph they are errors.
  graph::set_mode(compiled_mode());
  try {
    subset::int_ops(x, 3, 0);
    ADD_FAILURE() << "no error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("integer division by zero"), std::string::npos) << e.what();
  }
}

TEST(Subset, IntFloatConversionsFollowCxx) {
  Tensor x = pattern({4}, 0.5f, 0.f);
  for (auto [n, d] : {std::pair{3, 1.9}, {-4, -1.9}, {7, 0.2}, {2, -0.4}})
    static_vs_eager("conversions", [&, n = n, d = d] { return subset::conversions(x, n, d); });
  // One value by hand: numel 4 / n 3, 3 / 2 = 1, trunc(5.7) = 5, trunc(1.9) = 1.
  graph::set_mode(compiled_mode());
  Tensor y = subset::conversions(graph::zeros({4}), 3, 1.9);
  EXPECT_FLOAT_EQ(y.data_ptr<float>()[0], 1 + 50 + 100);
  // C++ leaves NaN and out-of-range conversions undefined; in the graph they are errors.
  for (double bad : {std::nan(""), 1e300}) {
    try {
      subset::conversions(x, 3, bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const graph::Error& e) {
      EXPECT_NE(std::string(e.what()).find("to an integer is out of range"), std::string::npos) << e.what();
    }
  }
}

TEST(Subset, SwitchAndDoWhile) {
  Tensor x = pattern({2, 3}, 0.7f, -0.4f);
  for (int k = -1; k <= 4; ++k) {
    static_vs_eager("pick", [&] { return subset::pick(x, k); });
    static_vs_eager("switch_fallthrough", [&] { return subset::switch_fallthrough(x, k); });
  }
  for (int n : {0, 1, 4, 9}) static_vs_eager("switch_in_loop", [&] { return subset::switch_in_loop(x, n); });
  for (int n : {0, 1, 2, 5}) static_vs_eager("do_while", [&] { return subset::do_while(x, n); });
}

TEST(Subset, AttributesKnownAtRunTime) {
  Tensor x = pattern({2, 3, 5}, 0.4f, -0.3f);
  for (int64_t d : {-1, 0, 2})
    for (int64_t s : {-2, 3})
      static_vs_eager("runtime_attrs", [&] { return subset::runtime_attrs(x, d, 1e-2, s); });
  // A bad run-time dim is an error naming it in both modes.
  for (graph::Mode m : {compiled_mode(), graph::Mode::Eager}) {
    graph::set_mode(m);
    EXPECT_THROW(subset::runtime_attrs(x, 7, 1e-5, 1), graph::Error);
  }
  graph::set_mode(compiled_mode());
}

TEST(Subset, IntListsKnownAtRunTime) {
  Tensor x = pattern({2, 6}, 0.4f, -0.3f), like = pattern({3, 4}, 0.3f, 0.2f);
  static_vs_eager("reshape_like", [&] { return subset::reshape_like(x, like); });
  static_vs_eager("reshape_like", [&] { return subset::reshape_like(x, pattern({12}, 0.2f, 0.1f)); });
  static_vs_eager("view_expand", [&] { return subset::view_expand(pattern({1, 4}, 0.5f, 0.f), like); });
  static_vs_eager("view_expand", [&] { return subset::view_expand(pattern({3, 1}, 0.5f, 0.f), like); });
  for (int64_t k : {1, 2, 3}) static_vs_eager("local_shape", [&] { return subset::local_shape(x, k); });
  // Hand-computed: x [2, 6] -> reshape [4, 3] -> permute -> [3, 4], times s[0] = 4.
  {
    graph::set_mode(compiled_mode());
    Tensor y = subset::local_shape(graph::arange(0, 12).to(graph::kFloat32).view({2, 6}), 2);
    ASSERT_EQ(y.sizes(), (graph::Shape{3, 4}));
    Tensor c = y.contiguous();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(c.data_ptr<float>()[i * 4 + j], 4.0f * float(j * 3 + i));
  }
  for (int k : {0, 1, 2, 3}) {
    static_vs_eager("shape_branches", [&] { return subset::shape_branches(pattern({4, 6}, 0.2f, 0.f), k); });
    graph::set_mode(compiled_mode());
    const int64_t cols[] = {6, 6, 3, 1};  // [4, 6], [-1, 6], [-1, 3], [-1, 1], summed over dim 0
    EXPECT_EQ(subset::shape_branches(pattern({4, 6}, 0.2f, 0.f), k).sizes(), (graph::Shape{cols[k]}));
  }
  static_vs_eager("shape_params", [&] { return subset::shape_params(x, {3, -1}, {1, 0}); });
  static_vs_eager("shape_params", [&] { return subset::shape_params(x, {2, 3, 2}, {2, 0, 1}); });
  for (int64_t n : {0, 1, 4}) static_vs_eager("factories", [&] { return subset::factories(x, 0.25, n); });
  {
    graph::set_mode(compiled_mode());
    Tensor f = subset::factories(graph::zeros({2, 3}), 0.5, 3);  // 2 * 2 + 3 * 0.5 + 2 = 7.5
    ASSERT_EQ(f.sizes(), (graph::Shape{3}));
    ASSERT_EQ(f.dtype(), graph::kFloat32);
    for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(f.contiguous().data_ptr<float>()[i], 7.5f);
  }
  for (int64_t a : {0, 1}) static_vs_eager("permute_ints", [&] { return subset::permute_ints(pattern({2, 3, 4}, 0.3f, 0.f), a); });
  // Sizes that do not fit are errors at run time in both modes; the graph's
  // names the op and the source line.
  for (graph::Mode m : {compiled_mode(), graph::Mode::Eager}) {
    graph::set_mode(m);
    EXPECT_THROW(subset::reshape_like(x, pattern({5, 2}, 0.3f, 0.2f)), graph::Error);
    EXPECT_THROW(subset::view_expand(pattern({2, 4}, 0.5f, 0.f), like), graph::Error);
    EXPECT_THROW(subset::permute_ints(pattern({2, 3, 4}, 0.3f, 0.f), 2), graph::Error);
    EXPECT_THROW(subset::shape_params(x, {5, -1}, {1, 0}), graph::Error);
    EXPECT_THROW(subset::shape_params(x, {3, -1}, {0, 0}), graph::Error);
    EXPECT_THROW(subset::factories(x, 0.25, -2), graph::Error);
  }
  graph::set_mode(compiled_mode());
  try {
    subset::local_shape(x, 5);  // [10, -1] from 12 elements
    ADD_FAILURE() << "no error";
  } catch (const graph::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("reshape: shape [10, -1] is invalid for input of size 12"), std::string::npos) << what;
    EXPECT_NE(what.find("subset_functions.cpp:" + std::to_string(subset::kLocalShapeReshapeLine)), std::string::npos) << what;
  }
}

TEST(Subset, LayerNormModuleReadsItsShapeMember) {
  graph::manual_seed(5);
  auto net = std::make_shared<subset::NormNetImpl>();
  graph::autograd::NoGradGuard no_grad;
  net->ln->weight = pattern({4}, 0.5f, 1.f);
  net->ln->bias = pattern({4}, 0.3f, -0.2f);
  for (graph::Shape s : {graph::Shape{2, 3}, graph::Shape{4, 2, 3}})
    static_vs_eager("NormNetImpl7forward", [&] { return net->forward(pattern(s, 0.3f, 0.1f)); });
  // The member is read at each call: normalizing over the last two dims now.
  net->ln->normalized_shape = {2, 4};
  net->ln->weight = Tensor();
  net->ln->bias = Tensor();
  static_vs_eager("NormNetImpl7forward", [&] { return net->forward(pattern({3, 2, 3}, 0.3f, 0.1f)); });
  // A shape that does not match is an error in both modes.
  for (graph::Mode m : {compiled_mode(), graph::Mode::Eager}) {
    graph::set_mode(m);
    EXPECT_THROW(net->forward(pattern({3, 3, 3}, 0.3f, 0.1f)), graph::Error);
  }
  graph::set_mode(compiled_mode());
}

TEST(Subset, Conv2dModuleReadsItsStrideAndPadding) {
  graph::manual_seed(6);
  auto net = std::make_shared<subset::ConvNetImpl>();
  graph::autograd::NoGradGuard no_grad;
  for (graph::Shape s : {graph::Shape{1, 2, 7, 6}, graph::Shape{2, 2, 5, 9}})
    static_vs_eager("ConvNetImpl7forward", [&] { return net->forward(pattern(s, 0.2f, -0.1f)); });
  // Members changed after construction are seen by the next call.
  net->conv1->stride = {1, 1};
  net->conv1->padding = {0, 2};
  static_vs_eager("ConvNetImpl7forward", [&] { return net->forward(pattern({1, 2, 7, 6}, 0.2f, -0.1f)); });
}

TEST(Subset, MultiheadAttentionModules) {
  graph::manual_seed(7);
  auto net = std::make_shared<subset::AttnNetImpl>();
  ASSERT_FALSE(net->without_bias->in_proj_bias.defined());
  graph::autograd::NoGradGuard no_grad;
  net->with_bias->in_proj_bias = pattern({24}, 0.3f, -0.2f);  // zeros by default
  for (graph::Shape s : {graph::Shape{2, 3, 8}, graph::Shape{1, 5, 8}})
    static_vs_eager("AttnNetImpl7forward", [&] { return net->forward(pattern(s, 0.25f, 0.1f)); });
  // The head count is a member read at each call.
  net->without_bias->num_heads = 2;
  net->without_bias->head_dim = 4;
  static_vs_eager("AttnNetImpl7forward", [&] { return net->forward(pattern({2, 3, 8}, 0.25f, 0.1f)); });
}

}  // namespace
