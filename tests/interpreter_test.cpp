// The graph interpreter: every op-table entry against the eager op it names,
// control flow, lists, errors that name the node's source line, and the
// ready-queue scheduler (same bits with 1 and 4 threads, from 8 callers).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <thread>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/compile.h"
#include "graph/ir/ir.h"
#include "graph/nn_ops.h"
#include "graph/op_table.h"
#include "graph/ops.h"

namespace graph {
namespace {

Tensor pattern(Shape s, float scale, float shift) {
  Tensor t = zeros(s);
  float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::sin(static_cast<float>(i) * scale + shift);
  return t;
}

// Exact equality of dtype, shape and every element (NaN equals NaN).
void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_TRUE(a.defined() && b.defined());
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(shape_str(a.sizes()), shape_str(b.sizes()));
  Tensor x = a.to(kFloat64).contiguous(), y = b.to(kFloat64).contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) {
    double u = x.data_ptr<double>()[i], v = y.data_ptr<double>()[i];
    if (u != u && v != v) continue;
    ASSERT_EQ(u, v) << "element " << i;
  }
}

Tensor one(const std::string& text, std::vector<IValue> in, RunOptions opt = {}) {
  auto g = ir::parse(text);
  auto out = run(*g, std::move(in), opt);
  EXPECT_EQ(out.size(), 1u);
  return std::get<Tensor>(out.at(0));
}

// ---- every op against its eager function ----------------------------------------

struct OpCase {
  std::string op;  // the op-table entry the case covers
  std::string text;
  std::vector<IValue> inputs;
  std::function<Tensor()> eager;
};

std::vector<OpCase> op_cases() {
  Tensor a = pattern({2, 3}, 0.7f, 0.1f), b = pattern({2, 3}, 0.3f, -0.5f), row = pattern({3}, 1.1f, 0.2f);
  Tensor pos = abs(a) + 0.5f;
  Tensor img = pattern({1, 2, 5, 5}, 0.37f, 0.0f), w = pattern({3, 2, 3, 3}, 0.11f, 0.4f), bias = pattern({3}, 0.5f, 0.0f);
  Tensor q = pattern({1, 2, 4, 8}, 0.13f, 0.0f), k = pattern({1, 2, 4, 8}, 0.17f, 0.3f), v = pattern({1, 2, 4, 8}, 0.19f, 0.6f);
  Tensor idx = tensor<int64_t>({2, 0, 1});
  Tensor tgt = tensor<int64_t>({2, 0});
  std::vector<OpCase> cases;
  auto unary = [&](const std::string& op, Tensor x) {
    cases.push_back({op, "graph g(%x : Tensor) {\n  %y : Tensor = " + op + "(%x)\n  return (%y)\n}\n", {x}, {}});
  };
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                                     \
  unary(#name, OpId::name == OpId::log || OpId::name == OpId::sqrt || OpId::name == OpId::rsqrt ? pos : a); \
  cases.back().eager = [=] { return graph::name(OpId::name == OpId::log || OpId::name == OpId::sqrt || OpId::name == OpId::rsqrt ? pos : a); };
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                                    \
  cases.push_back({#name, "graph g(%a : Tensor, %b : Tensor) {\n  %y : Tensor = " #name "(%a, %b)\n  return (%y)\n}\n", \
                   {OpId::name == OpId::pow ? pos : a, row}, [=] { return graph::name(OpId::name == OpId::pow ? pos : a, row); }});
#include "graph/ops.def"
  auto add = [&](std::string op, std::string body, std::vector<IValue> in, std::function<Tensor()> eager) {
    std::string params;
    for (size_t i = 0; i < in.size(); ++i) params += (i ? ", %" : "%") + std::string(1, char('a' + i)) + " : Tensor";
    cases.push_back({op, "graph g(" + params + ") {\n" + body + "  return (%y)\n}\n", std::move(in), std::move(eager)});
  };
  add("sum", "  %y : Tensor = sum{dim=[0, 1], keepdim=true}(%a)\n", {a}, [=] { return sum(a, Shape{0, 1}, true); });
  add("mean", "  %y : Tensor = mean{dim=1}(%a)\n", {a}, [=] { return mean(a, 1); });
  add("amax", "  %y : Tensor = amax{dim=0}(%a)\n", {a}, [=] { return amax(a, Shape{0}); });
  add("amin", "  %y : Tensor = amin(%a)\n", {a}, [=] { return amin(a); });
  add("argmax", "  %y : Tensor = argmax{dim=1, keepdim=true}(%a)\n", {a}, [=] { return argmax(a, 1, true); });
  add("matmul", "  %y : Tensor = matmul(%a, %b)\n", {a, b.t()}, [=] { return matmul(a, b.t()); });
  add("conv2d", "  %y : Tensor = conv2d{stride=[2, 1], padding=[1, 1], dilation=[1, 2], groups=1}(%a, %b, %c)\n",
      {img, w, bias}, [=] { return conv2d(img, w, bias, {2, 1}, {1, 1}, {1, 2}, 1); });
  const Tensor wt = w.transpose(0, 1).contiguous();  // [C_in, C_out, kH, kW]
  add("conv_transpose2d",
      "  %y : Tensor = conv_transpose2d{stride=[2, 1], padding=[1, 0], output_padding=[1, 0], groups=1, "
      "dilation=[1, 2]}(%a, %b, %c)\n",
      {img, wt, bias}, [=] { return conv_transpose2d(img, wt, bias, {2, 1}, {1, 0}, {1, 0}, 1, {1, 2}); });
  add("t", "  %y : Tensor = t(%a)\n", {a}, [=] { return a.t(); });
  add("transpose", "  %y : Tensor = transpose{dim0=0, dim1=1}(%a)\n", {a}, [=] { return a.transpose(0, 1); });
  add("permute", "  %y : Tensor = permute{dims=[2, 0, 1]}(%a)\n", {img.squeeze(0)}, [=] { return img.squeeze(0).permute({2, 0, 1}); });
  add("reshape", "  %y : Tensor = reshape{shape=[3, -1]}(%a)\n", {a}, [=] { return a.reshape({3, -1}); });
  add("expand", "  %y : Tensor = expand{shape=[4, 3]}(%a)\n", {row}, [=] { return row.expand({4, 3}); });
  add("slice", "  %y : Tensor = slice{dim=1, start=0, end=3, step=2}(%a)\n", {a}, [=] { return a.slice(1, 0, 3, 2); });
  add("squeeze", "  %y : Tensor = squeeze{dim=0}(%a)\n", {img}, [=] { return img.squeeze(0); });
  add("unsqueeze", "  %y : Tensor = unsqueeze{dim=1}(%a)\n", {a}, [=] { return a.unsqueeze(1); });
  add("flatten", "  %y : Tensor = flatten{start_dim=1, end_dim=2}(%a)\n", {img}, [=] { return img.flatten(1, 2); });
  add("where", "  %y : Tensor = where(%a, %b, %c)\n", {gt(a, b), a, row}, [=] { return where(gt(a, b), a, row); });
  add("masked_fill", "  %y : Tensor = masked_fill{value=-0.5}(%a, %b)\n", {row, gt(a, b)},
      [=] { return row.masked_fill(gt(a, b), -0.5); });
  add("masked_fill",  // where(cond, a, 3): the value known at run time
      "  %s : int = constant{value=3}()\n  %y : Tensor = masked_fill{value=\"@2\", invert=true, promote=true}(%a, %b, %s)\n",
      {a, gt(a, b)}, [=] { return where(gt(a, b), a, Scalar(int64_t{3})); });
  add("triu", "  %y : Tensor = triu{diagonal=1}(%a)\n", {a}, [=] { return triu(a, 1); });
  add("tril", "  %y : Tensor = tril(%a)\n", {img}, [=] { return img.tril(); });
  add("index_select", "  %y : Tensor = index_select{dim=1}(%a, %b)\n", {a, idx}, [=] { return index_select(a, 1, idx); });
  add("gather", "  %y : Tensor = gather{dim=1}(%a, %b)\n", {a, idx.reshape({1, 3})},
      [=] { return a.gather(1, idx.reshape({1, 3})); });
  add("cumsum", "  %y : Tensor = cumsum{dim=-1}(%a)\n", {a}, [=] { return a.cumsum(-1); });
  add("bmm", "  %y : Tensor = bmm(%a, %b)\n", {img.squeeze(0), img.squeeze(0).transpose(1, 2)},
      [=] { return bmm(img.squeeze(0), img.squeeze(0).transpose(1, 2)); });
  add("scatter_add", "  %y : Tensor = scatter_add{dim=1}(%a, %b, %c)\n", {a, idx.reshape({1, 3}), b},
      [=] { return a.scatter_add(1, idx.reshape({1, 3}), b); });
  add("argsort", "  %y : Tensor = argsort{dim=1, descending=true}(%a)\n", {a}, [=] { return argsort(a, 1, true); });
  add("argsort", "  %y : Tensor = argsort{dim=1, descending=false, k=2}(%a)\n", {a},
      [=] { return std::get<1>(topk(a, 2, 1, false)); });
  add("softmax", "  %y : Tensor = softmax{dim=1}(%a)\n", {a}, [=] { return softmax(a, 1); });
  add("log_softmax", "  %y : Tensor = log_softmax{dim=0}(%a)\n", {a}, [=] { return log_softmax(a, 0); });
  add("linear", "  %y : Tensor = linear(%a, %b, %c)\n", {a, b, pattern({2}, 0.4f, 0.0f)},
      [=] { return linear(a, b, pattern({2}, 0.4f, 0.0f)); });
  add("layer_norm", "  %y : Tensor = layer_norm{normalized_shape=[3], eps=0.001}(%a, %b, %c)\n", {a, row, row},
      [=] { return layer_norm(a, {3}, row, row, 0.001); });
  add("max_pool2d", "  %y : Tensor = max_pool2d{kernel=[2, 2], stride=[2, 1], padding=[1, 0]}(%a)\n", {img},
      [=] { return max_pool2d(img, {2, 2}, {2, 1}, {1, 0}); });
  add("avg_pool2d", "  %y : Tensor = avg_pool2d{kernel=[3, 3]}(%a)\n", {img}, [=] { return avg_pool2d(img, {3, 3}); });
  add("pad", "  %y : Tensor = pad{pad=[1, -1, 2, 0], value=0.5}(%a)\n", {img},
      [=] { return pad(img, {1, -1, 2, 0}, 0.5); });
  add("interpolate", "  %y : Tensor = interpolate{size=[5, 3], mode=2, align_corners=true}(%a)\n", {img},
      [=] { return interpolate(img, {5, 3}, kBilinear, true); });
  add("interpolate", "  %y : Tensor = interpolate{scale_factor=1.5, mode=0, align_corners=false}(%a)\n", {img},
      [=] { return interpolate_scale(img, 1.5); });
  add("adaptive_avg_pool2d", "  %y : Tensor = adaptive_avg_pool2d{output_size=[3, 2]}(%a)\n", {img},
      [=] { return adaptive_avg_pool2d(img, {3, 2}); });
  add("embedding", "  %y : Tensor = embedding(%a, %b)\n", {b.t(), idx}, [=] { return embedding(b.t(), idx); });
  add("cat", "  %y : Tensor = cat{dim=1}(%a, %b, %c)\n", {a, b, a}, [=] { return cat({a, b, a}, 1); });
  add("stack", "  %y : Tensor = stack{dim=2}(%a, %b)\n", {a, b}, [=] { return stack({a, b}, 2); });
  add("dropout", "  %y : Tensor = dropout{p=0.5, training=false}(%a)\n", {a}, [=] { return dropout(a, 0.5, false); });
  add("dropout_mask", "  %m : Tensor = dropout_mask{p=0.5, training=false}(%a)\n  %y : Tensor = mul(%a, %m)\n", {a},
      [=] { return a; });
  add("mse_loss", "  %y : Tensor = mse_loss(%a, %b)\n", {a, b}, [=] { return mse_loss(a, b); });
  add("cross_entropy", "  %y : Tensor = cross_entropy(%a, %b)\n", {a, tgt}, [=] { return cross_entropy(a, tgt); });
  add("scaled_dot_product_attention",
      "  %m : Tensor = undefined()\n  %y : Tensor = scaled_dot_product_attention{is_causal=true}(%a, %b, %c, %m)\n",
      {q, k, v}, [=] { return scaled_dot_product_attention(q, k, v, Tensor(), 0.0, true); });
  const Tensor bn_m = bias.slice(0, 0, 2), bn_v = pos.flatten().slice(0, 0, 2), bn_w = bias.slice(0, 1, 3);
  add("batch_norm", "  %y : Tensor = batch_norm{training=false, eps=0.001}(%a, %b, %c, %d, %b)\n", {img, bn_m, bn_v, bn_w},
      [=] { return batch_norm(img, bn_m, bn_v, bn_w, bn_m, false, 0.1, 0.001); });
  add("to", "  %y : Tensor = to{dtype=\"i64\"}(%a)\n", {a * 3}, [=] { return (a * 3).to(kInt64); });
  add("to", "  %y : Tensor = to{dtype=\"f32\"}(%a)\n", {gt(a, b)}, [=] { return gt(a, b).to(kFloat32); });
  add("contiguous", "  %t : Tensor = t(%a)\n  %y : Tensor = contiguous(%t)\n", {a}, [=] { return a.t().contiguous(); });
  // Random draws: compared through a function of them that the draw cannot change.
  add("rand_like", "  %r : Tensor = rand_like(%a)\n  %y : Tensor = lt(%r, %b)\n", {a, ones({2, 3})}, [=] { return lt(a, 5.0f); });
  add("randn_like", "  %r : Tensor = randn_like(%a)\n  %y : Tensor = eq(%r, %r)\n", {a}, [=] { return eq(a, a); });
  add("type_as", "  %y : Tensor = type_as(%a, %b)\n", {a, tgt}, [=] { return a.type_as(tgt); });
  return cases;
}

TEST(Interpreter, EveryOpMatchesItsEagerFunction) {
  std::set<std::string> covered;
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.op + "\n" + c.text);
    covered.insert(c.op);
    expect_same(one(c.text, c.inputs), c.eager());
  }
  for (const OpInfo& op : kOpTable) {
    EXPECT_NE(detail::find_kernel(op.name), nullptr) << "no interpreter kernel for '" << op.name << "'";
    // Gradient ops (GRAPH_BACKWARD_OP, the Backward trait) are tested
    // with the autodiff pass.
    const bool gradient_op = op.has(graph::op_trait::Backward);
    if (!gradient_op && !covered.count(std::string(op.name)))
      ADD_FAILURE() << "op '" << op.name << "' has no interpreter test case";
  }
}

// ---- host scalars, control flow, lists -------------------------------------------

TEST(Interpreter, HostScalarsFollowCxxArithmetic) {
  auto g = ir::parse(
      "graph g(%n : int, %x : float) {\n"
      "  %two : int = constant{value=2}()\n"
      "  %a : int = div(%n, %two)\n"  // an int-typed result: C++ integer division
      "  %b : float = div(%n, %two)\n"
      "  %c : bool = lt(%x, %n)\n"
      "  %d : float = mul(%x, %n)\n"
      "  return (%a, %b, %c, %d)\n"
      "}\n");
  auto out = run(*g, {int64_t{7}, 2.5});
  EXPECT_EQ(std::get<int64_t>(out[0]), 3);
  EXPECT_EQ(std::get<double>(out[1]), 3.5);
  EXPECT_EQ(std::get<bool>(out[2]), true);
  EXPECT_EQ(std::get<double>(out[3]), 17.5);
}

const char* kRnn =
    "graph rnn_step(%x : Tensor, %prev_h : Tensor, %W_h : Tensor, %w_x : Tensor) {\n"
    "  %0 : Tensor = t(%prev_h)\n"
    "  %h2h : Tensor = matmul(%W_h, %0)\n"
    "  %1 : Tensor = sum(%h2h)\n"
    "  %2 : Tensor = sum(%w_x)\n"
    "  %3 : Tensor = FusionGroup(%1, %2)\n"
    "    block(%a : Tensor, %b : Tensor) {\n"
    "      %c : Tensor = gt(%a, %b)\n"
    "      -> (%c)\n"
    "    }\n"
    "  %h : Tensor = If(%3)\n"
    "    block() {\n"
    "      %5 : Tensor = t(%x)\n"
    "      %i2h : Tensor = matmul(%w_x, %5)\n"
    "      %h2h.6 : Tensor = add(%h2h, %i2h)\n"
    "      -> (%h2h.6)\n"
    "    }\n"
    "    block() {\n"
    "      -> (%h2h)\n"
    "    }\n"
    "  %7 : Tensor = tanh(%h)\n"
    "  return (%7)\n"
    "}\n";

Tensor rnn_eager(const Tensor& x, const Tensor& prev_h, const Tensor& W_h, const Tensor& w_x) {
  Tensor h2h = matmul(W_h, prev_h.t());
  if (h2h.sum() > w_x.sum()) h2h = h2h + matmul(w_x, x.t());
  return tanh(h2h);
}

TEST(Interpreter, IfTakesEachBranchAsEagerDoes) {
  Tensor W_h = pattern({6, 6}, 0.21f, -0.4f), x = pattern({1, 4}, 0.5f, -0.3f), h = pattern({1, 6}, 0.3f, 0.1f);
  int taken = 0;
  for (float shift : {-0.9f, 0.9f}) {
    Tensor w_x = pattern({6, 4}, 0.05f, shift);
    taken += static_cast<bool>(matmul(W_h, h.t()).sum() > w_x.sum());
    expect_same(one(kRnn, {x, h, W_h, w_x}), rnn_eager(x, h, W_h, w_x));
  }
  EXPECT_EQ(taken, 1) << "the two cases must take different branches";
}

TEST(Interpreter, LoopWithDataDependentTripCountAndLists) {
  // while (sum(h) < limit) { h = h * 2; saved.push_back(h); } return (h, saved[-1], len)
  auto g = ir::parse(
      "graph g(%h0 : Tensor, %limit : float) {\n"
      "  %big : int = constant{value=9223372036854775807}()\n"
      "  %l0 : list = list_new()\n"
      "  %s0 : Tensor = sum(%h0)\n"
      "  %c0 : Tensor = lt(%s0, %limit)\n"
      "  %h : Tensor, %l : list = Loop(%big, %c0, %h0, %l0)\n"
      "    block(%i : int, %hh : Tensor, %ll : list) {\n"
      "      %two : float = constant{value=2.0}()\n"
      "      %h2 : Tensor = mul(%hh, %two)\n"
      "      %l2 : list = list_append(%ll, %h2)\n"
      "      %s : Tensor = sum(%h2)\n"
      "      %c : Tensor = lt(%s, %limit)\n"
      "      -> (%c, %h2, %l2)\n"
      "    }\n"
      "  %n : int = list_len(%l)\n"
      "  return (%h, %n)\n"
      "}\n");
  ASSERT_TRUE(g);
  for (auto [limit, trips] : {std::pair{0.5, 0}, {3.5, 1}, {40.0, 5}}) {
    Tensor h0 = ones({2});
    auto out = run(*g, {h0, limit});
    expect_same(std::get<Tensor>(out[0]), h0 * static_cast<double>(1 << trips));
    EXPECT_EQ(std::get<int64_t>(out[1]), trips) << "limit " << limit;
  }
}

// ---- errors ---------------------------------------------------------------------

TEST(Interpreter, AFailingNodeNamesItsOpShapesAndSourceLine) {
  auto g = ir::parse(
      "graph g(%a : Tensor, %b : Tensor) {\n"
      "  %y : Tensor = matmul(%a, %b) @\"model.cpp\":12:7\n"
      "  return (%y)\n"
      "}\n");
  try {
    run(*g, {ones({2, 3}), ones({4, 5})});
    FAIL() << "expected graph::Error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("model.cpp:12:7"), std::string::npos) << m;
  }
}

TEST(Interpreter, ErrorsInsideBlocksNameTheInnerNode) {
  auto g = ir::parse(
      "graph g(%c : bool, %a : Tensor) {\n"
      "  %y : Tensor = If(%c) @\"m.cpp\":3:3\n"
      "    block() {\n"
      "      %z : Tensor = reshape{shape=[7]}(%a) @\"m.cpp\":4:9\n"
      "      -> (%z)\n"
      "    }\n"
      "    block() {\n"
      "      -> (%a)\n"
      "    }\n"
      "  return (%y)\n"
      "}\n");
  expect_same(std::get<Tensor>(run(*g, {false, ones({2, 3})})[0]), ones({2, 3}));
  try {
    run(*g, {true, ones({2, 3})});
    FAIL() << "expected graph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("m.cpp:4:9"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("m.cpp:3:3"), std::string::npos) << e.what();
  }
}

// The message a run of `g` on `in` fails with, or "no error".
std::string error_of(const ir::Graph& g, std::vector<IValue> in) {
  try {
    run(g, std::move(in));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Interpreter, BadInputsAreClearErrors) {
  auto g = ir::parse("graph g(%a : Tensor, %n : int) {\n  %y : Tensor = mul(%a, %n)\n  return (%y)\n}\n");
  auto message = [&](std::vector<IValue> in) { return error_of(*g, std::move(in)); };
  EXPECT_NE(message({ones({2})}).find("takes 2 inputs, got 1"), std::string::npos);
  EXPECT_NE(message({ones({2}), 1.5}).find("input 1 (%n) must be an int, got float"), std::string::npos);
  EXPECT_NE(message({int64_t{1}, int64_t{1}}).find("input 0 (%a) must be a tensor"), std::string::npos);
  // A malformed graph is rejected before anything runs.
  auto bad = ir::parse("graph g(%a : Tensor) {\n  %y : Tensor = add(%a)\n  return (%y)\n}\n");
  EXPECT_THROW(run(*bad, {ones({2})}), Error);
  auto call = ir::parse("graph g(%a : Tensor) {\n  %y : Tensor = call{callee=\"f\"}(%a)\n  return (%y)\n}\n");
  try {
    run(*call, {ones({2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inline"), std::string::npos) << e.what();
  }
  auto idx = ir::parse(
      "graph g(%a : Tensor) {\n  %l : list = list_new()\n  %i : int = constant{value=0}()\n"
      "  %y : Tensor = list_get(%l, %i)\n  return (%y)\n}\n");
  EXPECT_THROW(run(*idx, {ones({2})}), Error);
}

// ---- scheduling -----------------------------------------------------------------

// 12 independent matmul -> tanh -> sum chains joined at the end: plenty of
// nodes ready at once.
std::string wide_graph() {
  std::string s = "graph wide(%x : Tensor, %w : Tensor) {\n";
  for (int i = 0; i < 12; ++i) {
    std::string k = std::to_string(i);
    s += "  %s" + k + " : float = constant{value=" + std::to_string(i + 1) + ".125}()\n";
    s += "  %a" + k + " : Tensor = mul(%w, %s" + k + ")\n";
    s += "  %m" + k + " : Tensor = matmul(%x, %a" + k + ")\n";
    s += "  %t" + k + " : Tensor = tanh(%m" + k + ")\n";
  }
  s += "  %acc0 : Tensor = add(%t0, %t1)\n";
  for (int i = 2; i < 12; ++i)
    s += "  %acc" + std::to_string(i - 1) + " : Tensor = add(%acc" + std::to_string(i - 2) + ", %t" + std::to_string(i) + ")\n";
  return s + "  return (%acc10)\n}\n";
}

TEST(Interpreter, ResultsDoNotDependOnThreadsOrCallers) {
  auto g = ir::parse(wide_graph());
  Tensor x = pattern({32, 48}, 0.3f, 0.0f), w = pattern({48, 40}, 0.7f, 0.2f);
  Tensor serial = std::get<Tensor>(run(*g, {x, w}, {.threads = 1, .needed_outputs = {}})[0]);
  Tensor eager = zeros({32, 40});
  std::vector<Tensor> ts;
  for (int i = 0; i < 12; ++i) ts.push_back(tanh(matmul(x, w * (i + 1.125))));
  eager = ts[0] + ts[1];
  for (int i = 2; i < 12; ++i) eager = eager + ts[i];
  expect_same(serial, eager);
  for (int rep = 0; rep < 5; ++rep) expect_same(std::get<Tensor>(run(*g, {x, w}, {.threads = 4, .needed_outputs = {}})[0]), serial);

  std::vector<Tensor> results(8);
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t)
    callers.emplace_back([&, t] { results[t] = std::get<Tensor>(run(*g, {x, w}, {.threads = 3, .needed_outputs = {}})[0]); });
  for (auto& c : callers) c.join();
  for (const Tensor& r : results) expect_same(r, serial);
}

TEST(Interpreter, ParallelErrorsAreDeterministic) {
  // Two independent failures (kernels heavy enough to be scheduled in
  // parallel): the first in block order is always reported.
  auto g = ir::parse(
      "graph g(%a : Tensor) {\n"
      "  %ok : Tensor = tanh(%a)\n"
      "  %e1 : Tensor = softmax{dim=5}(%a) @\"f.cpp\":1:1\n"
      "  %e2 : Tensor = softmax{dim=7}(%a) @\"f.cpp\":2:1\n"
      "  %y : Tensor = add(%e1, %e2)\n"
      "  return (%y, %ok)\n"
      "}\n");
  for (int rep = 0; rep < 20; ++rep) {
    try {
      run(*g, {ones({2, 3})}, {.threads = 4, .needed_outputs = {}});
      FAIL();
    } catch (const Error& e) {
      ASSERT_NE(std::string(e.what()).find("f.cpp:1:1"), std::string::npos) << e.what();
    }
  }
}

TEST(Interpreter, EagerAutogradFlowsThroughInterpretedGraphs) {
  auto g = ir::parse(kRnn);
  Tensor W_h = pattern({6, 6}, 0.21f, -0.4f), x = pattern({1, 4}, 0.5f, -0.3f), h = pattern({1, 6}, 0.3f, 0.1f);
  Tensor w_x = pattern({6, 4}, 0.05f, -0.9f);
  Tensor W1 = W_h.clone().requires_grad_(), W2 = W_h.clone().requires_grad_();
  std::get<Tensor>(run(*g, {x, h, W1, w_x}, {.threads = 2, .needed_outputs = {}})[0]).sum().backward();
  rnn_eager(x, h, W2, w_x).sum().backward();
  expect_same(W1.grad(), W2.grad());
  {
    NoGradGuard no_grad;  // the caller's grad mode reaches the workers
    Tensor y = std::get<Tensor>(run(*g, {x, h, W1, w_x}, {.threads = 2, .needed_outputs = {}})[0]);
    EXPECT_FALSE(y.requires_grad());
  }
}

// ---- assign: a graph input written in place (module buffers) ---------------------

// Two writes of the same value and a read of the input after them: CSE merges
// neither write, DCE keeps both, the optimized graph still ends with them, and
// every reader of %buf sees the old value (the ready queue runs each assign
// after every node before it, with 1 and 4 threads).
const char* kAssign =
    "graph g(%x : Tensor, %buf : Tensor, %flag : bool) {\n"
    "  %0 : float = constant{value=0.5}()\n"
    "  %old : Tensor = mul(%buf, %0)\n"
    "  %new : Tensor = add(%old, %x)\n"
    "  %w : Tensor = If(%flag)\n"
    "    block() {\n"
    "      -> (%new)\n"
    "    }\n"
    "    block() {\n"
    "      -> (%buf)\n"
    "    }\n"
    "  %y : Tensor = matmul(%buf, %x)\n"
    "  assign(%buf, %w)\n"
    "  return (%y)\n"
    "}\n";

TEST(Interpreter, AssignWritesTheInputAfterEveryReadAndBumpsItsVersion) {
  const Tensor x = pattern({3}, 0.4f, 0.2f);
  for (int threads : {1, 4}) {
    Tensor buf = pattern({3}, 0.9f, -0.3f);
    const Tensor before = buf.clone();
    const uint64_t v = buf.version();
    const Tensor y = one(kAssign, {x, buf, true}, {.threads = threads, .needed_outputs = {}});
    expect_same(y, matmul(before, x));  // read before the write
    expect_same(buf, before * 0.5f + x);
    EXPECT_EQ(buf.version(), v + 1);
    one(kAssign, {x, buf, false}, {.threads = threads, .needed_outputs = {}});  // %w is %buf: nothing written
    EXPECT_EQ(buf.version(), v + 1);
  }
  auto compiled = ir::compile(*ir::parse(kAssign));
  const auto& nodes = compiled.optimized->top()->nodes();
  EXPECT_EQ(nodes.back()->op(), "assign") << "DCE keeps the write, at the end";
  EXPECT_NE(compiled.cuda_graph_blocker.find("assign"), std::string::npos) << compiled.cuda_graph_blocker;
}

TEST(Interpreter, AssignRefusesWhatEagerInPlaceOpsRefuse) {
  const char* text =
      "graph g(%buf : Tensor, %v : Tensor) {\n"
      "  assign(%buf, %v)\n"
      "  return (%v)\n"
      "}\n";
  auto g = ir::parse(text);
  Tensor leaf = zeros({2});
  leaf.requires_grad_();
  auto message = [&](std::vector<IValue> in) { return error_of(*g, std::move(in)); };
  EXPECT_NE(message({leaf, ones({2})}).find("requires grad"), std::string::npos);
  EXPECT_NE(message({zeros({2}, kInt64), ones({2})}).find("cannot be written into"), std::string::npos)
      << message({zeros({2}, kInt64), ones({2})});
  EXPECT_NE(message({zeros({2}), ones({3})}).find("[3]"), std::string::npos);
  {
    NoGradGuard no_grad;  // as eager: allowed with grad mode off
    run(*g, {leaf, ones({2})});
  }
  EXPECT_EQ(leaf.detach().sum().item<float>(), 2.0f);
}

}  // namespace
}  // namespace graph
