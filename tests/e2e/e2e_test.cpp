// End to end: functions annotated [[graph::static]] (static_functions.cpp)
// were lowered by the real plugin inside clang 19, compiled to fused C++ and
// linked here. Each test calls a function as its compiled graph and as its
// eager body, compares the results, and checks from the registry that the
// graph really ran. The generated IR is read back to check its structure.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/ir/ir.h"
#include "e2e_util.h"
#include "static_functions.h"

namespace {

using graph::Tensor;

using namespace e2e;  // pattern, expect_close, calls, compiled_mode

// Runs `f` as the compiled graph (asserting the graph ran once) and eagerly
// (asserting it did not), and compares the results.
template <class F>
Tensor static_vs_eager(const char* mangled, F&& f, float tol = 1e-5f) {
  graph::set_mode(compiled_mode());
  uint64_t before = calls(mangled);
  Tensor fused = f();
  EXPECT_EQ(calls(mangled), before + 1) << mangled << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = f();
  EXPECT_EQ(calls(mangled), before + 1) << mangled << ": eager mode ran the graph";
  graph::set_mode(compiled_mode());
  expect_close(eager, fused, tol);
  return fused;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<graph::ir::Graph> generated_graph(const std::string& fn, const char* suffix = ".graph") {
  return graph::ir::parse(read_file(std::string(CXXGRAPH_GENERATED_DIR) + "/e2e_static_functions/" + fn + suffix));
}

const graph::ir::Node* find_node(const graph::ir::Graph& g, const std::string& op) {
  const graph::ir::Node* found = nullptr;
  graph::ir::walk(g.top(), [&](const graph::ir::Node* n) {
    if (!found && n->op() == op) found = n;
  });
  return found;
}

class StaticGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    if (graph::mode() == graph::Mode::Eager && std::getenv("GRAPH_MODE"))
      GTEST_SKIP() << "GRAPH_MODE=eager: covered by EagerEnv";
  }
};

TEST_F(StaticGraph, SeedModelBothBranches) {
  Tensor W1 = pattern({4, 3}, 0.37f, -0.5f), W2 = pattern({4, 3}, -0.23f, 0.8f);
  Tensor b = pattern({4, 1}, 0.9f, -1.2f), X = pattern({3, 5}, 0.11f, -0.7f);
  for (int flag : {1, 0, -3}) {
    Tensor r = static_vs_eager("_ZN3e2e10seed_modelEN5graph6TensorEiS1_S1_S1_",
                               [&] { return e2e::seed_model(X, flag, W1, W2, b); });
    // Independent check against the eager ops.
    expect_close(graph::relu(graph::matmul(flag > 0 ? W1 : W2, X) + b), r);
  }
}

TEST_F(StaticGraph, SeedModelReadsGlobalsAtEachCall) {
  e2e::G_W1 = pattern({4, 3}, 0.37f, -0.5f);
  e2e::G_W2 = pattern({4, 3}, -0.23f, 0.8f);
  e2e::G_b = pattern({4, 1}, 0.9f, -1.2f);
  Tensor X = pattern({3, 5}, 0.11f, -0.7f);
  const char* name = "_ZN3e2e18seed_model_globalsEN5graph6TensorEi";
  for (int flag : {1, -1}) static_vs_eager(name, [&] { return e2e::seed_model_globals(X, flag); });
  // An update of a global is seen by the next call (it is a graph input).
  e2e::G_b = e2e::G_b + 100.0f;
  Tensor r = static_vs_eager(name, [&] { return e2e::seed_model_globals(X, 1); });
  EXPECT_GT(r.sum().item<float>(), 100.0f * 20 - 50);
}

TEST_F(StaticGraph, RnnStepTakesEachBranch) {
  Tensor W_h = pattern({6, 6}, 0.21f, -0.4f), x = pattern({1, 4}, 0.5f, -0.3f);
  Tensor prev_h = pattern({1, 6}, 0.3f, 0.1f);
  const char* name = "_ZN3e2e8rnn_stepEN5graph6TensorES1_S1_S1_";
  for (float shift : {-0.9f, 0.9f}) {
    Tensor w_x = pattern({6, 4}, 0.05f, shift);
    Tensor h2h = graph::matmul(W_h, prev_h.t());
    bool taken = h2h.sum().item<float>() > w_x.sum().item<float>();
    EXPECT_EQ(taken, shift < 0) << "the inputs should take each side of the branch";
    Tensor expected = graph::tanh(taken ? h2h + graph::matmul(w_x, x.t()) : h2h);
    expect_close(expected, static_vs_eager(name, [&] { return e2e::rnn_step(x, prev_h, W_h, w_x); }));
  }
}

TEST_F(StaticGraph, RnnIfKeepsBothBranchesAsBlocks) {
  auto g = generated_graph("rnn_step");
  const graph::ir::Node* n = find_node(*g, "If");
  ASSERT_NE(n, nullptr) << graph::ir::print(*g);
  ASSERT_EQ(n->blocks().size(), 2u);
  EXPECT_EQ(n->num_outputs(), 1u);  // h2h
  EXPECT_TRUE(n->input(0)->type().is_tensor()) << "the condition is the one-element tensor";
  // The then-block computes matmul(w_x, x.t()) and adds it; the else-block
  // passes h2h through.
  const auto& then_nodes = n->block(0)->nodes();
  std::string ops;
  for (const auto& node : then_nodes) ops += node->op() + " ";
  EXPECT_EQ(ops, "t matmul add ");
  EXPECT_TRUE(n->block(1)->nodes().empty());
  EXPECT_EQ(n->block(1)->returns().at(0), n->input(0)->producer()->input(0)->producer()->input(0))
      << "else returns h2h unchanged";
}

TEST_F(StaticGraph, WrittenOutAttentionBecomesTheFusedOp) {
  Tensor q = pattern({2, 5, 48}, 0.37f, -0.2f), k = pattern({2, 7, 48}, 0.21f, 0.3f);
  Tensor v = pattern({2, 7, 24}, 0.13f, -0.5f), m = pattern({35}, 0.9f, 0.1f);
  // Eager runs the chain as written: the reference for the fused op.
  static_vs_eager("_ZN3e2e6attendEN5graph6TensorES1_S1_S1_", [&] { return e2e::attend(q, k, v, m); });
  auto opt = generated_graph("attend", ".opt.graph");
  const graph::ir::Node* n = find_node(*opt, "scaled_dot_product_attention");
  ASSERT_NE(n, nullptr) << graph::ir::print(*opt);
  const graph::ir::Node* mask = n->input(3)->producer();
  EXPECT_TRUE(!mask || mask->op() != "undefined") << "the added mask is the op's attn_mask";
  EXPECT_EQ(find_node(*opt, "softmax"), nullptr) << graph::ir::print(*opt);
}

TEST_F(StaticGraph, EightOpChainIsOneLoop) {
  Tensor x = pattern({3, 4}, 0.3f, -0.6f), y = pattern({4}, -0.7f, 0.2f);
  static_vs_eager("_ZN3e2e6chain8EN5graph6TensorES1_", [&] { return e2e::chain8(x, y); });
  // Non-contiguous input through the generic strided path.
  Tensor xt = pattern({4, 3}, 0.3f, -0.6f).t();
  static_vs_eager("_ZN3e2e6chain8EN5graph6TensorES1_", [&] { return e2e::chain8(xt, y); });

  auto opt = generated_graph("chain8", ".opt.graph");
  int groups = 0;
  size_t members = 0;
  graph::ir::walk(opt->top(), [&](const graph::ir::Node* n) {
    if (n->op() != "FusionGroup") return;
    ++groups;
    for (const auto& m : n->block(0)->nodes())
      if (m->op() != "constant") ++members;
  });
  EXPECT_EQ(groups, 1) << graph::ir::print(*opt);
  EXPECT_EQ(members, 8u) << graph::ir::print(*opt);
  size_t top_level = 0;
  for (const auto& n : opt->top()->nodes())
    if (n->op() != "constant") ++top_level;
  EXPECT_EQ(top_level, 1u) << "everything but constants is inside the one group";

  // And in the generated C++: one loop nest for the whole chain.
  std::string cpp = read_file(std::string(CXXGRAPH_GENERATED_DIR) + "/e2e_static_functions.graph.cpp");
  size_t begin = cpp.find("bool graph_chain8(");
  ASSERT_NE(begin, std::string::npos);
  size_t end = cpp.find("\nGRAPH_GLUE bool graph_", begin + 1);
  std::string fn = cpp.substr(begin, end - begin);
  size_t loops = 0;
  for (size_t p = 0; (p = fn.find("// fused loop:", p)) != std::string::npos; ++p) ++loops;
  EXPECT_EQ(loops, 1u) << fn;
  EXPECT_NE(fn.find("// fused loop: add, mul, relu, sub, tanh, exp, sigmoid, neg"), std::string::npos) << fn;
  EXPECT_EQ(fn.find("::graph::add("), std::string::npos) << "no eager op calls in the fused path";
}

TEST_F(StaticGraph, ForLoopCarriesCounterAndTensor) {
  Tensor x = pattern({2, 3}, 0.4f, -0.2f);
  for (int n : {0, 1, 5})
    static_vs_eager("_ZN3e2e8for_loopEN5graph6TensorEi", [&] { return e2e::for_loop(x, n); });
  auto g = generated_graph("for_loop");
  const graph::ir::Node* loop = find_node(*g, "Loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->num_outputs(), 2u) << "carries h and i\n" << graph::ir::print(*g);
  EXPECT_EQ(loop->block(0)->params().size(), 3u);  // iteration, h, i (declaration order)
  EXPECT_TRUE(loop->block(0)->param(1)->type().is_tensor());
  EXPECT_EQ(loop->block(0)->param(2)->type().kind, graph::ir::Type::Kind::Int);
  EXPECT_EQ(loop->input(1)->producer()->op(), "lt") << "the first condition is tested before the loop";
}

TEST_F(StaticGraph, WhileLoopWithTensorCondition) {
  for (float scale : {0.1f, 3.0f, 40.0f}) {
    Tensor x = graph::full({2, 2}, scale);
    Tensor r = static_vs_eager("_ZN3e2e10while_loopEN5graph6TensorE", [&] { return e2e::while_loop(x); });
    int steps = 0;
    float s = 4 * scale;
    while (s > 1.0f) s *= 0.5f, ++steps;
    EXPECT_NEAR(r.sum().item<float>(), s + 4 * steps, 1e-4);
  }
}

TEST_F(StaticGraph, IfOnHostScalars) {
  Tensor x = pattern({3}, 1.0f, 0.0f);
  for (bool flag : {true, false})
    static_vs_eager("_ZN3e2e9if_scalarEN5graph6TensorEb", [&] { return e2e::if_scalar(x, flag); });
  for (double th : {-5.0, 5.0})
    static_vs_eager("_ZN3e2e14if_else_assignEN5graph6TensorEd", [&] { return e2e::if_else_assign(x, th); });
}

TEST_F(StaticGraph, ReductionsAndComparisons) {
  Tensor x = pattern({3, 4}, 0.6f, -1.0f);
  static_vs_eager("_ZN3e2e10reductionsEN5graph6TensorE", [&] { return e2e::reductions(x); });
  Tensor mask = static_vs_eager("_ZN3e2e14above_row_meanEN5graph6TensorE", [&] { return e2e::above_row_mean(x); });
  EXPECT_EQ(mask.dtype(), graph::kBool);
}

TEST_F(StaticGraph, NestedIfInsideWhile) {
  Tensor x = pattern({2, 2}, 0.5f, 0.1f);
  for (int n : {0, 2, 6})
    static_vs_eager("_ZN3e2e14nested_controlEN5graph6TensorEi", [&] { return e2e::nested_control(x, n); });
}

TEST_F(StaticGraph, IntegerInputsRunTheGraphSpecialized) {
  // The generated code was built for float32 tensors; int64 inputs fail its
  // guard and run the same graph specialized for them (on the interpreter),
  // with eager's result: `t * 0.5f` promotes to float32.
  Tensor x = graph::tensor({{1, 2}, {3, 4}}), y = graph::tensor({1, 1});
  const char* name = "_ZN3e2e6chain8EN5graph6TensorES1_";
  uint64_t before = calls(name);
  Tensor r = e2e::chain8(x, y);
  EXPECT_EQ(calls(name), before + 1);
  EXPECT_EQ(r.dtype(), graph::kFloat32);
  const graph::Mode mode = graph::mode();
  graph::set_mode(graph::Mode::Eager);
  expect_close(e2e::chain8(x, y), r);
  graph::set_mode(mode);
}

// fflush() is a graph break: it runs eagerly, the `return` after it is a
// static region; the function as a whole has no graph.
TEST_F(StaticGraph, FallbackStatementRunsEagerly) {
  Tensor x = pattern({2}, 1.0f, 0.0f);
  EXPECT_TRUE(graph::detail::registered_graphs().size() >= 10);
  for (const auto* g : graph::detail::registered_graphs())
    EXPECT_NE(std::string(g->mangled_name), "_ZN3e2e10falls_backEN5graph6TensorE");
  const char* region = "_ZN3e2e10falls_backEN5graph6TensorE.region1";
  uint64_t before = calls(region);
  expect_close(x + 1.0f, e2e::falls_back(x));
  EXPECT_EQ(calls(region), before + 1);
}

TEST_F(StaticGraph, ErrorsInsideGraphThrow) {
  Tensor W1 = pattern({4, 3}, 0.37f, -0.5f), b = pattern({4, 1}, 0.9f, -1.2f);
  Tensor X = pattern({2, 5}, 0.11f, -0.7f);  // inner dims disagree
  EXPECT_THROW(e2e::seed_model(X, 1, W1, W1, b), graph::Error);
}

// ---- issue 5 -----------------------------------------------------------------

// Runs `f` as the compiled graph and eagerly; returns both results.
template <class F>
auto both(const char* mangled, F&& f) {
  graph::set_mode(graph::Mode::Static);
  uint64_t before = calls(mangled);
  auto fused = f();
  EXPECT_EQ(calls(mangled), before + 1) << mangled << ": the compiled graph did not run";
  graph::set_mode(graph::Mode::Eager);
  auto eager = f();
  graph::set_mode(graph::Mode::Static);
  return std::make_pair(eager, fused);
}

TEST_F(StaticGraph, ViewsAndAttributeOps) {
  Tensor x = pattern({3, 4}, 0.3f, -0.5f);
  static_vs_eager("_ZN3e2e15views_and_attrsEN5graph6TensorE", [&] { return e2e::views_and_attrs(x); });
  Tensor w = pattern({4, 5}, 0.2f, 0.1f), b = pattern({4}, 0.7f, -0.3f), in = pattern({2, 5}, 0.9f, 0.4f);
  static_vs_eager("_ZN3e2e13nn_functionalEN5graph6TensorES1_S1_", [&] { return e2e::nn_functional(in, w, b); });
  auto g = generated_graph("views_and_attrs");
  const graph::ir::Node* t = find_node(*g, "transpose");
  ASSERT_NE(t, nullptr) << graph::ir::print(*g);
  EXPECT_EQ(t->i("dim0"), 0);
  EXPECT_EQ(t->i("dim1"), 1);
  EXPECT_EQ(find_node(*g, "reshape")->ints("shape"), (std::vector<int64_t>{-1, 2}));
}

TEST_F(StaticGraph, EarlyReturnBreakContinue) {
  Tensor x = pattern({2, 3}, 0.4f, 0.3f);
  for (int n : {-1, 0, 1, 3, 8, 40})
    static_vs_eager("_ZN3e2e11early_exitsEN5graph6TensorEi", [&] { return e2e::early_exits(x, n); });
  for (float shift : {-2.0f, 0.5f})
    for (int n : {0, 1, 2, 5, 9}) {
      Tensor y = pattern({3}, 0.2f, shift);
      static_vs_eager("_ZN3e2e14break_continueEN5graph6TensorEi", [&] { return e2e::break_continue(y, n); });
    }
  // Lowered structurally: no unrolling, one Loop each.
  size_t loops = 0;
  graph::ir::walk(generated_graph("early_exits")->top(), [&](const graph::ir::Node* n) { loops += n->op() == "Loop"; });
  EXPECT_EQ(loops, 1u);
}

TEST_F(StaticGraph, ListsAndTuples) {
  std::vector<Tensor> xs = {pattern({2, 2}, 0.1f, 0.0f), pattern({2, 2}, 0.3f, 0.2f), pattern({2, 2}, 0.5f, -0.4f)};
  Tensor init = pattern({2, 2}, 0.7f, 0.1f);
  static_vs_eager("_ZN3e2e8sum_listERKSt6vectorIN5graph6TensorESaIS2_EES2_", [&] { return e2e::sum_list(xs, init); });
  static_vs_eager("_ZN3e2e8sum_listERKSt6vectorIN5graph6TensorESaIS2_EES2_", [&] { return e2e::sum_list({}, init); });
  auto [eager, fused] = both("_ZN3e2e12running_sumsERKSt6vectorIN5graph6TensorESaIS2_EE",
                             [&] { return e2e::running_sums(xs); });
  ASSERT_EQ(eager.size(), 4u);
  ASSERT_EQ(fused.size(), 4u);
  for (size_t i = 0; i < 4; ++i) expect_close(eager[i], fused[i]);
  for (int n : {1, 5}) {
    auto [e, f] = both("_ZN3e2e12tuple_resultEN5graph6TensorEi", [&] { return e2e::tuple_result(init, n); });
    expect_close(std::get<0>(e), std::get<0>(f));
    expect_close(std::get<1>(e), std::get<1>(f));
    EXPECT_EQ(std::get<2>(e), std::get<2>(f));
  }
}

// A by-value argument is lent to the graph and given back: outputs that are
// the argument or a view of it share its storage, as eagerly, and keep it
// alive after the caller lets go of it (a temporary argument too).
TEST_F(StaticGraph, LentArgumentsAliasTheirOutputsSafely) {
  const char* kLendAliases = "_ZN3e2e12lend_aliasesEN5graph6TensorERKS1_";
  graph::set_mode(compiled_mode());
  const Tensor y = pattern({3, 4}, 0.4f, 0.1f), want = pattern({3, 4}, 0.3f, -0.2f);
  const uint64_t before = calls(kLendAliases);
  Tensor x = pattern({3, 4}, 0.3f, -0.2f);
  auto [same, view, prod] = e2e::lend_aliases(x, y);
  EXPECT_EQ(calls(kLendAliases), before + 1);
  EXPECT_EQ(same.storage(), x.storage());
  EXPECT_EQ(view.storage(), x.storage());
  EXPECT_EQ(view.strides(), (graph::Shape{1, 4}));
  x = Tensor();  // the caller lets go: the outputs hold the storage
  expect_close(want, same, 0.0f);
  expect_close(want.transpose(0, 1), view, 0.0f);
  expect_close(want * y, prod, 0.0f);
  auto [same2, view2, prod2] = e2e::lend_aliases(pattern({3, 4}, 0.3f, -0.2f), y);
  EXPECT_EQ(calls(kLendAliases), before + 2);
  EXPECT_EQ(same2.storage(), view2.storage());
  expect_close(want, same2, 0.0f);
  expect_close(want.transpose(0, 1), view2, 0.0f);
  expect_close(want * y, prod2, 0.0f);
}

TEST_F(StaticGraph, ModuleForwardReadsParametersAtEachCall) {
  graph::manual_seed(3);
  auto net = std::make_shared<e2e::MLPImpl>();
  Tensor x = pattern({5, 4}, 0.3f, -0.2f);
  const char* name = "_ZN3e2e7MLPImpl7forwardEN5graph6TensorE";
  static_vs_eager(name, [&] { return net->forward(x); });
  // A training step updates the weights in place of the handles: the next
  // call sees them (they are graph inputs, not constants).
  net->fc2->weight = net->fc2->weight * 0.5f + 0.25f;
  net->scale = -2.0;
  Tensor r = static_vs_eager(name, [&] { return net->forward(x); });
  Tensor want = graph::linear(graph::relu(graph::linear(x, net->fc1->weight, net->fc1->bias)), net->fc2->weight,
                              net->fc2->bias) * -2.0f;
  expect_close(want, r);
}

// Run by CTest with GRAPH_MODE=eager: annotated functions run their bodies.
TEST(EagerEnv, GraphModeEagerRunsBodies) {
  const char* m = std::getenv("GRAPH_MODE");
  if (!m || std::string(m) != "eager") GTEST_SKIP() << "needs GRAPH_MODE=eager";
  EXPECT_EQ(graph::mode(), graph::Mode::Eager);
  Tensor x = pattern({3, 4}, 0.3f, -0.6f), y = pattern({4}, -0.7f, 0.2f);
  const char* name = "_ZN3e2e6chain8EN5graph6TensorES1_";
  uint64_t before = calls(name);
  Tensor r = e2e::chain8(x, y);
  EXPECT_EQ(calls(name), before);
  Tensor t = graph::tanh(graph::relu((x + y) * 0.5f) - y);
  expect_close(-graph::sigmoid(graph::exp(t)), r);
}

}  // namespace
