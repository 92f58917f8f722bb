// Tests of the graph IR: the text format (print/parse are exact inverses), the
// C++ builder API, the structure the parser builds, parser errors, and the
// verifier's invariants (verifier.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "graph/error.h"
#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"

namespace graph::ir {
namespace {

// ---------------------------------------------------------------------------
// Helpers

// The message of the graph::Error parse(text) throws, or "<no error>".
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const graph::Error& e) {
    return e.what();
  }
  return "<no error>";
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

// True when one message carries both the note tag ("[scoping]") and the
// quoted op name ("'add'").
bool has_error(const std::vector<std::string>& errors, const std::string& tag, const std::string& op) {
  return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
    return e.find(tag) != std::string::npos && e.find("'" + op + "'") != std::string::npos;
  });
}

#define EXPECT_VERIFY_ERROR(graph, tag, op)                                          \
  do {                                                                               \
    auto errors_ = verify(graph);                                                    \
    EXPECT_FALSE(errors_.empty()) << "expected a " << tag << " error for '" << op << "'"; \
    EXPECT_TRUE(has_error(errors_, tag, op)) << join(errors_);                       \
  } while (0)

// The first node of `b` (pre-order, nested blocks included) running `op`.
Node* find_node(const Block* b, const std::string& op) {
  Node* found = nullptr;
  walk(b, [&](const Node* n) {
    if (!found && n->op() == op) found = const_cast<Node*>(n);
  });
  return found;
}

// The value named `name` anywhere in g (parameters or node outputs).
Value* find_value(const Graph& g, const std::string& name) {
  for (const auto& p : g.inputs())
    if (p->name() == name) return p.get();
  Value* found = nullptr;
  walk(g.top(), [&](const Node* n) {
    for (Value* v : n->outputs())
      if (!found && v->name() == name) found = v;
    for (const auto& b : n->blocks())
      for (const auto& p : b->params())
        if (!found && p->name() == name) found = p.get();
  });
  return found;
}

Type f32(std::vector<Dim> dims) { return Type::tensor(DType::Float32, std::move(dims)); }

// ---------------------------------------------------------------------------
// 1. Round trips: print(parse(text)) == text, and once more.

const std::string kStraight = R"(graph straight(%x : f32[N, 4], %y : f32[N, 4]) {
  %a : f32[N, 4] = add(%x, %y) @"model.cpp":12:5
  %s : f32[N] = sum{dim=1, keepdim=false}(%a)
  %c : float = constant{value=0.1}()
  %k : int = constant{value=-3}()
  %m : f32[N, 4] = mul(%a, %c)
  %r : f32[N, 4] = relu{note="say \"hi\"\nback\\slash", on=true, scale=1e-20, tag=""}(%m) @"dir/some file.cpp":7:21
  return (%s, %r, %k)
}
)";

const std::string kTypes =
    R"(graph types(%a : Tensor, %b : f32[N, 4], %c : i64[?], %d : i1[], %e : int, %f : float, %g : bool, %h : Tensor[B, ?, 3], %i : i64) {
  %0 : i1[] = logical_not(%d)
  %1 : float = add(%f, %f)
  %2 : bool = lt(%e, %e)
  %3 : f32[4, N] = t(%b)
  %4 : f32[N, N] = matmul(%b, %3)
  %5 : float = constant{value=-inf}()
  %6 : float = constant{value=nan}()
  %7 : float = constant{value=3.0}()
  %8 : float = constant{value=1e-20}()
  %9 : float = constant{value=0.1}()
  %10 : float = constant{value=inf}()
  %11 : float = constant{value=-0.0}()
  %12 : float = constant{value=1e+300}()
  %13 : float = constant{value=-2.5e-07}()
  %14 : int = constant{value=-9223372036854775808}()
  %15 : bool = constant{value=false}()
  return (%4, %c, %a, %1, %2, %0, %5, %6, %7, %8, %9, %g, %h, %10, %11, %12, %13, %14, %15, %i)
}
)";

const std::string kIf = R"(graph branch(%c : bool, %x : f32[N]) {
  %y : f32[N], %k : int = If(%c)
    block() {
      %a : f32[N] = relu(%x)
      %one : int = constant{value=1}()
      -> (%a, %one)
    }
    block() {
      %b : f32[N] = neg(%x)
      %two : int = constant{value=2}()
      -> (%b, %two)
    }
  %z : f32[N] = add(%y, %x)
  return (%z, %k)
}
)";

const std::string kLoop = R"(graph loop(%n : int, %h0 : f32[B, 8]) {
  %go : bool = constant{value=true}()
  %zero : int = constant{value=0}()
  %i.2 : int, %h.2 : f32[B, 8] = Loop(%n, %go, %zero, %h0)
    block(%iter : int, %i : int, %h : f32[B, 8]) {
      %one : int = constant{value=1}()
      %i.n : int = add(%i, %one)
      %small : bool = lt(%i, %iter)
      %h.n : f32[B, 8] = If(%small)
        block() {
          %r : f32[B, 8] = tanh(%h)
          -> (%r)
        }
        block() {
          -> (%h)
        }
      %cond : bool = lt(%i.n, %n)
      -> (%cond, %i.n, %h.n)
    }
  return (%i.2, %h.2)
}
)";

// A node with no outputs and an empty graph signature also print back.
const std::string kEmpty = R"(graph empty() {
  return ()
}
)";

const std::string* const kValidTexts[] = {&kStraight, &kTypes, &kIf, &kLoop, &kEmpty};

void expect_round_trip(const std::string& text) {
  std::unique_ptr<Graph> g;
  ASSERT_NO_THROW(g = parse(text)) << parse_error(text);
  std::string printed = print(*g);
  EXPECT_EQ(printed, text);
  auto again = parse(printed);
  EXPECT_EQ(print(*again), printed);
}

TEST(IrRoundTrip, StraightLineWithAttributesAndLocs) { expect_round_trip(kStraight); }
TEST(IrRoundTrip, TypesDimsAndFloats) { expect_round_trip(kTypes); }
TEST(IrRoundTrip, IfWithTwoBlocks) { expect_round_trip(kIf); }
TEST(IrRoundTrip, LoopWithCarriedValuesAndNestedIf) { expect_round_trip(kLoop); }
TEST(IrRoundTrip, EmptyGraph) { expect_round_trip(kEmpty); }

TEST(IrRoundTrip, AttributeValuesReadBackExactly) {
  auto g = parse(kStraight);
  Node* sum = find_node(g->top(), "sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->i("dim"), 1);
  EXPECT_FALSE(sum->b("keepdim"));
  Node* relu = find_node(g->top(), "relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(std::get<std::string>(relu->attrs().at("note")), "say \"hi\"\nback\\slash");
  EXPECT_EQ(std::get<std::string>(relu->attrs().at("tag")), "");
  EXPECT_TRUE(relu->b("on"));
  EXPECT_EQ(relu->f("scale"), 1e-20);
  EXPECT_EQ(relu->loc(), (SourceLoc{"dir/some file.cpp", 7, 21}));
  Node* add = find_node(g->top(), "add");
  EXPECT_EQ(add->loc(), (SourceLoc{"model.cpp", 12, 5}));
  EXPECT_FALSE(sum->loc().valid());

  auto t = parse(kTypes);
  auto value_of = [&](const std::string& name) {
    Value* v = find_value(*t, name);
    EXPECT_NE(v, nullptr) << name;
    return v->producer()->attrs().at("value");
  };
  EXPECT_EQ(std::get<double>(value_of("5")), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(std::get<double>(value_of("6"))));
  EXPECT_EQ(std::get<double>(value_of("7")), 3.0);
  EXPECT_EQ(std::get<double>(value_of("8")), 1e-20);
  EXPECT_EQ(std::get<double>(value_of("9")), 0.1);
  EXPECT_EQ(std::get<double>(value_of("10")), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::signbit(std::get<double>(value_of("11"))));
  EXPECT_EQ(std::get<double>(value_of("12")), 1e300);
  EXPECT_EQ(std::get<int64_t>(value_of("14")), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(std::get<bool>(value_of("15")), false);
}

TEST(IrRoundTrip, TypesParseToTheRightStructure) {
  auto g = parse(kTypes);
  const auto& in = g->inputs();
  ASSERT_EQ(in.size(), 9u);
  EXPECT_EQ(in[0]->type(), Type::tensor());
  EXPECT_FALSE(in[0]->type().dtype.has_value());
  EXPECT_FALSE(in[0]->type().dims.has_value());
  EXPECT_EQ(in[1]->type(), f32({Dim::sym("N"), Dim::of(4)}));
  EXPECT_EQ(in[2]->type(), Type::tensor(DType::Int64, {Dim::unknown()}));
  EXPECT_EQ(in[3]->type(), Type::tensor(DType::Bool, {}));
  EXPECT_TRUE(in[3]->type().dims.has_value());  // rank 0, not unknown rank
  EXPECT_EQ(in[4]->type(), Type::int_());
  EXPECT_EQ(in[5]->type(), Type::float_());
  EXPECT_EQ(in[6]->type(), Type::bool_());
  EXPECT_EQ(in[7]->type(), Type::tensor(std::nullopt, {Dim::sym("B"), Dim::unknown(), Dim::of(3)}));
  EXPECT_EQ(in[8]->type(), Type::tensor(DType::Int64));
  EXPECT_EQ(in[8]->type().str(), "i64");
  EXPECT_EQ(in[7]->type().str(), "Tensor[B, ?, 3]");
  EXPECT_EQ(in[3]->type().str(), "i1[]");
}

// `inf` and `nan` are numbers only where a number is expected (attribute
// values); elsewhere they are plain identifiers.
TEST(IrRoundTrip, InfAndNanAsIdentifiers) {
  const std::string text = R"(graph nan(%x : f32[inf, nan]) {
  %y : f32[inf, nan] = relu{inf=nan, nan=-inf}(%x)
  return (%y)
}
)";
  expect_round_trip(text);
  auto g = parse(text);
  EXPECT_EQ(g->inputs()[0]->type(), f32({Dim::sym("inf"), Dim::sym("nan")}));
  Node* relu = find_node(g->top(), "relu");
  EXPECT_TRUE(std::isnan(relu->f("inf")));
  EXPECT_EQ(relu->f("nan"), -std::numeric_limits<double>::infinity());
}

TEST(IrRoundTrip, DoublesRoundTripBitExactly) {
  const double values[] = {0.1, 1.0 / 3, 1e16, 123456789.0, 5e-324, 2.2250738585072014e-308,
                           std::numeric_limits<double>::max(), -1e21, 1e22, 100.0, 2e-5, -0.0};
  for (double d : values) {
    Graph g;
    g.top()->set_returns({add_constant(g.top(), d)});
    auto back = parse(print(g));
    double e = back->top()->nodes().front()->f("value");
    EXPECT_EQ(std::signbit(d), std::signbit(e)) << print(g);
    EXPECT_EQ(d, e) << print(g);
    EXPECT_EQ(print(*back), print(g));
  }
}

TEST(IrRoundTrip, CommentsAndWhitespaceAreFree) {
  const std::string loose = R"(# a comment before the graph
graph   loose ( %x:f32[ N ,4 ] ) {   # trailing comment
  %y:f32[N,4]=relu(  %x  )
  %n : int = constant { value = +7 } ( )

  return(%y,%n)}
)";
  auto g = parse(loose);
  EXPECT_EQ(print(*g), R"(graph loose(%x : f32[N, 4]) {
  %y : f32[N, 4] = relu(%x)
  %n : int = constant{value=7}()
  return (%y, %n)
}
)");
}

TEST(IrRoundTrip, ParseAllReadsSeveralGraphs) {
  auto gs = parse_all(kIf + kLoop + "\n# end\n");
  ASSERT_EQ(gs.size(), 2u);
  EXPECT_EQ(gs[0]->name(), "branch");
  EXPECT_EQ(gs[1]->name(), "loop");
  EXPECT_EQ(print(*gs[0]), kIf);
  EXPECT_EQ(print(*gs[1]), kLoop);
  // Names are per graph: both graphs may define %one.
  EXPECT_TRUE(parse_all("").empty());
}

// ---------------------------------------------------------------------------
// 2. Building graphs with the C++ API.

TEST(IrBuild, PrintsExpectedTextAndReparses) {
  Graph g("built");
  Value* x = g.add_input(f32({Dim::sym("N"), Dim::of(4)}), "x");
  Value* y = g.add_input(f32({Dim::sym("N"), Dim::of(4)}));  // unnamed: numbered
  Block* top = g.top();

  Node* add = top->append("add");
  add->add_input(x);
  add->add_input(y);
  add->set_loc({"build.cpp", 3, 9});
  Value* s = add->add_output(f32({Dim::sym("N"), Dim::of(4)}), "x");  // duplicate of %x

  Value* two = add_constant(top, int64_t{2});
  Value* half = add_constant(top, 0.5);
  Value* yes = add_constant(top, true);

  Node* sum = top->append("sum");
  sum->add_input(s);
  sum->attrs()["dim"] = int64_t{1};
  sum->attrs()["keepdim"] = true;
  Value* r = sum->add_output(f32({Dim::sym("N"), Dim::of(1)}), "x");  // another duplicate

  Node* ifn = top->append("If");
  ifn->add_input(yes);
  Block* then_b = ifn->add_block();
  Node* m = then_b->append("mul");
  m->add_input(r);
  m->add_input(half);
  then_b->set_returns({m->add_output(f32({Dim::sym("N"), Dim::of(1)}))});
  Block* else_b = ifn->add_block();
  else_b->add_return(r);
  Value* out = ifn->add_output(f32({Dim::sym("N"), Dim::of(1)}), "out");

  top->set_returns({out, two});

  const std::string expected = R"(graph built(%x : f32[N, 4], %0 : f32[N, 4]) {
  %x.1 : f32[N, 4] = add(%x, %0) @"build.cpp":3:9
  %2 : int = constant{value=2}()
  %3 : float = constant{value=0.5}()
  %4 : bool = constant{value=true}()
  %x.5 : f32[N, 1] = sum{dim=1, keepdim=true}(%x.1)
  %out : f32[N, 1] = If(%4)
    block() {
      %6 : f32[N, 1] = mul(%x.5, %3)
      -> (%6)
    }
    block() {
      -> (%x.5)
    }
  return (%out, %2)
}
)";
  std::string printed = print(g);
  EXPECT_EQ(printed, expected);
  EXPECT_TRUE(verify(g).empty()) << join(verify(g));

  // The builder's names are untouched by printing.
  EXPECT_EQ(y->name(), "");
  EXPECT_EQ(s->name(), "x");

  auto back = parse(printed);
  EXPECT_EQ(print(*back), expected);
  EXPECT_TRUE(verify(*back).empty());
  EXPECT_EQ(back->outputs().size(), 2u);
  EXPECT_EQ(back->outputs()[1]->type(), Type::int_());
}

TEST(IrBuild, ConstantsHaveScalarTypesAndValueAttrs) {
  Graph g;
  EXPECT_EQ(g.name(), "main");
  Value* i = add_constant(g.top(), int64_t{-4});
  Value* f = add_constant(g.top(), 2.0);
  Value* b = add_constant(g.top(), false);
  EXPECT_EQ(i->type(), Type::int_());
  EXPECT_EQ(f->type(), Type::float_());
  EXPECT_EQ(b->type(), Type::bool_());
  EXPECT_EQ(i->producer()->op(), "constant");
  EXPECT_EQ(i->producer()->i("value"), -4);
  EXPECT_EQ(f->producer()->f("value"), 2.0);
  EXPECT_FALSE(b->producer()->b("value"));
  g.top()->set_returns({i, f, b});
  EXPECT_EQ(print(g), R"(graph main() {
  %0 : int = constant{value=-4}()
  %1 : float = constant{value=2.0}()
  %2 : bool = constant{value=false}()
  return (%0, %1, %2)
}
)");
}

TEST(IrBuild, NumberedNamesAvoidExplicitOnes) {
  // A value explicitly named "0" and "x.1" must not collide with generated names.
  Graph g("names");
  Value* a = g.add_input(Type::int_());       // -> 0
  Value* b = g.add_input(Type::int_(), "0");  // taken -> 0.1
  Value* c = g.add_input(Type::int_(), "x.2");
  Value* d = g.add_input(Type::int_(), "x");
  Value* e = g.add_input(Type::int_(), "x");  // x.2 is taken -> x.3
  g.top()->set_returns({a, b, c, d, e});
  std::string printed = print(g);
  EXPECT_EQ(printed, R"(graph names(%0 : int, %0.1 : int, %x.2 : int, %x : int, %x.3 : int) {
  return (%0, %0.1, %x.2, %x, %x.3)
}
)");
  EXPECT_EQ(print(*parse(printed)), printed);
}

// Every value's name, in definition order (block parameters, then each
// node's outputs, then its nested blocks).
std::vector<std::string> value_names(const Graph& g) {
  std::vector<std::string> out;
  std::function<void(const Block*)> block = [&](const Block* b) {
    for (const auto& p : b->params()) out.push_back(p->name());
    for (const auto& n : b->nodes()) {
      for (const Value* o : n->outputs()) out.push_back(o->name());
      for (const auto& inner : n->blocks()) block(inner.get());
    }
  };
  block(g.top());
  return out;
}

// clone (what ir::compile copies graphs with) names values as parse(print(g))
// does, so the code generated from either is the same text.
TEST(IrClone, NamesValuesAsParseOfPrintDoes) {
  for (const std::string* text : kValidTexts) {
    const auto g = parse(*text);
    const auto c = clone(*g);
    EXPECT_EQ(print(*c), print(*g));
    EXPECT_EQ(value_names(*c), value_names(*parse(print(*g))));
  }
  Graph g("names");  // empty and repeated names get the printer's numbers
  Value* a = g.add_input(Type::int_());
  Value* b = g.add_input(Type::int_(), "x");
  Value* d = g.add_input(Type::int_(), "x");
  Node* n = g.top()->append("add");
  n->add_input(a);
  n->add_input(b);
  Value* e = n->add_output(Type::int_(), "x");
  g.top()->set_returns({d, e});
  const auto c = clone(g);
  EXPECT_EQ(value_names(*c), (std::vector<std::string>{"0", "x", "x.1", "x.2"}));
  EXPECT_EQ(value_names(*c), value_names(*parse(print(g))));
}

TEST(IrClone, IsIndependentOfTheOriginal) {
  const auto g = parse(kLoop);
  const std::string before = print(*g);
  const auto c = clone(*g);
  Node* extra = c->top()->append("constant");
  extra->attrs()["value"] = int64_t{7};
  extra->add_output(Type::int_(), "seven");
  c->top()->set_returns({c->top()->returns()[0]});
  EXPECT_EQ(print(*g), before);
  EXPECT_NE(print(*c), before);
  // Uses point into the clone: every user of a clone's value is a clone's node.
  walk(c->top(), [&](const Node* node) {
    for (const Value* in : node->inputs()) {
      const Block* owner = in->owning_block();
      while (owner && owner->owner()) owner = owner->owner()->owner();
      EXPECT_EQ(owner, c->top()) << node->op();
    }
  });
}

TEST(IrBuild, ReplaceInputUpdatesUsers) {
  Graph g;
  Value* a = g.add_input(Type::int_(), "a");
  Value* b = g.add_input(Type::int_(), "b");
  Node* n = g.top()->append("add");
  n->add_input(a);
  n->add_input(a);
  n->add_output(Type::int_(), "s");
  ASSERT_EQ(a->users().size(), 2u);  // once per use
  n->replace_input(1, b);
  EXPECT_EQ(n->input(1), b);
  ASSERT_EQ(a->users().size(), 1u);
  EXPECT_EQ(a->users()[0], n);
  ASSERT_EQ(b->users().size(), 1u);
  EXPECT_EQ(b->users()[0], n);
}

// ---------------------------------------------------------------------------
// 3. Structure after parsing.

TEST(IrStructure, IfHasTwoBlocksWithReturns) {
  auto g = parse(kIf);
  Node* ifn = find_node(g->top(), "If");
  ASSERT_NE(ifn, nullptr);
  EXPECT_EQ(ifn->owner(), g->top());
  ASSERT_EQ(ifn->blocks().size(), 2u);
  ASSERT_EQ(ifn->num_outputs(), 2u);
  EXPECT_EQ(ifn->output(0)->name(), "y");
  EXPECT_EQ(ifn->output(1)->type(), Type::int_());
  ASSERT_EQ(ifn->inputs().size(), 1u);
  EXPECT_EQ(ifn->input(0), g->inputs()[0].get());

  const Block* then_b = ifn->block(0);
  const Block* else_b = ifn->block(1);
  EXPECT_EQ(then_b->owner(), ifn);
  EXPECT_EQ(else_b->owner(), ifn);
  EXPECT_TRUE(then_b->params().empty());
  ASSERT_EQ(then_b->returns().size(), 2u);
  ASSERT_EQ(else_b->returns().size(), 2u);
  EXPECT_EQ(then_b->returns()[0]->name(), "a");
  EXPECT_EQ(then_b->returns()[1]->name(), "one");
  EXPECT_EQ(else_b->returns()[0]->name(), "b");
  EXPECT_EQ(else_b->returns()[1]->name(), "two");
  EXPECT_EQ(then_b->nodes().size(), 2u);
  EXPECT_EQ(then_b->nodes().front()->op(), "relu");
  EXPECT_EQ(else_b->nodes().front()->op(), "neg");
  EXPECT_EQ(then_b->returns()[0]->producer(), then_b->nodes().front().get());
  EXPECT_EQ(g->top()->owner(), nullptr);
}

TEST(IrStructure, LoopBodyParamsAndReturns) {
  auto g = parse(kLoop);
  Node* loop = find_node(g->top(), "Loop");
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->inputs().size(), 4u);
  EXPECT_EQ(loop->input(0)->name(), "n");
  EXPECT_EQ(loop->input(1)->name(), "go");
  EXPECT_EQ(loop->num_outputs(), 2u);
  ASSERT_EQ(loop->blocks().size(), 1u);
  const Block* body = loop->block(0);
  ASSERT_EQ(body->params().size(), 3u);  // iteration + 2 carried
  EXPECT_EQ(body->param(0)->name(), "iter");
  EXPECT_EQ(body->param(0)->type(), Type::int_());
  EXPECT_EQ(body->param(2)->type(), f32({Dim::sym("B"), Dim::of(8)}));
  EXPECT_EQ(body->param(1)->param_of(), body);
  EXPECT_EQ(body->param(1)->producer(), nullptr);
  ASSERT_EQ(body->returns().size(), 3u);
  EXPECT_EQ(body->returns()[0]->name(), "cond");
  EXPECT_EQ(body->returns()[2]->name(), "h.n");

  // The If nested in the body.
  Node* inner = find_node(body, "If");
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->owner(), body);
  ASSERT_EQ(inner->blocks().size(), 2u);
  EXPECT_TRUE(inner->block(1)->nodes().empty());
  ASSERT_EQ(inner->block(1)->returns().size(), 1u);
  EXPECT_EQ(inner->block(1)->returns()[0], body->param(2));

  // walk is pre-order through nested blocks.
  std::vector<std::string> ops;
  walk(g->top(), [&](const Node* n) { ops.push_back(n->op()); });
  EXPECT_EQ(ops, (std::vector<std::string>{"constant", "constant", "Loop", "constant", "add", "lt", "If", "tanh",
                                           "lt"}));
}

TEST(IrStructure, UsersAndOwningBlock) {
  auto g = parse(kIf);
  Value* x = g->inputs()[1].get();
  Node* ifn = find_node(g->top(), "If");
  Node* relu = find_node(g->top(), "relu");
  Node* neg = find_node(g->top(), "neg");
  Node* add = find_node(g->top(), "add");
  ASSERT_TRUE(ifn && relu && neg && add);

  // %x is used by relu (then), neg (else) and add (top), in parse order.
  EXPECT_EQ(x->users(), (std::vector<Node*>{relu, neg, add}));
  // %c only by the If.
  EXPECT_EQ(g->inputs()[0]->users(), (std::vector<Node*>{ifn}));
  // %y only by add; %k by no node (a graph return is not a user).
  EXPECT_EQ(ifn->output(0)->users(), (std::vector<Node*>{add}));
  EXPECT_TRUE(ifn->output(1)->users().empty());

  EXPECT_EQ(x->owning_block(), g->top());
  EXPECT_EQ(x->param_of(), g->top());
  EXPECT_EQ(ifn->output(0)->owning_block(), g->top());
  EXPECT_EQ(relu->output()->owning_block(), ifn->block(0));
  EXPECT_EQ(neg->output()->owning_block(), ifn->block(1));
  EXPECT_EQ(relu->owner(), ifn->block(0));

  auto lg = parse(kLoop);
  Node* loop = find_node(lg->top(), "Loop");
  Value* h = find_value(*lg, "h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->owning_block(), loop->block(0));
  Node* tanh = find_node(lg->top(), "tanh");
  EXPECT_EQ(h->users(), (std::vector<Node*>{tanh}));  // the else block's return is not a use
  EXPECT_EQ(tanh->output()->owning_block(), find_node(lg->top(), "If")->block(0));
}

// ---------------------------------------------------------------------------
// 4. Parser errors: "line:col: message".

TEST(IrParseErrors, UndefinedValue) {
  EXPECT_EQ(parse_error("graph g(%x : int) {\n"
                        "  %y : int = add(%x, %z)\n"
                        "  return (%y)\n"
                        "}\n"),
            "2:22: use of undefined value '%z'");
}

TEST(IrParseErrors, ValueFromAnotherBlockIsUndefined) {
  // %a lives in the then block; after the If it is out of scope.
  std::string err = parse_error(R"(graph g(%c : bool) {
  %y : int = If(%c)
    block() {
      %a : int = constant{value=1}()
      -> (%a)
    }
    block() {
      -> (%a)
    }
  return (%y)
}
)");
  EXPECT_EQ(err, "8:11: use of undefined value '%a'");
  // A node's blocks cannot see the node's own outputs.
  err = parse_error(R"(graph g(%c : bool) {
  %y : int = If(%c)
    block() {
      -> (%y)
    }
    block() {
      -> (%y)
    }
  return (%y)
}
)");
  EXPECT_EQ(err, "4:11: use of undefined value '%y'");
}

TEST(IrParseErrors, DuplicateDefinition) {
  EXPECT_EQ(parse_error("graph g(%x : int) {\n"
                        "  %x : int = neg(%x)\n"
                        "  return (%x)\n"
                        "}\n"),
            "2:3: value '%x' is defined twice");
  // Names are unique in the whole graph, even across sibling blocks.
  EXPECT_EQ(parse_error(R"(graph g(%c : bool) {
  %y : int = If(%c)
    block() {
      %t : int = constant{value=1}()
      -> (%t)
    }
    block() {
      %t : int = constant{value=2}()
      -> (%t)
    }
  return (%y)
}
)"),
            "8:7: value '%t' is defined twice");
}

TEST(IrParseErrors, UnknownType) {
  EXPECT_EQ(parse_error("graph g(%x : f128[2]) {\n  return (%x)\n}\n"), "1:14: unknown type 'f128'");
  EXPECT_EQ(parse_error("graph g(%x : f32[2, 3.5]) {\n  return (%x)\n}\n"), "1:21: bad integer '3.5'");
  EXPECT_EQ(parse_error("graph g(%x : ) {\n  return (%x)\n}\n"), "1:14: expected a type, got ')'");
}

TEST(IrParseErrors, MissingArrow) {
  // The block closes without '-> (...)'.
  EXPECT_EQ(parse_error(R"(graph g(%c : bool) {
  %y : int = If(%c)
    block() {
      %t : int = constant{value=1}()
    }
    block() {
      -> (%c)
    }
  return (%y)
}
)"),
            "5:5: expected '->' closing the block");
  // The text ends inside a block.
  EXPECT_EQ(parse_error("graph g(%c : bool) {\n"
                        "  %y : int = If(%c)\n"
                        "    block() {\n"),
            "4:1: expected '->' closing the block");
}

TEST(IrParseErrors, UnterminatedString) {
  EXPECT_EQ(parse_error("graph g() {\n"
                        "  %n : int = constant{value=\"abc}()\n"
                        "  return (%n)\n"
                        "}\n"),
            "2:29: unterminated string");
  EXPECT_EQ(parse_error("graph g() {\n  %n : int = constant{value=\"abc"), "2:29: unterminated string");
  EXPECT_EQ(parse_error("graph g() {\n  %n : int = constant{value=1}() @\"f.cpp:1:2\n}"), "2:35: unterminated string");
}

TEST(IrParseErrors, GarbageAfterGraph) {
  EXPECT_EQ(parse_error("graph g() {\n  return ()\n}\nextra\n"), "4:1: text after the end of graph 'g'");
  EXPECT_EQ(parse_error("graph g() {\n  return ()\n}  }\n"), "3:4: text after the end of graph 'g'");
  // parse_all reads the next thing as a graph.
  try {
    parse_all("graph g() {\n  return ()\n}\nextra\n");
    ADD_FAILURE() << "no error";
  } catch (const graph::Error& e) {
    EXPECT_STREQ(e.what(), "4:1: expected 'graph', got 'extra'");
  }
}

TEST(IrParseErrors, BadNumber) {
  EXPECT_EQ(parse_error("graph g() {\n"
                        "  %n : float = constant{value=1.5x}()\n"
                        "  return (%n)\n"
                        "}\n"),
            "2:31: bad number '1.5x'");
  EXPECT_EQ(parse_error("graph g() {\n"
                        "  %n : int = constant{value=99999999999999999999}()\n"
                        "  return (%n)\n"
                        "}\n"),
            "2:29: bad integer '99999999999999999999'");
  EXPECT_EQ(parse_error("graph g() {\n"
                        "  %n : float = constant{value=1e}()\n"
                        "  return (%n)\n"
                        "}\n"),
            "2:31: bad number '1e'");
}

TEST(IrParseErrors, OtherSyntax) {
  EXPECT_EQ(parse_error(""), "1:1: expected 'graph', got end of input");
  EXPECT_EQ(parse_error("graph (%x : int) {\n  return (%x)\n}\n"), "1:7: expected a graph name");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  %y : int add(%x)\n  return (%y)\n}\n"), "2:12: expected '=', got 'add'");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  %y : int = add(%x\n  return (%y)\n}\n"),
            "3:3: expected ',', got 'return'");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  %y : int = neg{k=1, k=2}(%x)\n  return (%y)\n}\n"),
            "2:23: attribute 'k' given twice");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  %y : int = neg(%x)\n"), "3:1: expected an op name, got end of input");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  return (%x)\n"), "3:1: expected '}', got end of input");
}

// `depth` Ifs, each in the then-block of the one before.
std::string nested_ifs(int depth) {
  std::string s = "graph g(%c : bool) {\n";
  for (int i = 0; i < depth; ++i) s += "%o" + std::to_string(i) + " : int = If(%c)\nblock() {\n";
  s += "%k : int = constant{value=1}()\n";
  for (int i = depth - 1; i >= 0; --i)
    s += "-> (" + (i == depth - 1 ? std::string("%k") : "%o" + std::to_string(i + 1)) + ")\n}\nblock() {\n-> (%c)\n}\n";
  return s + "return (%o0)\n}\n";
}

// Found with the parser's fuzz target (fuzz/parser_fuzzer.cpp) on deeply
// nested text, which overflowed the parser's stack; the printer, verifier and
// codegen recurse the same way.
TEST(IrParseErrors, NestingDepthIsLimited) {
  std::unique_ptr<Graph> g;
  ASSERT_NO_THROW(g = parse(nested_ifs(100))) << parse_error(nested_ifs(100));
  EXPECT_EQ(print(*parse(print(*g))), print(*g));
  EXPECT_NE(parse_error(nested_ifs(101)).find(": blocks nested deeper than 100"), std::string::npos)
      << parse_error(nested_ifs(101));
  EXPECT_NE(parse_error(nested_ifs(100000)).find(": blocks nested deeper than 100"), std::string::npos);
}

// A negative size read back as '?', and a line number past INT_MAX wrapped.
TEST(IrParseErrors, NumbersOutOfRange) {
  EXPECT_EQ(parse_error("graph g(%x : f32[2, -1]) {\n  return (%x)\n}\n"),
            "1:21: integer -1 out of range [0, 9223372036854775807]");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  %y : int = neg(%x) @\"f.cpp\":4294967297:1\n  return (%y)\n}\n"),
            "2:31: integer 4294967297 out of range [0, 2147483647]");
  EXPECT_EQ(parse_error("graph g(%x : int) {\n  %y : int = neg(%x) @\"f.cpp\":3:-2\n  return (%y)\n}\n"),
            "2:33: integer -2 out of range [0, 2147483647]");
}

// ---------------------------------------------------------------------------
// 5. The verifier.

TEST(IrVerify, ValidGraphsHaveNoErrors) {
  for (const std::string* text : kValidTexts) {
    auto g = parse(*text);
    auto errors = verify(*g);
    EXPECT_TRUE(errors.empty()) << *text << "\n" << join(errors);
    EXPECT_NO_THROW(verify_or_throw(*g));
  }
}

TEST(IrVerify, UnknownOp) {
  auto g = parse("graph g(%x : Tensor) {\n"
                 "  %y : Tensor = frobnicate(%x) @\"model.cpp\":3:7\n"
                 "  return (%y)\n"
                 "}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[op] node 'frobnicate' at model.cpp:3:7: unknown op");
}

TEST(IrVerify, WrongArity) {
  auto g = parse("graph g(%x : Tensor) {\n"
                 "  %y : Tensor = relu(%x, %x)\n"
                 "  return (%y)\n"
                 "}\n");
  EXPECT_VERIFY_ERROR(*g, "[op]", "relu");
  auto errors = verify(*g);
  EXPECT_NE(join(errors).find("expects 1 inputs, has 2"), std::string::npos) << join(errors);

  auto m = parse("graph g(%x : f32[2, 2]) {\n"
                 "  %y : f32[2, 2] = matmul(%x)\n"
                 "  return (%y)\n"
                 "}\n");
  EXPECT_VERIFY_ERROR(*m, "[op]", "matmul");
}

TEST(IrVerify, UseBeforeDefinition) {
  Graph g;
  Value* x = g.add_input(Type::tensor(), "x");
  Node* first = g.top()->append("neg");
  Node* second = g.top()->append("relu");
  second->add_input(x);
  Value* later = second->add_output(Type::tensor(), "later");
  first->add_input(later);  // uses a value defined by the next node
  first->add_output(Type::tensor(), "y");
  g.top()->set_returns({first->output()});
  EXPECT_VERIFY_ERROR(g, "[scoping]", "neg");
  EXPECT_FALSE(has_error(verify(g), "[scoping]", "relu"));
}

TEST(IrVerify, ValueFromInsideIfUsedOutside) {
  Graph g;
  Value* c = g.add_input(Type::bool_(), "c");
  Value* x = g.add_input(Type::tensor(), "x");
  Node* ifn = g.top()->append("If");
  ifn->add_input(c);
  Block* then_b = ifn->add_block();
  Node* r = then_b->append("relu");
  r->add_input(x);
  Value* inner = r->add_output(Type::tensor(), "inner");
  then_b->add_return(inner);
  ifn->add_block()->add_return(x);
  Value* y = ifn->add_output(Type::tensor(), "y");

  Node* leak = g.top()->append("add");
  leak->add_input(y);
  leak->add_input(inner);  // defined inside the then block
  leak->add_output(Type::tensor(), "z");
  g.top()->set_returns({leak->output()});

  EXPECT_VERIFY_ERROR(g, "[scoping]", "add");
  EXPECT_FALSE(has_error(verify(g), "[scoping]", "relu"));
  EXPECT_FALSE(has_error(verify(g), "[scoping]", "If"));
}

TEST(IrVerify, BlockReturnsValueOfSiblingBlock) {
  Graph g;
  Value* c = g.add_input(Type::bool_(), "c");
  Value* x = g.add_input(Type::tensor(), "x");
  Node* ifn = g.top()->append("If");
  ifn->add_input(c);
  Block* then_b = ifn->add_block();
  Node* r = then_b->append("relu");
  r->add_input(x);
  Value* inner = r->add_output(Type::tensor(), "inner");
  then_b->add_return(inner);
  ifn->add_block()->add_return(inner);  // the else block cannot see it
  ifn->add_output(Type::tensor(), "y");
  g.top()->set_returns({ifn->output()});
  auto errors = verify(g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[scoping] a block of 'If' returns a value that is not in scope");
}

TEST(IrVerify, GraphReturnsValueFromInsideBlock) {
  Graph g;
  Value* c = g.add_input(Type::bool_(), "c");
  Node* ifn = g.top()->append("If");
  ifn->add_input(c);
  Block* then_b = ifn->add_block();
  Value* one = add_constant(then_b, int64_t{1});
  then_b->add_return(one);
  Block* else_b = ifn->add_block();
  else_b->add_return(add_constant(else_b, int64_t{2}));
  ifn->add_output(Type::int_(), "y");
  g.top()->set_returns({one});
  auto errors = verify(g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[scoping] the graph returns a value that is not in scope");
}

TEST(IrVerify, IfWithOneBlock) {
  auto g = parse(R"(graph g(%c : bool) {
  %y : int = If(%c)
    block() {
      %t : int = constant{value=1}()
      -> (%t)
    }
  return (%y)
}
)");
  EXPECT_VERIFY_ERROR(*g, "[op]", "If");
  EXPECT_NE(join(verify(*g)).find("two blocks"), std::string::npos);
}

TEST(IrVerify, IfBlockReturnCountMismatch) {
  auto g = parse(R"(graph g(%c : bool) {
  %y : int = If(%c)
    block() {
      %t : int = constant{value=1}()
      -> (%t)
    }
    block() {
      %u : int = constant{value=2}()
      -> (%u, %u)
    }
  return (%y)
}
)");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[op] node 'If': the else block returns 2 values for 1 outputs");
}

TEST(IrVerify, IfBranchKindMismatch) {
  auto g = parse(R"(graph g(%c : bool, %x : Tensor) {
  %y : Tensor = If(%c)
    block() {
      %t : int = constant{value=1}()
      -> (%t)
    }
    block() {
      -> (%x)
    }
  return (%y)
}
)");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[types] node 'If': the then block's value 0 is int, the output is Tensor");
}

TEST(IrVerify, IfBlockWithParamsAndBadCondition) {
  auto g = parse(R"(graph g(%c : float) {
  %y : int = If(%c)
    block(%p : int) {
      -> (%p)
    }
    block() {
      %t : int = constant{value=1}()
      -> (%t)
    }
  return (%y)
}
)");
  auto errors = verify(*g);
  EXPECT_TRUE(has_error(errors, "[types]", "If")) << join(errors);  // float condition
  EXPECT_TRUE(has_error(errors, "[op]", "If")) << join(errors);     // then block has a parameter
}

TEST(IrVerify, LoopWrongBodyParams) {
  auto g = parse(R"(graph g(%n : int, %go : bool, %h0 : Tensor) {
  %h.2 : Tensor = Loop(%n, %go, %h0)
    block(%h : Tensor) {
      -> (%go, %h)
    }
  return (%h.2)
}
)");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[op] node 'Loop': the body takes (iteration, carried...): 2 parameters, has 1");
}

TEST(IrVerify, LoopCarriedKindMismatch) {
  auto g = parse(R"(graph g(%n : int, %go : bool, %i0 : int) {
  %i.2 : int = Loop(%n, %go, %i0)
    block(%iter : int, %i : Tensor) {
      -> (%go, %i)
    }
  return (%i.2)
}
)");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[types] node 'Loop': carried value 0 changes kind across the loop");
}

TEST(IrVerify, LoopTripCountNotInt) {
  auto g = parse(R"(graph g(%n : float, %go : bool, %h0 : Tensor) {
  %h.2 : Tensor = Loop(%n, %go, %h0)
    block(%iter : int, %h : Tensor) {
      -> (%go, %h)
    }
  return (%h.2)
}
)");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[types] node 'Loop': the max trip count must be an int");
}

TEST(IrVerify, LoopOtherShapes) {
  // Outputs do not match the carried values.
  auto g = parse(R"(graph g(%n : int, %go : bool, %h0 : Tensor) {
  %a : Tensor, %b : Tensor = Loop(%n, %go, %h0)
    block(%iter : int, %h : Tensor) {
      -> (%go, %h)
    }
  return (%a)
}
)");
  EXPECT_VERIFY_ERROR(*g, "[op]", "Loop");
  // The body returns no condition.
  auto r = parse(R"(graph g(%n : int, %go : bool, %h0 : Tensor) {
  %a : Tensor = Loop(%n, %go, %h0)
    block(%iter : int, %h : Tensor) {
      -> (%h)
    }
  return (%a)
}
)");
  EXPECT_VERIFY_ERROR(*r, "[op]", "Loop");
  // The iteration parameter is not an int.
  auto it = parse(R"(graph g(%n : int, %go : bool) {
  Loop(%n, %go)
    block(%iter : float) {
      -> (%go)
    }
  return ()
}
)");
  EXPECT_VERIFY_ERROR(*it, "[types]", "Loop");
}

TEST(IrVerify, ConstantWithoutValue) {
  auto g = parse("graph g() {\n  %c : int = constant()\n  return (%c)\n}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[attrs] node 'constant': a constant needs 'value'");
}

TEST(IrVerify, ConstantTypeMismatch) {
  auto g = parse("graph g() {\n  %c : float = constant{value=1}()\n  return (%c)\n}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[types] node 'constant': the output type does not match 'value'");

  auto s = parse("graph g() {\n  %c : int = constant{value=\"one\"}()\n  return (%c)\n}\n");
  EXPECT_VERIFY_ERROR(*s, "[attrs]", "constant");
  auto in = parse("graph g(%x : int) {\n  %c : int = constant{value=1}(%x)\n  return (%c)\n}\n");
  EXPECT_VERIFY_ERROR(*in, "[op]", "constant");
}

TEST(IrVerify, ElementwiseOnScalarsWithTensorOutput) {
  auto g = parse("graph g(%a : int, %b : int) {\n  %y : Tensor = add(%a, %b)\n  return (%y)\n}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[types] node 'add': scalar inputs give a scalar output");

  auto t = parse("graph g(%a : Tensor, %b : int) {\n  %y : int = mul(%a, %b)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*t, "[types]", "mul");
  auto cmp = parse("graph g(%a : int, %b : int) {\n  %y : int = lt(%a, %b)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*cmp, "[types]", "lt");
  auto cmpt = parse("graph g(%a : f32[2], %b : f32[2]) {\n  %y : f32[2] = ge(%a, %b)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*cmpt, "[types]", "ge");
}

TEST(IrVerify, ReduceWithNonIntDim) {
  auto g = parse("graph g(%x : f32[2, 3]) {\n  %y : f32[2] = sum{dim=1.0}(%x)\n  return (%y)\n}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[attrs] node 'sum': 'dim' must be an integer or a list of integers");

  auto k = parse("graph g(%x : f32[2, 3]) {\n  %y : f32[2] = mean{keepdim=true}(%x)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*k, "[attrs]", "mean");
  auto kb = parse("graph g(%x : f32[2, 3]) {\n  %y : f32[2] = mean{dim=0, keepdim=1}(%x)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*kb, "[attrs]", "mean");
}

TEST(IrVerify, MatmulOnScalar) {
  auto g = parse("graph g(%a : f32[2, 2], %s : float) {\n  %y : f32[2, 2] = matmul(%a, %s)\n  return (%y)\n}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_EQ(errors[0], "[types] node 'matmul': input 1 must be a tensor");

  auto out = parse("graph g(%a : f32[2, 2]) {\n  %y : float = t(%a)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*out, "[types]", "t");
}

TEST(IrVerify, ReportsEveryViolation) {
  auto g = parse("graph g(%x : Tensor) {\n"
                 "  %a : Tensor = frobnicate(%x)\n"
                 "  %b : Tensor = relu(%a, %a)\n"
                 "  %c : float = constant{value=true}()\n"
                 "  return (%b, %c)\n"
                 "}\n");
  auto errors = verify(*g);
  ASSERT_EQ(errors.size(), 3u) << join(errors);
  EXPECT_TRUE(has_error(errors, "[op]", "frobnicate"));
  EXPECT_TRUE(has_error(errors, "[op]", "relu"));
  EXPECT_TRUE(has_error(errors, "[types]", "constant"));
}

TEST(IrVerify, VerifyOrThrow) {
  auto g = parse("graph bad(%x : Tensor) {\n  %y : Tensor = relu(%x, %x)\n  return (%y)\n}\n");
  try {
    verify_or_throw(*g);
    ADD_FAILURE() << "verify_or_throw did not throw";
  } catch (const graph::Error& e) {
    std::string what = e.what();
    EXPECT_EQ(what, "graph 'bad' is malformed:\n  [op] node 'relu': expects 1 inputs, has 2");
  }
  EXPECT_THROW(verify_or_throw(*g), graph::Error);
  EXPECT_NO_THROW(verify_or_throw(*parse(kLoop)));
}


TEST(IrText, IntListAttributesAndListTypeRoundTrip) {
  const std::string text =
      "graph g(%x : f32[2, 3]) {\n"
      "  %y : f32[3, 2] = permute{dims=[1, 0]}(%x)\n"
      "  %z : f32[6] = reshape{shape=[-1]}(%y)\n"
      "  %l : list = list_new()\n"
      "  %l.1 : list = list_append(%l, %z)\n"
      "  %0 : int = constant{value=0}()\n"
      "  %w : Tensor = list_get(%l.1, %0)\n"
      "  %n : int = list_len(%l.1)\n"
      "  %u : Tensor = undefined()\n"
      "  %c : Tensor = call{callee=\"f\"}(%w, %u)\n"
      "  return (%c, %n)\n"
      "}\n";
  auto g = parse(text);
  EXPECT_EQ(print(*g), text);
  EXPECT_EQ(g->top()->nodes().front()->ints("dims"), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(verify(*g).empty()) << join(verify(*g));
}

TEST(IrVerify, ListPrimitivesCheckTheirOperands) {
  auto g = parse(
      "graph g(%x : f32[2]) {\n  %l : list = list_new()\n  %l.1 : list = list_append(%x, %l)\n  return (%x)\n}\n");
  EXPECT_VERIFY_ERROR(*g, "[types]", "list_append");
  auto c = parse("graph g(%x : f32[2]) {\n  %y : Tensor = call(%x)\n  return (%y)\n}\n");
  EXPECT_VERIFY_ERROR(*c, "[attrs]", "call");
}

TEST(IrText, MalformedIntListIsAnError) {
  EXPECT_THROW(parse("graph g(%x : f32[2]) {\n  %y : f32[2] = permute{dims=[1, x]}(%x)\n  return (%y)\n}\n"), graph::Error);
  EXPECT_THROW(parse("graph g(%x : f32[2]) {\n  %y : f32[2] = permute{dims=[1, 0}(%x)\n  return (%y)\n}\n"), graph::Error);
}

}  // namespace
}  // namespace graph::ir
