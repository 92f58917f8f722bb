// Gradients through lists of tensors in static graphs (list_functions.cpp):
// cat and stack of braced lists and of std::vectors built in loops, lists
// crossing Loops and If branches, and a bidirectional LSTM tagger. Each runs
// as its compiled graph and as the interpreter (GRAPH_MODE=interpret), and
// its value and gradients are compared with eager autograd and with float64
// central differences; the cases of the bug report also with exact values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "grad_check.h"
#include "graph/detail/static_autograd.h"
#include "list_functions.h"

namespace {

using graph::Mode;
using graph::Tensor;
using namespace sg_check;

const Mode kModes[] = {Mode::Static, Mode::Interpret};
const char* mode_name(Mode m) { return m == Mode::Static ? "compiled" : "interpreted"; }

void expect_values(const Tensor& t, const std::vector<float>& want, const std::string& what) {
  ASSERT_TRUE(t.defined()) << what << ": undefined gradient";
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << what;
  const Tensor c = t.to(graph::kFloat32).contiguous();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(c.data_ptr<float>()[i], want[i]) << what << "[" << i << "]";
}

// The two functions of the bug report, with its inputs: eager gives
// a.grad = [8, 8], b.grad = [6, 6], w.grad = [4, 4].
TEST(ListGrad, BugReportValues) {
  for (Mode m : kModes) {
    SCOPED_TRACE(mode_name(m));
    graph::set_mode(m);
    Tensor a = graph::ones({2}).requires_grad_(), b = graph::full({2}, 3.0).requires_grad_();
    const uint64_t runs = graph::detail::graph_calls("_ZN2lg10cat_bracedERKN5graph6TensorES3_");
    Tensor y = lg::cat_braced(a, b);
    EXPECT_EQ(graph::detail::graph_calls("_ZN2lg10cat_bracedERKN5graph6TensorES3_"), runs + 1);
    y.backward();
    expect_values(a.grad(), {8, 8}, "a.grad");
    expect_values(b.grad(), {6, 6}, "b.grad");

    Tensor w = graph::full({2}, 0.5).requires_grad_(), x = graph::ones({2});
    Tensor z = lg::stack_loop(w, x);
    z.backward();
    expect_values(w.grad(), {4, 4}, "w.grad");
    EXPECT_FALSE(x.grad().defined());
    graph::set_mode(Mode::Static);
  }
}

TEST(ListGrad, CatOfABracedList) {
  for (Mode m : kModes)
    check_gradients("_ZN2lg10cat_bracedERKN5graph6TensorES3_",
                    [](const std::vector<Tensor>& in) { return lg::cat_braced(in[0], in[1]); },
                    {pattern({2, 3}, 0.4f, -0.2f), pattern({1, 3}, 0.3f, 0.5f)}, {}, m);
}

TEST(ListGrad, StackOfAVectorBuiltInALoop) {
  for (Mode m : kModes)
    for (std::vector<size_t> no_grad : {std::vector<size_t>{1}, std::vector<size_t>{}})
      check_gradients("_ZN2lg10stack_loopERKN5graph6TensorES3_",
                      [](const std::vector<Tensor>& in) { return lg::stack_loop(in[0], in[1]); },
                      {pattern({2, 3}, 0.4f, -0.2f), pattern({3}, 0.3f, 0.5f)}, no_grad, m);
}

TEST(ListGrad, CatAndStackInsideAnIfBranch) {
  for (Mode m : kModes)
    for (bool flag : {true, false}) {
      SCOPED_TRACE(flag);
      check_gradients("_ZN2lg9cat_in_ifERKN5graph6TensorES3_b",
                      [flag](const std::vector<Tensor>& in) {
                        Tensor y = lg::cat_in_if(in[0], in[1], flag);
                        return (y * weights_like(y)).sum();
                      },
                      {pattern({2, 3}, 0.4f, -0.2f), pattern({2, 3}, 0.3f, 0.5f)}, {}, m);
    }
}

TEST(ListGrad, CatInsideALoopBody) {
  for (Mode m : kModes)
    for (int steps : {0, 1, 3}) {
      SCOPED_TRACE(steps);
      check_gradients("_ZN2lg11cat_in_loopERKN5graph6TensorES3_i",
                      [steps](const std::vector<Tensor>& in) {
                        Tensor y = lg::cat_in_loop(in[0], in[1], steps);
                        return (y * weights_like(y)).sum();
                      },
                      {pattern({2, 3}, 0.4f, -0.2f), pattern({2, 3}, 0.3f, 0.5f)}, {}, m);
    }
}

// A list built in one Loop and read at a computed index in another: the
// index of each iteration is saved for the backward.
TEST(ListGrad, ListReadAtAComputedIndexInALoop) {
  for (Mode m : kModes)
    for (int n : {0, 1, 4}) {
      SCOPED_TRACE(n);
      check_gradients("_ZN2lg18list_read_reversedERKN5graph6TensorES3_i",
                      [n](const std::vector<Tensor>& in) {
                        Tensor y = lg::list_read_reversed(in[0], in[1], n);
                        return (y * weights_like(y)).sum();
                      },
                      {pattern({2, 3}, 0.4f, -0.2f), pattern({2, 3}, 0.3f, 0.5f)}, {}, m);
    }
}

// A list result cannot receive gradients from the tape: the call runs
// eagerly, says why, and its gradients are eager autograd's.
TEST(ListGrad, ListResultRunsEagerlyWithItsReason) {
  Tensor x = pattern({3}, 0.4f, -0.2f).requires_grad_();
  const uint64_t before = graph::detail::graph_calls("_ZN2lg11list_resultERKN5graph6TensorE");
  testing::internal::CaptureStderr();
  std::vector<Tensor> r = lg::list_result(x);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(graph::detail::graph_calls("_ZN2lg11list_resultERKN5graph6TensorE"), before) << "the graph ran";
  EXPECT_NE(said.find("list_functions.cpp"), std::string::npos) << said;
  EXPECT_NE(said.find("list of tensors"), std::string::npos) << said;
  (r[0].sum() + r[1].sum()).backward();
  expect_close(x.grad(), graph::exp(x.detach()) + 2.0, 1e-6, "x.grad");
  // Without grad the graph runs.
  graph::NoGradGuard no_grad;
  lg::list_result(x);
  EXPECT_EQ(graph::detail::graph_calls("_ZN2lg11list_resultERKN5graph6TensorE"), before + 1);
}

// The tagger's every parameter gets eager autograd's gradient, the
// embedding's and the LSTM cells' included (they were undefined).
TEST(ListGrad, BidirectionalTaggerTrainsLikeEager) {
  const char* mangled = "_ZN2lg12BiTaggerImpl7forwardERKN5graph6TensorE";
  const Tensor ids = graph::tensor<int64_t>({3, 0, 4, 4, 1});
  const Tensor target = graph::tensor<int64_t>({1, 0, 2, 2, 1});
  for (Mode m : kModes) {
    SCOPED_TRACE(mode_name(m));
    std::vector<Tensor> grads[2];
    Tensor losses[2];
    graph::manual_seed(21);
    lg::BiTagger net(6, 4, 3, 3);
    for (Mode run : {m, Mode::Eager}) {
      graph::set_mode(run);
      const size_t k = run == Mode::Eager;
      net->zero_grad();
      const uint64_t before = graph::detail::graph_calls(mangled);
      losses[k] = graph::cross_entropy(net(ids), target);
      EXPECT_EQ(graph::detail::graph_calls(mangled) - before, k ? 0u : 1u);
      losses[k].backward();
      for (const Tensor& p : net->parameters()) grads[k].push_back(p.grad());
    }
    graph::set_mode(Mode::Static);
    expect_close(losses[0], losses[1], 1e-5, "loss");
    ASSERT_EQ(grads[0].size(), 11u);  // emb, 4 linears of weight and bias, head
    for (size_t i = 0; i < grads[0].size(); ++i)
      expect_close(grads[0][i], grads[1][i], 1e-5, "parameter " + std::to_string(i));
  }
}

// ---- GRAPH_CHECK=1 compares gradients too (ctest list_grad_graph_check) --------

// The gradient registered for the function `mangled`.
graph::detail::CompiledGradient* gradient_of(const char* mangled) {
  for (const graph::detail::CompiledGraph* g : graph::detail::registered_graphs())
    if (std::string(g->mangled_name) == mangled)
      return const_cast<graph::detail::CompiledGradient*>(graph::detail::find_gradient(g->mangled_name, g->body_hash));
  return nullptr;
}

// Test-only faults in a generated backward: the first gradient doubled, or
// dropped (undefined).
graph::detail::BackwardFn real_backward = nullptr;
bool drop_instead = false;
bool faulty_backward(const graph::IValue* in, size_t n, const bool* needed, graph::IValue* out,
                     std::string* why) {
  if (!real_backward(in, n, needed, out, why)) return false;
  Tensor& g = std::get<Tensor>(out[0]);
  g = drop_instead ? Tensor() : g * 2.0;
  return true;
}

// cat_braced's objective with a and b requiring grad; what GRAPH_CHECK printed.
std::string checked_cat_braced(Tensor* a_grad = nullptr) {
  Tensor a = graph::ones({2}).requires_grad_(), b = graph::full({2}, 3.0).requires_grad_();
  testing::internal::CaptureStderr();
  lg::cat_braced(a, b).backward();
  if (a_grad) *a_grad = a.grad();
  return testing::internal::GetCapturedStderr();
}

TEST(GraphCheck, ComparesEachInputGradientWithEager) {
  if (!graph::detail::check_enabled()) GTEST_SKIP() << "run with GRAPH_CHECK=1 (ctest list_grad_graph_check)";
  const std::string said = checked_cat_braced();
  EXPECT_NE(said.find("(list_functions.cpp:7): output 0 max |graph - eager| = 0"), std::string::npos) << said;
  EXPECT_NE(said.find("(list_functions.cpp:7): gradient of input 0 max |graph - eager| = 0; gradient of input 1 "
                      "max |graph - eager| = 0"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("error"), std::string::npos) << said;
}

TEST(GraphCheck, ReportsABrokenGradientAtTheFunctionsLine) {
  if (!graph::detail::check_enabled()) GTEST_SKIP() << "run with GRAPH_CHECK=1 (ctest list_grad_graph_check)";
  graph::detail::CompiledGradient* d = gradient_of("_ZN2lg10cat_bracedERKN5graph6TensorES3_");
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->unsupported, nullptr);
  real_backward = d->backward;
  d->backward = faulty_backward;
  for (bool drop : {false, true}) {
    drop_instead = drop;
    Tensor a_grad;
    const std::string said = checked_cat_braced(&a_grad);
    // The graph's (broken) gradient is what the caller gets; the check says so.
    if (drop) {
      EXPECT_FALSE(a_grad.defined());
      EXPECT_NE(said.find("list_functions.cpp:7: error: graph check: the gradient of input 0 differs from eager "
                          "autograd's (one side is undefined)"),
                std::string::npos)
          << said;
    } else {
      expect_values(a_grad, {16, 16}, "a.grad doubled");
      EXPECT_NE(said.find("list_functions.cpp:7: error: graph check: the gradient of input 0 differs from eager "
                          "autograd's (8)"),
                std::string::npos)
          << said;
      EXPECT_NE(said.find("gradient of input 0 max |graph - eager| = 8; gradient of input 1 max |graph - eager| = 0"),
                std::string::npos)
          << said;
    }
    EXPECT_EQ(said.find("the gradient of input 1 differs"), std::string::npos) << said;
  }
  d->backward = real_backward;
}

}  // namespace
