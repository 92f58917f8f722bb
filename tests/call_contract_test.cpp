// The call contract without Clang (ir/signature.h, codegen/call_contract.h):
// the signature read off a graph's inputs, the one input checker that
// generated code and interpret mode share (each of its messages), and the
// texts codegen writes for the generated source and the plugin's prologue.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/codegen/call_contract.h"
#include "graph/detail/generated_support.h"
#include "graph/error.h"
#include "graph/ir/ir.h"
#include "graph/ir/signature.h"
#include "graph/ir/verifier.h"
#include "graph/ops.h"

namespace {

namespace ir = graph::ir;
using graph::IValue;
using graph::Tensor;
using graph::TensorList;
using ir::InputKind;

ir::Signature signature_of(const std::string& text) {
  auto g = ir::parse(text);
  ir::verify_or_throw(*g);
  return ir::signature(*g);
}

TEST(Signature, KindsDtypesAndSizesInInputOrder) {
  const ir::Signature sig = signature_of(R"(
graph sig(%x : f32[N, 4], %w : f32[3, 4], %bias : f32[3], %unused : f32, %n : int, %s : float, %flag : bool, %l : list) {
  %has : bool = defined(%bias)
  %y : Tensor = linear(%x, %w, %bias)
  %e : Tensor = list_get(%l, %n)
  %z : Tensor = mul(%y, %s)
  return (%z, %e, %flag, %has)
}
)");
  ASSERT_EQ(sig.inputs.size(), 8u);
  EXPECT_EQ(sig.num_outputs, 4u);
  const ir::InputSpec& x = sig.inputs[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.kind, InputKind::Tensor);
  EXPECT_EQ(x.dtype, graph::DType::Float32);
  EXPECT_FALSE(x.may_be_undefined);
  EXPECT_EQ(x.rank, 2);
  EXPECT_EQ(x.sizes, (std::vector<int64_t>{-1, 4}));  // N: any size
  EXPECT_EQ(sig.inputs[1].sizes, (std::vector<int64_t>{3, 4}));
  EXPECT_TRUE(sig.inputs[2].may_be_undefined);  // tested with defined, used as linear's bias
  EXPECT_EQ(sig.inputs[3].kind, InputKind::AnyTensor);  // no node reads it
  EXPECT_EQ(sig.inputs[3].rank, -1);
  EXPECT_EQ(sig.inputs[4].kind, InputKind::Int);
  EXPECT_EQ(sig.inputs[5].kind, InputKind::Float);
  EXPECT_EQ(sig.inputs[6].kind, InputKind::Bool);
  EXPECT_EQ(sig.inputs[7].kind, InputKind::TensorList);
  EXPECT_EQ(sig.inputs[7].name, "l");
}

// An int list (a `Shape` member) reaches the graph as a 1-D int64 tensor of
// any length: that is what the prologue's to_arg makes of it.
TEST(Signature, IntListInputIsAOneDimensionalInt64Tensor) {
  const ir::Signature sig = signature_of(R"(
graph ln(%x : f32[N, 4], %w : f32[4], %b : f32[4], %shape : i64[K]) {
  %y : Tensor = layer_norm{normalized_shape="@3", eps=1e-05}(%x, %w, %b, %shape)
  return (%y)
}
)");
  ASSERT_EQ(sig.inputs.size(), 4u);
  const ir::InputSpec& s = sig.inputs[3];
  EXPECT_EQ(s.kind, InputKind::Tensor);
  EXPECT_EQ(s.dtype, graph::DType::Int64);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.sizes, (std::vector<int64_t>{-1}));
}

TEST(Signature, UnknownRankAndDtypeStayUnknown) {
  const ir::Signature sig = signature_of("graph u(%x : Tensor) {\n  %y : Tensor = relu(%x)\n  return (%y)\n}\n");
  ASSERT_EQ(sig.inputs.size(), 1u);
  EXPECT_EQ(sig.inputs[0].kind, InputKind::Tensor);
  EXPECT_FALSE(sig.inputs[0].dtype.has_value());
  EXPECT_EQ(sig.inputs[0].rank, -1);
  // codegen cannot guard it: it says so, as before the table existed.
  try {
    graph::codegen::signature_table(sig, "signature_u", "u");
    FAIL() << "no error";
  } catch (const graph::Error& e) {
    EXPECT_STREQ(e.what(), "codegen: graph 'u' input 'x' has no dtype (run infer_types)");
  }
}

// ---- the runtime checker ------------------------------------------------------

constexpr int64_t kXSizes[] = {-1, 4};
constexpr graph::detail::InputGuard kSig[] = {
    {"x", InputKind::Tensor, graph::DType::Float32, false, 2, kXSizes},
    {"bias", InputKind::Tensor, graph::DType::Float32, true, 1, nullptr},
    {"unused", InputKind::AnyTensor, graph::DType::Float32, false, -1, nullptr},
    {"n", InputKind::Int, graph::DType::Float32, false, -1, nullptr},
    {"s", InputKind::Float, graph::DType::Float32, false, -1, nullptr},
    {"flag", InputKind::Bool, graph::DType::Float32, false, -1, nullptr},
    {"l", InputKind::TensorList, graph::DType::Float32, false, -1, nullptr},
};
constexpr size_t kN = sizeof(kSig) / sizeof(kSig[0]);

std::vector<IValue> good_call() {
  return {graph::zeros({2, 4}), graph::zeros({3}), graph::zeros({5}, graph::kInt64), int64_t{1}, 0.5, true,
          TensorList{graph::zeros({2})}};
}

// The message for `in`, or "" when the checker accepts it.
std::string why(const std::vector<IValue>& in) {
  std::string w;
  const bool ok = graph::detail::check_inputs(kSig, kN, in.data(), in.size(), &w);
  EXPECT_EQ(ok, w.empty()) << w;
  return ok ? "" : w;
}

std::string why_with(size_t k, IValue v) {
  std::vector<IValue> in = good_call();
  in[k] = std::move(v);
  return why(in);
}

TEST(CheckInputs, AcceptsWhatTheSignatureAllows) {
  EXPECT_EQ(why(good_call()), "");
  EXPECT_EQ(why_with(0, graph::zeros({7, 4})), "");  // dim 0 is any size
  EXPECT_EQ(why_with(1, Tensor()), "");              // may be undefined
  EXPECT_EQ(why_with(2, Tensor()), "");              // never read: anything that is a tensor
  EXPECT_EQ(why_with(2, graph::zeros({1, 2, 3}, graph::kFloat64)), "");
  EXPECT_EQ(why_with(6, TensorList{}), "");
}

TEST(CheckInputs, EachMismatchExplainsItself) {
  std::vector<IValue> short_call = good_call();
  short_call.pop_back();
  EXPECT_EQ(why(short_call), "expected 7 inputs, got 6");
  EXPECT_EQ(why_with(0, graph::zeros({2, 4}, graph::kInt64)), "input 0 'x': expected a float tensor, got long");
  EXPECT_EQ(why_with(0, Tensor()), "input 0 'x': expected a float tensor, got an undefined tensor");
  EXPECT_EQ(why_with(0, int64_t{3}), "input 0 'x': expected a float tensor, got an int");
  EXPECT_EQ(why_with(0, graph::zeros({4})), "input 0 'x': expected rank 2, got shape [4]");
  EXPECT_EQ(why_with(0, graph::zeros({2, 3})), "input 0 'x': expected size 4 in dim 1, got shape [2, 3]");
  EXPECT_EQ(why_with(1, 0.5), "input 1 'bias': expected a float tensor, got a float");
  EXPECT_EQ(why_with(1, graph::zeros({3, 1})), "input 1 'bias': expected rank 1, got shape [3, 1]");
  EXPECT_EQ(why_with(2, false), "input 2 'unused': expected a tensor, got a bool");
  EXPECT_EQ(why_with(3, 1.0), "input 3 'n': expected an int, got a float");
  EXPECT_EQ(why_with(4, int64_t{2}), "input 4 's': expected a float, got an int");
  EXPECT_EQ(why_with(5, int64_t{1}), "input 5 'flag': expected a bool, got an int");
  EXPECT_EQ(why_with(6, graph::zeros({2})), "input 6 'l': expected a list of tensors, got a tensor");
}

TEST(CheckInputs, TheFirstMismatchWins) {
  std::vector<IValue> in = good_call();
  in[4] = int64_t{2};
  in[0] = graph::zeros({2, 3});
  EXPECT_EQ(why(in), "input 0 'x': expected size 4 in dim 1, got shape [2, 3]");
}

// ---- the texts codegen writes -------------------------------------------------

TEST(CallContractText, SignatureTable) {
  ir::Signature sig;
  sig.inputs.push_back({"x", InputKind::Tensor, graph::DType::Float32, false, 2, {-1, 4}});
  sig.inputs.push_back({"b", InputKind::Tensor, graph::DType::Int64, true, 1, {-1}});
  sig.inputs.push_back({"s", InputKind::Float, std::nullopt, false, -1, {}});
  EXPECT_EQ(graph::codegen::signature_table(sig, "signature_f", "f"),
            "constexpr int64_t signature_f_sizes0[] = {-1, 4};\n"
            "constexpr ::graph::detail::InputGuard signature_f[] = {\n"
            "    {\"x\", ::graph::ir::InputKind::Tensor, ::graph::DType::Float32, false, 2, signature_f_sizes0},\n"
            "    {\"b\", ::graph::ir::InputKind::Tensor, ::graph::DType::Int64, true, 1, nullptr},\n"
            "    {\"s\", ::graph::ir::InputKind::Float, ::graph::DType::Float32, false, -1, nullptr},\n"
            "};\n");
  EXPECT_EQ(graph::codegen::signature_table({}, "signature_g", "g"),
            "constexpr const ::graph::detail::InputGuard* signature_g = nullptr;\n");
}

ir::Signature two_inputs() {
  ir::Signature sig;
  sig.inputs.push_back({"x", InputKind::Tensor, graph::DType::Float32, false, -1, {}});
  sig.inputs.push_back({"flag", InputKind::Bool, std::nullopt, false, -1, {}});
  return sig;
}

TEST(CallContractText, ProloguePassesOneArgumentPerInput) {
  const graph::codegen::Call call{"_Z1fN5graph6TensorEb", "h1", "::graph::Tensor", {"x", "flag"}};
  EXPECT_EQ(graph::codegen::prologue(call, two_inputs(), "nullptr"),
            " static ::graph::detail::StaticFunction _graph_sf(\"_Z1fN5graph6TensorEb\", \"h1\"); if (::graph::Tensor "
            "_graph_r{}; _graph_sf.run(_graph_r, nullptr, x, flag)) return _graph_r;");
  const graph::codegen::Call short_call{"_Z1fN5graph6TensorEb", "h1", "::graph::Tensor", {"x"}};
  EXPECT_THROW(graph::codegen::prologue(short_call, two_inputs(), "nullptr"), graph::Error);
}

TEST(CallContractText, SplitPrologue) {
  EXPECT_EQ(graph::codegen::split_open("_Z1gv", "h2", "int", "nullptr", {0, 2}),
            " _Pragma(\"GCC diagnostic push\") _Pragma(\"GCC diagnostic ignored \\\"-Wshadow\\\"\")"
            " _Pragma(\"GCC diagnostic ignored \\\"-Wunused-local-typedefs\\\"\")"
            " _Pragma(\"GCC diagnostic ignored \\\"-Wunused-variable\\\"\")"
            " static ::graph::detail::StaticFunction _graph_sf(\"_Z1gv\", \"h2\"); if (int _graph_r{};"
            " _graph_sf.run_split(_graph_r, nullptr, [&]() -> int {"
            " static ::graph::detail::StaticFunction _graph_sf0(\"_Z1gv.region0\", \"h2\");"
            " static ::graph::detail::StaticFunction _graph_sf2(\"_Z1gv.region2\", \"h2\");");
  const graph::codegen::Call last{"_Z1gv.region2", "", "int", {"x", "flag"}};
  EXPECT_EQ(graph::codegen::region_call(2, last, two_inputs(), ""),
            " { int _graph_o{}; if (_graph_sf2.run(_graph_o, nullptr, x, flag)) return _graph_o; }");
  const graph::codegen::Call first{"_Z1gv.region0", "", "::std::tuple<int>", {"x", "flag"}};
  EXPECT_EQ(graph::codegen::region_call(0, first, two_inputs(), "_graph_k1(std::get<0>(_graph_o))"),
            " { ::std::tuple<int> _graph_o; if (_graph_sf0.run(_graph_o, nullptr, x, flag)) return "
            "_graph_k1(std::get<0>(_graph_o)); }");
  EXPECT_THROW(graph::codegen::region_call(0, {"r", "", "int", {}}, two_inputs(), ""), graph::Error);
  EXPECT_EQ(graph::codegen::split_close(12, 3, "/src/m.cpp"),
            " })) return _graph_r; _Pragma(\"GCC diagnostic pop\")\n#line 12 \"/src/m.cpp\"\n   ");
}

}  // namespace
