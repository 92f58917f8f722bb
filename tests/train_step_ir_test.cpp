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
#include "two_layer_step_ir.h"

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
  // The gradients come from linear_backward's weight and bias outputs,
  // through the data-parallel sync (a no-op without DDP: place_grad_sync).
  const Node* wait = s->input(2)->producer();
  ASSERT_TRUE(wait->is(OpId::grad_sync_wait)) << print(o);
  EXPECT_EQ(wait, s->input(3)->producer());
  const Value* dw = wait->input(2);
  const Value* db = wait->input(3);
  EXPECT_TRUE(dw->producer()->is(OpId::linear_backward));
  EXPECT_EQ(dw->producer(), db->producer());
  EXPECT_EQ(dw, dw->producer()->output(1));
  EXPECT_EQ(db, dw->producer()->output(2));
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
  // Through the data-parallel sync (place_grad_sync): its inputs are the gradients.
  const Node* wait = s->input(3)->producer();
  ASSERT_TRUE(wait && wait->is(OpId::grad_sync_wait)) << print(*c.optimized);
  EXPECT_TRUE(wait->input(3)->producer() && wait->input(3)->producer()->is(OpId::undefined)) << print(*c.optimized);
  EXPECT_FALSE(wait->input(2)->producer()->is(OpId::undefined));
  // Nothing else blocks capture here: the effects do (a replay would not
  // write .grad, nor all-reduce): the first is the gradient's grad_sync_start.
  EXPECT_NE(c.cuda_graph_blocker.find("grad_sync_start: writes state outside the graph"), std::string::npos)
      << c.cuda_graph_blocker;
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
    EXPECT_TRUE(s->input(2)->producer()->is(OpId::grad_sync_wait)) << print(o);
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
    if (n->is(OpId::optimizer_step)) {
      EXPECT_EQ(n->i("params"), 0) << print(*c.optimized);
    }
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

// ---- the data-parallel gradient all-reduce (place_grad_sync) -----------------

std::vector<const Node*> all_of(const Graph& g, OpId op) {
  std::vector<const Node*> r;
  for (const auto& n : g.top()->nodes())
    if (n->is(op)) r.push_back(n.get());
  return r;
}

const Node* node_at(const Graph& g, size_t i) {
  for (const auto& n : g.top()->nodes())
    if (i-- == 0) return n.get();
  return nullptr;
}

TEST(GradSyncIr, StartsFollowTheirGradientsAndTheWaitPrecedesTheUpdate) {
  CompiledGraphs c = compile(*parse(test::kTwoLayerStep));
  const Graph& o = *c.optimized;
  ASSERT_TRUE(verify(o).empty()) << print(o);
  const Value* w1 = o.inputs()[2].get();
  const Value* w2 = o.inputs()[4].get();
  const std::vector<const Node*> starts = all_of(o, OpId::grad_sync_start);
  ASSERT_EQ(starts.size(), 2u) << print(o);  // one per linear_backward, weight and bias together
  // fc2's gradients exist first: their all-reduce can start while fc1's are computed.
  EXPECT_EQ(starts[0]->input(0), w2) << print(o);
  EXPECT_EQ(starts[1]->input(0), w1) << print(o);
  for (const Node* st : starts) {
    ASSERT_EQ(st->i("params"), 2);
    ASSERT_EQ(st->inputs().size(), 4u);
    EXPECT_EQ(st->num_outputs(), 0u);
    const Node* producer = st->input(2)->producer();
    ASSERT_TRUE(producer && producer->is(OpId::linear_backward)) << print(o);
    EXPECT_EQ(producer, st->input(3)->producer());
    // Right after the node that computes them.
    EXPECT_EQ(position(o, st), position(o, producer) + 1) << print(o);
  }
  EXPECT_LT(position(o, starts[0]), position(o, starts[1]->input(2)->producer())) << print(o);
  // One wait, just before set_grads, which reads its outputs; the step after it too.
  const std::vector<const Node*> waits = all_of(o, OpId::grad_sync_wait);
  ASSERT_EQ(waits.size(), 1u);
  const Node* wait = waits[0];
  const Node* s = find(o, OpId::set_grads);
  EXPECT_EQ(node_at(o, position(o, s) - 1), wait) << print(o);
  EXPECT_GT(position(o, wait), position(o, starts[1]));
  ASSERT_EQ(wait->i("params"), 4);
  ASSERT_EQ(wait->num_outputs(), 4u);
  const Node* step = find(o, OpId::optimizer_step);
  ASSERT_EQ(step->i("params"), 4) << print(o);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(s->input(4 + k), wait->output(k));
    EXPECT_EQ(step->input(5 + k), wait->output(k));
    EXPECT_EQ(wait->output(k)->type(), wait->input(k)->type());  // typed as its parameter
  }
  EXPECT_GT(position(o, step), position(o, s));
  // The dump names them (GRAPH_DUMP_AFTER=place_grad_sync, graph-inspect show).
  const std::string text = print(o);
  EXPECT_NE(text.find("grad_sync_start{params=2}(%w2, %b2, "), std::string::npos) << text;
  EXPECT_NE(text.find("grad_sync_wait{params=4}(%w1, %b1, %w2, %b2, "), std::string::npos) << text;
  // The printed graph parses back (what interpret mode runs) and verifies.
  auto again = parse(text);
  EXPECT_TRUE(verify(*again).empty());
}

TEST(GradSyncIr, OnlyTrainStepsGetThemAndThePassRunsOnce) {
  auto fwd = parse(R"(graph f(%x : f32[2, 3], %w : f32[3]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  return (%p)
})");
  CompiledGraphs c = compile(*fwd);
  EXPECT_EQ(count(*c.optimized, OpId::grad_sync_start) + count(*c.optimized, OpId::grad_sync_wait), 0u);
  CompiledGraphs t = compile(*parse(kStep));
  Graph& o = *t.optimized;
  const size_t before = count(o, OpId::grad_sync_start);
  EXPECT_EQ(before, 1u) << print(o);
  place_grad_sync(o);  // already placed: unchanged
  EXPECT_EQ(count(o, OpId::grad_sync_start), before);
  EXPECT_EQ(count(o, OpId::grad_sync_wait), 1u);
}

TEST(GradSyncIr, UnreachedParameterIsSyncedButNotStarted) {
  auto g = parse(R"(graph step(%x : f32[2, 3], %w : f32[3], %v : f32[3]) {
  %p : f32 = mul(%x, %w) @"t.cpp":2:5
  %loss : f32 = sum(%p) @"t.cpp":3:5
  backward_loss(%loss, %w, %v) @"t.cpp":4:8
  return (%loss)
})");
  CompiledGraphs c = compile(*g);
  const Graph& o = *c.optimized;
  const std::vector<const Node*> starts = all_of(o, OpId::grad_sync_start);
  ASSERT_EQ(starts.size(), 1u) << print(o);
  EXPECT_EQ(starts[0]->input(0), o.inputs()[1].get());  // w only: v's gradient is undefined
  const Node* wait = find(o, OpId::grad_sync_wait);
  ASSERT_NE(wait, nullptr);
  EXPECT_EQ(wait->i("params"), 2);  // v too: DDP reduces it from its .grad, as eager DDP does
}

TEST(GradSyncIr, VerifierChecksTheNodes) {
  auto g = parse(R"(graph step(%w : f32[3], %g : f32[3], %n : int) {
  grad_sync_start{params=2}(%w, %g) @"t.cpp":4:8
  %a : f32 = grad_sync_wait{params=1}(%w, %g) @"t.cpp":5:8
  %b : f32 = grad_sync_wait{params=1}(%w, %n) @"t.cpp":6:8
  grad_sync_start{params=1}(%w, %g) @"t.cpp":7:8
  If(%n) @"t.cpp":8:3
    block() {
      grad_sync_start{params=1}(%w, %g) @"t.cpp":9:8
      -> ()
    }
    block() {
      -> ()
    }
  return (%a)
})");
  std::string all;
  for (const std::string& m : verify(*g)) all += m + "\n";
  EXPECT_NE(all.find("grad_sync_start needs 'params'"), std::string::npos) << all;
  EXPECT_NE(all.find("input 1 must be a tensor"), std::string::npos) << all;
  EXPECT_NE(all.find("top block"), std::string::npos) << all;
}

}  // namespace
}  // namespace graph::ir
