// The compile driver on static train steps, without Clang: a graph holding
// backward_loss (as the plugin lowers `loss.backward()`) is split at it,
// differentiated with respect to the parameters it names, and stitched back
// into one graph with one set_grads; bad input is a GraphError at its line.
#include <gtest/gtest.h>

#include <string>

#include "graph/ir/compile.h"
#include "graph/ir/ir.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"

namespace graph::ir {
namespace {

// An MLP layer and a loss: x and y are data, w and b parameters.
const char* kStep = R"(graph step(%x : f32[8, 4], %y : i64[8], %w : f32[3, 4], %b : f32[3]) {
  %h : f32 = linear(%x, %w, %b) @"t.cpp":3:5
  %r : f32 = relu(%h) @"t.cpp":3:5
  %loss : f32 = cross_entropy(%r, %y) @"t.cpp":4:5
  backward_loss(%loss, %w, %b) @"t.cpp":5:8
  return (%loss)
})";

size_t count(const Graph& g, OpId op) {
  size_t n = 0;
  walk(g.top(), [&](const Node* m) { n += m->is(op) ? 1 : 0; });
  return n;
}

const Node* find(const Graph& g, OpId op) {
  const Node* found = nullptr;
  walk(g.top(), [&](const Node* m) {
    if (m->is(op) && !found) found = m;
  });
  return found;
}

std::string compile_error(const std::string& text) {
  try {
    compile(*parse(text));
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TrainStepIr, BackwardBecomesGradientAndSetGradsInOneGraph) {
  auto g = parse(kStep);
  EXPECT_TRUE(verify(*g).empty());
  EXPECT_TRUE(is_train_step(*g));
  CompiledGraphs c = compile(*g);
  const Graph& o = *c.optimized;
  EXPECT_TRUE(verify(o).empty()) << print(o);
  EXPECT_EQ(count(o, OpId::backward_loss), 0u);
  ASSERT_EQ(count(o, OpId::set_grads), 1u) << print(o);
  // One forward: the gradient's copy of it merged with the graph's (CSE).
  EXPECT_EQ(count(o, OpId::linear), 1u) << print(o);
  EXPECT_EQ(count(o, OpId::cross_entropy), 1u) << print(o);
  EXPECT_EQ(count(o, OpId::linear_backward), 1u) << print(o);
  EXPECT_EQ(count(o, OpId::cross_entropy_backward), 1u) << print(o);
  const Node* s = find(o, OpId::set_grads);
  EXPECT_EQ(s->owner(), o.top());
  EXPECT_EQ(s->loc().line, 5);
  ASSERT_EQ(s->i("params"), 2);
  // (w, b, dw, db, x): parameters in input order, their gradients, the data tensor.
  ASSERT_EQ(s->inputs().size(), 5u);
  EXPECT_EQ(s->input(0), o.inputs()[2].get());
  EXPECT_EQ(s->input(1), o.inputs()[3].get());
  EXPECT_EQ(s->input(4), o.inputs()[0].get());
  for (size_t i : {2, 3}) {
    ASSERT_NE(s->input(i)->producer(), nullptr);
    EXPECT_EQ(s->input(i)->type(), s->input(i - 2)->type()) << i;  // each gradient typed as its parameter
  }
  // The gradients come from linear_backward's weight and bias outputs.
  EXPECT_TRUE(s->input(2)->producer()->is(OpId::linear_backward));
  EXPECT_EQ(s->input(2)->producer(), s->input(3)->producer());
  EXPECT_EQ(s->input(2), s->input(2)->producer()->output(1));
  EXPECT_EQ(s->input(3), s->input(2)->producer()->output(2));
  // The loss is still returned; the graph writes .grad, so no gradient of its own, no capture.
  EXPECT_TRUE(o.outputs()[0]->producer()->is(OpId::cross_entropy));
  EXPECT_FALSE(c.gradient.forward);
  EXPECT_NE(c.gradient.unsupported.find("train step"), std::string::npos);
  EXPECT_FALSE(c.cuda_graph_blocker.empty());
  EXPECT_TRUE(is_train_step(o));
  // The input graph is unchanged.
  EXPECT_EQ(count(*g, OpId::backward_loss), 1u);
}

TEST(TrainStepIr, ParameterTheLossDoesNotReachGetsAnUndefinedGradient) {
  auto g = parse(R"(graph step(%x : f32[2, 3], %w : f32[3], %v : f32[3]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  %loss : f32 = sum(%p) @"t.cpp":3:5
  backward_loss(%loss, %w, %v) @"t.cpp":4:8
  return (%loss)
})");
  CompiledGraphs c = compile(*g);
  const Node* s = find(*c.optimized, OpId::set_grads);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->i("params"), 2);
  EXPECT_TRUE(s->input(3)->producer() && s->input(3)->producer()->is(OpId::undefined)) << print(*c.optimized);
  EXPECT_FALSE(s->input(2)->producer()->is(OpId::undefined));
  // Nothing else blocks capture here: the effect does (a replay would not write .grad).
  EXPECT_NE(c.cuda_graph_blocker.find("set_grads"), std::string::npos) << c.cuda_graph_blocker;
}

TEST(TrainStepIr, IntegerMemberIsDataNotAParameter) {
  auto g = parse(R"(graph step(%x : f32[2, 3], %w : f32[3], %idx : i64[2]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  %q : f32 = index_select{dim=0}(%p, %idx) @"t.cpp":3:5
  %loss : f32 = sum(%q) @"t.cpp":4:5
  backward_loss(%loss, %w, %idx) @"t.cpp":5:8
  return (%loss)
})");
  CompiledGraphs c = compile(*g);
  const Node* s = find(*c.optimized, OpId::set_grads);
  ASSERT_NE(s, nullptr) << print(*c.optimized);
  EXPECT_EQ(s->i("params"), 1);
  EXPECT_EQ(s->input(0), c.optimized->inputs()[1].get());
}

TEST(TrainStepIr, NonScalarLossIsAnErrorAtBackward) {
  const std::string e = compile_error(R"(graph step(%x : f32[2, 3], %w : f32[3]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  backward_loss(%p, %w) @"t.cpp":7:8
  return (%p)
})");
  EXPECT_NE(e.find("t.cpp:7:8"), std::string::npos) << e;
  EXPECT_NE(e.find("grad can be implicitly created only for scalar outputs"), std::string::npos) << e;
}

TEST(TrainStepIr, BackwardInsideAnIfIsRefused) {
  auto g = parse(R"(graph step(%x : f32[2, 3], %w : f32[3], %c : bool) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  %loss : f32 = sum(%p) @"t.cpp":3:5
  If(%c) @"t.cpp":4:3
    block() {
      backward_loss(%loss, %w) @"t.cpp":4:15
      -> ()
    }
    block() {
      -> ()
    }
  return (%loss)
})");
  std::string all;
  for (const std::string& m : verify(*g)) all += m + "\n";
  EXPECT_NE(all.find("top block"), std::string::npos) << all;
}

TEST(TrainStepIr, SecondBackwardAndMissingParametersAreErrors) {
  std::string e = compile_error(R"(graph step(%x : f32[2, 3], %w : f32[3]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  %loss : f32 = sum(%p) @"t.cpp":3:5
  backward_loss(%loss, %w) @"t.cpp":4:8
  backward_loss(%loss, %w) @"t.cpp":5:8
  return (%loss)
})");
  EXPECT_NE(e.find("t.cpp:5:8"), std::string::npos) << e;
  EXPECT_NE(e.find("once"), std::string::npos) << e;
  e = compile_error(R"(graph step(%x : f32[2, 3], %w : f32[3]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  %loss : f32 = sum(%p) @"t.cpp":3:5
  backward_loss(%loss) @"t.cpp":4:8
  return (%loss)
})");
  EXPECT_NE(e.find("no parameter"), std::string::npos) << e;
}

TEST(TrainStepIr, VerifierChecksSetGrads) {
  auto g = parse(R"(graph step(%w : f32[3], %g : f32[3]) {
  set_grads{params=2}(%w, %g) @"t.cpp":4:8
  return ()
})");
  std::string all;
  for (const std::string& m : verify(*g)) all += m + "\n";
  EXPECT_NE(all.find("params"), std::string::npos) << all;
}

// zero_grad(); loss; backward(); step(); step() as the plugin lowers them.
const char* kOptStep = R"(graph step(%x : f32[8, 4], %y : i64[8], %w : f32[3, 4], %b : f32[3], %opt : int) {
  optimizer_guard(%opt) @"t.cpp":2:8
  optimizer_zero_grad(%opt) @"t.cpp":2:8
  %h : f32 = linear(%x, %w, %b) @"t.cpp":3:5
  %r : f32 = relu(%h) @"t.cpp":3:5
  %loss : f32 = cross_entropy(%r, %y) @"t.cpp":4:5
  backward_loss(%loss, %w, %b) @"t.cpp":5:8
  optimizer_step{params=0}(%opt) @"t.cpp":6:8
  optimizer_step{params=0}(%opt) @"t.cpp":7:8
  return (%loss)
})";

size_t position(const Graph& g, const Node* n) {
  size_t i = 0;
  for (const auto& m : g.top()->nodes()) {
    if (m.get() == n) return i;
    ++i;
  }
  return i;
}

bool reads(const Node* n, const Value* v) {
  bool r = false;
  for (const Value* in : n->inputs()) r = r || in == v;
  for (const auto& b : n->blocks())
    for (const auto& m : b->nodes()) r = r || reads(m.get(), v);
  return r;
}

TEST(TrainStepIr, OptimizerEffectsKeepProgramOrderAndGetTheGradients) {
  auto g = parse(kOptStep);
  ASSERT_TRUE(verify(*g).empty()) << verify(*g).front();
  EXPECT_TRUE(is_train_step(*g));
  CompiledGraphs c = compile(*g);
  const Graph& o = *c.optimized;
  ASSERT_TRUE(verify(o).empty()) << print(o);
  // Neither CSE nor DCE touched the effects: one guard, one zero_grad, two steps.
  EXPECT_EQ(count(o, OpId::optimizer_guard), 1u) << print(o);
  EXPECT_EQ(count(o, OpId::optimizer_zero_grad), 1u) << print(o);
  ASSERT_EQ(count(o, OpId::optimizer_step), 2u) << print(o);
  const Node* s = find(o, OpId::set_grads);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(position(o, find(o, OpId::optimizer_guard)), 0u) << print(o);
  EXPECT_EQ(position(o, find(o, OpId::optimizer_zero_grad)), 1u) << print(o);
  const Value* w = o.inputs()[2].get();
  const Value* b = o.inputs()[3].get();
  size_t last_read = 0;  // of a parameter, by anything but an effect
  for (const auto& n : o.top()->nodes())
    if (!n->is(OpId::optimizer_step) && !n->is(OpId::set_grads) && (reads(n.get(), w) || reads(n.get(), b)))
      last_read = std::max(last_read, position(o, n.get()));
  for (const auto& n : o.top()->nodes()) {
    if (!n->is(OpId::optimizer_step)) continue;
    // After set_grads and after every read of the old parameter values.
    EXPECT_GT(position(o, n.get()), position(o, s)) << print(o);
    EXPECT_GT(position(o, n.get()), last_read) << print(o);
    // The gradients are set_grads's values (no .grad round trip).
    ASSERT_EQ(n->i("params"), 2) << print(o);
    ASSERT_EQ(n->inputs().size(), 5u);
    EXPECT_EQ(n->input(1), w);
    EXPECT_EQ(n->input(2), b);
    EXPECT_EQ(n->input(3), s->input(2));
    EXPECT_EQ(n->input(4), s->input(3));
  }
  // Never captured into a CUDA graph: a replay would not step the optimizer.
  EXPECT_FALSE(c.cuda_graph_blocker.empty());
}

TEST(TrainStepIr, StepWithoutZeroGradReadsGradLikeEager) {
  // Without zero_grad() first, .grad may hold older gradients: the step reads it.
  std::string text = kOptStep;
  text.erase(text.find("  optimizer_zero_grad"), text.find("  %h") - text.find("  optimizer_zero_grad"));
  CompiledGraphs c = compile(*parse(text));
  walk(c.optimized->top(), [&](const Node* n) {
    if (n->is(OpId::optimizer_step)) EXPECT_EQ(n->i("params"), 0) << print(*c.optimized);
  });
}

TEST(TrainStepIr, OptimizerOpsAreCheckedByTheVerifier) {
  auto g = parse(R"(graph f(%x : f32, %opt : int) {
  optimizer_step{params=1}(%opt, %x) @"t.cpp":2:8
  optimizer_zero_grad(%x) @"t.cpp":3:8
  return (%x)
})");
  const auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("optimizer_step needs 'params'"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("input 0 must be the optimizer's handle"), std::string::npos) << errors[1];
}

}  // namespace
}  // namespace graph::ir
