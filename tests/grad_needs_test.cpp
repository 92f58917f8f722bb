// Gradients only where they are wanted (ir/output_reach.h): which outputs of
// a backward graph each value reaches; the generated backward testing its
// `needed` flags; and the interpreter running a backward graph with
// RunOptions::needed_outputs: an unwanted input gradient is not computed
// (undefined; the gradient op's kernel gets a mask without it), the wanted
// ones equal those of a run that wants all. (static_grad_test runs the
// generated code: StaticTraining.InputsThatDoNotRequireGradCostNoBackwardWork.)
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "graph/autograd.h"
#include "graph/codegen/cpp.h"
#include "graph/codegen/grad.h"
#include "graph/detail/backward_kernels.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/autodiff.h"
#include "graph/ir/output_reach.h"
#include "graph/ops.h"
#include "support/gradcheck.h"

namespace graph {
namespace {

using gradcheck_support::values;

const ir::Value* named(const ir::Graph& g, const std::string& name) {
  const ir::Value* found = nullptr;
  ir::walk(g.top(), [&](const ir::Node* n) {
    for (const ir::Value* o : n->outputs())
      if (o->name() == name) found = o;
  });
  return found;
}

TEST(OutputReach, FollowsEachValueToTheOutputsItFeeds) {
  auto g = ir::parse(
      "graph f(%g : Tensor, %x : Tensor, %w : Tensor) {\n"
      "  %a : Tensor = mul(%g, %w)\n"
      "  %b : Tensor = mul(%g, %x)\n"
      "  %c : Tensor = exp(%a)\n"
      "  %d : Tensor = add(%c, %b)\n"
      "  return (%c, %b, %d)\n"
      "}\n");
  const ir::OutputReach reach(*g);
  EXPECT_EQ(reach.num_outputs(), 3u);
  EXPECT_EQ(reach.of(named(*g, "a")), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(reach.of(named(*g, "b")), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(reach.of(named(*g, "d")), (std::vector<size_t>{2}));
  EXPECT_EQ(reach.of(g->inputs()[0].get()), (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(reach.reaches_all(reach.of(g->inputs()[0].get())));
  EXPECT_TRUE(ir::OutputReach::any(reach.of(named(*g, "a")), {false, false, true}));
  EXPECT_FALSE(ir::OutputReach::any(reach.of(named(*g, "a")), {false, true, false}));
}

TEST(OutputReach, ANodeWithBlocksCountsAsOne) {
  // %v is read only inside the If: it reaches both of the If's outputs.
  auto g = ir::parse(
      "graph f(%c : bool, %v : Tensor, %u : Tensor) {\n"
      "  %r : Tensor, %s : Tensor = If(%c)\n"
      "    block() {\n"
      "      %e : Tensor = exp(%v)\n"
      "      -> (%e, %u)\n"
      "    }\n"
      "    block() {\n"
      "      -> (%u, %u)\n"
      "    }\n"
      "  return (%r, %s, %u)\n"
      "}\n");
  const ir::OutputReach reach(*g);
  EXPECT_EQ(reach.of(g->inputs()[1].get()), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(reach.of(g->inputs()[2].get()), (std::vector<size_t>{0, 1, 2}));
}

// The masks the backward kernels were given.
std::vector<std::pair<std::string, detail::GradMask>> g_masks;
void record_mask(const char* op, detail::GradMask m) { g_masks.emplace_back(op, m); }

// y = tanh(linear(tanh(x) * 2, w, b)): differentiated for x, w and b.
const char* kLayer =
    "graph f(%x : Tensor, %w : Tensor, %b : Tensor) {\n"
    "  %t : Tensor = tanh(%x)\n"
    "  %two : float = constant{value=2.0}()\n"
    "  %h : Tensor = mul(%t, %two)\n"
    "  %l : Tensor = linear(%h, %w, %b)\n"
    "  %y : Tensor = tanh(%l)\n"
    "  return (%y)\n"
    "}\n";

// The same layer with types, as the plugin lowers it (codegen differentiates
// floating tensor inputs).
const char* kTypedLayer =
    "graph f(%x : f32[N, 3], %w : f32[5, 3], %b : f32[5]) {\n"
    "  %t : f32[N, 3] = tanh(%x)\n"
    "  %two : float = constant{value=2.0}()\n"
    "  %h : f32[N, 3] = mul(%t, %two)\n"
    "  %l : f32[N, 5] = linear(%h, %w, %b)\n"
    "  %y : f32[N, 5] = tanh(%l)\n"
    "  return (%y)\n"
    "}\n";

TEST(InterpreterNeededOutputs, UnwantedGradientsAreNotComputed) {
  auto g = ir::parse(kLayer);
  ir::GradGraphs gg = ir::differentiate(*g, {true, true, true});
  ASSERT_EQ(gg.grad_inputs, (std::vector<size_t>{0, 1, 2}));
  const std::vector<IValue> in = {values({4, 3}, -1, 1, 7), values({5, 3}, -1, 1, 8), values({5}, -1, 1, 9)};
  std::vector<IValue> bin = run(*gg.forward, in);
  bin.erase(bin.begin(), bin.begin() + static_cast<long>(gg.num_outputs));
  bin.push_back(values({4, 5}, -1, 1, 10));
  NoGradGuard no_grad;
  detail::set_grad_mask_observer(record_mask);
  std::vector<std::vector<IValue>> runs;
  std::vector<detail::GradMask> masks;
  for (std::vector<bool> needed : {std::vector<bool>{}, {false, true, true}, {true, false, false}}) {
    g_masks.clear();
    RunOptions options;
    options.needed_outputs = needed;
    runs.push_back(run(*gg.backward, bin, options));
    ASSERT_EQ(g_masks.size(), 1u);
    EXPECT_EQ(g_masks[0].first, "linear_backward");
    masks.push_back(g_masks[0].second);
  }
  detail::set_grad_mask_observer(nullptr);
  EXPECT_EQ(masks, (std::vector<detail::GradMask>{7u, 6u, 1u}));
  // x not wanted: no gradient at all (the tanh and mul backward did not run).
  EXPECT_FALSE(std::get<Tensor>(runs[1][0]).defined());
  EXPECT_FALSE(std::get<Tensor>(runs[2][1]).defined());
  EXPECT_FALSE(std::get<Tensor>(runs[2][2]).defined());
  for (auto [r, k] : {std::pair{1, 1}, {1, 2}, {2, 0}}) {
    const Tensor got = std::get<Tensor>(runs[r][k]), all = std::get<Tensor>(runs[0][k]);
    ASSERT_TRUE(got.defined()) << "run " << r << ", gradient " << k;
    EXPECT_EQ(amax(abs(got - all)).item<double>(), 0.0) << "run " << r << ", gradient " << k;
  }
}

// One flag per gradient: x's (needed[0]) narrows linear_backward's mask, and
// tanh's gradient of x (a fused loop) runs only when it is wanted.
TEST(GeneratedBackward, TestsTheNeededFlags) {
  auto lowered = ir::parse(kTypedLayer);
  const codegen::GradientUnit grad = ir::gradient_graphs(*lowered);
  ASSERT_EQ(grad.unsupported, "");
  ASSERT_EQ(grad.grad_inputs, (std::vector<size_t>{0, 1, 2}));
  const std::string cpp = codegen::detail::gradient_functions(grad, "f", "m.cpp:1", "_Z1fv", "h");
  const size_t fn = cpp.find("bool f_backward(const ::graph::IValue* in, size_t n_in, [[maybe_unused]] const "
                             "bool* needed, ::graph::IValue* out, std::string* why)");
  ASSERT_NE(fn, std::string::npos) << cpp;
  const std::string body = cpp.substr(fn);
  for (const char* want : {"const bool needs = needed[0];", "const bool needs_1 = needed[1];",
                           "const bool needs_2 = needed[2];",
                           "::graph::detail::GradMask{7u} & (0u | (needs ? 1u : 0u) | (needs_1 ? 2u : 0u) | "
                           "(needs_2 ? 4u : 0u))",
                           "if (needs) {"})
    EXPECT_NE(body.find(want), std::string::npos) << want << "\n" << body;
  // The forward half takes no flags.
  EXPECT_NE(cpp.find("bool f_forward(const ::graph::IValue* in, size_t n_in, ::graph::IValue* out"),
            std::string::npos);
}

TEST(InterpreterNeededOutputs, OneFlagPerOutput) {
  auto g = ir::parse(kLayer);
  RunOptions options;
  options.needed_outputs = {true, false};
  try {
    run(*g, {values({4, 3}, -1, 1, 7), values({5, 3}, -1, 1, 8), values({5}, -1, 1, 9)}, options);
    FAIL() << "two flags for one output";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needed_outputs has 2 flags for 1 outputs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graph
