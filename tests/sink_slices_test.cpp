// sink_slices against the interpreter: each graph runs before and after the
// pass on random inputs and must give the same dtypes, shapes and bits (the
// pass only moves the same scalar ops onto slices), and a graph the pass
// rewrites must fail where the original fails.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/ir.h"
#include "graph/ir/pipeline.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"

namespace graph {
namespace {

std::unique_ptr<ir::Graph> sunk(const std::string& text) {
  auto g = ir::parse(text);
  ir::PipelineOptions opts;
  opts.verify = true;
  ir::run_pipeline(*g, ir::parse_pipeline("infer_types, sink_slices, dce"), opts);
  return g;
}

int count(const ir::Graph& g, OpId op) {
  int n = 0;
  ir::walk(g.top(), [&](const ir::Node* m) { n += m->is(op) ? 1 : 0; });
  return n;
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(shape_str(a.sizes()), shape_str(b.sizes()));
  Tensor x = a.to(kFloat64).contiguous(), y = b.to(kFloat64).contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.data_ptr<double>()[i], y.data_ptr<double>()[i]) << "element " << i;
}

// Runs `text` and its sunk form on `inputs`; the results must agree exactly.
// Returns the sunk graph for structural checks.
std::unique_ptr<ir::Graph> expect_unchanged_values(const std::string& text, const std::vector<IValue>& inputs) {
  auto before = ir::parse(text);
  auto after = sunk(text);
  const auto want = run(*before, inputs);
  const auto got = run(*after, inputs);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) expect_same(std::get<Tensor>(want[i]), std::get<Tensor>(got[i]));
  return after;
}

// An LSTM step: the gate add below four disjoint slices of width 4.
const char* kLstm = R"(graph lstm(%xw : $T, %mm : $T, %c : f32) {
  %g : Tensor = add(%xw, %mm)
  %s0 : Tensor = slice{dim=1, end=4, start=0, step=1}(%g)
  %i : Tensor = sigmoid(%s0)
  %s1 : Tensor = slice{dim=1, end=8, start=4, step=1}(%g)
  %f : Tensor = sigmoid(%s1)
  %s2 : Tensor = slice{dim=1, end=12, start=8, step=1}(%g)
  %z : Tensor = tanh(%s2)
  %s3 : Tensor = slice{dim=1, end=16, start=12, step=1}(%g)
  %o : Tensor = sigmoid(%s3)
  %a : Tensor = mul(%f, %c)
  %b : Tensor = mul(%i, %z)
  %c.n : Tensor = add(%a, %b)
  %t : Tensor = tanh(%c.n)
  %h.n : Tensor = mul(%o, %t)
  return (%h.n, %c.n)
}
)";

std::string with_type(std::string text, const std::string& type) {
  for (size_t p; (p = text.find("$T")) != std::string::npos;) text.replace(p, 2, type);
  return text;
}

TEST(SinkSlices, LstmStepUnknownShapesBroadcastingOperands) {
  manual_seed(7);
  // Ranks unknown at build time: the operands are expanded at run time, so
  // any broadcast works: a row against a batch, a lower rank, a column.
  const std::string text = with_type(kLstm, "f32");
  for (const Shape& xw : {Shape{3, 16}, Shape{1, 16}, Shape{16}, Shape{3, 1}}) {
    auto g = expect_unchanged_values(text, {randn(xw), randn({3, 16}), randn({3, 4})});
    EXPECT_EQ(count(*g, OpId::add), 5);  // four sunk gate adds and the cell's
    EXPECT_EQ(count(*g, OpId::broadcast_sizes), 1);
    EXPECT_EQ(count(*g, OpId::expand), 2);
  }
}

TEST(SinkSlices, LstmStepKnownShapesSlicesInPlace) {
  manual_seed(8);
  auto g = expect_unchanged_values(with_type(kLstm, "f32[3, 16]"), {randn({3, 16}), randn({3, 16}), randn({3, 4})});
  EXPECT_EQ(count(*g, OpId::add), 5);
  EXPECT_EQ(count(*g, OpId::broadcast_sizes), 0);  // the types decide: no run-time sizes
  EXPECT_EQ(count(*g, OpId::slice), 8);
}

TEST(SinkSlices, StridedNegativeBoundsAndBroadcastOperands) {
  manual_seed(9);
  const char* text = R"(graph f(%x : f32[N, 8, 6], %col : f32[N, 1, 6], %row : f32[6], %k : float) {
  %a : Tensor = add(%x, %col)
  %m : Tensor = mul(%a, %row)
  %p : Tensor = sub(%m, %k)
  %s : Tensor = slice{dim=-2, end=-1, start=1, step=3}(%p)
  %r : Tensor = relu(%s)
  return (%r)
}
)";
  for (int64_t n : {1, 4}) {
    auto g = expect_unchanged_values(text, {randn({n, 8, 6}), randn({n, 1, 6}), randn({6}), 0.25});
    EXPECT_EQ(count(*g, OpId::slice), 1);  // only %x is sliced; %col and %row broadcast
  }
}

TEST(SinkSlices, ChainsSinkAllTheWay) {
  manual_seed(10);
  const char* text = R"(graph f(%x : f32, %y : f32) {
  %a : Tensor = add(%x, %y)
  %e : Tensor = sigmoid(%a)
  %s : Tensor = slice{dim=0, end=5, start=1, step=2}(%e)
  %r : Tensor = neg(%s)
  return (%r)
}
)";
  auto g = expect_unchanged_values(text, {randn({7, 2}), randn({2})});
  // slice(sigmoid(add)) -> sigmoid(slice(add)) -> sigmoid(add(slices)).
  for (const auto& n : g->top()->nodes()) EXPECT_FALSE(n->is(OpId::slice) && n->input(0)->producer() && n->input(0)->producer()->is(OpId::add));
  EXPECT_EQ(count(*g, OpId::slice), 2);
}

TEST(SinkSlices, ZeroDimOperandsStayWhole) {
  manual_seed(11);
  const char* text = R"(graph f(%x : f32, %s : f32[]) {
  %a : Tensor = mul(%x, %s)
  %p : Tensor = slice{dim=-1, end=3, start=1, step=1}(%a)
  %r : Tensor = relu(%p)
  return (%r)
}
)";
  auto g = expect_unchanged_values(text, {randn({2, 5}), randn({})});
  EXPECT_EQ(count(*g, OpId::slice), 1);  // of %x, expanded; %s is read whole
  EXPECT_EQ(count(*g, OpId::mul), 1);
}

TEST(SinkSlices, ASlicePastASizeOneOutputStaysEmpty) {
  // [2, 1] + [2, 1] sliced at [1, 2) is [2, 0]: an operand kept whole would
  // give [2, 1], so size-1 operands are sliced when the output is size 1 too.
  const char* text = R"(graph f(%x : $T, %y : $T) {
  %a : Tensor = add(%x, %y)
  %s : Tensor = slice{dim=1, end=2, start=1, step=1}(%a)
  %r : Tensor = exp(%s)
  return (%r)
}
)";
  for (const char* type : {"f32[2, 1]", "f32"}) {
    auto g = expect_unchanged_values(with_type(text, type), {randn({2, 1}), randn({2, 1})});
    EXPECT_EQ(count(*g, OpId::add), 1);
    EXPECT_EQ(shape_str(std::get<Tensor>(run(*g, {randn({2, 1}), randn({2, 1})}).at(0)).sizes()), "[2, 0]");
  }
}

TEST(SinkSlices, OperandsThatDoNotBroadcastStillFail) {
  const std::string text = with_type(kLstm, "f32");
  auto after = sunk(text);
  ASSERT_EQ(count(*after, OpId::broadcast_sizes), 1);
  const std::vector<IValue> bad = {randn({3, 16}), randn({3, 12}), randn({3, 4})};
  EXPECT_THROW(run(*ir::parse(text), bad), Error);
  EXPECT_THROW(run(*after, bad), Error);
}

}  // namespace
}  // namespace graph
