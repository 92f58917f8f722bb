// The op table against everything that must know each op: walking kOpTable,
// an op fails here when it lacks
//   - an interpreter binding (runtime/src/interpreter_kernels.cpp, and
//     grad_kernels.cpp for gradient ops);
//   - a codegen binding (codegen/src/eager_call.cpp, or the elementwise
//     scalar bodies, or the gradient-op path);
//   - a gradient: the autodiff pass differentiates it, unless the table
//     marks it not differentiable (GRAPH_NO_GRAD in every gradient column,
//     or a bool or index result);
//   - a PyTorch fixture (tests/fixtures/ops.txt, which op_fixture_test runs
//     through the eager kernel and its backward), unless kNoFixture below
//     says why it has none.
// docs/adding-an-op.md is the recipe these checks follow. Also the traits:
// what the passes read from the table rather than from lists of names.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "graph/codegen/cpp.h"
#include "graph/codegen/unit.h"
#include "graph/error.h"
#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/ir/autodiff.h"
#include "graph/ir/ir.h"
#include "graph/op_cost.h"
#include "graph/op_properties.h"
#include "graph/op_table.h"

namespace {

using graph::kOpTable;
using graph::OpId;
using graph::OpInfo;
namespace ir = graph::ir;
namespace trait = graph::op_trait;

// Ops without a PyTorch fixture, and why (an entry here is a decision, not a
// way to silence the test).
constexpr std::pair<std::string_view, std::string_view> kNoFixture[] = {
    {"logical_not", "bool in, bool out: runtime_test checks it exactly"},
    {"t", "a view: runtime_test checks views' strides and values"},
    {"transpose", "a view"},
    {"permute", "a view"},
    {"reshape", "a view"},
    {"expand", "a view"},
    {"slice", "a view"},
    {"squeeze", "a view"},
    {"unsqueeze", "a view"},
    {"flatten", "a view"},
    {"dropout", "random: nn_ops_test checks its statistics and mask"},
    {"dropout_mask", "random: Dropout.MaskIsWhatDropoutMultipliesBy, and StaticGrad.TrainingDropout*"},
    {"contiguous", "a copy of a view: the same values; the interpreter and autodiff tests check it"},
    {"rand_like", "random: NnDecompositions.RandomLikeDrawsWhatRandDrawsUnderOneSeed, and static in the VAE model"},
    {"randn_like", "random: NnDecompositions.RandomLikeDrawsWhatRandDrawsUnderOneSeed, and static in the VAE model"},
};

// Fixture cases name a few ops by a shorter name.
std::string fixture_name(std::string_view op) {
  return op == "scaled_dot_product_attention" ? "sdpa" : std::string(op);
}

std::set<std::string> fixture_ops() {
  std::ifstream in(std::string(CXXGRAPH_FIXTURES) + "/ops.txt");
  std::set<std::string> ops;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string word, name, op;
    if (s >> word >> name >> op && word == "case") ops.insert(op);
  }
  return ops;
}

// A graph of one `op` node on f32 tensor parameters, with the attributes a
// node of it needs to be built (the rest take their defaults).
std::unique_ptr<ir::Graph> one_node(const OpInfo& op) {
  auto g = std::make_unique<ir::Graph>("g");
  ir::Node* n = g->top()->append(std::string(op.name));
  const int inputs = op.num_inputs < 0 ? 2 : op.num_inputs;
  for (int i = 0; i < inputs; ++i) n->add_input(g->add_input(ir::Type::tensor(graph::DType::Float32)));
  for (int i = 0; i < op.num_outputs; ++i)
    g->top()->add_return(n->add_output(ir::Type::tensor(graph::DType::Float32)));
  if (op.id == OpId::dropout) n->attrs()["training"] = false;  // training: no gradient, by design
  return g;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(OpTable, EveryOpHasAnInterpreterBinding) {
  for (const OpInfo& op : kOpTable)
    EXPECT_NE(graph::detail::find_kernel(op.name), nullptr)
        << "'" << op.name << "' has no interpreter kernel (runtime/src/interpreter_kernels.cpp)";
}

TEST(OpTable, EveryOpHasACodegenBinding) {
  for (const OpInfo& op : kOpTable) {
    auto g = one_node(op);
    // A missing attribute is the node's fault, not the binding's: only "no
    // CPU lowering" means codegen does not know the op.
    const std::string err = error_of([&] {
      graph::codegen::generate_cpu_source({graph::codegen::graph_unit(*g, "_Z1gv", "h", "m.cpp:1")}, "m.cpp");
    });
    EXPECT_EQ(err.find("no CPU lowering"), std::string::npos)
        << "'" << op.name << "' has no codegen binding (codegen/src/eager_call.cpp): " << err;
  }
}

TEST(OpTable, EveryForwardOpHasAGradientOrIsMarkedNotDifferentiable) {
  for (const OpInfo& op : kOpTable) {
    if (op.has(trait::Backward)) continue;  // gradient ops: differentiated through their forward ops
    auto g = one_node(op);
    std::vector<bool> wanted(g->inputs().size(), true);
    const std::string err = error_of([&] { ir::differentiate(*g, wanted); });
    if (!graph::differentiable(op)) continue;  // the table's explicit "not differentiable"
    EXPECT_EQ(err.find("has no gradient"), std::string::npos)
        << "'" << op.name << "' has no gradient: give it a formula (ops.def), a rule "
        << "(ir/src/passes/autodiff_rules.cpp) or OP_backward, or mark it not differentiable: " << err;
  }
}

TEST(OpTable, EveryForwardOpHasAPyTorchFixture) {
  const std::set<std::string> fixtures = fixture_ops();
  ASSERT_FALSE(fixtures.empty()) << "cannot read " << CXXGRAPH_FIXTURES << "/ops.txt";
  for (const OpInfo& op : kOpTable) {
    if (op.has(trait::Backward)) continue;  // fixtures hold gradients: the forward op's cases cover them
    bool exempt = false;
    for (const auto& [name, why] : kNoFixture) exempt = exempt || name == op.name;
    const bool has = fixtures.count(fixture_name(op.name)) != 0;
    EXPECT_TRUE(has || exempt) << "'" << op.name << "' has no case in tests/fixtures/ops.txt "
                               << "(tests/fixtures/make_op_fixtures.py)";
    EXPECT_FALSE(has && exempt) << "'" << op.name << "' has a fixture now: drop it from kNoFixture";
  }
}

TEST(OpTable, EveryBackwardOpBelongsToAForwardOp) {
  for (const OpInfo& op : kOpTable) {
    if (!op.has(trait::Backward) || !op.name.ends_with("_backward")) continue;
    const OpInfo* fwd = graph::forward_op(op);
    ASSERT_NE(fwd, nullptr) << op.name;
    EXPECT_EQ(graph::backward_op(*fwd), &op) << op.name;
  }
  EXPECT_EQ(graph::forward_op(graph::op_info(OpId::sum_to)), nullptr);  // a shared helper
  EXPECT_EQ(graph::backward_op(graph::op_info(OpId::add)), nullptr);    // a formula instead
}

TEST(OpTable, IdsAreResolvedOnceAndNamesRoundTrip) {
  for (const OpInfo& op : kOpTable) EXPECT_EQ(graph::resolve_op(op.name), op.id);
  for (const OpInfo& p : graph::kPrimitiveTable) {
    EXPECT_EQ(graph::resolve_op(p.name), p.id);
    EXPECT_TRUE(p.primitive()) << p.name;
    EXPECT_EQ(graph::find_op(p.name), nullptr) << p.name << " is a primitive, not a library op";
  }
  EXPECT_EQ(graph::resolve_op("no_such_op"), OpId::unknown);
  ir::Graph g;
  EXPECT_TRUE(g.top()->append("If")->is(OpId::If));
  EXPECT_EQ(g.top()->append("matmul")->table_op(), &graph::op_info(OpId::matmul));
  ir::Node* unknown = g.top()->append("no_such_op");
  EXPECT_EQ(unknown->info(), nullptr);
  EXPECT_EQ(unknown->op(), "no_such_op");  // kept for the printer and the verifier's message
}

TEST(OpTable, TraitsSayWhatThePassesRead) {
  using graph::op_info;
  EXPECT_TRUE(op_info(OpId::add).has(trait::Pure));
  EXPECT_FALSE(op_info(OpId::dropout).has(trait::Pure));
  EXPECT_TRUE(op_info(OpId::dropout).has(trait::Random));
  EXPECT_TRUE(op_info(OpId::embedding).has(trait::ReadsHost));
  EXPECT_TRUE(op_info(OpId::call).has(trait::Effectful));
  EXPECT_TRUE(graph::expensive_op(OpId::exp));
  EXPECT_FALSE(graph::expensive_op(OpId::add));
  EXPECT_FALSE(graph::expensive_op(OpId::matmul));  // cost is an elementwise notion
  EXPECT_TRUE(op_info(OpId::matmul_backward).has(trait::Backward));
}

// scaled_dot_product_attention draws random numbers only with a dropout_p:
// the table says so, and is_random (CSE, CUDA-graph capture) obeys.
TEST(OpTable, AttentionIsRandomOnlyWithDropout) {
  auto g = ir::parse(
      "graph f(%q : Tensor, %k : Tensor, %v : Tensor, %m : Tensor, %p : float) {\n"
      "  %a : Tensor = scaled_dot_product_attention(%q, %k, %v, %m)\n"
      "  %b : Tensor = scaled_dot_product_attention{dropout_p=0.0}(%q, %k, %v, %m)\n"
      "  %c : Tensor = scaled_dot_product_attention{dropout_p=0.25}(%q, %k, %v, %m)\n"
      "  %d : Tensor = scaled_dot_product_attention{dropout_p=\"@4\"}(%q, %k, %v, %m, %p)\n"
      "  return (%a, %b, %c, %d)\n"
      "}\n");
  std::vector<bool> random;
  for (const auto& n : g->top()->nodes()) random.push_back(ir::is_random(*n));
  EXPECT_EQ(random, (std::vector<bool>{false, false, true, true}));
}

}  // namespace

namespace {

// The interpreter passes attention's dropout_p on, as generated code does:
// with dropout_p = 1 every attention weight is dropped and the result is 0.
TEST(OpTable, InterpreterHonoursAttentionDropout) {
  auto g = ir::parse(
      "graph f(%q : Tensor, %k : Tensor, %v : Tensor) {\n"
      "  %m : Tensor = undefined()\n"
      "  %y : Tensor = scaled_dot_product_attention{dropout_p=1.0}(%q, %k, %v, %m)\n"
      "  %z : Tensor = scaled_dot_product_attention(%q, %k, %v, %m)\n"
      "  return (%y, %z)\n"
      "}\n");
  const graph::Tensor q = graph::ones({1, 2, 4}), v = graph::ones({1, 2, 4});
  std::vector<graph::IValue> out = graph::run(*g, {q, q, v});
  const graph::Tensor y = std::get<graph::Tensor>(out[0]), z = std::get<graph::Tensor>(out[1]);
  EXPECT_EQ(graph::sum(graph::abs(y)).item<float>(), 0.0f);
  EXPECT_EQ(graph::sum(z).item<float>(), 8.0f);  // softmax weights sum to 1, v is ones
}

}  // namespace
