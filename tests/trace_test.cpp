// graph::trace (runtime/include/graph/trace.h): the recorded IR, its results
// under the interpreter against eager, captured params, the warnings for
// frozen branches and loop exits (naming this file's lines), and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/ir/ir.h"
#include "graph/saved_graph.h"
#include "graph/trace.h"

using namespace graph;

namespace {

// Values in (-1, 1) that differ per element (as examples/common/show.h).
Tensor pattern(Shape shape, float scale, float shift) {
  Tensor t = arange(0, shape[0] * shape[1]).to(kFloat32).view(shape);
  return tanh(t * scale + shift);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.sizes()), shape_str(b.sizes()));
  return amax(abs(a - b).to(kFloat64)).item<double>();
}

TraceOptions quiet(std::vector<std::string> names = {}) {
  TraceOptions o;
  o.input_names = std::move(names);
  o.print_warnings = false;
  return o;
}

// ---- the seed RNN step (examples/rnn/rnn.cpp), as a plain function --------------

const int kRnnIfLine = __LINE__ + 4;
Tensor rnn_step(Tensor x, Tensor prev_h, Tensor W_h, Tensor w_x) {
  Tensor h2h = matmul(W_h, prev_h.t());
  // The branch below is what a trace freezes.
  if (h2h.sum() > w_x.sum()) {
    Tensor i2h = matmul(w_x, x.t());
    h2h = h2h + i2h;
  }
  return tanh(h2h);
}

std::vector<Tensor> rnn(const std::vector<Tensor>& in) { return {rnn_step(in[0], in[1], in[2], in[3])}; }

// The inputs of examples/rnn: shift -0.9 takes the branch, +0.9 skips it.
std::vector<Tensor> rnn_inputs(float shift) {
  const int64_t H = 6, I = 4;
  return {pattern({1, I}, 0.5f, -0.3f), pattern({1, H}, 0.3f, 0.1f), pattern({H, H}, 0.21f, -0.4f),
          pattern({H, I}, 0.05f, shift)};
}

// What the plugin lowers rnn_step to (the If keeps both branches), as IR text.
const char* kRnnGraph = R"(graph rnn_step(%x : Tensor, %prev_h : Tensor, %W_h : Tensor, %w_x : Tensor) {
  %t : Tensor = t(%prev_h)
  %h2h : Tensor = matmul(%W_h, %t)
  %s1 : Tensor = sum(%h2h)
  %s2 : Tensor = sum(%w_x)
  %c : Tensor = gt(%s1, %s2)
  %h : Tensor = If(%c)
    block() {
      %xt : Tensor = t(%x)
      %i2h : Tensor = matmul(%w_x, %xt)
      %sum : Tensor = add(%h2h, %i2h)
      -> (%sum)
    }
    block() {
      -> (%h2h)
    }
  %out : Tensor = tanh(%h)
  return (%out)
}
)";

std::vector<IValue> as_ivalues(const std::vector<Tensor>& ts) { return {ts.begin(), ts.end()}; }

// ---- an MLP-like function: IR text, params, results ------------------------------

struct Mlp {
  Tensor W1 = pattern({4, 5}, 0.37f, -0.6f), b1 = pattern({1, 5}, 0.7f, -0.2f);
  Tensor W2 = pattern({5, 3}, -0.23f, 0.4f);
  Tensor operator()(const Tensor& x) const {
    Tensor h = relu(matmul(x, W1) + b1);
    return softmax(matmul(h, W2) * 0.5, 1);
  }
};

}  // namespace

TEST(Trace, MlpRecordsOneNodePerOpWithCapturedWeightsAsParams) {
  Mlp mlp;
  TracedGraph tg = trace(mlp, pattern({2, 4}, 0.3f, 0.2f), quiet({"x"}));
  tg.graph->set_name("mlp");
  EXPECT_EQ(ir::print(*tg.graph), R"(graph mlp(%x : f32[2, 4], %param0 : f32[4, 5], %param1 : f32[1, 5], %param2 : f32[5, 3]) {
  %matmul : f32[2, 5] = matmul(%x, %param0)
  %add : f32[2, 5] = add(%matmul, %param1)
  %relu : f32[2, 5] = relu(%add)
  %matmul.0 : f32[2, 3] = matmul(%relu, %param2)
  %1 : float = constant{value=0.5}()
  %mul : f32[2, 3] = mul(%matmul.0, %1)
  %softmax : f32[2, 3] = softmax{dim=1}(%mul)
  return (%softmax)
}
)");
  ASSERT_EQ(tg.params.size(), 3u);
  // The params are the captured tensors themselves (same storage), not copies.
  EXPECT_EQ(tg.params.at("param0").storage(), mlp.W1.storage());
  EXPECT_EQ(tg.params.at("param1").storage(), mlp.b1.storage());
  EXPECT_EQ(tg.params.at("param2").storage(), mlp.W2.storage());
  EXPECT_TRUE(tg.warnings.empty());
  // The printed trace parses back to the same text.
  EXPECT_EQ(ir::print(*ir::parse(ir::print(*tg.graph))), ir::print(*tg.graph));
}

TEST(Trace, MlpTraceRunsOnTheInterpreterLikeEagerOnNewInputs) {
  Mlp mlp;
  TracedGraph tg = trace(mlp, pattern({2, 4}, 0.3f, 0.2f), quiet());
  for (float shift : {-0.7f, 0.1f, 0.9f}) {
    Tensor x = pattern({2, 4}, 0.41f, shift);
    std::vector<Tensor> out = tg.run({x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_LE(max_abs_diff(out[0], mlp(x)), 1e-6) << "shift " << shift;
  }
  // Independent reference for one row: softmax(0.5 * relu(x W1 + b1) W2), in double.
  Tensor x = pattern({2, 4}, 0.41f, 0.1f);
  Tensor got = tg.run({x})[0];
  std::vector<double> logits(3);
  for (int j = 0; j < 3; ++j) {
    double acc = 0;
    for (int k = 0; k < 5; ++k) {
      double h = mlp.b1.data_ptr<float>()[k];
      for (int i = 0; i < 4; ++i) h += double(x.data_ptr<float>()[i]) * mlp.W1.data_ptr<float>()[i * 5 + k];
      acc += std::max(h, 0.0) * mlp.W2.data_ptr<float>()[k * 3 + j];
    }
    logits[j] = 0.5 * acc;
  }
  double z = 0;
  for (double l : logits) z += std::exp(l);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(got.data_ptr<float>()[j], std::exp(logits[j]) / z, 1e-6);
}

TEST(Trace, ATraceSavesAndLoadsWithItsParams) {
  Mlp mlp;
  TracedGraph tg = trace(mlp, pattern({2, 4}, 0.3f, 0.2f), quiet({"x"}));
  SavedGraph saved = load_from_string(save_to_string(*tg.graph, tg.params));
  ASSERT_EQ(saved.free_inputs().size(), 1u);
  EXPECT_EQ(saved.free_inputs()[0]->name(), "x");
  Tensor x = pattern({2, 4}, -0.29f, 0.5f);
  EXPECT_LE(max_abs_diff(std::get<Tensor>(run_saved(saved, {x})[0]), mlp(x)), 1e-6);
}

TEST(Trace, ViewsReductionsAndListsKeepTheirAttributes) {
  Tensor w = pattern({3, 4}, 0.2f, 0.1f);
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& x = in[0];  // [2, 3, 4]
    Tensor a = x.transpose(1, 2).reshape({2, 12}).slice(1, 2, 11, 3);   // [2, 3]
    Tensor b = x.sum(2, true).squeeze(-1).unsqueeze(0).flatten();       // [6]
    Tensor c = cat({a, a * 2}, 1).mean(Shape{0, 1}, false);             // 0-d
    Tensor d = linear(x, w.t().contiguous().t());                       // no bias: undefined()
    Tensor e = where(x > 0.1, x, -x).permute({2, 0, 1}).amax(Shape{1}, true);
    return {a, b, c + argmax(x), log_softmax(d, -1), e.expand({4, 2, 3}), stack({b, b}, 0)};
  };
  Tensor x = pattern({2, 12}, 0.13f, -0.5f).reshape({2, 3, 4});
  TracedGraph tg = trace(fn, {x}, quiet());
  EXPECT_TRUE(tg.warnings.empty());
  const std::string text = ir::print(*tg.graph);
  for (const char* want : {"transpose{dim0=1, dim1=2}", "reshape{shape=[2, 12]}", "slice{dim=1, end=11, start=2, step=3}",
                           "sum{dim=2, keepdim=true}", "squeeze{dim=-1}", "unsqueeze{dim=0}",
                           "flatten{end_dim=-1, start_dim=0}", "cat{dim=1}", "mean{dim=[0, 1], keepdim=false}",
                           "undefined()", "linear(", "log_softmax{dim=-1}", "permute{dims=[2, 0, 1]}",
                           "amax{dim=1, keepdim=true}", "expand{shape=[4, 2, 3]}", "stack{dim=0}", "= argmax(", "where("})
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  Tensor x2 = pattern({2, 12}, -0.17f, 0.3f).reshape({2, 3, 4});
  std::vector<Tensor> eager = fn({x2}), traced = tg.run({x2});
  ASSERT_EQ(traced.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    ASSERT_EQ(traced[i].dtype(), eager[i].dtype()) << "output " << i;
    EXPECT_LE(max_abs_diff(traced[i].to(kFloat64), eager[i].to(kFloat64)), 1e-6) << "output " << i;
  }
}

TEST(Trace, NnOpsRecordAttributesTheInterpreterReads) {
  Tensor conv_w = pattern({4, 18}, 0.11f, -0.3f).reshape({4, 2, 3, 3}), conv_b = pattern({1, 4}, 0.3f, 0.f).reshape({4});
  Tensor ln_w = pattern({1, 4}, 0.2f, 0.5f).reshape({4}), emb = pattern({5, 4}, 0.17f, 0.2f);
  Tensor idx = tensor({{0, 3}, {4, 1}});
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    const Tensor& img = in[0];  // [1, 2, 6, 6]
    Tensor c = relu(conv2d(img, conv_w, conv_b, {1, 1}, {1, 1}));               // [1, 4, 6, 6]
    Tensor p = max_pool2d(c, {2, 2}) + avg_pool2d(c, {2, 2}, {2, 2}, {0, 0});   // [1, 4, 3, 3]
    Tensor f = layer_norm(p.flatten(2).transpose(1, 2), {4}, ln_w, Tensor(), 1e-3);  // [1, 9, 4]
    Tensor a = scaled_dot_product_attention(f, f, f, Tensor(), 0.0, true);
    Tensor logits = a.reshape({9, 4}) + dropout(embedding(emb, idx).sum(Shape{0, 1}), 0.5, false);
    return {cross_entropy(logits, tensor({0, 1, 2, 3, 0, 1, 2, 3, 0})) + mse_loss(a, f), logits};
  };
  TracedGraph tg = trace(fn, {pattern({12, 6}, 0.07f, -0.4f).reshape({1, 2, 6, 6})}, quiet());
  const std::string text = ir::print(*tg.graph);
  for (const char* want : {"conv2d{dilation=[1, 1], groups=1, padding=[1, 1], stride=[1, 1]}",
                           "max_pool2d{kernel=[2, 2], padding=[0, 0]}", "avg_pool2d{kernel=[2, 2], padding=[0, 0], stride=[2, 2]}",
                           "layer_norm{eps=0.001, normalized_shape=[4]}", "scaled_dot_product_attention{is_causal=true}",
                           "dropout{p=0.5, training=false}", "embedding(", "cross_entropy(", "mse_loss("})
    EXPECT_NE(text.find(want), std::string::npos) << want << " in\n" << text;
  EXPECT_EQ(tg.params.size(), 6u);  // conv_w, conv_b, ln_w, emb, idx and the targets
  Tensor img = pattern({12, 6}, -0.05f, 0.6f).reshape({1, 2, 6, 6});
  std::vector<Tensor> eager = fn({img}), traced = tg.run({img});
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_LE(max_abs_diff(traced[i], eager[i]), 1e-6) << "output " << i;
  // Attention with dropout has no op-table form.
  auto drop = [](const Tensor& q) { return scaled_dot_product_attention(q, q, q, Tensor(), 0.1); };
  EXPECT_THROW(
      {
        try {
          trace(drop, ones({1, 2, 4}), quiet());
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("'scaled_dot_product_attention(dropout_p)'"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}

// ---- the seed RNN: the frozen branch ---------------------------------------------

TEST(Trace, RnnBranchOnTensorValuesWarnsOnceNamingTheIfLine) {
  TracedGraph tg = trace(rnn, rnn_inputs(-0.9f), quiet({"x", "prev_h", "W_h", "w_x"}));
  ASSERT_EQ(tg.warnings.size(), 1u);
  const TraceWarning& w = tg.warnings[0];
  EXPECT_EQ(w.file.substr(w.file.rfind('/') + 1), "trace_test.cpp");
  EXPECT_EQ(w.line, kRnnIfLine);
  EXPECT_NE(w.function.find("rnn_step"), std::string::npos) << w.function;
  EXPECT_EQ(w.message, "warning: graph::trace: a branch at trace_test.cpp:" + std::to_string(kRnnIfLine) +
                           " depended on tensor values; the trace recorded only the path this input took "
                           "(use [[graph::static]] to keep both)");
  // The trace is the taken path only: no If, no condition.
  tg.graph->set_name("rnn_step");
  EXPECT_EQ(ir::print(*tg.graph), R"(graph rnn_step(%x : f32[1, 4], %prev_h : f32[1, 6], %W_h : f32[6, 6], %w_x : f32[6, 4]) {
  %t : f32[6, 1] = t(%prev_h)
  %matmul : f32[6, 1] = matmul(%W_h, %t)
  %t.0 : f32[4, 1] = t(%x)
  %matmul.1 : f32[6, 1] = matmul(%w_x, %t.0)
  %add : f32[6, 1] = add(%matmul, %matmul.1)
  %tanh : f32[6, 1] = tanh(%add)
  return (%tanh)
}
)");
}

TEST(Trace, RnnTraceGivesTheFrozenResultWhereTheParsedGraphGivesEagers) {
  const std::vector<Tensor> a = rnn_inputs(-0.9f), b = rnn_inputs(0.9f);
  // The inputs really take different sides.
  ASSERT_TRUE(bool(matmul(a[2], a[1].t()).sum() > a[3].sum()));
  ASSERT_FALSE(bool(matmul(b[2], b[1].t()).sum() > b[3].sum()));
  TracedGraph tg = trace(rnn, a, quiet());
  auto parsed = ir::parse(kRnnGraph);

  // On the traced side, all three agree.
  const Tensor eager_a = rnn(a)[0];
  EXPECT_LE(max_abs_diff(tg.run(a)[0], eager_a), 1e-6);
  EXPECT_LE(max_abs_diff(std::get<Tensor>(run(*parsed, as_ivalues(a))[0]), eager_a), 1e-6);

  // On the other side, the trace still adds i2h (the branch-A formula); the
  // parsed graph decides at run time, as eager does.
  const Tensor eager_b = rnn(b)[0];
  const Tensor frozen_b = tanh(matmul(b[2], b[1].t()) + matmul(b[3], b[0].t()));
  const Tensor traced_b = tg.run(b)[0];
  EXPECT_LE(max_abs_diff(traced_b, frozen_b), 1e-6);
  EXPECT_GT(max_abs_diff(traced_b, eager_b), 0.05);
  EXPECT_LE(max_abs_diff(std::get<Tensor>(run(*parsed, as_ivalues(b))[0]), eager_b), 1e-6);
  // eager_b is tanh(W_h prev_h^T) alone: check against a loop in double.
  for (int i = 0; i < 6; ++i) {
    double acc = 0;
    for (int k = 0; k < 6; ++k) acc += double(b[2].data_ptr<float>()[i * 6 + k]) * b[1].data_ptr<float>()[k];
    EXPECT_NEAR(eager_b.data_ptr<float>()[i], std::tanh(acc), 1e-6);
  }
}

#ifdef CXXGRAPH_RNN_GRAPH_FILE
// The same with the graph the plugin lowered from examples/rnn/rnn.cpp.
TEST(Trace, PluginsRnnGraphKeepsBothBranchesWhereTheTraceFreezesOne) {
  std::ifstream f(CXXGRAPH_RNN_GRAPH_FILE);
  ASSERT_TRUE(f) << CXXGRAPH_RNN_GRAPH_FILE;
  std::stringstream text;
  text << f.rdbuf();
  auto parsed = ir::parse(text.str());
  TracedGraph tg = trace(rnn, rnn_inputs(-0.9f), quiet());
  for (float shift : {-0.9f, 0.9f}) {
    const std::vector<Tensor> in = rnn_inputs(shift);
    const Tensor eager = rnn(in)[0];
    EXPECT_LE(max_abs_diff(std::get<Tensor>(run(*parsed, as_ivalues(in))[0]), eager), 1e-6) << shift;
    if (shift > 0) {
      EXPECT_GT(max_abs_diff(tg.run(in)[0], eager), 0.05);
    }
  }
}
#endif

// ---- other frozen decisions --------------------------------------------------------

const int kWhileLine = __LINE__ + 3;
Tensor halve_until_small(const Tensor& x) {
  Tensor y = x;
  while (abs(y).sum() > 1.0) y = y * 0.5;
  return y;
}

TEST(Trace, LoopExitOnTensorValuesWarnsAndFreezesTheTripCount) {
  Tensor x = full({4}, 1.0f);  // sum 4: halved twice, to sum 1
  TracedGraph tg = trace(halve_until_small, x, quiet());
  ASSERT_EQ(tg.warnings.size(), 1u);  // three evaluations of one condition: one warning
  EXPECT_EQ(tg.warnings[0].line, kWhileLine);
  EXPECT_NE(tg.warnings[0].message.find("a branch at trace_test.cpp:" + std::to_string(kWhileLine)), std::string::npos);
  // Eager halves 8s three times; the trace halves twice, whatever the input.
  Tensor big = full({4}, 2.0f);
  EXPECT_FLOAT_EQ(halve_until_small(big).sum().item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(tg.run({big})[0].sum().item<float>(), 2.0f);
}

const int kItemLine = __LINE__ + 2;
Tensor scale_by_mean(const Tensor& x) {
  const float m = x.mean().item<float>();
  return x * m;
}

TEST(Trace, ItemOfAnInputValueWarnsAndBecomesAConstant) {
  TracedGraph tg = trace(scale_by_mean, full({2}, 3.0f), quiet());
  ASSERT_EQ(tg.warnings.size(), 1u);
  EXPECT_EQ(tg.warnings[0].line, kItemLine);
  EXPECT_NE(tg.warnings[0].message.find("a value read with item() at trace_test.cpp:" + std::to_string(kItemLine)),
            std::string::npos);
  EXPECT_NE(ir::print(*tg.graph).find("constant{value=3.0}"), std::string::npos) << ir::print(*tg.graph);
  EXPECT_FLOAT_EQ(tg.run({full({2}, 5.0f)})[0].data_ptr<float>()[0], 15.0f);  // eager: 25
}

TEST(Trace, DecisionsOnCapturedWeightsOnlyDoNotWarn) {
  Tensor w = full({3}, 2.0f);
  auto fn = [&](const Tensor& x) { return w.sum() > 0.0 ? x * w : x; };
  TracedGraph tg = trace(fn, ones({3}), quiet());
  EXPECT_TRUE(tg.warnings.empty());
  EXPECT_FLOAT_EQ(tg.run({full({3}, 4.0f)})[0].data_ptr<float>()[1], 8.0f);
}

TEST(Trace, AnUnresolvableCallerStillWarnsNamingWhatIsKnown) {
  static int not_code = 0;
  auto fn = [](const Tensor& x) {
    graph::detail::trace_host_read(x, "bool", &not_code);
    return x + 1;
  };
  TracedGraph tg = trace(fn, ones({1}), quiet());
  ASSERT_EQ(tg.warnings.size(), 1u);
  EXPECT_EQ(tg.warnings[0].line, 0);
  EXPECT_NE(tg.warnings[0].message.find("(source line unknown: no debug information)"), std::string::npos)
      << tg.warnings[0].message;
}

TEST(Trace, WarningsArePrintedToStderrOncePerSite) {
  testing::internal::CaptureStderr();
  TraceOptions loud;
  for (int i = 0; i < 3; ++i) trace(halve_until_small, full({4}, 1.0f), loud);
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string line = "a branch at trace_test.cpp:" + std::to_string(kWhileLine);
  const size_t first = err.find(line);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(line, first + 1), std::string::npos) << err;
}

TEST(Trace, AnOutputNoTracedOpComputedIsReportedAsAConstant) {
  Tensor w = full({2}, 7.0f);
  auto fn = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {in[0] + 1, w}; };
  TracedGraph tg = trace(fn, {ones({2})}, quiet());
  ASSERT_EQ(tg.warnings.size(), 1u);
  EXPECT_NE(tg.warnings[0].message.find("output 1 does not depend on the inputs"), std::string::npos);
  std::vector<Tensor> out = tg.run({zeros({2})});
  EXPECT_FLOAT_EQ(out[0].data_ptr<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1].data_ptr<float>()[0], 7.0f);
}

// ---- autograd, threads, errors -----------------------------------------------------

TEST(Trace, AutogradKeepsWorkingWhileTracing) {
  Tensor w = pattern({1, 3}, 0.5f, 0.1f).reshape({3});
  Tensor x = full({3}, 2.0f).requires_grad_();
  Tensor grad_inside;
  auto fn = [&](const Tensor& in) {
    Tensor loss = (in * w * in).sum();
    loss.backward();
    grad_inside = in.grad();
    return loss;
  };
  TracedGraph tg = trace(fn, x, quiet());
  ASSERT_TRUE(grad_inside.defined());
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(grad_inside.data_ptr<float>()[i], 2 * 2.0f * w.data_ptr<float>()[i]);
  // The backward pass is not part of the trace.
  EXPECT_EQ(tg.graph->top()->nodes().size(), 3u) << ir::print(*tg.graph);
  EXPECT_FLOAT_EQ(tg.run({ones({3})})[0].item<float>(), w.sum().item<float>());
}

TEST(Trace, TracesArePerThread) {
  auto square = [](const Tensor& x) { return x * x; };
  auto negate = [](const Tensor& x) { return -x; };
  TracedGraph a, b;
  std::thread t1([&] { for (int i = 0; i < 20; ++i) a = trace(square, ones({8}), quiet()); });
  std::thread t2([&] { for (int i = 0; i < 20; ++i) b = trace(negate, ones({8}), quiet()); });
  t1.join();
  t2.join();
  EXPECT_EQ(a.graph->top()->nodes().size(), 1u);
  EXPECT_EQ(a.graph->top()->nodes().front()->op(), "mul");
  EXPECT_EQ(b.graph->top()->nodes().size(), 1u);
  EXPECT_EQ(b.graph->top()->nodes().front()->op(), "neg");
}

TEST(Trace, ClampTracesAsTheOpsItIsMadeOf) {
  auto fn = [](const Tensor& x) { return clamp(x, -0.5, 0.5); };
  TracedGraph tg = trace(fn, pattern({2, 3}, 0.4f, -1.f), quiet());
  Tensor x = pattern({2, 3}, 0.3f, -0.8f);
  EXPECT_LE(max_abs_diff(tg.run({x})[0], fn(x)), 0.0);
}

TEST(Trace, NestedTraceIsAnError) {
  auto inner = [](const Tensor& x) { return x + 1; };
  auto outer = [&](const Tensor& x) { return trace(inner, x, quiet()).params.empty() ? x : x; };
  try {
    trace(outer, ones({2}), quiet());
    FAIL() << "expected graph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("traces do not nest"), std::string::npos) << e.what();
  }
  // The failed trace left nothing behind: tracing works again.
  EXPECT_EQ(trace(inner, ones({2}), quiet()).graph->top()->nodes().size(), 2u);
}

// Every eager op the runtime traces has an entry now (Tensor::to and
// contiguous() got theirs in issue 20): an op without one is recorded
// through trace_op directly.
Tensor untraceable(const Tensor& x) {
  return detail::trace_op("no_such_op", {x}, {}, [&] { return x * 1; });
}

TEST(Trace, AnOpWithoutOpTableEntryIsAnErrorNamingItWhenTheOutputsNeedIt) {
  auto fn = [](const Tensor& x) { return untraceable(x) * 2; };
  try {
    trace(fn, ones({2}), quiet());
    FAIL() << "expected graph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_op' has no entry in the op table"), std::string::npos) << e.what();
  }
  // Unused, it does not matter; on a captured constant it is captured whole.
  Tensor w = ones({2}, kInt64);
  auto fine = [&](const Tensor& x) {
    (void)untraceable(x);
    return x * untraceable(w);
  };
  TracedGraph tg = trace(fine, full({2}, 3.0f), quiet());
  EXPECT_EQ(tg.params.size(), 1u);
  EXPECT_EQ(tg.params.begin()->second.dtype(), kInt64);
}

// Tensor::to(DType) and contiguous() are op-table entries: traced as nodes,
// and the trace gives eager's values and dtype.
TEST(Trace, CastsAndContiguousAreTraced) {
  auto fn = [](const Tensor& x) { return (x.t().contiguous() > 0).to(kFloat64) * x.t().to(kInt64); };
  const Tensor x = pattern({2, 2}, 2.9f, -1.3f);
  TracedGraph tg = trace(fn, x, quiet());
  std::vector<Tensor> out = tg.run({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), kFloat64);
  EXPECT_EQ(max_abs_diff(out[0], fn(x)), 0.0);
}

TEST(Trace, ErrorsOfTheTracedFunctionPropagateAndBadArgumentsAreReported) {
  auto bad = [](const Tensor& x) { return matmul(x, x); };
  EXPECT_THROW(trace(bad, ones({2, 3}), quiet()), Error);
  EXPECT_THROW(trace(TraceFn(), {ones({1})}, quiet()), Error);
  EXPECT_THROW(trace(rnn, {ones({1}), Tensor()}, quiet()), Error);
  TracedGraph tg = trace(rnn, rnn_inputs(-0.9f), quiet());
  try {
    tg.run({ones({1, 4})});
    FAIL() << "expected graph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 4 inputs, got 1"), std::string::npos) << e.what();
  }
}
