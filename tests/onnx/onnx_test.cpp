// graph::onnx::export_model without ONNX Runtime: the model's structure (the
// ONNX ops each IR op becomes, run-time attributes read from parameters and
// bound scalars, an If on a known condition inlined) and every refusal,
// which must name the op and its source line. onnx_runtime (check_onnx.py)
// checks the values.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "graph/graph.h"
#include "graph/onnx_export.h"

namespace {

using namespace graph;

::onnx::ModelProto export_text(const std::string& text, const std::map<std::string, Tensor>& params = {},
                               const graph::onnx::ExportOptions& options = {}) {
  ::onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(graph::onnx::export_to_string(*ir::parse(text), params, options)));
  return m;
}

std::vector<std::string> op_types(const ::onnx::ModelProto& m) {
  std::vector<std::string> out;
  for (const auto& n : m.graph().node()) out.push_back(n.op_type());
  return out;
}

const ::onnx::NodeProto& find_node(const ::onnx::ModelProto& m, const std::string& op) {
  for (const auto& n : m.graph().node())
    if (n.op_type() == op) return n;
  throw std::runtime_error("no " + op + " node");
}

std::vector<int64_t> ints_attr(const ::onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  return {};
}

// The message of the graph::Error the export of `text` throws.
std::string export_error(const std::string& text, const std::map<std::string, Tensor>& params = {},
                         const graph::onnx::ExportOptions& options = {}) {
  try {
    graph::onnx::export_to_string(*ir::parse(text), params, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OnnxExport, MlpHeaderInputsOutputsAndInitializers) {
  const auto m = export_text(R"(graph mlp(%x : f32[N, 2], %w : f32[3, 2], %b : f32[3]) {
  %y : f32[N, 3] = linear(%x, %w, %b)
  %output0 : f32[N, 3] = gelu(%y)
  return (%output0, %y)
})", {{"w", randn({3, 2})}, {"b", randn({3})}});
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.producer_name(), "cxxgraph");
  ASSERT_EQ(m.graph().input_size(), 1);  // w and b are initializers
  const auto& x = m.graph().input(0);
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(x.type().tensor_type().elem_type(), ::onnx::TensorProto::FLOAT);
  EXPECT_EQ(x.type().tensor_type().shape().dim(0).dim_param(), "N");
  EXPECT_EQ(x.type().tensor_type().shape().dim(1).dim_value(), 2);
  EXPECT_EQ(m.graph().initializer_size(), 5);  // w, b and gelu's three constants
  ASSERT_EQ(m.graph().output_size(), 2);
  EXPECT_EQ(m.graph().output(0).name(), "output0");  // the IR value of that name gets another
  EXPECT_EQ(m.graph().output(1).name(), "output1");
  const auto ops = op_types(m);
  EXPECT_EQ(ops.front(), "Gemm");                                        // linear on a matrix
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Erf"), ops.end());        // exact gelu, decomposed
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "Gelu"), ops.end());       // (Gelu is opset 20)
}

// What the plugin emits for LeNet's conv: attributes read at run time from
// Shape members ("@3") and a host int, a FusionGroup, and an If on whether
// the bias is defined.
constexpr const char* kPluginConv = R"(graph forward(%x : f32[1, 1, 8, 8], %weight : f32[4, 1, 3, 3], %bias : Tensor, %stride : i64[?], %padding : i64[?], %dilation : i64[?], %groups : int) {
  %c : bool = defined(%bias)
  %b : Tensor = If(%c)
    block() {
      -> (%bias)
    }
    block() {
      %u : Tensor = undefined()
      -> (%u)
    }
  %r : f32 = conv2d{dilation="@5", groups="@6", padding="@4", stride="@3"}(%x, %weight, %b, %stride, %padding, %dilation, %groups) @"lenet.cpp":18:18
  %y : f32 = FusionGroup(%r)
    block(%r.0 : f32) {
      %y.1 : f32 = relu(%r.0)
      -> (%y.1)
    }
  %p : f32 = max_pool2d{kernel=[2, 2], padding=[0, 0], stride=[]}(%y)
  return (%p)
})";

TEST(OnnxExport, RunTimeAttributesFromParametersAndScalars) {
  const std::map<std::string, Tensor> params{{"weight", randn({4, 1, 3, 3})}, {"bias", randn({4})},
                                             {"stride", full({2}, 2, kInt64)}, {"padding", full({2}, 1, kInt64)},
                                             {"dilation", full({2}, 1, kInt64)}};
  graph::onnx::ExportOptions opts;
  opts.scalars["groups"] = int64_t{1};
  const auto m = export_text(kPluginConv, params, opts);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "Relu", "MaxPool", "Identity"}));
  const auto& conv = find_node(m, "Conv");
  EXPECT_EQ(conv.input_size(), 3);  // the If on defined(%bias) kept the bias
  EXPECT_EQ(ints_attr(conv, "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints_attr(conv, "pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(ints_attr(conv, "kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(ints_attr(find_node(m, "MaxPool"), "strides"), (std::vector<int64_t>{2, 2}));  // default: the kernel
  // The int-list parameters decide attributes; only the weights are initializers.
  EXPECT_EQ(m.graph().initializer_size(), 2);

  auto no_groups = params;
  EXPECT_NE(export_error(kPluginConv, no_groups).find(
                "conv2d at lenet.cpp:18:18: the attribute 'groups' comes from %groups, unknown at export time"),
            std::string::npos);
  no_groups.erase("bias");  // an optional input the caller may leave undefined: not decidable
  std::string typed_bias = kPluginConv;
  typed_bias.replace(typed_bias.find("%bias : Tensor"), 14, "%bias : f32[4]");
  EXPECT_NE(export_error(typed_bias, no_groups, opts).find("the optional input %bias may be undefined"),
            std::string::npos);
  EXPECT_NE(export_error(kPluginConv, no_groups, opts).find("the graph input %bias has no shape"), std::string::npos);
}

// A run-time If and a Loop become ONNX If and Loop; a host value carried by
// the loop (a counter) and the ops on it become 0-d tensors and nodes.
TEST(OnnxExport, ControlFlowBecomesOnnxIfAndLoop) {
  const std::string loop = R"(graph f(%n : int, %x : f32[4]) {
  %go : bool = constant{value=true}()
  %zero : int = constant{value=0}()
  %k : int, %h : f32[4] = Loop(%n, %go, %zero, %x) @"model.cpp":12:5
    block(%i : int, %k.1 : int, %h.1 : f32[4]) {
      %one : int = constant{value=1}()
      %k.2 : int = add(%k.1, %one)
      %h.2 : f32[4] = mul(%h.1, %k.2)
      %small : bool = lt(%k.2, %n)
      -> (%small, %k.2, %h.2)
    }
  return (%h, %k)
})";
  graph::onnx::ExportOptions opts;
  opts.scalars["n"] = int64_t{3};
  const auto m = export_text(loop, {}, opts);
  ASSERT_EQ(op_types(m), (std::vector<std::string>{"Loop", "Identity", "Identity"}));
  const auto& node = m.graph().node(0);
  EXPECT_EQ(node.input_size(), 4);  // trips, condition, k, h
  ASSERT_EQ(node.attribute_size(), 1);
  const auto& body = node.attribute(0).g();
  EXPECT_EQ(node.attribute(0).name(), "body");
  ASSERT_EQ(body.input_size(), 4);  // iteration, condition in, k, h
  EXPECT_EQ(body.input(2).type().tensor_type().elem_type(), ::onnx::TensorProto::INT64);
  EXPECT_EQ(body.input(3).type().tensor_type().elem_type(), ::onnx::TensorProto::FLOAT);
  EXPECT_EQ(body.output_size(), 3);  // condition out, k, h
  std::vector<std::string> body_ops;
  for (const auto& n : body.node()) body_ops.push_back(n.op_type());
  for (const char* op : {"Add", "Cast", "Mul", "Less"})
    EXPECT_NE(std::find(body_ops.begin(), body_ops.end(), op), body_ops.end()) << op;
  EXPECT_EQ(m.graph().output(1).type().tensor_type().elem_type(), ::onnx::TensorProto::INT64);

  const std::string if_ = R"(graph f(%x : f32[4]) {
  %s : f32 = sum(%x)
  %y : f32[4] = If(%s) @"model.cpp":7:3
    block() {
      -> (%x)
    }
    block() {
      %z : f32[4] = neg(%x)
      -> (%z)
    }
  return (%y)
})";
  const auto mi = export_text(if_);
  ASSERT_EQ(op_types(mi), (std::vector<std::string>{"ReduceSum", "Cast", "Reshape", "If", "Identity"}));
  const auto& ifn = mi.graph().node(3);
  ASSERT_EQ(ifn.attribute_size(), 2);
  EXPECT_EQ(ifn.attribute(0).name(), "then_branch");
  EXPECT_EQ(ifn.attribute(1).name(), "else_branch");
  EXPECT_EQ(ifn.attribute(1).g().node(0).op_type(), "Neg");
}

TEST(OnnxExport, RefusesWhatOnnxCannotExpressNamingOpAndLine) {
  const std::string if_ = R"(graph f(%c : bool, %x : f32[4]) {
  %y : f32[4] = If(%c) @"model.cpp":7:3
    block() {
      -> (%x)
    }
    block() {
      %z : f32[4] = neg(%x)
      -> (%z)
    }
  return (%y)
})";
  EXPECT_NE(export_error(if_).find("If at model.cpp:7:3: the host-scalar input %c has no value"), std::string::npos);
  graph::onnx::ExportOptions opts;  // a bound condition decides the branch
  opts.scalars["c"] = false;
  EXPECT_EQ(op_types(export_text(if_, {}, opts)), (std::vector<std::string>{"Neg", "Identity"}));

  EXPECT_NE(export_error(R"(graph f(%x : f32[4], %n : int) {
  %go : bool = constant{value=true}()
  %h : f32[4] = Loop(%n, %go, %x)
    block(%i : int, %h.1 : f32[4]) {
      %d : float = int_to_float(%i)
      %m : int = float_to_int(%d) @"model.cpp":9:9
      %s : f32[4] = mul(%h.1, %m)
      -> (%go, %s)
    }
  return (%h)
})", {}, [] {
              graph::onnx::ExportOptions o;
              o.scalars["n"] = int64_t{2};
              return o;
            }()).find("float_to_int at model.cpp:9:9: 'float_to_int' has no ONNX mapping"),
            std::string::npos);
  EXPECT_NE(export_error(R"(graph f(%x : f32[4]) {
  %y : f32[4] = dropout{p=0.5, training=true}(%x) @"train.cpp":3:9
  return (%y)
})").find("dropout at train.cpp:3:9: dropout in training mode"),
            std::string::npos);
  EXPECT_NE(export_error(R"(graph f(%g : f32[4], %x : f32[2, 4]) {
  %y : f32[4] = sum_to(%g, %x) @"grad.cpp":1:2
  return (%y)
})").find("sum_to at grad.cpp:1:2:"),
            std::string::npos);
  EXPECT_NE(export_error(R"(graph f(%x : f32[4], %eps : float) {
  %y : f32[4] = layer_norm{eps="@1", normalized_shape=[4]}(%x, %eps) @"m.cpp":4:4
  return (%y)
})").find("layer_norm at m.cpp:4:4: the attribute 'eps' comes from %eps"),
            std::string::npos);
  // squeeze needs to know which dims have size 1.
  EXPECT_NE(export_error("graph f(%x : f32) {\n  return (%x)\n}").find("the graph input %x has no shape"),
            std::string::npos);
  EXPECT_NE(export_error(R"(graph f(%x : f32[2, N]) {
  %y : f32 = squeeze(%x) @"m.cpp":5:5
  return (%y)
})").find("squeeze at m.cpp:5:5: needs the static shape of %x"),
            std::string::npos);
  EXPECT_NE(export_error("graph f(%x : f32[2]) {\n  return (%x)\n}", {}, [] {
              graph::onnx::ExportOptions o;
              o.scalars["nope"] = int64_t{1};
              return o;
            }()).find("no graph input is named 'nope'"),
            std::string::npos);
}

// A module buffer updated in place (assign; nn::BatchNorm in training mode):
// refused where it writes, nothing emitted where the value is the input
// itself (eval mode, the condition bound).
TEST(OnnxExport, InPlaceBufferUpdatesExportOnlyWhereNothingIsWritten) {
  const std::string g = R"(graph f(%training : bool, %x : f32[4], %buf : f32[4]) {
  %w : f32[4] = If(%training) @"bn.cpp":2:3
    block() {
      %n : f32[4] = add(%buf, %x)
      -> (%n)
    }
    block() {
      -> (%buf)
    }
  %y : f32[4] = mul(%x, %w)
  assign(%buf, %w) @"bn.cpp":3:5
  return (%y)
})";
  graph::onnx::ExportOptions train, eval;
  train.scalars["training"] = true;
  eval.scalars["training"] = false;
  EXPECT_NE(export_error(g, {}, train).find("assign at bn.cpp:3:5: the graph updates its input %buf in place"),
            std::string::npos)
      << export_error(g, {}, train);
  EXPECT_EQ(export_error(g, {}, eval), "(no error)");
  const std::vector<std::string> ops = op_types(export_text(g, {}, eval));
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Mul"), 1) << "the update's Add is not exported";
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Add"), 0);
}

const ::onnx::TensorProto& find_initializer(const ::onnx::ModelProto& m, const std::string& name) {
  for (const auto& t : m.graph().initializer())
    if (t.name() == name) return t;
  throw std::runtime_error("no initializer " + name);
}

// where(m, x, v) on an int64 x with a float v known at export time (the
// masked_fill the plugin emits: invert, promote, the value at run time), and
// triu/tril. ONNX does not promote: x is cast, the fill is a float constant.
TEST(OnnxExport, RefusesAStaticTrainStep) {
  const std::string e = export_error(R"(graph step(%x : f32[2, 3], %w : f32[3], %g : f32[3]) {
  %p : f32[2, 3] = mul(%x, %w)
  %loss : f32[] = sum(%p)
  set_grads{params=1}(%w, %g) @"train.cpp":12:8
  return (%loss)
})");
  EXPECT_NE(e.find("set_grads at train.cpp:12:8: a static train step (loss.backward())"), std::string::npos) << e;
}

TEST(OnnxExport, MaskedFillWhereAndTrilu) {
  const std::string text = R"(graph f(%x : i64[2, 3], %m : i1[3], %v : float, %y : f32[3, 3]) {
  %a : f32[2, 3] = masked_fill{value="@2", invert=true, promote=true}(%x, %m, %v) @"m.cpp":3:3
  %u : f32[3, 3] = triu{diagonal=-1}(%y)
  %l : f32[3, 3] = tril(%y)
  return (%a, %u, %l)
})";
  graph::onnx::ExportOptions opts;
  opts.scalars["v"] = 0.25;
  const auto m = export_text(text, {}, opts);
  const auto ops = op_types(m);  // then an Identity per output, naming it
  EXPECT_EQ(std::vector<std::string>(ops.begin(), ops.begin() + std::min<size_t>(4, ops.size())),
            (std::vector<std::string>{"Cast", "Where", "Trilu", "Trilu"}));
  const auto& where = find_node(m, "Where");
  ASSERT_EQ(where.input_size(), 3);
  EXPECT_EQ(where.input(0), "m");                                // invert: x where the mask is true
  EXPECT_EQ(where.input(1), find_node(m, "Cast").output(0));  // x as float32
  const auto& fill = find_initializer(m, where.input(2));
  EXPECT_EQ(fill.data_type(), ::onnx::TensorProto::FLOAT);
  EXPECT_EQ(fill.dims_size(), 0);
  float f = 0;
  ASSERT_EQ(fill.raw_data().size(), sizeof f);
  std::memcpy(&f, fill.raw_data().data(), sizeof f);
  EXPECT_EQ(f, 0.25f);
  std::vector<std::pair<int64_t, int64_t>> upper_k;  // (upper, k) per Trilu
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "Trilu") continue;
    ASSERT_EQ(n.attribute_size(), 1);
    EXPECT_EQ(n.attribute(0).name(), "upper");
    int64_t k = 0;
    const auto& kt = find_initializer(m, n.input(1));
    ASSERT_EQ(kt.data_type(), ::onnx::TensorProto::INT64);
    ASSERT_EQ(kt.raw_data().size(), sizeof k);
    std::memcpy(&k, kt.raw_data().data(), sizeof k);
    upper_k.emplace_back(n.attribute(0).i(), k);
  }
  EXPECT_EQ(upper_k, (std::vector<std::pair<int64_t, int64_t>>{{1, -1}, {0, 0}}));
  EXPECT_NE(export_error(text).find("masked_fill at m.cpp:3:3: the attribute 'value' comes from %v, unknown at export time"),
            std::string::npos);
}

TEST(OnnxExport, IndexSelectGatherCumsumBmm) {
  const std::string text = R"(graph f(%x : f32[2, 3], %i : i64[4], %j : i64[2, 2], %b : i1[2, 3], %y : f32[2, 3, 4]) {
  %s : f32[2, 4] = index_select{dim=1}(%x, %i)
  %g : f32[2, 2] = gather{dim=-1}(%x, %j)
  %c : i64[2, 3] = cumsum{dim=0}(%b)
  %yt : f32[2, 4, 3] = transpose{dim0=1, dim1=2}(%y)
  %m : f32[2, 3, 3] = bmm(%y, %yt)
  return (%s, %g, %c, %m)
})";
  const auto m = export_text(text);
  const auto ops = op_types(m);
  for (const char* op : {"Reshape", "Gather", "GatherElements", "Cast", "CumSum", "MatMul"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  auto axis = [&](const char* op) {
    const auto& n = find_node(m, op);
    EXPECT_EQ(n.attribute_size(), 1);
    return n.attribute(0).i();
  };
  EXPECT_EQ(axis("Gather"), 1);
  EXPECT_EQ(axis("GatherElements"), -1);
  const auto& cumsum = find_node(m, "CumSum");
  EXPECT_EQ(cumsum.input(0), find_node(m, "Cast").output(0));  // bool summed as int64
  const auto& ax = find_initializer(m, cumsum.input(1));
  ASSERT_EQ(ax.data_type(), ::onnx::TensorProto::INT64);
  EXPECT_EQ(ax.dims_size(), 0);
}

// conv_transpose2d is ONNX's ConvTranspose, PyTorch's semantics: the same
// weight layout, symmetric pads, output_padding.
TEST(OnnxExport, ConvTranspose) {
  const std::string text = R"(graph f(%x : f32[1, 4, 3, 3], %w : f32[4, 3, 3, 3], %b : f32[6]) {
  %y : f32[1, 6, 6, 7] = conv_transpose2d{stride=[2, 2], padding=[1, 0], output_padding=[1, 0], groups=2, dilation=[1, 1]}(%x, %w, %b)
  return (%y)
})";
  const auto m = export_text(text);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"ConvTranspose", "Identity"}));  // Identity: the output
  const auto& n = find_node(m, "ConvTranspose");
  EXPECT_EQ(n.input_size(), 3);
  EXPECT_EQ(ints_attr(n, "kernel_shape"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(ints_attr(n, "strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints_attr(n, "pads"), (std::vector<int64_t>{1, 0, 1, 0}));
  EXPECT_EQ(ints_attr(n, "output_padding"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ints_attr(n, "dilations"), (std::vector<int64_t>{1, 1}));
  bool group = false;
  for (const auto& a : n.attribute())
    if (a.name() == "group") group = a.i() == 2;
  EXPECT_TRUE(group);
}

TEST(OnnxExport, ScatterAddAndArgsort) {
  const std::string text = R"(graph f(%x : f32[3, 4], %i : i64[2, 4], %s : f32[2, 5]) {
  %y : f32[3, 4] = scatter_add{dim=0}(%x, %i, %s)
  %a : i64[3, 4] = argsort{dim=-1, descending=true}(%x)
  return (%y, %a)
})";
  const auto m = export_text(text);
  auto attrs = [&](const char* op) {
    std::map<std::string, std::string> out;
    for (const auto& a : find_node(m, op).attribute()) out[a.name()] = a.s().empty() ? std::to_string(a.i()) : a.s();
    return out;
  };
  EXPECT_EQ(attrs("ScatterElements"), (std::map<std::string, std::string>{{"axis", "0"}, {"reduction", "add"}}));
  EXPECT_EQ(find_node(m, "ScatterElements").input(2), find_node(m, "Slice").output(0));  // src cut to [2, 4]
  EXPECT_EQ(attrs("TopK"),
            (std::map<std::string, std::string>{{"axis", "1"}, {"largest", "1"}, {"sorted", "1"}}));
}

// topk's argsort{k}: TopK of the first k, k a constant (not the dim's size).
TEST(OnnxExport, ArgsortFirstKIsTopKOfK) {
  const auto m = export_text(R"(graph f(%x : f32[3, 4]) {
  %a : i64[2, 4] = argsort{dim=0, descending=false, k=2}(%x)
  return (%a)
})");
  const auto& n = find_node(m, "TopK");
  const auto& k = find_initializer(m, n.input(1));
  ASSERT_EQ(k.int64_data_size(), 1);
  EXPECT_EQ(k.int64_data(0), 2);
  for (const auto& a : n.attribute()) {
    if (a.name() == "largest" || a.name() == "axis") {
      EXPECT_EQ(a.i(), 0) << a.name();
    }
  }
}

TEST(OnnxExport, SavedGraphAndCommandLine) {
  const std::string dir = ::testing::TempDir();
  const auto g = ir::parse(R"(graph f(%x : f32[2, 3], %w : f32[3]) {
  %y : f32[2, 3] = mul(%x, %w)
  return (%y)
})");
  save(dir + "/m.cxgraph", *g, {{"w", full({3}, 2.0)}});
  graph::onnx::export_model(dir + "/m.onnx", load(dir + "/m.cxgraph"));
  ::onnx::ModelProto m;
  std::ifstream f(dir + "/m.onnx", std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&f));
  ASSERT_EQ(m.graph().initializer_size(), 1);
  EXPECT_EQ(m.graph().initializer(0).name(), "w");
  EXPECT_EQ(m.graph().initializer(0).raw_data().size(), 12u);

  const std::string tool = CXXGRAPH_GRAPH_EXPORT;
  auto status = [&](const std::string& args) { return WEXITSTATUS(std::system((tool + " " + args + " >/dev/null 2>&1").c_str())); };
  EXPECT_EQ(status("--help"), 0);
  EXPECT_EQ(status("--version"), 0);
  EXPECT_EQ(status(dir + "/m.cxgraph -o " + dir + "/cli.onnx"), 0);
  EXPECT_EQ(status(dir + "/m.cxgraph"), 2);                  // no -o
  EXPECT_EQ(status("--bogus " + dir + "/m.cxgraph -o x"), 2);
  EXPECT_EQ(status(dir + "/missing.graph -o " + dir + "/x.onnx"), 1);
  std::ofstream(dir + "/loop.graph") << "graph f(%n : int, %x : f32[4]) {\n  %go : bool = constant{value=true}()\n"
                                        "  %h : f32[4] = Loop(%n, %go, %x)\n    block(%i : int, %h.1 : f32[4]) {\n"
                                        "      -> (%go, %h.1)\n    }\n  return (%h)\n}\n";
  EXPECT_EQ(status(dir + "/loop.graph -o " + dir + "/x.onnx --set n=3"), 0);
  std::ofstream(dir + "/train.graph") << "graph f(%x : f32[4]) {\n  %y : f32[4] = dropout{p=0.5, training=true}(%x)\n"
                                         "  return (%y)\n}\n";
  EXPECT_EQ(status(dir + "/train.graph -o " + dir + "/x.onnx"), 1);
}

}  // namespace
