// Tests of the optimizing back half: infer_types and fuse_elementwise as IR
// text in -> IR text out, the FusionGroup verifier rules, and end to end the
// graphs of tests/codegen_cases/*.graph, which graph-codegen turned into C++
// at build time and which are linked into this test: each is called through
// the registry, exactly as a [[graph::static]] prologue would, and compared
// with the same computation written with the eager API.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/codegen/cpp.h"
#include "graph/cpu_isa.h"
#include "graph/parallel.h"
#include "graph/codegen/grad.h"
#include "graph/autocast.h"
#include "graph/detail/conv_stats.h"
#include "graph/detail/generated_support.h"
#include "graph/graph.h"
#include "graph/ir/ir.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"

namespace {

using graph::Tensor;
using graph::detail::Arg;
namespace ir = graph::ir;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

// parse -> infer_types (-> fuse_elementwise) -> print, verifying after each.
std::string infer(const std::string& text) {
  auto g = ir::parse(text);
  ir::infer_types(*g);
  EXPECT_EQ(join(ir::verify(*g)), "");
  return ir::print(*g);
}

std::unique_ptr<ir::Graph> fused(const std::string& text, bool run_infer = true) {
  auto g = ir::parse(text);
  if (run_infer) ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  EXPECT_EQ(join(ir::verify(*g)), "") << ir::print(*g);
  return g;
}

size_t count_ops(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  ir::walk(g.top(), [&](const ir::Node* node) { n += node->op() == op; });
  return n;
}

// ---------------------------------------------------------------------------
// 1. infer_types

TEST(InferTypes, ElementwiseReductionsMatmul) {
  EXPECT_EQ(infer(R"(graph g(%x : Tensor[N, 4], %b : Tensor[4], %m : i1[N, 1], %k : int, %f : float) {
  %a : Tensor = add(%x, %b)
  %c : Tensor = lt(%a, %k)
  %ci : Tensor = mul(%m, %k)
  %cf : Tensor = mul(%m, %f)
  %mb : Tensor = add(%m, %b)
  %s : Tensor = sum(%a)
  %s1 : Tensor = sum{dim=-1, keepdim=true}(%c)
  %s0 : Tensor = mean{dim=0}(%a)
  %t : Tensor = t(%x)
  %mm : Tensor = matmul(%x, %t)
  %d : Tensor = div(%ci, %k)
  return (%c, %ci, %cf, %mb, %s, %s1, %s0, %mm, %d)
}
)"),
            R"(graph g(%x : f32[N, 4], %b : f32[4], %m : i1[N, 1], %k : int, %f : float) {
  %a : f32[N, 4] = add(%x, %b)
  %c : i1[N, 4] = lt(%a, %k)
  %ci : i64[N, 1] = mul(%m, %k)
  %cf : f32[N, 1] = mul(%m, %f)
  %mb : f32[N, 4] = add(%m, %b)
  %s : f32[] = sum(%a)
  %s1 : i64[N, 1] = sum{dim=-1, keepdim=true}(%c)
  %s0 : f32[4] = mean{dim=0}(%a)
  %t : f32[4, N] = t(%x)
  %mm : f32[N, N] = matmul(%x, %t)
  %d : f32[N, 1] = div(%ci, %k)
  return (%c, %ci, %cf, %mb, %s, %s1, %s0, %mm, %d)
}
)");
}

TEST(InferTypes, DefaultDtypeAndUnknownShapes) {
  auto g = ir::parse(R"(graph g(%x : Tensor, %y : i64[?]) {
  %a : Tensor = add(%x, %y)
  return (%a)
}
)");
  ir::infer_types(*g, graph::DType::Int64);
  EXPECT_EQ(ir::print(*g), R"(graph g(%x : i64, %y : i64[?]) {
  %a : i64 = add(%x, %y)
  return (%a)
}
)");
}

TEST(InferTypes, ScalarsFollowCxxArithmetic) {
  EXPECT_EQ(infer(R"(graph g(%i : int, %f : float, %b : bool) {
  %ii : float = add(%i, %i)
  %if : int = mul(%i, %f)
  %bb : bool = add(%b, %b)
  %lt : int = lt(%i, %f)
  %th : int = tanh(%i)
  %dv : float = div(%i, %i)
  %nt : int = logical_not(%b)
  return (%ii, %if, %bb, %lt, %th, %dv, %nt)
}
)"),
            R"(graph g(%i : int, %f : float, %b : bool) {
  %ii : int = add(%i, %i)
  %if : float = mul(%i, %f)
  %bb : int = add(%b, %b)
  %lt : bool = lt(%i, %f)
  %th : float = tanh(%i)
  %dv : int = div(%i, %i)
  %nt : bool = logical_not(%b)
  return (%ii, %if, %bb, %lt, %th, %dv, %nt)
}
)");
}

TEST(InferTypes, IfJoinsBranches) {
  EXPECT_EQ(infer(R"(graph g(%c : bool, %x : Tensor[N], %k : i64[N]) {
  %same : Tensor, %diff : Tensor = If(%c)
    block() {
      %a : Tensor = relu(%x)
      -> (%a, %x)
    }
    block() {
      %b : Tensor = neg(%x)
      -> (%b, %k)
    }
  return (%same, %diff)
}
)"),
            R"(graph g(%c : bool, %x : f32[N], %k : i64[N]) {
  %same : f32[N], %diff : Tensor[N] = If(%c)
    block() {
      %a : f32[N] = relu(%x)
      -> (%a, %x)
    }
    block() {
      %b : f32[N] = neg(%x)
      -> (%b, %k)
    }
  return (%same, %diff)
}
)");
}

TEST(InferTypes, LoopReachesFixedPoint) {
  // %h keeps f32[B, 8]; %m starts as i64 but the body makes it f32: unknown.
  EXPECT_EQ(infer(R"(graph g(%n : int, %h0 : Tensor[B, 8], %m0 : i64[B]) {
  %go : bool = constant{value=true}()
  %h.2 : Tensor, %m.2 : Tensor = Loop(%n, %go, %h0, %m0)
    block(%iter : int, %h : Tensor, %m : Tensor) {
      %hn : Tensor = tanh(%h)
      %half : float = constant{value=0.5}()
      %mn : Tensor = mul(%m, %half)
      -> (%go, %hn, %mn)
    }
  return (%h.2, %m.2)
}
)"),
            R"(graph g(%n : int, %h0 : f32[B, 8], %m0 : i64[B]) {
  %go : bool = constant{value=true}()
  %h.2 : f32[B, 8], %m.2 : Tensor[B] = Loop(%n, %go, %h0, %m0)
    block(%iter : int, %h : f32[B, 8], %m : Tensor[B]) {
      %hn : f32[B, 8] = tanh(%h)
      %half : float = constant{value=0.5}()
      %mn : Tensor[B] = mul(%m, %half)
      -> (%go, %hn, %mn)
    }
  return (%h.2, %m.2)
}
)");
}

// ---------------------------------------------------------------------------
// 2. fuse_elementwise

const std::string kChain8 = R"(graph chain(%x : f32[N, 4], %b : f32[4], %s : float) {
  %a1 : f32[N, 4] = add(%x, %b) @"m.cpp":1:1
  %a2 : f32[N, 4] = mul(%a1, %s)
  %a3 : f32[N, 4] = relu(%a2)
  %a4 : f32[N, 4] = sub(%a3, %x)
  %a5 : f32[N, 4] = tanh(%a4)
  %a6 : f32[N, 4] = sigmoid(%a5)
  %a7 : f32[N, 4] = exp(%a6)
  %a8 : f32[N, 4] = div(%a7, %b)
  return (%a8)
}
)";

TEST(FuseElementwise, ChainBecomesOneGroup) {
  auto g = fused(kChain8);
  ASSERT_EQ(g->top()->nodes().size(), 1u);
  const ir::Node* fg = g->top()->nodes().front().get();
  EXPECT_EQ(fg->op(), "FusionGroup");
  EXPECT_EQ(fg->block(0)->nodes().size(), 8u);
  EXPECT_EQ(fg->inputs().size(), 3u);
  EXPECT_EQ(fg->num_outputs(), 1u);
  EXPECT_EQ(fg->loc().line, 1);
  EXPECT_EQ(ir::fusion_summary(*g), (std::vector<std::string>{"add,mul,relu,sub,tanh,sigmoid,exp,div"}));
  EXPECT_EQ(ir::print(*g), R"(graph chain(%x : f32[N, 4], %b : f32[4], %s : float) {
  %a8 : f32[N, 4] = FusionGroup(%x, %b, %s) @"m.cpp":1:1
    block(%x.0 : f32[N, 4], %b.1 : f32[4], %s.2 : float) {
      %a1 : f32[N, 4] = add(%x.0, %b.1) @"m.cpp":1:1
      %a2 : f32[N, 4] = mul(%a1, %s.2)
      %a3 : f32[N, 4] = relu(%a2)
      %a4 : f32[N, 4] = sub(%a3, %x.0)
      %a5 : f32[N, 4] = tanh(%a4)
      %a6 : f32[N, 4] = sigmoid(%a5)
      %a7 : f32[N, 4] = exp(%a6)
      %a8.3 : f32[N, 4] = div(%a7, %b.1)
      -> (%a8.3)
    }
  return (%a8)
}
)");
  // Idempotent: a second run changes nothing.
  const std::string once = ir::print(*g);
  ir::fuse_elementwise(*g);
  EXPECT_EQ(ir::print(*g), once);
}

TEST(FuseElementwise, UseOutsideSealsGroup) {
  // %b feeds the matmul, so {a, b} is sealed there; %c then cannot join it
  // (that would need the group both before and after the matmul).
  auto g = fused(R"(graph g(%x : f32[4, 4], %y : f32[4, 4], %w : f32[4, 4]) {
  %a : f32[4, 4] = add(%x, %y)
  %b : f32[4, 4] = relu(%a)
  %m : f32[4, 4] = matmul(%b, %w)
  %two : float = constant{value=2.0}()
  %c : f32[4, 4] = mul(%a, %two)
  %d : f32[4, 4] = add(%c, %m)
  return (%d)
}
)");
  EXPECT_EQ(ir::fusion_summary(*g), (std::vector<std::string>{"add,relu", "mul,add"}));
  EXPECT_EQ(ir::print(*g), R"(graph g(%x : f32[4, 4], %y : f32[4, 4], %w : f32[4, 4]) {
  %a : f32[4, 4], %b : f32[4, 4] = FusionGroup(%x, %y)
    block(%x.0 : f32[4, 4], %y.1 : f32[4, 4]) {
      %a.2 : f32[4, 4] = add(%x.0, %y.1)
      %b.3 : f32[4, 4] = relu(%a.2)
      -> (%a.2, %b.3)
    }
  %m : f32[4, 4] = matmul(%b, %w)
  %two : float = constant{value=2.0}()
  %d : f32[4, 4] = FusionGroup(%a, %two, %m)
    block(%a.4 : f32[4, 4], %two.5 : float, %m.6 : f32[4, 4]) {
      %c : f32[4, 4] = mul(%a.4, %two.5)
      %d.7 : f32[4, 4] = add(%c, %m.6)
      -> (%d.7)
    }
  return (%d)
}
)");
}

TEST(FuseElementwise, IndependentGroupsMergeThroughAJoin) {
  auto g = fused(R"(graph g(%x : f32[4], %y : f32[4]) {
  %a : f32[4] = relu(%x)
  %b : f32[4] = neg(%y)
  %c : f32[4] = mul(%a, %b)
  return (%c)
}
)");
  EXPECT_EQ(ir::fusion_summary(*g), (std::vector<std::string>{"relu,neg,mul"}));
}

TEST(FuseElementwise, InsideIfAndLoop) {
  auto g = fused(R"(graph g(%c : bool, %n : int, %x : Tensor[N]) {
  %y : Tensor = If(%c)
    block() {
      %a : Tensor = relu(%x)
      %b : Tensor = neg(%a)
      -> (%b)
    }
    block() {
      -> (%x)
    }
  %go : bool = constant{value=true}()
  %h.2 : Tensor = Loop(%n, %go, %y)
    block(%iter : int, %h : Tensor) {
      %t : Tensor = tanh(%h)
      %u : Tensor = add(%t, %iter)
      -> (%go, %u)
    }
  return (%h.2)
}
)");
  EXPECT_EQ(ir::fusion_summary(*g), (std::vector<std::string>{"relu,neg", "tanh,add"}));
  EXPECT_EQ(g->top()->nodes().size(), 3u);  // If, constant, Loop
}

TEST(FuseElementwise, OuterValueUsedInsideNestedBlockSeals) {
  auto g = fused(R"(graph g(%c : bool, %x : Tensor[N]) {
  %a : Tensor = relu(%x)
  %y : Tensor = If(%c)
    block() {
      -> (%a)
    }
    block() {
      -> (%x)
    }
  %b : Tensor = neg(%a)
  %z : Tensor = add(%b, %y)
  return (%z)
}
)");
  EXPECT_EQ(ir::fusion_summary(*g), (std::vector<std::string>{"relu", "neg,add"}));
}

TEST(FuseElementwise, UnknownDtypesAreNotFused) {
  auto g = fused(R"(graph g(%x : Tensor, %y : Tensor) {
  %a : Tensor = add(%x, %y)
  %b : Tensor = relu(%a)
  return (%b)
}
)", /*run_infer=*/false);
  EXPECT_EQ(count_ops(*g, "FusionGroup"), 0u);
  // Scalar-only arithmetic and bool negation (the eager op rejects it) stay too.
  auto h = fused(R"(graph g(%i : int, %m : i1[4]) {
  %j : int = add(%i, %i)
  %n : Tensor = neg(%m)
  return (%j, %n)
}
)");
  EXPECT_EQ(count_ops(*h, "FusionGroup"), 0u);
}

// ---------------------------------------------------------------------------
// 3. The verifier's FusionGroup rules

TEST(VerifyFusionGroup, RejectsMalformedGroups) {
  auto bad_op = ir::parse(R"(graph g(%x : f32[4, 4]) {
  %y : f32[4, 4] = FusionGroup(%x)
    block(%p : f32[4, 4]) {
      %m : f32[4, 4] = matmul(%p, %p)
      -> (%m)
    }
  return (%y)
}
)");
  auto errors = join(ir::verify(*bad_op));
  EXPECT_NE(errors.find("'matmul' cannot be fused"), std::string::npos) << errors;

  auto bad_params = ir::parse(R"(graph g(%x : f32[4], %s : int) {
  %y : f32[4] = FusionGroup(%x, %s)
    block(%p : f32[4]) {
      %r : f32[4] = relu(%p)
      -> (%r)
    }
  return (%y)
}
)");
  errors = join(ir::verify(*bad_params));
  EXPECT_NE(errors.find("one parameter per input"), std::string::npos) << errors;

  auto reads_outside = ir::parse(R"(graph g(%x : f32[4]) {
  %y : f32[4] = FusionGroup(%x)
    block(%p : f32[4]) {
      %r : f32[4] = add(%p, %x)
      -> (%r)
    }
  return (%y)
}
)");
  errors = join(ir::verify(*reads_outside));
  EXPECT_NE(errors.find("reads a value from outside"), std::string::npos) << errors;
}

// ---------------------------------------------------------------------------
// 4. Generated code, end to end

// Deterministic values in [-2, 2) without a random generator.
Tensor values(const graph::Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.7 * (i + 1) + seed * 1.3) * 2.0);
  return graph::from_vector(v, shape);
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.dtype(), want.dtype());
  const Tensor g = got.to(graph::kFloat32).contiguous(), w = want.to(graph::kFloat32).contiguous();
  const float* pg = g.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_NEAR(pg[i], pw[i], 1e-5) << "element " << i;
}

// Calls the registered graph; fails the test when the guards refuse.
std::vector<Arg> call(const char* mangled, std::vector<Arg> in, size_t n_out) {
  auto* g = graph::detail::find_graph(mangled, "test-hash");
  EXPECT_NE(g, nullptr) << mangled << " is not registered";
  if (!g) return {};
  EXPECT_EQ(g->num_inputs, in.size());
  EXPECT_EQ(g->num_outputs, n_out);
  std::vector<Arg> out(n_out);
  std::string why;
  EXPECT_TRUE(g->fn(in.data(), in.size(), out.data(), &why)) << why;
  return out;
}

Tensor tensor_out(const std::vector<Arg>& out, size_t k) { return std::get<Tensor>(out.at(k)); }

Tensor chain8_eager(const Tensor& x, const Tensor& b, double s) {
  using namespace graph;
  return div(exp(sigmoid(tanh(sub(relu(mul(add(x, b), s)), x)))), b);
}

TEST(Generated, Chain8MatchesEager) {
  const Tensor x = values({5, 4}, 1), b = values({4}, 2);
  expect_close(tensor_out(call("cg_chain8", {x, b, 0.5}, 1), 0), chain8_eager(x, b, 0.5));
}

TEST(Generated, Chain8ContiguousFastPath) {
  // [1, 4] with [4]: after dropping the size-1 dim every operand is dense,
  // so the loop takes the unit-stride path.
  const Tensor x = values({1, 4}, 3), b = values({4}, 4);
  expect_close(tensor_out(call("cg_chain8", {x, b, -1.5}, 1), 0), chain8_eager(x, b, -1.5));
  // Zero rows: an empty result, no element touched.
  const Tensor none = graph::zeros({0, 4});
  expect_close(tensor_out(call("cg_chain8", {none, b, 2.0}, 1), 0), chain8_eager(none, b, 2.0));
}

TEST(Generated, Chain8NonContiguousInputs) {
  const Tensor xt = values({4, 6}, 6).t();                 // [6, 4], transposed
  const Tensor bs = values({8}, 7).slice(0, 0, 8, 2);       // [4], stride 2
  expect_close(tensor_out(call("cg_chain8", {xt, bs, 0.25}, 1), 0), chain8_eager(xt, bs, 0.25));
}

// ---- instruction-set variants and strip-mining (graph/cpu_isa.h,
// fusion_kernel.cpp): results must be the eager ops' bit for bit.

// Same shape, dtype and bits (NaNs included).
void expect_bitwise(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  const uint32_t* pg = static_cast<const uint32_t*>(static_cast<const void*>(g.data_ptr<float>()));
  const uint32_t* pw = static_cast<const uint32_t*>(static_cast<const void*>(w.data_ptr<float>()));
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i)
    if (pg[i] != pw[i]) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << g.data_ptr<float>()[i] << ", eager gives "
                    << w.data_ptr<float>()[i];
    }
}

// Runs `body` once per instruction-set variant this CPU has, then restores
// the best one.
template <class F>
void for_each_isa(F body) {
  const int best = graph::cpu::best_isa();
  for (int isa = graph::cpu::kBaseline; isa <= best; ++isa) {
    ASSERT_EQ(graph::cpu::set_isa(isa), isa);
    ASSERT_EQ(graph::cpu::isa(), isa);
    body(std::string("isa ") + graph::cpu::isa_name(isa));
  }
  graph::cpu::set_isa(best);
}

// f() computed with the baseline variant, the reference every variant must
// match; the variant in use is restored after.
template <class F>
auto at_baseline(F f) {
  const int was = graph::cpu::isa();
  graph::cpu::set_isa(graph::cpu::kBaseline);
  auto r = f();
  graph::cpu::set_isa(was);
  return r;
}

TEST(CpuIsa, SetIsaStaysWithinWhatTheCpuHas) {
  const int best = graph::cpu::best_isa();
  EXPECT_EQ(graph::cpu::set_isa(graph::cpu::kAvx512 + 5), best);
  EXPECT_EQ(graph::cpu::set_isa(-3), graph::cpu::kBaseline);
  EXPECT_EQ(graph::cpu::isa(), graph::cpu::kBaseline);
  EXPECT_STREQ(graph::cpu::isa_name(graph::cpu::kAvx2), "avx2");
  EXPECT_STREQ(graph::cpu::isa_name(graph::cpu::kAvx512), "avx512");
  EXPECT_STREQ(graph::cpu::isa_name(graph::cpu::kBaseline), "baseline");
  graph::cpu::set_isa(best);
}

TEST(Generated, Chain8VariantsGiveEagerBits) {
  // [N, 4] with a [4] bias: dense runs of 4 (all tail on every variant);
  // [1, 4] one dense run; transposed and sliced operands, the strided loop.
  for_each_isa([](const std::string& isa) {
    for (int64_t n : {1, 3, 17, 129}) {
      const Tensor x = values({n, 4}, 11), b = values({4}, 12);
      const Tensor want = at_baseline([&] { return chain8_eager(x, b, 0.75); });
      expect_bitwise(chain8_eager(x, b, 0.75), want, isa + ", eager, rows=" + std::to_string(n));
      expect_bitwise(tensor_out(call("cg_chain8", {x, b, 0.75}, 1), 0), want, isa + ", rows=" + std::to_string(n));
      const Tensor xt = values({4, n}, 14).t();
      const Tensor bs = values({8}, 15).slice(0, 0, 8, 2);
      expect_bitwise(tensor_out(call("cg_chain8", {xt, bs, 1.25}, 1), 0),
                     at_baseline([&] { return chain8_eager(xt, bs, 1.25); }), isa + ", strided rows=" + std::to_string(n));
    }
  });
}

TEST(Generated, OneLoopVariantsGiveEagerBits) {
  // Odd lengths: vector main loops plus scalar tails of every length.
  for_each_isa([](const std::string& isa) {
    for (int64_t n : {1, 3, 7, 15, 17, 31, 33, 63, 65, 127, 1031}) {
      const std::string at = isa + ", n=" + std::to_string(n);
      const auto check = [&](const Tensor& x, const Tensor& y, const std::string& what) {
        const std::vector<Arg> out = call("one_loop", {x, y}, 2);
        // The eager ops, here with the baseline variant and with this one.
        const auto eager = [&] {
          const Tensor a = graph::add(x, y);
          return std::vector<Tensor>{graph::relu(graph::exp(graph::mul(a, x))), a};
        };
        const std::vector<Tensor> want = at_baseline(eager), here = eager();
        for (size_t k = 0; k < 2; ++k) {
          expect_bitwise(tensor_out(out, k), want[k], what + ", output " + std::to_string(k));
          expect_bitwise(here[k], want[k], what + ", eager, output " + std::to_string(k));
        }
      };
      check(values({n}, 16), values({n}, 17), at + ", dense");
      check(values({2, n}, 18), values({n}, 19), at + ", broadcast rows");
      check(values({n, 2}, 20).t(), values({2 * n}, 21).slice(0, 0, 2 * n, 2), at + ", strided");
    }
  });
}

// tests/codegen_cases/strip_mined.graph, op by op.
std::vector<Tensor> strip_mined_eager(const Tensor& x, const Tensor& b, double s) {
  using namespace graph;
  const Tensor a2 = add(mul(x, s), b);
  const Tensor a3 = tanh(a2);
  const Tensor a6 = sub(mul(gt(a3, s), exp(a3)), x);
  return {neg(div(a6, b)), a2, a6};
}

TEST(Generated, StripMinedGroupGivesEagerBits) {
  // Three expensive ops: blocks of 256 with one loop each. Lengths across
  // block boundaries and tails; a broadcast row (dense runs of the kernel),
  // one dense run, and transposed / sliced operands (the strided loop).
  const auto check = [](const Tensor& x, const Tensor& b, double s, const std::string& what) {
    const std::vector<Arg> out = call("cg_strip_mined", {x, b, s}, 3);
    const std::vector<Tensor> want = at_baseline([&] { return strip_mined_eager(x, b, s); });
    for (size_t k = 0; k < 3; ++k) expect_bitwise(tensor_out(out, k), want[k], what + ", output " + std::to_string(k));
  };
  for_each_isa([&](const std::string& isa) {
    for (int64_t n : {1, 5, 255, 256, 257, 511, 1100, 1537}) {
      const std::string at = isa + ", n=" + std::to_string(n);
      check(values({n}, 21), values({n}, 22), 0.3, at + ", dense");
      check(values({3, n}, 23), values({n}, 24), -0.2, at + ", broadcast rows");
      check(values({n, 3}, 25).t(), values({2 * n}, 26).slice(0, 0, 2 * n, 2), 0.1, at + ", strided");
    }
    // b broadcast along the inner dim: inner runs with a stride-0 operand.
    check(values({700, 2}, 27), values({700, 1}, 28), 0.4, isa + ", column broadcast");
  });
}

TEST(Generated, StripMinedSourceSaysSo) {
  std::ifstream in(std::string(CXXGRAPH_CODEGEN_CASES) + "/strip_mined.graph");
  std::stringstream text;
  text << in.rdbuf();
  auto graphs = ir::parse_all(text.str());
  ASSERT_EQ(graphs.size(), 2u);
  auto& g = graphs[0];
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  const std::string src = graph::codegen::generate_cpu_source({{g.get(), "_Z5stripv", "h", "m.cpp:1"}}, "m.cpp");
  EXPECT_NE(src.find("// Strip-mined: 3 expensive ops"), std::string::npos) << src;
  // One loop per expensive op, the cheap ops before the first in a loop of their own.
  EXPECT_NE(src.find("// mul, add (strip.cpp:2, 3)"), std::string::npos) << src;
  EXPECT_NE(src.find("// tanh, gt (strip.cpp:4, 5)"), std::string::npos) << src;
  EXPECT_NE(src.find("// exp, mul, sub (strip.cpp:6, 7, 8)"), std::string::npos) << src;
  EXPECT_NE(src.find("// div, neg (strip.cpp:9, 10)"), std::string::npos) << src;
  EXPECT_NE(src.find("alignas(64) int32_t t_m[256];"), std::string::npos) << src;
  EXPECT_NE(src.find("GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static void avx512("), std::string::npos) << src;
  EXPECT_NE(src.find("::graph::cpu::pick_isa(&kernel::baseline, &kernel::avx2, &kernel::avx512)"), std::string::npos);
}

size_t count_of(const std::string& text, const std::string& what);  // below

TEST(Generated, OneExpensiveOpKeepsOneLoop) {
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  // chain8 has four expensive ops (tanh, sigmoid, exp, div): strip-mined.
  EXPECT_NE(graph::codegen::generate_cpu_source({{g.get(), "_Z5chainv", "h", "m.cpp:1"}}, "m.cpp").find("Strip-mined"),
            std::string::npos);
  auto one = ir::parse(R"(
graph one(%x : Tensor, %y : Tensor) {
  %a : Tensor = add(%x, %y)
  %e : Tensor = exp(%a)
  %r : Tensor = relu(%e)
  return (%r)
}
)");
  ir::infer_types(*one);
  ir::fuse_elementwise(*one);
  const std::string src = graph::codegen::generate_cpu_source({{one.get(), "_Z3onev", "h", "m.cpp:1"}}, "m.cpp");
  EXPECT_EQ(src.find("Strip-mined"), std::string::npos) << src;
  EXPECT_EQ(count_of(src, "GRAPH_DENSE_LOOP  //"), 1u) << src;
}

TEST(Generated, GuardsRefuseWithAReason) {
  auto* g = graph::detail::find_graph("cg_chain8", "test-hash");
  ASSERT_NE(g, nullptr);
  std::string why;
  Arg out[1];
  std::vector<Arg> in = {graph::zeros({2, 4}, graph::kInt64), values({4}, 1), 0.5};
  EXPECT_FALSE(g->fn(in.data(), in.size(), out, &why));
  EXPECT_EQ(why, "input 0 'x': expected a float tensor, got long");
  in = {values({2, 4}, 1), values({4}, 1), int64_t{2}};
  EXPECT_FALSE(g->fn(in.data(), in.size(), out, &why));
  EXPECT_EQ(why, "input 2 's': expected a float, got an int");
  in = {values({2, 3}, 1), values({4}, 1), 0.5};
  EXPECT_FALSE(g->fn(in.data(), in.size(), out, &why));
  EXPECT_NE(why.find("input 0 'x': expected size 4 in dim 1"), std::string::npos) << why;
  EXPECT_EQ(graph::detail::find_graph("cg_chain8", "other-hash"), nullptr);
}

TEST(Generated, IfOnOneElementTensor) {
  const Tensor x = values({7}, 3);
  for (float c : {1.5f, -2.0f}) {
    const Tensor ct = graph::from_vector({c}, {1});
    const Tensor y = c > 0 ? graph::relu(x) : graph::mul(graph::neg(x), ct);
    expect_close(tensor_out(call("cg_if_tensor", {ct, x}, 1), 0), graph::add(y, x));
  }
}

TEST(Generated, LoopCarriesIntAndTensor) {
  const Tensor h0 = values({2, 3}, 4), w = values({3}, 5);
  for (int64_t n : {0, 1, 3}) {
    auto out = call("cg_loop", {n, h0, w}, 2);
    int64_t k = 0;
    Tensor h = h0;
    for (int64_t iter = 0; iter < n; ++iter) {
      ++k;
      h = graph::tanh(graph::add(graph::mul(h, w), iter));
      if (!(k < n)) break;
    }
    EXPECT_EQ(std::get<int64_t>(out[0]), k);
    expect_close(tensor_out(out, 1), h);
  }
}

TEST(Generated, WhileLoopOnTensorCondition) {
  const Tensor x = graph::ones({2, 2});
  Tensor want = x;
  while (static_cast<bool>(graph::lt(graph::sum(want), 100.0))) want = graph::mul(want, 2.0);
  expect_close(tensor_out(call("while_sum", {x}, 1), 0), want);  // 4 * 32 = 128
}

TEST(Generated, ScalarsAndTensorsMix) {
  const Tensor x = values({2, 3}, 8);
  const int64_t a = 3;
  const double f = 0.25;
  auto out = call("cg_scalar_mix", {x, a, f}, 6);
  const int64_t a2 = a * 2;
  const double af = f + a2;
  const Tensor y2 = graph::add(graph::mul(x, af), a2);
  const Tensor mi = graph::add(graph::gt(y2, f), a);
  const Tensor s = graph::sum(mi);
  expect_close(tensor_out(out, 0), graph::mul(y2, s));
  EXPECT_EQ(std::get<int64_t>(out[1]), a2);
  EXPECT_DOUBLE_EQ(std::get<double>(out[2]), af);
  EXPECT_EQ(std::get<bool>(out[3]), a2 < 2);
  expect_close(tensor_out(out, 4), s);
  expect_close(tensor_out(out, 5), mi);
  EXPECT_EQ(tensor_out(out, 5).dtype(), graph::kInt64);
}

TEST(Generated, EscapingSmallerIntermediate) {
  const Tensor x = values({3, 4}, 9);
  for (const Tensor& b : {values({4}, 10), values({3, 4}, 11)}) {
    auto out = call("escape_small", {x, b}, 2);
    expect_close(tensor_out(out, 0), graph::relu(b));  // keeps b's own shape
    expect_close(tensor_out(out, 1), graph::add(graph::relu(b), x));
  }
}

TEST(Generated, SeedModel) {
  const Tensor W = values({3, 5}, 12), X = values({5, 2}, 13);
  for (const Tensor& b : {values({2}, 14), values({3, 1}, 15)}) {
    for (bool flag : {true, false}) {
      const Tensor r = graph::relu(graph::add(graph::matmul(W, X), b));
      const Tensor want = flag ? graph::mul(r, 2.0) : r;
      expect_close(tensor_out(call("cg_seed", {W, X, b, flag}, 1), 0), want);
    }
  }
  // Transposed weights reach the graph as a non-contiguous view.
  const Tensor Wt = values({5, 3}, 16).t();
  const Tensor b = values({2}, 17);
  expect_close(tensor_out(call("cg_seed", {Wt, X, b, false}, 1), 0),
               graph::relu(graph::add(graph::matmul(Wt, X), b)));
}

TEST(Generated, SourceIsReadable) {
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  const std::string src = graph::codegen::generate_cpu_source({{g.get(), "_Z5chainv", "h", "m.cpp:1"}}, "m.cpp");
  EXPECT_NE(src.find("bool graph_chain(const ::graph::detail::Arg* in"), std::string::npos);
  EXPECT_NE(src.find("// fused loop: add, mul, relu, sub, tanh, sigmoid, exp, div (m.cpp:1)"), std::string::npos);
  EXPECT_NE(src.find("::graph::scalar::sigmoid<float>("), std::string::npos);
  EXPECT_NE(src.find("if (loop.unit_stride())"), std::string::npos);
  // The registration carries the graph's IR text too (GRAPH_MODE=interpret).
  EXPECT_NE(src.find("{\"_Z5chainv\", \"h\", \"m.cpp:1\", &graph_chain, 3, 1, " + ir::quote(ir::print(*g)) + ", {}}"),
            std::string::npos);
}

// ---------------------------------------------------------------------------
// The CUDA source: one kernel per elementwise fusion group (text only; the
// builds with nvcc compile these for the examples and cuda_ops_test).

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every graph of tests/codegen_cases/<file>, typed and fused.
std::vector<std::unique_ptr<ir::Graph>> codegen_case(const std::string& file) {
  std::ifstream in(std::string(CXXGRAPH_CODEGEN_CASES) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto graphs = ir::parse_all(text.str());
  for (auto& g : graphs) {
    ir::infer_types(*g);
    ir::fuse_elementwise(*g);
    EXPECT_EQ(join(ir::verify(*g)), "") << ir::print(*g);
  }
  return graphs;
}

// Every (key, kernel) the .cu registers, and every one the .cpp asks for.
std::set<std::pair<std::string, std::string>> registered_keys(const std::string& cu) {
  std::set<std::pair<std::string, std::string>> out;
  const std::regex re("FusedRegistrar register_(\\w+)\\{\"([^\"]+)\"");
  for (std::sregex_iterator it(cu.begin(), cu.end(), re), end; it != end; ++it) out.insert({(*it)[2], (*it)[1]});
  return out;
}
std::set<std::pair<std::string, std::string>> dispatched_keys(const std::string& cpp) {
  std::set<std::pair<std::string, std::string>> out;
  const std::regex re("cuda_fused(?:_reduce)?\\(\"([^\"]+)\", \"(\\w+)\"");
  for (std::sregex_iterator it(cpp.begin(), cpp.end(), re), end; it != end; ++it) out.insert({(*it)[1], (*it)[2]});
  return out;
}

TEST(GeneratedCuda, OneKernelPerGroupWithSourceLines) {
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  ASSERT_EQ(count_ops(*g, "FusionGroup"), 1u);
  const std::vector<graph::codegen::GraphUnit> units{{g.get(), "_Z5chainv", "h", "m.cpp:1"}};
  const std::string cu = graph::codegen::generate_cuda_source(units, "m.cpp");
  EXPECT_EQ(count_of(cu, "__global__"), 1u) << cu;
  // Named after the function and the group; the comment names the ops and lines.
  EXPECT_NE(cu.find("// graph chain (m.cpp:1), group 0: add, mul, relu, sub, tanh, sigmoid, exp, div (m.cpp:1)"),
            std::string::npos)
      << cu;
  EXPECT_NE(cu.find("__global__ void graph_chain_group0(const int64_t numel, const ::graph::cuda::FusedIndex<3> ix, "
                    "const bool vec, float* __restrict__ p0, const float* __restrict__ p1, const float* __restrict__ p2, "
                    "const double s0)"),
            std::string::npos)
      << cu;
  // A grid-stride loop, a dense path (16-byte packs of 4 floats, then the
  // tail) and a strided path, with the same body.
  EXPECT_EQ(count_of(cu, "for (int64_t i = start; i < numel; i += step)"), 1u);
  EXPECT_EQ(count_of(cu, "for (int64_t i = begin + start; i < numel; i += step)"), 1u);
  EXPECT_NE(cu.find("for (int64_t q = start; q < packs; q += step)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("const ::graph::cuda::FusedPack<float, 4> v1 = reinterpret_cast<const "
                    "::graph::cuda::FusedPack<float, 4>*>(p1)[q];"),
            std::string::npos);
  EXPECT_NE(cu.find("v0.v[u] = e_a8;"), std::string::npos);
  EXPECT_NE(cu.find("reinterpret_cast<::graph::cuda::FusedPack<float, 4>*>(p0)[q] = v0;"), std::string::npos);
  EXPECT_NE(cu.find("a.launch.vec > 1,"), std::string::npos);
  EXPECT_NE(cu.find("const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;"), std::string::npos);
  EXPECT_NE(cu.find("if (ix.contiguous)"), std::string::npos);
  EXPECT_NE(cu.find("::graph::cuda::fused_offsets(ix, i, off);"), std::string::npos);
  EXPECT_EQ(count_of(cu, "::graph::scalar::sigmoid<float>("), 3u);
  EXPECT_EQ(count_of(cu, "= ::graph::scalar::mul<float>(e_a1, static_cast<float>(s0));"), 3u) << cu;
  EXPECT_NE(cu.find("p0[i] = e_a8;"), std::string::npos);
  EXPECT_NE(cu.find("p0[off[0]] = e_a8;"), std::string::npos);
  EXPECT_NE(cu.find("const float e_b = p2[off[2]];"), std::string::npos) << cu;
  // The launcher and the registrar under the key the CPU source asks for.
  EXPECT_NE(cu.find("void launch_graph_chain_group0(const ::graph::cuda::FusedArgs& a)"), std::string::npos);
  EXPECT_NE(cu.find("a.scalars[0].f"), std::string::npos);
  EXPECT_NE(cu.find("::graph::cuda::FusedRegistrar register_graph_chain_group0{\"_Z5chainv#h/group0\", "
                    "&launch_graph_chain_group0};"),
            std::string::npos);
  // Light includes only: nvcc stays fast.
  EXPECT_EQ(count_of(cu, "#include"), 3u) << cu;
  EXPECT_EQ(cu.find("graph/graph.h"), std::string::npos);
  const std::string cpp = graph::codegen::generate_cpu_source(units, "m.cpp");
  EXPECT_NE(cpp.find("if (::graph::detail::any_on_cuda({&v_x, &v_b}))"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("::graph::detail::cuda_fused(\"_Z5chainv#h/group0\", \"graph_chain_group0\", shape, "
                     "{::graph::DType::Float32}, {&v_x, &v_b}, {::graph::detail::host_scalar(v_s)}); })"),
            std::string::npos)
      << cpp;
  // Its errors carry the group's first line, as the CPU loop's do.
  EXPECT_NE(cpp.find("at_source(\" (at m.cpp:1:1, graph_chain_group0 in static graph 'chain')\""), std::string::npos)
      << cpp;
}

TEST(GeneratedCuda, GroupsInsideIfAndLoopAreNumberedLikeTheCpuSource) {
  size_t checked = 0;
  for (const char* file : {"if_tensor.graph", "loop.graph", "scalar_mix.graph", "chain8.graph", "matmul_epilogue.graph",
                           "reduce_fused.graph", "views.graph"})
   for (const auto& g : codegen_case(file)) {
    const std::vector<graph::codegen::GraphUnit> units{{g.get(), "mangled", "hash", "x.cpp:1"}};
    const std::string cu = graph::codegen::generate_cuda_source(units, "x.cpp");
    const std::string cpp = graph::codegen::generate_cpu_source(units, "x.cpp");
    const size_t groups = count_ops(*g, "FusionGroup");
    if (groups == 0) continue;
    ++checked;
    // One kernel per group, plus the fused reduce kernel of each reduce group that has one.
    EXPECT_EQ(count_of(cu, "__global__"), groups + count_of(cpp, "::graph::detail::cuda_fused_reduce(")) << file << "\n"
                                                                                                       << cu;
    EXPECT_EQ(count_of(cpp, "::graph::detail::cuda_fused("), groups) << file;
    EXPECT_EQ(registered_keys(cu), dispatched_keys(cpp)) << file;
    for (size_t k = 0; k < groups; ++k) {
      const std::string key = "\"mangled#hash/group" + std::to_string(k) + "\"";
      EXPECT_NE(cu.find("FusedRegistrar register_graph_" + g->name() + "_group" + std::to_string(k) + "{" + key),
                std::string::npos)
          << file << " group " << k << "\n" << cu;
      EXPECT_NE(cpp.find("cuda_fused(" + key), std::string::npos) << file << " group " << k;
    }
    EXPECT_EQ(count_of(cu, "__global__ void graph_" + g->name() + "_group"), groups);
  }
  EXPECT_GE(checked, 6u);
}

// Reduce groups: besides the producers' kernel (the two-step path), one
// fused reduce kernel (producers in registers, block tree, stage 2 for a
// single output) that the CPU function calls through cuda_fused_reduce when
// the inputs are dense device tensors of one shape.
TEST(GeneratedCuda, ReduceGroupsGetOneFusedReduceKernel) {
  const auto graphs = codegen_case("reduce_nest.graph");
  ASSERT_EQ(graphs.size(), 3u);
  ir::fuse_groups(*graphs[0]);
  const ir::Graph& g = *graphs[0];
  ASSERT_EQ(g.name(), "red_f32");
  ASSERT_EQ(count_ops(g, "FusionGroup"), 6u);
  const std::vector<graph::codegen::GraphUnit> units{{&g, "m", "h", "red.cpp:1"}};
  const std::string cu = graph::codegen::generate_cuda_source(units, "red.cpp");
  const std::string cpp = graph::codegen::generate_cpu_source(units, "red.cpp");
  EXPECT_EQ(count_of(cu, "__global__"), 12u) << cu;  // 6 producer kernels + 6 fused reduce kernels
  for (int k = 0; k < 6; ++k) {
    const std::string kernel = "graph_red_f32_reduce" + std::to_string(k);
    const std::string key = "\"m#h/group" + std::to_string(k) + "/reduce\"";
    EXPECT_EQ(count_of(cu, "__global__ void " + kernel + "(const int64_t rows, const int64_t count, const double "
                           "divisor, double* __restrict__ partials, float* __restrict__ p0"),
              1u)
        << kernel << "\n" << cu;
    EXPECT_NE(cu.find("FusedRegistrar register_" + kernel + "{" + key + ", &launch_" + kernel + "}"), std::string::npos)
        << kernel;
    EXPECT_NE(cpp.find("::graph::detail::cuda_fused_reduce(" + key + ", \"" + kernel + "\", "), std::string::npos)
        << kernel << "\n" << cpp;
  }
  // Stage 1 in the generated kernel, stage 2 from graph/cuda/fused.h, per op.
  EXPECT_EQ(count_of(cu, "acc = ::graph::cuda::fused_block_reduce<Op>(acc);"), 6u);
  EXPECT_EQ(count_of(cu, "::graph::cuda::fused_reduce_final<::graph::cuda::FusedSum, float>"), 4u) << cu;
  EXPECT_EQ(count_of(cu, "::graph::cuda::fused_reduce_final<::graph::cuda::FusedMax, float>"), 1u);
  EXPECT_EQ(count_of(cu, "::graph::cuda::fused_reduce_final<::graph::cuda::FusedMin, float>"), 1u);
  EXPECT_EQ(count_of(cu, "const double divisor = static_cast<double>(a.reduce.count);  // mean"), 2u);  // mse, mr
  // The producers in registers: relu(x * y + s) into v, then accumulated.
  const size_t k0 = cu.find("__global__ void graph_red_f32_reduce0(");
  ASSERT_NE(k0, std::string::npos);
  const std::string body = cu.substr(k0, cu.find("void launch_graph_red_f32_reduce0", k0) - k0);
  EXPECT_NE(body.find("::graph::scalar::relu"), std::string::npos) << body;
  EXPECT_NE(body.find("p1[i]"), std::string::npos) << body;
  EXPECT_NE(body.find("acc = Op::combine(acc, static_cast<double>(v));"), std::string::npos) << body;
  // The device path is asked for first, then the CPU loop nest, then the two-step path.
  const size_t dev = cpp.find("::graph::detail::any_on_cuda({&");
  const size_t red = cpp.find("::graph::detail::cuda_fused_reduce(");
  const size_t nest = cpp.find("} else if (::graph::detail::fused_reduction_shape(");
  ASSERT_NE(dev, std::string::npos);
  EXPECT_LT(dev, red);
  EXPECT_LT(red, nest);
  EXPECT_NE(cpp.find("::graph::Device::CUDA))"), std::string::npos);
  EXPECT_NE(cpp.find("::graph::detail::cuda_fused(\"m#h/group0\""), std::string::npos);  // the two-step path's kernel
}

TEST(GeneratedCuda, ForwardAndBackwardOfAutogradGetKernelsToo) {
  auto lowered = ir::parse(kChain8);
  ASSERT_EQ(join(ir::verify(*lowered)), "");
  const graph::codegen::GradientUnit grad = graph::codegen::make_gradient(*lowered);
  ASSERT_EQ(grad.unsupported, "");
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  const std::vector<graph::codegen::GraphUnit> units{{g.get(), "_Z5chainv", "h", "m.cpp:1", &grad}};
  const std::string cu = graph::codegen::generate_cuda_source(units, "m.cpp");
  const std::string cpp = graph::codegen::generate_cpu_source(units, "m.cpp");
  const auto registered = registered_keys(cu);
  EXPECT_EQ(registered, dispatched_keys(cpp)) << cu;
  EXPECT_TRUE(registered.count({"_Z5chainv#h/group0", "graph_chain_group0"}));
  EXPECT_TRUE(registered.count({"_Z5chainv#h/forward/group0", "graph_chain_forward_group0"})) << cu;
  size_t backward = 0;
  for (const auto& [key, kernel] : registered) backward += key.rfind("_Z5chainv#h/backward/group", 0) == 0;
  EXPECT_GE(backward, 1u) << cu;
  EXPECT_NE(cu.find("// graph chain (m.cpp:1), forward for autograd, group 0: "), std::string::npos);
  EXPECT_NE(cu.find("// graph chain (m.cpp:1), backward, group 0"), std::string::npos);
}

TEST(GeneratedCuda, IntAndBoolScalarsAndComparisons) {
  auto graphs = codegen_case("scalar_mix.graph");
  const auto& g = graphs.at(0);
  const std::string cu = graph::codegen::generate_cuda_source({{g.get(), "m", "h", ""}}, "x.cpp");
  // Int scalars reach the kernel as int64_t from FusedScalar::i, floats as
  // double from ::f; the comparison computes in float and gives a bool that
  // the int add widens, as on the CPU.
  EXPECT_NE(cu.find("float* __restrict__ p0, int64_t* __restrict__ p1, const float* __restrict__ p2, "
                    "const double s0, const int64_t s1, const double s2, const int64_t s3)"),
            std::string::npos)
      << cu;
  EXPECT_NE(cu.find("a.scalars[1].i,"), std::string::npos) << cu;
  EXPECT_NE(cu.find("a.scalars[2].f,"), std::string::npos) << cu;
  EXPECT_EQ(count_of(cu, "const bool e_m = ::graph::scalar::gt<float>(e_y2, static_cast<float>(s2));"), 3u);
  EXPECT_EQ(count_of(cu, "::graph::scalar::add<int64_t>(static_cast<int64_t>(e_m), s3);"), 3u);
  // Mixed widths: packs of 16 / 8 = 2 elements of every operand.
  EXPECT_NE(cu.find("::graph::cuda::FusedPack<int64_t, 2>"), std::string::npos) << cu;
  EXPECT_NE(cu.find("::graph::cuda::FusedPack<float, 2>"), std::string::npos) << cu;
}

// A matmul_epilogue group that cuBLASLt's epilogues compute calls one
// cuBLASLt GEMM on the device (match_lt_epilogue); others keep the GEMM and
// the group's kernel, and the source says why.
TEST(GeneratedCuda, CublasLtEpiloguesWhereTheyMatch) {
  auto graphs = codegen_case("matmul_epilogue.graph");
  for (auto& g : graphs) ir::fuse_groups(*g);
  const std::string mlp = graph::codegen::generate_cpu_source({{graphs.at(0).get(), "m", "h", ""}}, "mlp.cpp");
  // linear(x, w1, b1) then relu: RELU_BIAS with linear's bias.
  EXPECT_NE(mlp.find("if (::graph::detail::any_on_cuda({&v_x, &v_w1})) {"), std::string::npos) << mlp;
  EXPECT_NE(mlp.find("// On the CUDA device: one cuBLASLt GEMM with its ReluBias epilogue (no separate kernel)."),
            std::string::npos);
  EXPECT_NE(mlp.find("v_h = at_source(\" (at mlp.cpp:3:12, linear in static graph 'mlp')\", [&] { return "
                     "::graph::detail::cuda_gemm_epilogue(v_x, v_w1, true, v_b1, "
                     "::graph::detail::GemmEpilogue::ReluBias); });"),
            std::string::npos)
      << mlp;
  // matmul, add, tanh: tanh has no epilogue; the kernel path stays.
  EXPECT_NE(mlp.find("// No cuBLASLt epilogue on the device: tanh has no cuBLASLt epilogue here."), std::string::npos);
  EXPECT_EQ(count_of(mlp, "cuda_gemm_epilogue("), 1u);
  EXPECT_EQ(count_of(mlp, "cuda_fused("), 2u);  // both groups keep their kernel for the other paths

  const auto one = [](const char* text) {
    auto g = ir::parse(text);
    ir::infer_types(*g);
    ir::fuse_elementwise(*g);
    ir::fuse_groups(*g);
    EXPECT_EQ(count_ops(*g, "FusionGroup"), 1u) << ir::print(*g);
    return graph::codegen::generate_cpu_source({{g.get(), "m", "h", ""}}, "e.cpp");
  };
  // matmul then add of an input then relu: the added vector is the bias.
  std::string cpp = one(R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %a : Tensor = add(%b, %m)
  %y : Tensor = relu(%a)
  return (%y)
})");
  EXPECT_NE(cpp.find("cuda_gemm_epilogue(v_x, v_w, false, v_b, ::graph::detail::GemmEpilogue::ReluBias)"),
            std::string::npos)
      << cpp;
  cpp = one(R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = add(%m, %b)
  return (%y)
})");
  EXPECT_NE(cpp.find("cuda_gemm_epilogue(v_x, v_w, false, v_b, ::graph::detail::GemmEpilogue::Bias)"),
            std::string::npos);
  cpp = one(R"(graph e(%x : f32[B, 8], %w : f32[8, 4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  return (%y)
})");
  EXPECT_NE(cpp.find("cuda_gemm_epilogue(v_x, v_w, false, ::graph::Tensor(), ::graph::detail::GemmEpilogue::Relu)"),
            std::string::npos);
  // Not matched, each saying why.
  const std::vector<std::pair<const char*, const char*>> refused{
      {R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %a : Tensor = add(%m, %b)
  %y : Tensor = gelu(%a)
  return (%y)
})",
       "gelu: cuBLASLt's GELU epilogue is the tanh approximation, graph::gelu is exact"},
      {R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  %a : Tensor = add(%y, %b)
  return (%a)
})",
       "add has no cuBLASLt epilogue here"},  // relu before the bias
      {R"(graph e(%x : f64[B, 8], %w : f64[8, 4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  return (%y)
})",
       "the GEMM is not float32"},
      {R"(graph e(%x : f32[B, 8], %w : f32[4, 8], %b : f32[4], %c : f32[4]) {
  %m : Tensor = linear(%x, %w, %b)
  %a : Tensor = add(%m, %c)
  return (%a)
})",
       "add has no cuBLASLt epilogue here"},  // a second bias
      {R"(graph e(%x : f32[B, 8], %w : f32[8, 4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  %z : Tensor = relu(%y)
  return (%z)
})",
       "relu has no cuBLASLt epilogue here"}};
  for (const auto& [text, why] : refused) {
    cpp = one(text);
    EXPECT_EQ(cpp.find("cuda_gemm_epilogue("), std::string::npos) << text;
    EXPECT_NE(cpp.find(std::string("// No cuBLASLt epilogue on the device: ") + why + "."), std::string::npos)
        << text << "\n" << cpp;
  }
}

TEST(GeneratedCuda, HalfGroupsAndEmptySourcesSayWhy) {
  auto g = ir::parse(R"(graph h(%x : f16[N], %y : f16[N]) {
  %a : Tensor = add(%x, %y) @"h.cpp":2:3
  %b : Tensor = relu(%a) @"h.cpp":3:3
  return (%b)
})");
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  ASSERT_EQ(count_ops(*g, "FusionGroup"), 1u);
  const std::vector<graph::codegen::GraphUnit> units{{g.get(), "m", "h", ""}};
  const std::string cu = graph::codegen::generate_cuda_source(units, "h.cpp");
  EXPECT_EQ(cu.find("__global__"), std::string::npos) << cu;
  EXPECT_NE(cu.find("// graph h, group 0: add, relu (h.cpp:2, 3)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("// Not generated for CUDA: operand '"), std::string::npos) << cu;
  EXPECT_NE(cu.find("is half, which the generated kernels do not handle"), std::string::npos) << cu;
  EXPECT_EQ(cu.find("#include"), std::string::npos);  // nothing for nvcc to do
  const std::string cpp = graph::codegen::generate_cpu_source(units, "h.cpp");
  EXPECT_EQ(cpp.find("cuda_fused("), std::string::npos);
  EXPECT_NE(cpp.find("// No CUDA kernel for this group: operand '"), std::string::npos);

  // A graph without fusion groups: a comment only.
  auto m = ir::parse(R"(graph mm(%a : f32[N, K], %b : f32[K, M]) {
  %c : Tensor = matmul(%a, %b)
  return (%c)
})");
  ir::infer_types(*m);
  ir::fuse_elementwise(*m);
  const std::string none = graph::codegen::generate_cuda_source({{m.get(), "m", "h", ""}}, "mm.cpp");
  EXPECT_NE(none.find("(no fusion groups here)"), std::string::npos);
  EXPECT_EQ(none.find("#include"), std::string::npos);
}

TEST(Generated, MatmulEpiloguesMatchEager) {
  const Tensor w1 = values({16, 8}, 20), b1 = values({16}, 21), w2 = values({16, 4}, 22), b2 = values({4}, 23);
  for (int64_t batch : {1, 3, 40}) {
    const Tensor x = values({batch, 8}, 24);
    const Tensor want = graph::tanh(graph::add(graph::matmul(graph::relu(graph::linear(x, w1, b1)), w2), b2));
    expect_close(tensor_out(call("cg_matmul_epilogue", {x, w1, b1, w2, b2}, 1), 0), want);
  }
  // A transposed weight is handed to BLAS as such; a strided input goes eager.
  const Tensor x = values({5, 8}, 25);
  const Tensor w1t = values({8, 16}, 26).t();
  expect_close(tensor_out(call("cg_matmul_epilogue", {x, w1t, b1, w2, b2}, 1), 0),
               graph::tanh(graph::add(graph::matmul(graph::relu(graph::linear(x, w1t, b1)), w2), b2)));
  const Tensor xs = values({8, 5}, 27).t();
  expect_close(tensor_out(call("cg_matmul_epilogue", {xs, w1, b1, w2, b2}, 1), 0),
               graph::tanh(graph::add(graph::matmul(graph::relu(graph::linear(xs, w1, b1)), w2), b2)));
}

TEST(Generated, GemmShapeErrorNamesTheLine) {
  // cg_seed's matmul has no static sizes, so the guards pass and the GEMM
  // (through the eager op's checks) reports the mismatch with its line.
  auto* g = graph::detail::find_graph("cg_seed", "test-hash");
  ASSERT_NE(g, nullptr);
  std::vector<Arg> in = {values({3, 5}, 1), values({4, 2}, 2), values({2}, 3), false};
  Arg out[1];
  std::string why;
  try {
    g->fn(in.data(), in.size(), out, &why);
    FAIL() << "expected a graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be multiplied"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at model.cpp:5:14, matmul in static graph 'seed'"), std::string::npos)
        << e.what();
  }
}

// ---- float32 linear layers on packed weights (runtime/src/packed_gemm.cpp) ----

struct MlpParams {
  Tensor w1, b1, w2, b2, w3, b3;
  std::vector<Arg> args(const Tensor& x) const { return {x, w1, b1, w2, b2, w3, b3}; }
};

MlpParams mlp_params(int seed) {
  return {graph::mul(values({128, 96}, seed), 0.1),     values({128}, seed + 1),
          graph::mul(values({128, 128}, seed + 2), 0.1), values({128}, seed + 3),
          graph::mul(values({10, 128}, seed + 4), 0.1),  values({10}, seed + 5)};
}

// linear(relu(linear(relu(linear(x, w1, b1)), w2, b2)), w3, b3) in double,
// by plain loops over the float inputs: the independent reference.
std::vector<double> mlp_reference(const Tensor& x, const MlpParams& p) {
  const auto d = [](const Tensor& t) {
    const Tensor c = t.detach().to(graph::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  const auto layer = [&](const std::vector<double>& in, int64_t rows, const Tensor& w, const Tensor& b, bool relu) {
    const int64_t m = w.size(0), k = w.size(1);
    const std::vector<double> wd = d(w), bd = d(b);
    std::vector<double> out(static_cast<size_t>(rows * m));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = bd[j];
        for (int64_t q = 0; q < k; ++q) s += in[i * k + q] * wd[j * k + q];
        out[i * m + j] = relu ? std::max(s, 0.0) : s;
      }
    return out;
  };
  const int64_t rows = x.size(0);
  return layer(layer(layer(d(x), rows, p.w1, p.b1, true), rows, p.w2, p.b2, true), rows, p.w3, p.b3, false);
}

// Within float32 rounding of sums of ~100 terms of size ~1.
void expect_near_reference(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  const Tensor g = got.contiguous();
  int bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i)
    if (std::fabs(g.data_ptr<float>()[i] - want[i]) > 2e-5 * (1 + std::fabs(want[i])))
      ADD_FAILURE() << what << ": element " << i << " is " << g.data_ptr<float>()[i] << ", want " << want[i], ++bad;
}

Tensor mlp_eager(const Tensor& x, const MlpParams& p) {
  using namespace graph;
  return linear(relu(linear(relu(linear(x, p.w1, p.b1)), p.w2, p.b2)), p.w3, p.b3);
}

// The static graph's result, copied (the graph reuses its output buffer).
Tensor mlp_static(const Tensor& x, const MlpParams& p) {
  return tensor_out(call("cg_packed_mlp", p.args(x), 1), 0).clone();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<size_t>(x.numel()) * sizeof(float)) == 0;
}

TEST(PackedGemm, LinearBiasReluMatchesEagerAndDoubleReference) {
  const MlpParams p = mlp_params(50);
  const Tensor w1t = graph::mul(values({96, 128}, 56), 0.1);  // a transposed weight: w1t.t() is [128, 96]
  for (int64_t batch : {2, 4, 64, 100}) {
    const Tensor x = values({batch, 96}, 60);
    const std::vector<double> want = mlp_reference(x, p);
    const std::string what = "batch " + std::to_string(batch);
    for (int call_no = 0; call_no < 3; ++call_no)  // first use, packing, packed
      expect_near_reference(mlp_static(x, p), want, what + ", call " + std::to_string(call_no));
    expect_near_reference(mlp_eager(x, p), want, what + ", eager");
    // Batch 2: below the primitive's row minimum, dnnl_sgemm as in eager.
    if (batch == 2) {
      EXPECT_TRUE(same_bits(mlp_static(x, p), mlp_eager(x, p)));
    }
    MlpParams q = p;
    q.w1 = w1t.t();
    expect_near_reference(mlp_static(x, q), mlp_reference(x, q), what + ", transposed w1");
  }
}

TEST(PackedGemm, CacheHitsOnUnchangedWeightsWithTheSameBits) {
  graph::detail::clear_packed_gemm_cache();
  const MlpParams p = mlp_params(70);
  const Tensor x = values({64, 96}, 71);
  using graph::detail::packed_gemm_stats;
  const auto s0 = packed_gemm_stats();
  const Tensor first = mlp_static(x, p);  // each weight's first use: read as it is
  const auto s1 = packed_gemm_stats();
  EXPECT_EQ(s1.unpacked - s0.unpacked, 3u);
  EXPECT_EQ(s1.packs - s0.packs, 0u);
  const Tensor second = mlp_static(x, p);  // second use: packed
  const auto s2 = packed_gemm_stats();
  EXPECT_EQ(s2.packs - s1.packs, 3u);
  EXPECT_EQ(s2.hits - s1.hits, 0u);
  const Tensor third = mlp_static(x, p);
  const auto s3 = packed_gemm_stats();
  EXPECT_EQ(s3.hits - s2.hits, 3u);
  EXPECT_EQ(s3.packs - s2.packs, 0u);
  EXPECT_EQ(s3.calls - s0.calls, 9u);
  EXPECT_EQ(s3.entries, 3u);
  // The primitive on the weight as it is and on its packed copy: same sums.
  EXPECT_TRUE(same_bits(first, second));
  EXPECT_TRUE(same_bits(first, third));
}

// Module parameters require grad. A call that records no tape (inference)
// still packs them; only a forward run for a backward (graph_gemm.cpp) gives
// trained weights the eager GEMM.
TEST(PackedGemm, WeightsThatRequireGradArePackedForInference) {
  graph::detail::clear_packed_gemm_cache();
  MlpParams p = mlp_params(75);
  for (Tensor* w : {&p.w1, &p.w2, &p.w3}) w->requires_grad_();
  const Tensor x = values({64, 96}, 76);
  using graph::detail::packed_gemm_stats;
  const auto s0 = packed_gemm_stats();
  for (int i = 0; i < 3; ++i) expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "call " + std::to_string(i));
  const auto s1 = packed_gemm_stats();
  EXPECT_EQ(s1.packs - s0.packs, 3u);
  EXPECT_EQ(s1.hits - s0.hits, 3u);
}

TEST(PackedGemm, InPlaceWeightUpdatesArePackedAgain) {
  MlpParams p = mlp_params(80);
  const Tensor x = values({64, 96}, 81);
  for (int i = 0; i < 3; ++i) mlp_static(x, p);  // all three weights packed
  using graph::detail::packed_gemm_stats;

  // add_ on a weight: a new version, so no stale packed copy is used.
  p.w2.add_(graph::mul(values({128, 128}, 82), 0.05));
  auto s0 = packed_gemm_stats();
  expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "after add_");
  auto s1 = packed_gemm_stats();
  EXPECT_EQ(s1.hits - s0.hits, 2u);  // w1 and w3
  EXPECT_EQ(s1.unpacked - s0.unpacked, 1u);  // w2 at its new version
  EXPECT_TRUE(same_bits(mlp_static(x, p), mlp_static(x, p)));  // packs w2, then hits

  // An optimizer step on w1 (gradient from the eager MLP).
  p.w1.requires_grad_();
  graph::optim::SGD opt({p.w1}, {.lr = 0.05});
  graph::sum(mlp_eager(x, p)).backward();
  opt.step();
  p.w1 = p.w1.detach();
  s0 = packed_gemm_stats();
  const Tensor after_step = mlp_static(x, p);
  s1 = packed_gemm_stats();
  expect_near_reference(after_step, mlp_reference(x, p), "after an SGD step");
  expect_near_reference(mlp_eager(x, p), mlp_reference(x, p), "eager after an SGD step");
  EXPECT_EQ(s1.unpacked - s0.unpacked, 1u);

  // A new weight tensor in place of a dropped one (its storage may reuse
  // the dropped one's memory and even its address).
  p.w3 = Tensor();
  p.w3 = graph::mul(values({10, 128}, 83), 0.1);
  expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "a new w3");
  expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "a new w3, packed");
}

TEST(PackedGemm, GraphBufferReusedAsWeightIsPackedAgain) {
  // A graph output handed back as a weight lives in one of the graph's kept
  // buffers: once dropped, the next call overwrites that same storage. Its
  // version moves (GraphBuffers::take), so its old packed copy is not used.
  const MlpParams pa = mlp_params(90);
  MlpParams producer = pa;
  producer.w3 = graph::mul(values({128, 128}, 91), 0.1);  // output [10, 128]
  producer.b3 = values({128}, 92);
  MlpParams consumer = mlp_params(93);
  const Tensor x = values({64, 96}, 94);
  std::vector<Arg> out = call("cg_packed_mlp", producer.args(values({10, 96}, 95)), 1);
  consumer.w3 = tensor_out(out, 0);
  {
    const void* kept = consumer.w3.storage().get();
    for (int i = 0; i < 3; ++i) expect_near_reference(mlp_static(x, consumer), mlp_reference(x, consumer), "w3 = out");
    consumer.w3 = Tensor();
    out.clear();
    out = call("cg_packed_mlp", producer.args(values({10, 96}, 96)), 1);  // new values, same kept buffer
    consumer.w3 = tensor_out(out, 0);
    EXPECT_EQ(consumer.w3.storage().get(), kept) << "the graph did not reuse its buffer: the case is not exercised";
  }
  expect_near_reference(mlp_static(x, consumer), mlp_reference(x, consumer), "w3 = the next out");
}

TEST(PackedGemm, BadShapesThrowWithTheSourceLine) {
  MlpParams p = mlp_params(100);
  p.w2 = values({128, 100}, 101);  // in_features 100, but h1 has 128
  auto* g = graph::detail::find_graph("cg_packed_mlp", "test-hash");
  ASSERT_NE(g, nullptr);
  const std::vector<Arg> in = p.args(values({64, 96}, 102));
  Arg out[1];
  std::string why;
  try {
    g->fn(in.data(), in.size(), out, &why);
    FAIL() << "expected a graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear: input features 128 do not match weight in_features 100"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("at mlp.cpp:4:12, linear in static graph 'packed_mlp'"), std::string::npos)
        << e.what();
  }
}

// The LSTM-style cell written with the eager API.
std::pair<Tensor, Tensor> lstm_eager(const Tensor& x, Tensor h, Tensor c, const std::vector<Tensor>& w, const Tensor& b,
                                     int64_t steps) {
  using namespace graph;
  for (int64_t t = 0; t < steps; ++t) {
    const Tensor xh = add(x, h);
    const Tensor i = sigmoid(linear(xh, w[0], b)), f = sigmoid(linear(xh, w[1], b));
    const Tensor g = tanh(linear(xh, w[2], b)), o = sigmoid(linear(xh, w[3], b));
    c = add(mul(f, c), mul(i, g));
    h = mul(o, tanh(c));
  }
  return {h, c};
}

TEST(Generated, LstmLoopMatchesEager) {
  const Tensor x = values({1, 8}, 30), h0 = values({1, 8}, 31), c0 = values({1, 8}, 32), b = values({8}, 33);
  std::vector<Tensor> w;
  for (int k = 0; k < 4; ++k) w.push_back(graph::mul(values({8, 8}, 34 + k), 0.3));
  for (int64_t steps : {0, 1, 7}) {
    auto out = call("lstm", {x, h0, c0, w[0], w[1], w[2], w[3], b, steps}, 2);
    const auto [h, c] = lstm_eager(x, h0, c0, w, b, steps);
    expect_close(tensor_out(out, 0), h);
    expect_close(tensor_out(out, 1), c);
  }
}

TEST(Generated, ReductionsOfFusedLoops) {
  const Tensor x = values({5, 6}, 40), y = values({5, 6}, 41);
  auto out = call("cg_reduce_fused", {x, y}, 3);
  const Tensor d = graph::sub(x, y);
  expect_close(tensor_out(out, 0), graph::sum(graph::mul(d, d), {1}));
  expect_close(tensor_out(out, 1), graph::amax(graph::exp(x), {-1}, true));
  expect_close(tensor_out(out, 2), graph::mean(graph::tanh(y)));
}

// ---- reductions as one loop nest (fused_groups.cpp: fused_reduction) ------

// Values whose float sum depends on the order of the double accumulation:
// mostly in [-2, 2), plus every seventh element a large value (+-1e12 and
// more) that the next seventh cancels, so the rounding at 1e12 shows in a
// small result.
Tensor mixed(const graph::Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(std::sin(0.37 * (i + 1) + seed * 1.3) * 2.0);
    if (i % 7 == 3) v[i] = static_cast<float>(((i / 7) % 2 ? -1e12 : 1e12) * (1 + (i / 14 + seed) % 3));
  }
  return graph::from_vector(v, shape);
}

// Same shape, dtype and bytes (any NaN equals any NaN).
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.to(graph::kFloat64).contiguous(), w = want.to(graph::kFloat64).contiguous();
  const bool f32 = got.dtype() == graph::kFloat32;
  const Tensor gr = got.contiguous(), wr = want.contiguous();
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i) {
    const double a = g.data_ptr<double>()[i], b = w.data_ptr<double>()[i];
    const bool same = (std::isnan(a) && std::isnan(b)) ||
                      (f32 ? std::memcmp(gr.data_ptr<float>() + i, wr.data_ptr<float>() + i, 4) == 0
                           : std::memcmp(gr.data_ptr<double>() + i, wr.data_ptr<double>() + i, 8) == 0);
    if (!same) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", eager gives " << b;
    }
  }
}

// red_f32 of reduce_nest.graph, op by op.
std::vector<Tensor> red_f32_eager(const Tensor& x, const Tensor& y, double s) {
  using namespace graph;
  return {sum(relu(add(mul(x, y), s)), {-1}),       mean(mul(sub(x, y), sub(x, y))),
          amax(mul(x, s), {0, -1}, true),           amin(neg(y), {-1}, false),
          mean(abs(x), {-1}, true),                 sum(add(x, y))};
}

const char* const kRedNames[] = {"sum rows", "mean all", "amax [0, -1]", "amin rows", "mean rows keepdim", "sum all"};

std::vector<Tensor> red_f32_static(const Tensor& x, const Tensor& y, double s) {
  auto out = call("cg_reduce_nest", {x, y, s}, 6);
  std::vector<Tensor> r;
  for (size_t k = 0; k < out.size(); ++k) r.push_back(tensor_out(out, k));
  return r;
}

// Sizes around the lanes (16), the blocks (256) and the chunks (64K).
const std::vector<graph::Shape> kRedShapes = {{1, 1},   {3, 15},    {2, 16},     {4, 17},   {1, 255},
                                              {2, 256}, {3, 257},   {1, 65535},  {1, 65536}, {2, 65537},
                                              {1, 3 * 65536 + 5},   {64, 2048},  {2, 3, 5}, {3, 4, 70}};

TEST(GeneratedReduce, OneLoopNestMatchesEagerBitwise) {
  for (const auto& shape : kRedShapes) {
    const Tensor x = mixed(shape, 1), y = mixed(shape, 2);
    const auto got = red_f32_static(x, y, 0.5), want = red_f32_eager(x, y, 0.5);
    for (size_t k = 0; k < want.size(); ++k)
      expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + " of " + graph::shape_str(shape));
  }
}

TEST(GeneratedReduce, EveryIsaGivesTheSameBits) {
  const Tensor x = mixed({3, 1000}, 3), y = mixed({3, 1000}, 4);
  const auto want = red_f32_eager(x, y, -1.25);
  for_each_isa([&](const std::string& isa) {
    const auto got = red_f32_static(x, y, -1.25);
    for (size_t k = 0; k < want.size(); ++k) expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + ", " + isa);
  });
}

TEST(GeneratedReduce, DoubleMatchesEagerBitwise) {
  for (const graph::Shape& shape : std::vector<graph::Shape>{{1, 17}, {3, 257}, {1, 65537}, {2, 3, 33}}) {
    const Tensor x = mixed(shape, 5).to(graph::kFloat64), y = mixed(shape, 6).to(graph::kFloat64);
    auto out = call("red_f64", {x, y}, 4);
    using namespace graph;
    const std::string at = " of " + shape_str(shape);
    expect_same_bits(tensor_out(out, 0), sum(mul(x, y), {-1}), "sum rows" + at);
    expect_same_bits(tensor_out(out, 1), mean(sub(x, y)), "mean all" + at);
    expect_same_bits(tensor_out(out, 2), amax(add(x, y)), "amax all" + at);
    expect_same_bits(tensor_out(out, 3), amin(mul(y, y), {-1}, true), "amin rows keepdim" + at);
  }
}

TEST(GeneratedReduce, AgreesWithAnIndependentReference) {
  // sum(x + y) and the row sums against long double sums of the float
  // values; amax/amin against a plain scan.
  const graph::Shape shape{3, 65537};
  const Tensor x = values(shape, 7), y = values(shape, 8);
  const auto got = red_f32_static(x, y, 0.5);
  const float* px = x.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  long double all = 0, mag = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float t = px[i] + py[i];
    all += t;
    mag += std::fabs(t);
  }
  EXPECT_NEAR(got[5].item<float>(), static_cast<double>(all), 1e-6 * static_cast<double>(mag));
  for (int64_t r = 0; r < 3; ++r) {
    long double s = 0, m = 0;
    float lo = INFINITY;
    for (int64_t j = 0; j < 65537; ++j) {
      const int64_t i = r * 65537 + j;
      const float t = std::max(px[i] * py[i] + 0.5f, 0.0f);
      s += t;
      m += t;
      lo = std::min(lo, -py[i]);
    }
    EXPECT_NEAR(got[0].data_ptr<float>()[r], static_cast<double>(s), 1e-6 * static_cast<double>(m) + 1e-3) << r;
    EXPECT_EQ(got[3].data_ptr<float>()[r], lo) << r;
  }
  float hi = -INFINITY;
  for (int64_t i = 0; i < x.numel(); ++i) hi = std::max(hi, px[i] * 0.5f);
  EXPECT_EQ(got[2].item<float>(), hi);
}

TEST(GeneratedReduce, NanAndInfinity) {
  for (const graph::Shape& shape : std::vector<graph::Shape>{{2, 17}, {2, 65537}}) {
    std::vector<float> xv(static_cast<size_t>(shape[0] * shape[1]), 0.25f), yv(xv.size(), -1.0f);
    xv[3] = NAN;                          // row 0: NaN
    xv[shape[1] + 5] = INFINITY;          // row 1: +inf
    yv[shape[1] + 9] = -INFINITY;         // row 1: x * y = -inf, relu -> 0; neg(y) = +inf
    const Tensor x = graph::from_vector(xv, shape), y = graph::from_vector(yv, shape);
    const auto got = red_f32_static(x, y, 0.5), want = red_f32_eager(x, y, 0.5);
    for (size_t k = 0; k < want.size(); ++k)
      expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + " of " + graph::shape_str(shape));
    EXPECT_TRUE(std::isnan(got[2].item<float>()));                       // amax propagates the NaN
    EXPECT_TRUE(std::isnan(got[1].item<float>()));                       // so does the mean
    EXPECT_EQ(got[3].data_ptr<float>()[0], 1.0f);                        // amin of -y, row 0
    EXPECT_TRUE(std::isnan(got[4].data_ptr<float>()[0]));                // mean |x| of row 0
    EXPECT_EQ(got[4].data_ptr<float>()[1], INFINITY);                    // row 1 has +inf
  }
}

TEST(GeneratedReduce, OneThreadAndAllThreadsGiveTheSameBits) {
  // A parallel_for inside a chunk runs on its caller alone: the graph called
  // from a chunk is the single-threaded run.
  for (const graph::Shape& shape : std::vector<graph::Shape>{{1, 3 * 65536 + 5}, {64, 2048}}) {
    const Tensor x = mixed(shape, 9), y = mixed(shape, 10);
    const auto many = red_f32_static(x, y, 0.5);
    std::vector<Tensor> one;
    graph::cpu::parallel_for(2, 1, [&](int64_t b, int64_t) {
      if (b == 0) one = red_f32_static(x, y, 0.5);
    });
    if (one.empty()) one = red_f32_static(x, y, 0.5);  // one thread in all: the same run
    for (size_t k = 0; k < many.size(); ++k)
      expect_same_bits(one[k], many[k], std::string(kRedNames[k]) + " of " + graph::shape_str(shape));
    const Tensor eager_one = [&] {
      Tensor r;
      graph::cpu::parallel_for(2, 1, [&](int64_t b, int64_t) {
        if (b == 0) r = graph::sum(x);
      });
      return r.defined() ? r : graph::sum(x);
    }();
    expect_same_bits(eager_one, graph::sum(x), "eager sum of " + graph::shape_str(shape));
  }
}

TEST(GeneratedReduce, FallsBackForBroadcastAndStridedInputs) {
  // A broadcast operand, a transposed one, and dims that are not trailing
  // (amax over [0, -1] of a 3-D input) take the fused loop + eager reduction.
  const Tensor x = mixed({4, 33}, 11), row = mixed({33}, 12), xt = mixed({33, 4}, 13).t();
  auto check = [](const Tensor& a, const Tensor& b, const std::string& what) {
    const auto got = red_f32_static(a, b, 0.5), want = red_f32_eager(a, b, 0.5);
    for (size_t k = 0; k < want.size(); ++k) expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + ", " + what);
  };
  check(x, row, "broadcast");
  check(xt, x, "transposed");
}

TEST(GeneratedReduce, BadDimGivesTheEagerErrorAndLine) {
  std::string msg;
  try {
    call("bad_dim", {mixed({2, 3}, 1)}, 1);
  } catch (const graph::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("sum"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dim"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.cpp:7:30"), std::string::npos) << msg;
  // The same graph on a 3-D input is fine (one loop nest: dim 2 is the last).
  const Tensor x = mixed({2, 3, 4}, 2);
  expect_same_bits(tensor_out(call("bad_dim", {x}, 1), 0), graph::sum(graph::exp(x), {2}), "3-D");
}

TEST(GeneratedReduce, SourceWritesNoIntermediateTensor) {
  auto graphs = codegen_case("reduce_nest.graph");
  ASSERT_EQ(graphs.size(), 3u);
  ir::fuse_groups(*graphs[0]);
  const std::string src = graph::codegen::generate_cpu_source({{graphs[0].get(), "_Z3redv", "h", "m.cpp:1"}}, "m.cpp");
  // Six reductions, each one loop nest with a two-step fallback.
  EXPECT_EQ(count_of(src, "// One loop nest:"), 6u) << src;
  size_t at = 0;
  for (int k = 0; k < 6; ++k) {
    const size_t begin = src.find("// One loop nest:", at);
    ASSERT_NE(begin, std::string::npos);
    const size_t end = src.find("// Broadcast, strided or on the device", begin);
    ASSERT_NE(end, std::string::npos);
    const std::string nest = src.substr(begin, end - begin);
    // Buffers: the result, and the partials of a single slot's chunks; the
    // producers go through a stack block.
    EXPECT_EQ(count_of(nest, "buffers.take("), 2u) << nest;
    EXPECT_NE(nest.find("alignas(64) float block[256];"), std::string::npos) << nest;
    EXPECT_NE(nest.find("::graph::reduce_order::lanes_add<"), std::string::npos) << nest;
    EXPECT_EQ(nest.find("StridedLoop"), std::string::npos) << nest;
    at = end;
  }
  EXPECT_NE(src.find("lanes_add<::graph::reduce_order::Max>"), std::string::npos);
  EXPECT_NE(src.find("lanes_add<::graph::reduce_order::Min>"), std::string::npos);
}

// ---- slices read in place (graph::detail::LazySlice) and the dense fast
// path (every operand dense at one shape): tests/codegen_cases/views.graph.

// x's values with the other memory layout: the same [r, c] tensor, stored
// column-major (strides [1, r]).
Tensor column_major(const Tensor& x) { return x.t().contiguous().t(); }
// A [1, c] row with the same values at stride 2 (a row of a [2, c] column-major tensor).
Tensor strided_row(const Tensor& x) { return graph::cat({x.t(), x.t()}, 1).t().slice(0, 0, 1); }

// cg_views(x, y, w) written with the eager API.
std::vector<Tensor> views_eager(const Tensor& x, const Tensor& y, const Tensor& w) {
  using namespace graph;
  const Tensor a = x.slice(1, 1, 4), b = x.slice(1, 5, 8), c = y.slice(0, 0, -1, 2);
  return {mul(tanh(add(a, b)), c), add(matmul(a, w), a), sum(b), b};
}

TEST(Generated, SlicesReadInPlaceGiveEagerBits) {
  // [1, 9] and [2, 3] bases: every slice is dense at [1, 3], the fast path.
  // [3, 9] bases: the slices skip elements between rows, the strided loop;
  // a column-major base too.
  const Tensor w = values({3, 3}, 52);
  struct Case {
    Tensor x, y;
    std::string what;
  };
  const std::vector<Case> cases = {
      {values({1, 9}, 50), values({2, 3}, 51), "[1, 9] base (dense slices)"},
      {values({3, 9}, 50), values({7, 3}, 51), "[3, 9] base"},
      {column_major(values({3, 9}, 50)), column_major(values({7, 3}, 51)), "column-major base"},
      {strided_row(values({1, 9}, 50)), values({2, 3}, 51), "[1, 9] base at stride 2"},
  };
  for (const Case& k : cases) {
    auto out = call("cg_views", {k.x, k.y, w}, 4);
    const std::vector<Tensor> want = views_eager(k.x, k.y, w);
    expect_bitwise(tensor_out(out, 0), want[0], k.what + ", the elementwise group");
    expect_bitwise(tensor_out(out, 1), want[1], k.what + ", the epilogue re-reading a slice");
    expect_bitwise(tensor_out(out, 2), want[2], k.what + ", a reduction of a slice");
    // A slice returned as it is: a view of x, as the eager slice is.
    const Tensor ret = tensor_out(out, 3);
    expect_bitwise(ret, want[3], k.what + ", the returned slice");
    EXPECT_EQ(ret.storage().get(), k.x.storage().get()) << k.what;
    EXPECT_EQ(ret.storage_offset(), want[3].storage_offset()) << k.what;
    EXPECT_EQ(ret.strides(), want[3].strides()) << k.what;
  }
}

TEST(Generated, DenseFastPathAndStridedLoopGiveTheSameBits) {
  // The same values through both paths of each group: dense slices take the
  // fast path, the same slices of strided bases the strided loop.
  const Tensor x = values({1, 9}, 53), y = values({2, 3}, 54), w = values({3, 3}, 55);
  ASSERT_EQ(strided_row(x).strides()[1], 2);
  auto fast = call("cg_views", {x, y, w}, 4);
  auto strided = call("cg_views", {strided_row(x), column_major(y), w}, 4);
  for (size_t k = 0; k < 3; ++k)
    expect_bitwise(tensor_out(fast, k), tensor_out(strided, k), "output " + std::to_string(k));
}

TEST(Generated, GateSlicesAreReadInPlaceInTheSource) {
  // lstm_gates: the four slices are LazySlices, never Tensor::slice calls in
  // the loop body; the cell update's fast path tests all five operands; the
  // carried tensors are bound by reference and moved at the end of a step.
  auto graphs = codegen_case("views.graph");
  ASSERT_EQ(graphs.size(), 3u);
  const std::string src =
      graph::codegen::generate_cpu_source({{graphs[1].get(), "lstm_gates", "h", "gates.cpp:1"}}, "gates.cpp");
  EXPECT_EQ(count_of(src, "const ::graph::detail::LazySlice v_"), 4u) << src;
  EXPECT_EQ(count_of(src, ".slice("), 0u) << src;
  EXPECT_NE(src.find("if (::graph::detail::operand_dense(v_gi, dense_shape_2) && ::graph::detail::operand_dense(v_gf, "
                     "dense_shape_2) && ::graph::detail::operand_dense(v_gc, dense_shape_2) && "
                     "::graph::detail::operand_dense(v_go, dense_shape_2) && ::graph::detail::operand_dense(v_c, "
                     "dense_shape_2))"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("const ::graph::Tensor& v_h = v_h_2;"), std::string::npos) << src;
  EXPECT_NE(src.find("v_h_2 = std::move(v_h_n);"), std::string::npos) << src;
  EXPECT_NE(src.find("v_c_2 = std::move(v_c_n);"), std::string::npos) << src;
}

TEST(Generated, SlicesOfCarriedValuesAndSwappedReturns) {
  const Tensor a = values({9}, 70), b = values({9}, 71);
  for (int64_t n : {0, 1, 3}) {
    auto out = call("views_carried", {a, b, n}, 4);
    // x drops its first element each step; y is the previous x without its last.
    Tensor x = a, y = a;
    for (int64_t k = 0; k < n; ++k) {
      const Tensor s = x.slice(0, 1, 1000), t = x.slice(0, 0, -1);
      x = s;
      y = t;
    }
    const std::string at = std::to_string(n) + " steps";
    expect_bitwise(tensor_out(out, 0), x, "x, " + at);
    expect_bitwise(tensor_out(out, 1), y, "y, " + at);
    expect_bitwise(tensor_out(out, 2), n % 2 ? b : a, "p, " + at);
    expect_bitwise(tensor_out(out, 3), n % 2 ? a : b, "q, " + at);
  }
}

TEST(Generated, BadSliceBoundsThrowWithTheSourceLine) {
  auto* g = graph::detail::find_graph("cg_views", "test-hash");
  ASSERT_NE(g, nullptr);
  // Calls cg_views on `in`; it must throw a graph::Error holding each of `parts`.
  const auto expect_error = [&](std::vector<Arg> in, std::vector<std::string> parts) {
    Arg out[4];
    std::string why;
    try {
      g->fn(in.data(), in.size(), out, &why);
      ADD_FAILURE() << "expected a graph::Error";
    } catch (const graph::Error& e) {
      const std::string msg = e.what();
      for (const std::string& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
  };
  // A 1-D x has no dim 1: Tensor::slice's message plus the slice's line.
  expect_error({values({9}, 56), values({7, 3}, 57), values({3, 3}, 58)},
               {"slice: dim 1 is out of range for a tensor of shape [9]",
                "(at views.cpp:3:16, slice in static graph 'views')"});
  // A 0-d y: the third slice (its own line) refuses it.
  expect_error({values({3, 9}, 56), graph::full({}, 1.0f), values({3, 3}, 58)},
               {"slice: cannot slice a 0-d tensor", "(at views.cpp:5:16, slice in static graph 'views')"});
  // Slices that clamp to different lengths ([3, 3] and [3, 0]): the group's
  // operands do not broadcast, and the op whose shapes disagree says so.
  expect_error({values({3, 5}, 56), values({7, 3}, 57), values({3, 3}, 58)},
               {"(at views.cpp:6:14, add in static graph 'views')"});
}

TEST(Generated, LstmGateSlicesGiveEagerBits) {
  using namespace graph;
  // Odd hidden size: the gates start at offsets 5, 10, 15 of each row. One
  // row: dense gates (the fast path); two rows: the strided loop.
  const int64_t H = 5;
  for (const int64_t B : {1, 2})
  for (int64_t steps : {0, 1, 4}) {
    const Tensor x = values({B, 3}, 60), h0 = values({B, H}, 61), c0 = values({B, H}, 62);
    const Tensor wx = mul(values({3, 4 * H}, 63), 0.5), wh = mul(values({H, 4 * H}, 64), 0.5), b = values({4 * H}, 65);
    auto out = call("lstm_gates", {x, h0, c0, wx, wh, b, steps, H}, 2);
    const Tensor xw = add(matmul(x, wx), b);
    Tensor h = h0, c = c0;
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor g = add(xw, matmul(h, wh));
      const Tensor i = sigmoid(g.slice(1, 0, H)), f = sigmoid(g.slice(1, H, 2 * H));
      const Tensor cc = tanh(g.slice(1, 2 * H, 3 * H)), o = sigmoid(g.slice(1, 3 * H, 4 * H));
      c = add(mul(f, c), mul(i, cc));
      h = mul(o, tanh(c));
    }
    const std::string at = "B=" + std::to_string(B) + ", " + std::to_string(steps) + " steps";
    expect_bitwise(tensor_out(out, 0), h, "h, " + at);
    expect_bitwise(tensor_out(out, 1), c, "c, " + at);
  }
}

// ---------------------------------------------------------------------------
// conv2d epilogues (tests/codegen_cases/conv_relu.graph): conv2d -> relu is one
// oneDNN convolution with a relu post-op; another chain keeps its fused loop.

TEST(ConvEpilogue, SourceFusesReluIntoTheConvolution) {
  auto graphs = codegen_case("conv_relu.graph");
  for (auto& g : graphs) ir::fuse_groups(*g);
  EXPECT_EQ(join(ir::verify(*graphs.at(0))), "");
  EXPECT_EQ(count_ops(*graphs.at(0), "FusionGroup"), 2u) << ir::print(*graphs.at(0));
  const std::string src = graph::codegen::generate_cpu_source({{graphs.at(0).get(), "m", "h", ""}}, "cnn.cpp");
  EXPECT_EQ(count_of(src, "::graph::detail::conv2d_relu(v_x, v_w1, v_b1, "), 1u) << src;
  EXPECT_EQ(count_of(src, "::graph::conv2d("), 1u) << src;  // the second conv2d, then its fused loop
  EXPECT_NE(src.find("matmul epilogue: conv2d, relu"), std::string::npos) << src;
  EXPECT_NE(src.find("matmul epilogue: conv2d, sigmoid, mul"), std::string::npos) << src;
}

TEST(ConvEpilogue, MatchesEagerAndSeesWeightUpdates) {
  const Tensor x = values({2, 4, 9, 8}, 1), b1 = values({6}, 3), w2 = graph::mul(values({4, 3, 3, 3}, 4), 0.2);
  Tensor w1 = graph::mul(values({6, 4, 3, 3}, 2), 0.3);
  const auto eager = [&](const Tensor& w) {
    const Tensor h = graph::relu(graph::conv2d(x, w, b1, {1, 1}, {1, 1}));
    const Tensor c2 = graph::conv2d(h, w2, Tensor(), {2, 2}, {0, 1}, {1, 1}, 2);
    return std::make_pair(h, graph::mul(c2, graph::sigmoid(c2)));
  };
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto s0 = graph::detail::dnnl_conv_stats();
    const std::vector<Arg> out = call("cg_conv_relu", {x, w1, b1, w2}, 2);
    const auto s1 = graph::detail::dnnl_conv_stats();
    EXPECT_EQ(s1.forward - s0.forward, 2u);  // both conv2d ran oneDNN's primitive
    const auto [h, y] = eager(w1);
    expect_close(tensor_out(out, 0), h);
    expect_close(tensor_out(out, 1), y);
    if (round == 1) EXPECT_EQ(s1.weight_reorders - s0.weight_reorders, 0u);  // both weights kept
    if (round == 2) EXPECT_EQ(s1.weight_reorders - s0.weight_reorders, 1u);  // w1 was updated
    if (round == 1) w1.add_(graph::full({6, 4, 3, 3}, 0.05, graph::kFloat32));  // bumps w1's version
  }
}

// ---------------------------------------------------------------------------
// bf16 autocast (graph/autocast.h): generated code calls the runtime's GEMM and
// conv entry points, so a static graph follows the caller's scope like eager
// code does: the same bf16 products (within float32 sums of each other),
// visibly different from the float32 graph.

double max_rel_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(graph::kFloat64).contiguous(), y = b.to(graph::kFloat64).contiguous();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    m = std::max(m, std::fabs(x.data_ptr<double>()[i] - y.data_ptr<double>()[i]) / (1 + std::fabs(y.data_ptr<double>()[i])));
  return m;
}

TEST(Autocast, StaticGraphsFollowTheScope) {
  const MlpParams p = mlp_params(120);
  const Tensor x = values({64, 96}, 121);
  const Tensor f32_static = mlp_static(x, p);
  Tensor static_bf16, eager_bf16;
  {
    graph::AutocastGuard autocast(graph::kBFloat16);
    const auto s0 = graph::detail::autocast_stats();
    static_bf16 = mlp_static(x, p);
    EXPECT_EQ(graph::detail::autocast_stats().gemms - s0.gemms, 3u);  // the three linears
    // The packed linear keeps a bf16 copy of each weight: the next call hits.
    const auto p0 = graph::detail::packed_gemm_stats();
    EXPECT_LT(max_rel_diff(mlp_static(x, p), static_bf16), 1e-7);
    EXPECT_EQ(graph::detail::packed_gemm_stats().hits - p0.hits, 3u);
    eager_bf16 = mlp_eager(x, p);
  }
  EXPECT_EQ(static_bf16.dtype(), graph::kFloat32);
  EXPECT_LT(max_rel_diff(static_bf16, eager_bf16), 1e-5);
  EXPECT_GT(max_rel_diff(static_bf16, f32_static), 1e-3);
  // After the scope: float32 again, and the packed weights still serve it.
  EXPECT_LT(max_rel_diff(mlp_static(x, p), f32_static), 1e-6);

  const Tensor cx = values({2, 4, 9, 8}, 1), w1 = graph::mul(values({6, 4, 3, 3}, 2), 0.3), b1 = values({6}, 3);
  const Tensor w2 = graph::mul(values({4, 3, 3, 3}, 4), 0.2);
  const std::vector<Arg> f32_out = call("cg_conv_relu", {cx, w1, b1, w2}, 2);
  const Tensor f32_h = tensor_out(f32_out, 0).clone();
  graph::AutocastGuard autocast(graph::kBFloat16);
  const auto s0 = graph::detail::autocast_stats();
  const Tensor h = tensor_out(call("cg_conv_relu", {cx, w1, b1, w2}, 2), 0).clone();
  EXPECT_EQ(graph::detail::autocast_stats().convs - s0.convs, 2u);  // the fused conv2d_relu and the plain conv2d
  EXPECT_LT(max_rel_diff(h, graph::relu(graph::conv2d(cx, w1, b1, {1, 1}, {1, 1}))), 1e-5);
  EXPECT_GT(max_rel_diff(h, f32_h), 1e-3);
}

}  // namespace
