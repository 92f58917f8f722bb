// Tests of the graph IR's error paths: parser errors (with their line and
// column) and the verifier's invariants (verifier.h).
#include "ir_test_support.h"

namespace graph::ir {
namespace {

using namespace ir_test;

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
