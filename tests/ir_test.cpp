// Tests of the graph IR: the text format (print/parse are exact inverses), the
// C++ builder API and the structure the parser builds. Parser errors and the
// verifier's invariants are in ir_verify_test.cpp.
#include "ir_test_support.h"

namespace graph::ir {
namespace {

using namespace ir_test;

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

}  // namespace
}  // namespace graph::ir
