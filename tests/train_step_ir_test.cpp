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

}  // namespace
}  // namespace graph::ir
