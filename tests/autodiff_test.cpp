// The autodiff pass: for every differentiable op of the op table, for If
// (both branches), Loop (data-dependent trip counts 0, 1 and 5), a Loop
// inside an If, several uses and broadcasting, the backward graph run by the
// interpreter in float64 gives the gradients of eager autograd (the original
// graph run with inputs that require grad) and of central finite differences.
// Every forward and backward graph verifies. If, Loop and bad input are in
// autodiff_control_test.cpp.
#include "autodiff_test_support.h"

namespace graph {
namespace {

using namespace autodiff_test;

// ---- every differentiable op ---------------------------------------------------

struct OpCase {
  std::string op;
  std::string text;
  std::vector<IValue> inputs;
};

std::vector<OpCase> op_cases() {
  const Tensor a = values({2, 3}, -1.5, 1.5, 1), b = values({2, 3}, -1.5, 1.5, 2), row = values({3}, -1.0, 1.0, 3);
  const Tensor pos = values({2, 3}, 0.5, 2.0, 4), pos_row = values({3}, 0.5, 1.5, 5);
  const Tensor img = values({2, 2, 5, 5}, -1, 1, 6), w = values({3, 2, 3, 3}, -0.5, 0.5, 7), bias = values({3}, -1, 1, 8);
  const Tensor q = values({1, 2, 3, 4}, -1, 1, 9), k = values({1, 2, 5, 4}, -1, 1, 10), v = values({1, 2, 5, 4}, -1, 1, 11);
  std::vector<OpCase> cases;
  auto add = [&](std::string op, std::string body, std::vector<IValue> in) {
    cases.push_back({std::move(op), one_node(body, in.size()), std::move(in)});
  };
  // Elementwise: every entry of ops.def, binary ones broadcasting [2, 3] with [3].
  auto positive_only = [](OpId id) { return id == OpId::log || id == OpId::sqrt || id == OpId::rsqrt || id == OpId::log1p; };
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) \
  add(#name, "  %y : Tensor = " #name "(%a)\n", {positive_only(OpId::name) ? pos : a});
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                                      \
  add(#name, "  %y : Tensor = " #name "(%a, %b)\n", {OpId::name == OpId::pow ? pos : a,                        \
                                                    OpId::name == OpId::div || OpId::name == OpId::pow ? pos_row : row});
#include "graph/ops.def"
  // A host scalar operand and an operand broadcast both ways.
  add("mul", "  %s : float = constant{value=2.5}()\n  %y : Tensor = mul(%s, %a)\n", {a});
  add("pow", "  %s : float = constant{value=1.5}()\n  %y : Tensor = pow(%a, %s)\n", {pos});
  add("sub", "  %y : Tensor = sub(%a, %b)\n", {values({2, 1}, -1, 1, 12), values({1, 3}, -1, 1, 13)});
  // ties between equal values split the gradient, which differences cannot see
  add("maximum", "  %y : Tensor = maximum(%a, %b)\n", {a, b});

  add("sum", "  %y : Tensor = sum{dim=[0, 1], keepdim=true}(%a)\n", {a});
  add("sum", "  %y : Tensor = sum{dim=-1}(%a)\n", {a});
  add("mean", "  %y : Tensor = mean{dim=1}(%a)\n", {a});
  add("mean", "  %y : Tensor = mean(%a)\n", {a});
  add("amax", "  %y : Tensor = amax{dim=0}(%a)\n", {a});
  add("amin", "  %y : Tensor = amin(%a)\n", {a});
  add("argmax", "  %y : Tensor = argmax{dim=1, keepdim=true}(%a)\n", {a});
  add("matmul", "  %y : Tensor = matmul(%a, %b)\n", {a, values({3, 4}, -1, 1, 14)});
  add("matmul", "  %y : Tensor = matmul(%a, %b)\n", {values({2, 2, 3}, -1, 1, 15), values({3, 4}, -1, 1, 16)});
  add("matmul", "  %y : Tensor = matmul(%a, %b)\n", {row, values({3, 2}, -1, 1, 17)});
  add("conv2d", "  %y : Tensor = conv2d{stride=[2, 1], padding=[1, 1], dilation=[1, 2], groups=1}(%a, %b, %c)\n",
      {img, w, bias});
  add("conv2d", "  %c : Tensor = undefined()\n  %y : Tensor = conv2d{groups=2}(%a, %b, %c)\n",
      {img, values({4, 1, 2, 2}, -1, 1, 18)});
  add("conv_transpose2d",
      "  %y : Tensor = conv_transpose2d{stride=[2, 1], padding=[1, 0], output_padding=[1, 0], groups=1, "
      "dilation=[1, 2]}(%a, %b, %c)\n",
      {img, values({2, 3, 3, 3}, -0.5, 0.5, 19), bias});
  add("conv_transpose2d", "  %c : Tensor = undefined()\n  %y : Tensor = conv_transpose2d{groups=2}(%a, %b, %c)\n",
      {img, values({2, 2, 2, 2}, -1, 1, 20)});
  add("t", "  %y : Tensor = t(%a)\n", {a});
  add("transpose", "  %y : Tensor = transpose{dim0=0, dim1=-1}(%a)\n", {a});
  add("permute", "  %y : Tensor = permute{dims=[2, 0, 1]}(%a)\n", {values({2, 3, 4}, -1, 1, 19)});
  add("reshape", "  %y : Tensor = reshape{shape=[3, -1]}(%a)\n", {a});
  add("expand", "  %y : Tensor = expand{shape=[4, 3]}(%a)\n", {row});
  add("expand", "  %y : Tensor = expand{shape=[2, -1, 3]}(%a)\n", {values({4, 1}, -1, 1, 20)});
  add("slice", "  %y : Tensor = slice{dim=1, start=0, end=3, step=2}(%a)\n", {a});
  add("squeeze", "  %y : Tensor = squeeze{dim=0}(%a)\n", {values({1, 3}, -1, 1, 21)});
  add("unsqueeze", "  %y : Tensor = unsqueeze{dim=1}(%a)\n", {a});
  add("flatten", "  %y : Tensor = flatten{start_dim=1, end_dim=2}(%a)\n", {values({2, 2, 3}, -1, 1, 22)});
  add("where", "  %y : Tensor = where(%a, %b, %c)\n", {gt(a, b), a, row});
  add("masked_fill", "  %y : Tensor = masked_fill{value=-0.5}(%a, %b)\n", {values({2, 1}, -1, 1, 40), gt(a, b)});
  add("masked_fill",
      "  %s : float = constant{value=0.25}()\n  %y : Tensor = masked_fill{value=\"@2\", invert=true, promote=true}(%a, %b, %s)\n",
      {a, gt(a, b)});
  add("triu", "  %y : Tensor = triu{diagonal=1}(%a)\n", {values({2, 3, 4}, -1, 1, 41)});
  add("tril", "  %y : Tensor = tril{diagonal=-1}(%a)\n", {a});
  add("index_select", "  %y : Tensor = index_select{dim=1}(%a, %b)\n", {a, tensor<int64_t>({2, 0, 2, 1})});
  add("gather", "  %y : Tensor = gather{dim=1}(%a, %b)\n", {a, tensor<int64_t>({2, 0, 0, 1, 1, 1}).reshape({2, 3})});
  add("cumsum", "  %y : Tensor = cumsum{dim=0}(%a)\n", {values({3, 2}, -1, 1, 42)});
  add("bmm", "  %y : Tensor = bmm(%a, %b)\n", {values({2, 2, 3}, -1, 1, 43), values({2, 3, 4}, -1, 1, 44)});
  add("scatter_add", "  %y : Tensor = scatter_add{dim=0}(%a, %b, %c)\n",
      {a, tensor<int64_t>({1, 0, 0, 1}).reshape({2, 2}), values({2, 3}, -1, 1, 45)});
  add("argsort", "  %y : Tensor = argsort{dim=1}(%a)\n", {a});
  add("softmax", "  %y : Tensor = softmax{dim=1}(%a)\n", {a});
  add("log_softmax", "  %y : Tensor = log_softmax{dim=0}(%a)\n", {a});
  add("linear", "  %y : Tensor = linear(%a, %b, %c)\n", {a, values({4, 3}, -1, 1, 23), values({4}, -1, 1, 24)});
  add("linear", "  %c : Tensor = undefined()\n  %y : Tensor = linear(%a, %b, %c)\n",
      {values({2, 2, 3}, -1, 1, 25), values({4, 3}, -1, 1, 26)});
  add("layer_norm", "  %y : Tensor = layer_norm{normalized_shape=[3], eps=0.001}(%a, %b, %c)\n", {a, row, pos_row});
  add("batch_norm", "  %u : Tensor = undefined()\n  %y : Tensor = batch_norm{training=true, eps=0.001}(%a, %u, %u, %b, %c)\n",
      {values({4, 3}, -1, 1, 42), pos_row, row});
  add("max_pool2d", "  %y : Tensor = max_pool2d{kernel=[2, 2], stride=[2, 1], padding=[1, 0]}(%a)\n", {img});
  add("avg_pool2d", "  %y : Tensor = avg_pool2d{kernel=[3, 3], stride=[2, 2], padding=[1, 1]}(%a)\n", {img});
  add("adaptive_avg_pool2d", "  %y : Tensor = adaptive_avg_pool2d{output_size=[3, 2]}(%a)\n", {img});
  add("pad", "  %y : Tensor = pad{pad=[1, -1, 0, 2], value=-1.0}(%a)\n", {img});
  add("interpolate", "  %y : Tensor = interpolate{size=[5, 7], mode=2, align_corners=false}(%a)\n", {img});
  add("embedding", "  %y : Tensor = embedding(%a, %b)\n", {values({5, 3}, -1, 1, 27), tensor<int64_t>({4, 0, 4, 2})});
  add("cat", "  %y : Tensor = cat{dim=1}(%a, %b, %c)\n", {a, values({2, 1}, -1, 1, 28), a});
  add("stack", "  %y : Tensor = stack{dim=-1}(%a, %b)\n", {a, b});
  add("dropout", "  %y : Tensor = dropout{p=0.5, training=false}(%a)\n", {a});
  add("dropout_mask", "  %m : Tensor = dropout_mask{p=0.5, training=false}(%a)\n  %y : Tensor = mul(%a, %m)\n", {a});
  add("mse_loss", "  %y : Tensor = mse_loss(%a, %b)\n", {a, b});
  add("cross_entropy", "  %y : Tensor = cross_entropy(%a, %b)\n", {a, tensor<int64_t>({2, 0})});
  add("scaled_dot_product_attention",
      "  %m : Tensor = undefined()\n  %y : Tensor = scaled_dot_product_attention{is_causal=true}(%a, %b, %c, %m)\n",
      {q, values({1, 2, 3, 4}, -1, 1, 29), values({1, 2, 3, 4}, -1, 1, 30)});
  add("scaled_dot_product_attention",
      "  %y : Tensor = scaled_dot_product_attention(%a, %b, %c, %d)\n", {q, k, v, values({3, 5}, -1, 1, 31)});
  add("to", "  %y : Tensor = to{dtype=\"f64\"}(%a)\n", {a});  // f32 in CastsConvertTheGradientBack
  add("contiguous", "  %t : Tensor = t(%a)\n  %y : Tensor = contiguous(%t)\n", {a});
  // No gradient through a draw: x's only path is the multiply.
  add("rand_like", "  %r : Tensor = rand_like(%a)\n  %z : Tensor = lt(%r, %b)\n  %y : Tensor = mul(%a, %z)\n", {a, values({2, 3}, 1.5, 2.5, 41)});
  add("randn_like", "  %r : Tensor = randn_like(%a)\n  %z : Tensor = eq(%r, %r)\n  %y : Tensor = mul(%a, %z)\n", {a});
  add("type_as", "  %y : Tensor = type_as(%a, %b)\n", {a, b.to(kFloat64)});  // f32 to f64: the gradient comes back
  return cases;
}

// The gradient ops the pass emits have no gradient themselves.
bool is_gradient_op(const OpInfo& op) { return op.has(graph::op_trait::Backward); }

TEST(Autodiff, EveryDifferentiableOpMatchesEagerAndFiniteDifferences) {
  std::set<std::string> covered;
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.op + "\n" + c.text);
    covered.insert(c.op);
    check_graph(c.text, c.inputs);
  }
  for (const OpInfo& op : kOpTable)
    if (!is_gradient_op(op) && !covered.count(std::string(op.name)))
      ADD_FAILURE() << "op '" << op.name << "' has no autodiff test case";
}

TEST(Autodiff, NonDifferentiableOpsGiveNoGradient) {
  for (const char* op : {"sign", "logical_not", "gt", "eq"}) {
    const bool unary = std::string(op) == "sign" || std::string(op) == "logical_not";
    auto g = ir::parse(one_node(std::string("  %y : Tensor = ") + op + (unary ? "(%a)\n" : "(%a, %b)\n"), unary ? 1 : 2));
    auto gg = ir::differentiate(*g, std::vector<bool>(unary ? 1 : 2, true));
    for (ir::Value* r : gg.backward->outputs()) EXPECT_EQ(r->producer()->op(), "undefined") << op;
  }
  auto g = ir::parse(one_node("  %y : Tensor = argmax{dim=0}(%a)\n", 1));
  EXPECT_EQ(ir::differentiate(*g, {true}).backward->outputs()[0]->producer()->op(), "undefined");
}

// to{dtype}: the gradient comes back in the input's dtype (f64 here, through an
// f32 result; finite differences see f32 rounding, hence their tolerance, and
// eager autograd rounds this f64 upstream gradient to the result's f32 first);
// a cast to an integral dtype carries none.
TEST(Autodiff, CastsConvertTheGradientBack) {
  auto g = ir::parse(one_node("  %y : Tensor = to{dtype=\"f32\"}(%a)\n", 1));
  const std::vector<IValue> in = {values({2, 3}, -1.5, 1.5, 1)};
  const std::vector<Tensor> up = {values({2, 3}, 0.5, 1.5, 7)};
  Grads ours = pass_grads(*g, in, {true}, up);
  ASSERT_EQ(ours.grads.size(), 1u);
  ASSERT_TRUE(ours.grads[0].defined());
  EXPECT_EQ(ours.grads[0].dtype(), graph::kFloat64);
  expect_close(ours.grads[0], eager_grads(*g, in, {true}, up)[0], 1e-7, "vs eager autograd");
  expect_close(ours.grads[0], numeric_grads(*g, in, {true}, up)[0], 1e-2, "vs finite differences");
  auto h = ir::parse(one_node("  %i : Tensor = to{dtype=\"i64\"}(%a)\n  %y : Tensor = to{dtype=\"f64\"}(%i)\n", 1));
  EXPECT_EQ(ir::differentiate(*h, {true}).backward->outputs()[0]->producer()->op(), "undefined");
}

// ---- the graphs the pass builds ---------------------------------------------------

const char* kMulExp =
    "graph f(%x : Tensor, %w : Tensor) {\n"
    "  %a : Tensor = mul(%x, %w) @\"m.cpp\":3:5\n"
    "  %y : Tensor = exp(%a) @\"m.cpp\":4:7\n"
    "  return (%y)\n"
    "}\n";

TEST(Autodiff, BackwardGraphReusesTheEagerFormulasAndKeepsLocations) {
  auto g = ir::parse(kMulExp);
  ir::GradGraphs gg = ir::differentiate(*g, {true, false});
  // exp's gradient reads its result, mul's the other operand, and the sum
  // back to x's shape x itself (its shape is known only at run time).
  EXPECT_EQ(gg.num_outputs, 1u);
  EXPECT_EQ(gg.num_saved, 3u);
  EXPECT_EQ(gg.grad_inputs, std::vector<size_t>{0});
  const std::string text = ir::print(*gg.backward);
  SCOPED_TRACE(text);
  // grad * result (exp), then grad * w reduced to x's shape (mul); nothing for w.
  size_t at = text.find("graph f_backward(%y : Tensor, %w : Tensor, %x : Tensor, %grad_y : Tensor)");
  ASSERT_NE(at, std::string::npos);
  for (const char* want : {"= mul(%grad_y, %y) @\"m.cpp\":4:7", "= mul(", "%w) @\"m.cpp\":3:5", "= sum_to("}) {
    const size_t next = text.find(want, at);
    ASSERT_NE(next, std::string::npos) << "missing, in order: " << want;
    at = next;
  }
  EXPECT_EQ(text.find("exp("), std::string::npos) << "the gradient of exp reuses the saved result";
  // Every op node of the backward carries its forward node's location.
  ir::walk(gg.backward->top(), [](const ir::Node* n) {
    if (find_op(n->op())) {
      EXPECT_TRUE(n->loc().valid()) << n->op();
    }
  });
}

TEST(Autodiff, KnownEqualShapesNeedNoSumTo) {
  // Types from shape inference show no broadcast: no sum_to, nothing saved
  // for the operands' shapes.
  auto g = ir::parse(
      "graph f(%x : f64[N, 3], %w : f64[N, 3]) {\n"
      "  %a : f64[N, 3] = mul(%x, %w)\n"
      "  return (%a)\n"
      "}\n");
  ir::GradGraphs gg = ir::differentiate(*g, {true, true});
  const std::string text = ir::print(*gg.backward);
  EXPECT_EQ(text.find("sum_to"), std::string::npos) << text;
  EXPECT_EQ(gg.num_saved, 2u) << text;
  check_graph(ir::print(*g), {values({2, 3}, -1, 1, 44), values({2, 3}, -1, 1, 45)});
}

TEST(Autodiff, SeveralUsesAccumulate) {
  // y = x * x + exp(x) * x, z = sum(x): x gets four contributions.
  const std::string text =
      "graph f(%x : Tensor) {\n"
      "  %a : Tensor = mul(%x, %x)\n"
      "  %e : Tensor = exp(%x)\n"
      "  %b : Tensor = mul(%e, %x)\n"
      "  %y : Tensor = add(%a, %b)\n"
      "  %z : Tensor = sum(%x)\n"
      "  return (%y, %z)\n"
      "}\n";
  check_graph(text, {values({2, 3}, -1, 1, 40)});
  auto gg = ir::differentiate(*ir::parse(text), {true});
  int adds = 0;
  ir::walk(gg.backward->top(), [&](const ir::Node* n) { adds += n->op() == "add"; });
  EXPECT_GE(adds, 3);
}

TEST(Autodiff, BroadcastOperandsAreSummedBack) {
  const std::string text =
      "graph f(%a : Tensor, %b : Tensor, %c : Tensor) {\n"
      "  %m : Tensor = mul(%a, %b)\n"
      "  %y : Tensor = add(%m, %c)\n"
      "  return (%y)\n"
      "}\n";
  Grads r = check_graph(text, {values({4, 1, 3}, -1, 1, 41), values({2, 1}, -1, 1, 42), values({}, -1, 1, 43)});
  ASSERT_EQ(r.grads.size(), 3u);
  EXPECT_EQ(shape_str(r.grads[0].sizes()), "[4, 1, 3]");
  EXPECT_EQ(shape_str(r.grads[1].sizes()), "[2, 1]");
  EXPECT_EQ(shape_str(r.grads[2].sizes()), "[]");
}

TEST(Autodiff, InputsThatReachNoOutputGetUndefined) {
  auto g = ir::parse(
      "graph f(%x : Tensor, %w : Tensor) {\n"
      "  %y : Tensor = tanh(%x)\n"
      "  return (%y)\n"
      "}\n");
  ir::GradGraphs gg = ir::differentiate(*g, {true, true});
  ASSERT_EQ(gg.backward->outputs().size(), 2u);
  EXPECT_EQ(gg.backward->outputs()[1]->producer()->op(), "undefined");
  std::vector<IValue> fwd = run(*gg.forward, {values({3}, -1, 1, 1), values({3}, -1, 1, 2)});
  std::vector<IValue> bin(fwd.begin() + 1, fwd.end());
  bin.push_back(ones({3}, kFloat64));
  std::vector<IValue> grads = run(*gg.backward, bin);
  EXPECT_TRUE(std::get<Tensor>(grads[0]).defined());
  EXPECT_FALSE(std::get<Tensor>(grads[1]).defined());
}

}  // namespace
}  // namespace graph
