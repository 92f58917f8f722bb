// The autodiff pass: for every differentiable op of the op table, for If
// (both branches), Loop (data-dependent trip counts 0, 1 and 5), a Loop
// inside an If, several uses and broadcasting, the backward graph run by the
// interpreter in float64 gives the gradients of eager autograd (the original
// graph run with inputs that require grad) and of central finite differences.
// Every forward and backward graph verifies; bad input gives a graph::Error.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/autodiff.h"
#include "graph/ir/ir.h"
#include "graph/ir/verifier.h"
#include "graph/op_table.h"
#include "graph/ops.h"
#include "support/gradcheck.h"

namespace graph {
namespace {

using gradcheck_support::values;

bool differentiable(const IValue& v) {
  auto* t = std::get_if<Tensor>(&v);
  return t && t->defined() && is_floating(t->dtype());
}

std::vector<bool> floating_inputs(const std::vector<IValue>& in) {
  std::vector<bool> rg;
  for (const IValue& v : in) rg.push_back(differentiable(v));
  return rg;
}

std::vector<Tensor> tensors(const std::vector<IValue>& vs) {
  std::vector<Tensor> out;
  for (const IValue& v : vs) out.push_back(std::get<Tensor>(v));
  return out;
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(shape_str(got.sizes()), shape_str(want.sizes())) << what;
  const Tensor a = got.to(kFloat64).contiguous(), b = want.to(kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = b.data_ptr<double>()[i];
    EXPECT_NEAR(x, y, tol * (1 + std::fabs(y))) << what << ", element " << i;
  }
}

struct Grads {
  std::vector<Tensor> outputs;
  std::vector<Tensor> grads;  // one per input requiring grad
};

// The pass's gradients: forward, then backward (with grad mode off, as inside
// an eager backward()), through the interpreter. The combined graph must give
// the same values.
Grads pass_grads(const ir::Graph& g, const std::vector<IValue>& in, const std::vector<bool>& rg,
                 const std::vector<Tensor>& grad_outputs) {
  ir::GradGraphs gg = ir::differentiate(g, rg);
  ir::verify_or_throw(*gg.forward);
  ir::verify_or_throw(*gg.backward);
  EXPECT_EQ(gg.forward->outputs().size(), gg.num_outputs + gg.num_saved);
  EXPECT_EQ(gg.backward->inputs().size(), gg.num_saved + gg.num_outputs);
  std::vector<IValue> fwd = run(*gg.forward, in);
  Grads r;
  std::vector<IValue> bin(fwd.begin() + static_cast<long>(gg.num_outputs), fwd.end());
  for (size_t i = 0; i < gg.num_outputs; ++i) r.outputs.push_back(std::get<Tensor>(fwd[i]));
  bin.insert(bin.end(), grad_outputs.begin(), grad_outputs.end());
  {
    NoGradGuard no_grad;
    r.grads = tensors(run(*gg.backward, bin));
  }
  auto combined = ir::differentiate_combined(g, rg);
  std::vector<IValue> cin = in;
  cin.insert(cin.end(), grad_outputs.begin(), grad_outputs.end());
  std::vector<Tensor> c = tensors(run(*combined, cin));
  EXPECT_EQ(c.size(), r.outputs.size() + r.grads.size());
  for (size_t i = 0; i < r.grads.size() && r.outputs.size() + i < c.size(); ++i) {
    EXPECT_EQ(c[r.outputs.size() + i].defined(), r.grads[i].defined());
    if (c[r.outputs.size() + i].defined())
      expect_close(c[r.outputs.size() + i], r.grads[i], 0, "combined graph, gradient " + std::to_string(i));
  }
  return r;
}

// Eager autograd of the same graph: the interpreter runs eager ops, which
// record when their inputs require grad.
std::vector<Tensor> eager_grads(const ir::Graph& g, std::vector<IValue> in, const std::vector<bool>& rg,
                                const std::vector<Tensor>& grad_outputs) {
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < in.size(); ++i)
    if (rg[i]) {
      Tensor t = std::get<Tensor>(in[i]).detach().clone().requires_grad_();
      in[i] = t;
      leaves.push_back(t);
    }
  std::vector<Tensor> out = tensors(run(g, in));
  Tensor total;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i].requires_grad()) continue;
    Tensor term = (out[i] * grad_outputs[i]).sum();
    total = total.defined() ? total + term : term;
  }
  if (total.defined()) total.backward();
  std::vector<Tensor> grads;
  for (const Tensor& l : leaves) grads.push_back(l.grad());
  return grads;
}

// d/d input of sum_i (output_i * grad_output_i), by central differences.
std::vector<Tensor> numeric_grads(const ir::Graph& g, const std::vector<IValue>& in, const std::vector<bool>& rg,
                                  const std::vector<Tensor>& grad_outputs) {
  NoGradGuard no_grad;
  auto objective = [&](const std::vector<IValue>& x) {
    std::vector<Tensor> out = tensors(run(g, x));
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += (out[i].to(kFloat64) * grad_outputs[i]).sum().item<double>();
    return s;
  };
  std::vector<Tensor> grads;
  const double eps = 1e-6;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!rg[k]) continue;
    std::vector<IValue> x = in;
    Tensor probe = std::get<Tensor>(in[k]).clone();
    x[k] = probe;
    Tensor grad = zeros(probe.sizes(), kFloat64);
    double* p = probe.data_ptr<double>();
    for (int64_t i = 0; i < probe.numel(); ++i) {
      const double keep = p[i];
      p[i] = keep + eps;
      const double up = objective(x);
      p[i] = keep - eps;
      const double down = objective(x);
      p[i] = keep;
      grad.data_ptr<double>()[i] = (up - down) / (2 * eps);
    }
    grads.push_back(grad);
  }
  return grads;
}

bool all_zero(const Tensor& t) { return !t.defined() || (abs(t.to(kFloat64)).sum().item<double>() < 1e-8); }

// The whole check for one graph: the pass against eager autograd (1e-10)
// and finite differences (1e-6); an undefined gradient must be zero for both.
Grads check_graph(const std::string& text, const std::vector<IValue>& in, double fd_tol = 1e-6) {
  auto g = ir::parse(text);
  const std::vector<bool> rg = floating_inputs(in);
  std::vector<Tensor> grad_outputs;
  {
    NoGradGuard no_grad;
    int seed = 7;
    for (const Tensor& o : tensors(run(*g, in))) grad_outputs.push_back(values(o.sizes(), 0.5, 1.5, seed++));
  }
  Grads ours = pass_grads(*g, in, rg, grad_outputs);
  const std::vector<Tensor> eager = eager_grads(*g, in, rg, grad_outputs);
  const std::vector<Tensor> numeric = numeric_grads(*g, in, rg, grad_outputs);
  EXPECT_EQ(ours.grads.size(), eager.size());
  for (size_t i = 0; i < ours.grads.size() && i < eager.size(); ++i) {
    const std::string what = "gradient " + std::to_string(i);
    if (!ours.grads[i].defined()) {
      EXPECT_TRUE(all_zero(eager[i])) << what << ": undefined, but eager autograd gives one";
      EXPECT_TRUE(all_zero(numeric[i])) << what << ": undefined, but finite differences are not zero";
      continue;
    }
    if (eager[i].defined()) expect_close(ours.grads[i], eager[i], 1e-10, what + " vs eager autograd");
    else EXPECT_TRUE(all_zero(ours.grads[i])) << what << ": eager autograd gives none";
    expect_close(ours.grads[i], numeric[i], fd_tol, what + " vs finite differences");
  }
  return ours;
}

// ---- every differentiable op ---------------------------------------------------

struct OpCase {
  std::string op;
  std::string text;
  std::vector<IValue> inputs;
};

std::string one_node(const std::string& body, size_t inputs) {
  std::string params;
  for (size_t i = 0; i < inputs; ++i) params += (i ? ", %" : "%") + std::string(1, char('a' + i)) + " : Tensor";
  return "graph g(" + params + ") {\n" + body + "  return (%y)\n}\n";
}

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
  add("embedding", "  %y : Tensor = embedding(%a, %b)\n", {values({5, 3}, -1, 1, 27), tensor<int64_t>({4, 0, 4, 2})});
  add("cat", "  %y : Tensor = cat{dim=1}(%a, %b, %c)\n", {a, values({2, 1}, -1, 1, 28), a});
  add("stack", "  %y : Tensor = stack{dim=-1}(%a, %b)\n", {a, b});
  add("dropout", "  %y : Tensor = dropout{p=0.5, training=false}(%a)\n", {a});
  add("mse_loss", "  %y : Tensor = mse_loss(%a, %b)\n", {a, b});
  add("cross_entropy", "  %y : Tensor = cross_entropy(%a, %b)\n", {a, tensor<int64_t>({2, 0})});
  add("scaled_dot_product_attention",
      "  %m : Tensor = undefined()\n  %y : Tensor = scaled_dot_product_attention{is_causal=true}(%a, %b, %c, %m)\n",
      {q, values({1, 2, 3, 4}, -1, 1, 29), values({1, 2, 3, 4}, -1, 1, 30)});
  add("scaled_dot_product_attention",
      "  %y : Tensor = scaled_dot_product_attention(%a, %b, %c, %d)\n", {q, k, v, values({3, 5}, -1, 1, 31)});
  add("to", "  %y : Tensor = to{dtype=\"f64\"}(%a)\n", {a});  // f32 in CastsConvertTheGradientBack
  add("contiguous", "  %t : Tensor = t(%a)\n  %y : Tensor = contiguous(%t)\n", {a});
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
    if (find_op(n->op())) EXPECT_TRUE(n->loc().valid()) << n->op();
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

// ---- If ----------------------------------------------------------------------------

// The seed's RNN step: the branch depends on tensor values.
const char* kRnn =
    "graph rnn_step(%x : Tensor, %prev_h : Tensor, %W_h : Tensor, %w_x : Tensor) {\n"
    "  %0 : Tensor = t(%prev_h)\n"
    "  %h2h : Tensor = matmul(%W_h, %0) @\"rnn.cpp\":2:16\n"
    "  %1 : Tensor = sum(%h2h)\n"
    "  %2 : Tensor = sum(%w_x)\n"
    "  %3 : Tensor = gt(%1, %2)\n"
    "  %h : Tensor = If(%3) @\"rnn.cpp\":3:3\n"
    "    block() {\n"
    "      %5 : Tensor = t(%x)\n"
    "      %i2h : Tensor = matmul(%w_x, %5) @\"rnn.cpp\":4:20\n"
    "      %h2h.6 : Tensor = add(%h2h, %i2h) @\"rnn.cpp\":5:17\n"
    "      -> (%h2h.6)\n"
    "    }\n"
    "    block() {\n"
    "      -> (%h2h)\n"
    "    }\n"
    "  %7 : Tensor = tanh(%h) @\"rnn.cpp\":7:10\n"
    "  return (%7)\n"
    "}\n";

TEST(Autodiff, IfBothBranches) {
  const Tensor W_h = values({4, 4}, -0.5, 0.5, 50), x = values({1, 3}, -1, 1, 51), h = values({1, 4}, -1, 1, 52);
  std::set<bool> taken;
  for (double shift : {-3.0, 3.0}) {
    const Tensor w_x = values({4, 3}, -0.5, 0.5, 53) + shift / 12;
    taken.insert((matmul(W_h, h.t()).sum() > w_x.sum()).item<bool>());
    SCOPED_TRACE("shift " + std::to_string(shift));
    check_graph(kRnn, {x, h, W_h, w_x});
  }
  EXPECT_EQ(taken.size(), 2u) << "the cases must take different branches";
  // The backward is an If on the saved condition; the forward If returns
  // what the then-branch's backward needs (and undefined from the else).
  ir::GradGraphs gg = ir::differentiate(*ir::parse(kRnn), {true, true, true, true});
  const std::string fwd = ir::print(*gg.forward), bwd = ir::print(*gg.backward);
  EXPECT_NE(fwd.find("undefined()"), std::string::npos) << fwd;
  EXPECT_NE(bwd.find("= If(%3) @\"rnn.cpp\":3:3"), std::string::npos) << bwd;
}

TEST(Autodiff, IfOnAHostScalarWithAnOuterValueInOneBranch) {
  // Only the else branch uses %w: the then branch's backward gives it zeros.
  const std::string text =
      "graph f(%flag : int, %x : Tensor, %w : Tensor) {\n"
      "  %zero : int = constant{value=0}()\n"
      "  %c : bool = gt(%flag, %zero)\n"
      "  %y : Tensor = If(%c)\n"
      "    block() {\n"
      "      %s : Tensor = sigmoid(%x)\n"
      "      -> (%s)\n"
      "    }\n"
      "    block() {\n"
      "      %m : Tensor = mul(%x, %w)\n"
      "      %l : Tensor = log_softmax{dim=0}(%m)\n"
      "      -> (%l)\n"
      "    }\n"
      "  %z : Tensor = mul(%y, %x)\n"
      "  return (%z)\n"
      "}\n";
  for (int64_t flag : {1, 0}) {
    SCOPED_TRACE("flag " + std::to_string(flag));
    auto g = ir::parse(text);
    const std::vector<IValue> in{flag, values({3}, -1, 1, 60), values({3}, -1, 1, 61)};
    const std::vector<bool> rg{false, true, true};
    const std::vector<Tensor> go{values({3}, 0.5, 1.5, 62)};
    Grads ours = pass_grads(*g, in, rg, go);
    const std::vector<Tensor> eager = eager_grads(*g, in, rg, go), numeric = numeric_grads(*g, in, rg, go);
    expect_close(ours.grads[0], eager[0], 1e-10, "x vs eager");
    expect_close(ours.grads[0], numeric[0], 1e-6, "x vs differences");
    expect_close(ours.grads[1], numeric[1], 1e-6, "w vs differences");
    if (flag) {
      EXPECT_TRUE(all_zero(ours.grads[1]));
    }
  }
}

// ---- Loop ----------------------------------------------------------------------------

// while (sum(h) < 10) h = h * w + h; the trip count depends on h and w; %w is
// used in every iteration (an accumulated gradient).
const char* kWhile =
    "graph grow(%h0 : Tensor, %w : Tensor) {\n"
    "  %max : int = constant{value=9223372036854775807}()\n"
    "  %limit : float = constant{value=10.0}()\n"
    "  %s0 : Tensor = sum(%h0)\n"
    "  %go : Tensor = lt(%s0, %limit)\n"
    "  %h : Tensor = Loop(%max, %go, %h0) @\"grow.cpp\":3:3\n"
    "    block(%iter : int, %cur : Tensor) {\n"
    "      %a : Tensor = mul(%cur, %w) @\"grow.cpp\":4:9\n"
    "      %next : Tensor = add(%a, %cur) @\"grow.cpp\":4:13\n"
    "      %s : Tensor = sum(%next)\n"
    "      %c : Tensor = lt(%s, %limit)\n"
    "      -> (%c, %next)\n"
    "    }\n"
    "  %y : Tensor = tanh(%h)\n"
    "  return (%y)\n"
    "}\n";

int64_t grow_trips(Tensor h, const Tensor& w) {
  int64_t n = 0;
  for (; h.sum().item<double>() < 10.0; ++n) h = h * w + h;
  return n;
}

TEST(Autodiff, WhileLoopWithDataDependentTripCounts) {
  const Tensor w = values({4}, 0.45, 0.55, 70);
  std::vector<int64_t> trips;
  for (double total : {12.0, 8.0, 1.6}) {
    const Tensor h0 = values({4}, 0.2, 0.3, 71);
    const Tensor scaled = h0 * (total / h0.sum().item<double>());
    trips.push_back(grow_trips(scaled, w));
    SCOPED_TRACE("trips " + std::to_string(trips.back()));
    check_graph(kWhile, {scaled, w});
  }
  EXPECT_EQ(trips, (std::vector<int64_t>{0, 1, 5}));
  // The forward saves per-iteration values in lists and counts iterations;
  // the backward walks them in reverse.
  ir::GradGraphs gg = ir::differentiate(*ir::parse(kWhile), {true, true});
  const std::string fwd = ir::print(*gg.forward), bwd = ir::print(*gg.backward);
  EXPECT_NE(fwd.find("list_append("), std::string::npos) << fwd;
  EXPECT_NE(bwd.find("list_get("), std::string::npos) << bwd;
  EXPECT_NE(bwd.find("= Loop(%count"), std::string::npos) << bwd;
}

// A counted loop (runtime bound %n) that reads its iteration number.
const char* kCounted =
    "graph counted(%n : int, %h0 : Tensor, %w : Tensor) {\n"
    "  %go : bool = constant{value=true}()\n"
    "  %zero : int = constant{value=0}()\n"
    "  %k.2 : int, %h.2 : Tensor = Loop(%n, %go, %zero, %h0)\n"
    "    block(%iter : int, %k : int, %h : Tensor) {\n"
    "      %one : int = constant{value=1}()\n"
    "      %k.n : int = add(%k, %one)\n"
    "      %hw : Tensor = mul(%h, %w)\n"
    "      %hi : Tensor = mul(%hw, %iter)\n"
    "      %h.n : Tensor = tanh(%hi)\n"
    "      %cond : bool = lt(%k.n, %n)\n"
    "      -> (%cond, %k.n, %h.n)\n"
    "    }\n"
    "  %out : Tensor = add(%h.2, %k.2)\n"
    "  return (%out)\n"
    "}\n";

TEST(Autodiff, CountedLoopReadingItsIteration) {
  for (int64_t n : {0, 1, 5}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto g = ir::parse(kCounted);
    const std::vector<IValue> in{n, values({2, 3}, -1, 1, 80), values({3}, 0.2, 0.9, 81)};
    const std::vector<bool> rg{false, true, true};
    const std::vector<Tensor> go{values({2, 3}, 0.5, 1.5, 82)};
    Grads ours = pass_grads(*g, in, rg, go);
    const std::vector<Tensor> eager = eager_grads(*g, in, rg, go), numeric = numeric_grads(*g, in, rg, go);
    for (size_t i = 0; i < 2; ++i) {
      expect_close(ours.grads[i], numeric[i], 1e-6, "input " + std::to_string(i + 1) + " vs differences");
      if (eager[i].defined()) expect_close(ours.grads[i], eager[i], 1e-10, "vs eager");
      else EXPECT_TRUE(all_zero(ours.grads[i]));
    }
  }
}

TEST(Autodiff, LoopInsideIf) {
  const std::string text =
      "graph f(%x : Tensor, %w : Tensor) {\n"
      "  %zero : float = constant{value=0.0}()\n"
      "  %sx : Tensor = sum(%x)\n"
      "  %c : Tensor = gt(%sx, %zero)\n"
      "  %three : int = constant{value=3}()\n"
      "  %go : bool = constant{value=true}()\n"
      "  %y : Tensor = If(%c)\n"
      "    block() {\n"
      "      %h : Tensor = Loop(%three, %go, %x)\n"
      "        block(%i : int, %cur : Tensor) {\n"
      "          %m : Tensor = mul(%cur, %w)\n"
      "          %t : Tensor = tanh(%m)\n"
      "          -> (%go, %t)\n"
      "        }\n"
      "      -> (%h)\n"
      "    }\n"
      "    block() {\n"
      "      %e : Tensor = exp(%x)\n"
      "      -> (%e)\n"
      "    }\n"
      "  return (%y)\n"
      "}\n";
  for (double shift : {0.5, -0.5}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    check_graph(text, {values({3}, -0.4, 0.4, 90) + shift, values({3}, 0.5, 1.5, 91)});
  }
}

// ---- bad input ------------------------------------------------------------------------

using gradcheck_support::expect_error;

TEST(Autodiff, AnOpWithoutGradientOnAPathThatRequiresGradIsAnError) {
  auto g = ir::parse(
      "graph f(%x : Tensor, %w : Tensor) {\n"
      "  %a : Tensor = mul(%x, %w)\n"
      "  %y : Tensor = sum_to(%a, %w) @\"bad.cpp\":7:12\n"
      "  return (%y)\n"
      "}\n");
  expect_error([&] { ir::differentiate(*g, {true, false}); }, {"'sum_to'", "bad.cpp:7:12", "no gradient"});
  // Not requiring grad along that path is fine.
  EXPECT_NO_THROW(ir::differentiate(*g, {false, false}));
  auto d = ir::parse(one_node("  %y : Tensor = dropout{p=0.3, training=true}(%a) @\"drop.cpp\":2:3\n", 1));
  expect_error([&] { ir::differentiate(*d, {true}); }, {"'dropout'", "drop.cpp:2:3", "training"});
}

// reshape_dyn and slice_dyn (value_primitives.h): the plugin's views with
// sizes read at run time. The first differentiates like reshape, the second
// through slice_backward with run-time bounds.
TEST(Autodiff, ViewsWithRunTimeSizes) {
  const char* reshaped =
      "graph f(%x : Tensor) {\n"
      "  %0 : int = constant{value=0}()\n"
      "  %n : int = tensor_size(%x, %0)\n"
      "  %m : int = constant{value=-1}()\n"
      "  %y : Tensor = reshape_dyn(%x, %m, %n)\n"
      "  %z : Tensor = tanh(%y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(reshaped, {values({2, 3}, -1, 1, 60)});
  const char* sliced =
      "graph f(%x : Tensor) {\n"
      "  %0 : int = constant{value=1}()\n"
      "  %n : int = tensor_size(%x, %0)\n"
      "  %2 : int = constant{value=2}()\n"
      "  %h : int = int_div(%n, %2)\n"
      "  %y : Tensor = slice_dyn{dim=1}(%x, %h, %n, %0) @\"s.cpp\":4:5\n"
      "  %z : Tensor = tanh(%y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(sliced, {values({2, 5}, -1, 1, 61)});
}

// Attributes known at run time (value_primitives.h): layer_norm over a
// normalized_shape and with an eps that are graph values, and a reduction
// along a run-time dim; the gradient ops get them as inputs too.
TEST(Autodiff, AttributesKnownAtRunTime) {
  const char* norm =
      "graph f(%x : Tensor, %w : Tensor, %b : Tensor, %e : float) {\n"
      "  %0 : int = constant{value=-1}()\n"
      "  %n : int = tensor_size(%x, %0)\n"
      "  %y : Tensor = layer_norm{eps=\"@4\", normalized_shape=\"@3:4\"}(%x, %w, %b, %n, %e)\n"
      "  %z : Tensor = tanh(%y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(norm, {values({3, 4}, -1, 1, 62), values({4}, 0.5, 1.5, 63), values({4}, -1, 1, 64), 1e-3});
  auto g = ir::parse(norm);
  auto grads = ir::differentiate(*g, {true, true, true, false});
  EXPECT_NE(ir::print(*grads.backward).find("layer_norm_backward{eps=\"@5\", grad_mask=[1, 1, 1], normalized_shape=\"@4:5\"}"),
            std::string::npos)
      << ir::print(*grads.backward);
  // conv2d with its stride in an int64 tensor (a `Shape` member) and its
  // padding from two host ints.
  const char* conv =
      "graph f(%x : Tensor, %w : Tensor, %stride : i64[?], %p : int) {\n"
      "  %b : Tensor = undefined()\n"
      "  %y : Tensor = conv2d{padding=\"@4:6\", stride=\"@3\"}(%x, %w, %b, %stride, %p, %p)\n"
      "  return (%y)\n"
      "}\n";
  check_graph(conv, {values({1, 2, 5, 6}, -1, 1, 65), values({3, 2, 3, 2}, -1, 1, 66),
                     arange(1, 3).to(kInt64), int64_t{1}});
  // A run-time attribute that names no input, or an input of the wrong kind.
  for (const char* bad : {"  %y : Tensor = sum{dim=\"@2\"}(%x, %d)\n", "  %y : Tensor = sum{dim=\"@0\"}(%x)\n",
                          "  %y : Tensor = sum{dim=\"@x\"}(%x, %d)\n", "  %y : Tensor = sum(%x, %d)\n"}) {
    auto b = ir::parse(std::string("graph f(%x : Tensor, %d : int) {\n") + bad + "  return (%y)\n}\n");
    EXPECT_THROW(ir::verify_or_throw(*b), Error) << bad;
  }
}

// Views, softmax and where over attributes known only at run time: int lists
// the graph computes (tensor_sizes, make_shape, shape_set) and host ints.
// reshape/view/squeeze/unsqueeze go back through reshape_as, expand through
// sum_to, transpose with the same run-time dims, permute through the inverse
// permutation computed at run time, softmax's sum along the run-time dim.
TEST(Autodiff, ViewsSoftmaxAndWhereWithRunTimeAttributes) {
  const char* reshaped =
      "graph f(%x : Tensor, %like : Tensor) {\n"
      "  %s : Tensor = tensor_sizes(%like)\n"
      "  %y : Tensor = reshape{shape=\"@1\"}(%x, %s)\n"
      "  %z : Tensor = mul(%y, %like)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(reshaped, {values({2, 6}, -1, 1, 70), values({3, 4}, -1, 1, 71)});
  const char* expanded =
      "graph f(%x : Tensor, %y : Tensor) {\n"
      "  %s : Tensor = tensor_sizes(%y)\n"
      "  %0 : int = constant{value=0}()\n"
      "  %1 : int = constant{value=1}()\n"
      "  %s1 : Tensor = shape_set(%s, %0, %1)\n"
      "  %v : Tensor = reshape{shape=\"@1\"}(%x, %s1)\n"
      "  %e : Tensor = expand{shape=\"@1\"}(%v, %s)\n"
      "  %z : Tensor = mul(%e, %y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(expanded, {values({4}, -1, 1, 72), values({3, 4}, -1, 1, 73)});
  const char* permuted =
      "graph f(%x : Tensor, %a : int, %b : int) {\n"
      "  %2 : int = constant{value=2}()\n"
      "  %p : Tensor = make_shape(%b, %2, %a)\n"
      "  %y : Tensor = permute{dims=\"@1\"}(%x, %p)\n"
      "  %w : Tensor = permute{dims=\"@1:4\"}(%y, %a, %2, %b)\n"
      "  %t : Tensor = transpose{dim0=\"@1\", dim1=\"@2\"}(%w, %a, %b)\n"
      "  %z : Tensor = tanh(%t)\n"
      "  return (%z)\n"
      "}\n";
  for (auto [a, b] : {std::pair<int64_t, int64_t>{0, 1}, {0, -2}, {-3, 1}})
    check_graph(permuted, {values({2, 3, 4}, -1, 1, 74), a, b});
  auto p = ir::parse(permuted);
  auto pg = ir::differentiate(*p, {true, false, false});
  EXPECT_NE(ir::print(*pg.backward).find("inverse_permutation("), std::string::npos) << ir::print(*pg.backward);
  const char* soft =
      "graph f(%x : Tensor, %d : int, %c : Tensor, %r : Tensor) {\n"
      "  %s : Tensor = softmax{dim=\"@1\"}(%x, %d)\n"
      "  %l : Tensor = log_softmax{dim=\"@1\"}(%x, %d)\n"
      "  %m : Tensor = tensor_sizes(%x)\n"
      "  %e : Tensor = expand{shape=\"@1\"}(%r, %m)\n"
      "  %w : Tensor = where(%c, %s, %e)\n"
      "  %u : Tensor = unsqueeze{dim=\"@1\"}(%w, %d)\n"
      "  %q : Tensor = squeeze{dim=\"@1\"}(%u, %d)\n"
      "  %z : Tensor = mul(%q, %l)\n"
      "  %f : Tensor = flatten{start_dim=\"@1\"}(%z, %d)\n"
      "  return (%f)\n"
      "}\n";
  const Tensor x = values({3, 4}, -1, 1, 75), other = values({3, 4}, -1, 1, 76);
  for (int64_t d : {0, 1, -1}) check_graph(soft, {x, d, gt(x, other), values({4}, -1, 1, 77)});
  // cat and stack along a run-time dim.
  const char* joined =
      "graph f(%a : Tensor, %b : Tensor, %d : int) {\n"
      "  %c : Tensor = cat{dim=\"@2\"}(%a, %b, %d)\n"
      "  %s : Tensor = stack{dim=\"@2\"}(%a, %a, %d)\n"
      "  %t : Tensor = tanh(%s)\n"
      "  return (%c, %t)\n"
      "}\n";
  for (int64_t d : {0, 1, -1}) check_graph(joined, {values({2, 3}, -1, 1, 78), values({2, 3}, -1, 1, 79), d});
  // A permutation that is not one: an error from the forward (eager's) and,
  // differentiated, from the backward's inverse, never a crash.
  auto bad = ir::parse(permuted);
  auto bg = ir::differentiate(*bad, {true, false, false});
  EXPECT_THROW(run(*bg.forward, {values({2, 3, 4}, -1, 1, 74), int64_t{0}, int64_t{0}}), Error);
}

TEST(Autodiff, BadRequestsAreErrors) {
  auto g = ir::parse("graph f(%n : int, %x : Tensor) {\n  %y : Tensor = mul(%x, %n)\n  return (%y)\n}\n");
  expect_error([&] { ir::differentiate(*g, {true}); }, {"2 inputs", "1 entries"});
  expect_error([&] { ir::differentiate(*g, {true, true}); }, {"input 0", "not a tensor"});
  auto bad = ir::parse("graph f(%x : Tensor) {\n  %y : Tensor = relu(%x, %x)\n  return (%y)\n}\n");
  expect_error([&] { ir::differentiate(*bad, {true}); }, {"malformed"});
}

// Lists carry gradients: a list's gradient is a list of per-element ones.
// A Loop appends to a carried list; the list is read back at an index
// computed in a second Loop (saved per iteration), stacked and concatenated.
TEST(Autodiff, ListsAcrossLoopsCatAndStack) {
  const char* text =
      "graph f(%n : int, %x : Tensor, %w : Tensor) {\n"
      "  %go : bool = constant{value=true}()\n"
      "  %empty : list = list_new()\n"
      "  %parts : list, %h : Tensor = Loop(%n, %go, %empty, %x)\n"
      "    block(%i : int, %l : list, %a : Tensor) {\n"
      "      %b : Tensor = mul(%a, %w)\n"
      "      %c : Tensor = tanh(%b)\n"
      "      %l2 : list = list_append(%l, %c)\n"
      "      -> (%go, %l2, %c)\n"
      "    }\n"
      "  %one : int = constant{value=1}()\n"
      "  %acc : Tensor = Loop(%n, %go, %x)\n"
      "    block(%j : int, %s : Tensor) {\n"
      "      %last : int = sub(%n, %j)\n"
      "      %k : int = sub(%last, %one)\n"
      "      %e : Tensor = list_get(%parts, %k)\n"
      "      %ee : Tensor = mul(%e, %e)\n"
      "      %s2 : Tensor = add(%s, %ee)\n"
      "      -> (%go, %s2)\n"
      "    }\n"
      "  %with : list = list_append(%parts, %acc)\n"
      "  %st : Tensor = stack{dim=0}(%with)\n"
      "  %ct : Tensor = cat{dim=1}(%with)\n"
      "  %total : Tensor = sum(%st)\n"
      "  %cs : Tensor = sum(%ct)\n"
      "  %hs : Tensor = sum(%h)\n"
      "  %m : Tensor = mul(%cs, %hs)\n"
      "  %y : Tensor = add(%total, %m)\n"
      "  return (%y)\n"
      "}\n";
  for (int64_t n : {0, 1, 3}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    check_graph(text, {n, values({2, 3}, -1, 1, 90), values({2, 3}, 0.2, 0.9, 91)});
  }
}

TEST(Autodiff, AListOutputCarryingGradientsIsRefused) {
  auto g = ir::parse(
      "graph f(%x : Tensor) {\n"
      "  %e : list = list_new()\n"
      "  %t : Tensor = tanh(%x)\n"
      "  %l : list = list_append(%e, %t)\n"
      "  return (%l)\n"
      "}\n");
  expect_error([&] { ir::differentiate(*g, {true}); }, {"output 0", "list of tensors", "tensor outputs only"});
  EXPECT_NO_THROW(ir::differentiate(*g, {false}));
}

TEST(Autodiff, NestedLoopsNeedingPerIterationValuesAreAClearError) {
  auto g = ir::parse(
      "graph f(%x : Tensor) {\n"
      "  %two : int = constant{value=2}()\n"
      "  %go : bool = constant{value=true}()\n"
      "  %y : Tensor = Loop(%two, %go, %x) @\"n.cpp\":1:1\n"
      "    block(%i : int, %a : Tensor) {\n"
      "      %z : Tensor = Loop(%two, %go, %a) @\"n.cpp\":2:3\n"
      "        block(%j : int, %b : Tensor) {\n"
      "          %t : Tensor = tanh(%b)\n"
      "          -> (%go, %t)\n"
      "        }\n"
      "      -> (%go, %z)\n"
      "    }\n"
      "  return (%y)\n"
      "}\n");
  expect_error([&] { ir::differentiate(*g, {true}); }, {"autodiff", "Loop", "n.cpp:1:1"});
}

}  // namespace
}  // namespace graph
