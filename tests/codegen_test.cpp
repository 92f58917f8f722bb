// Tests of the optimizing back half: infer_types and fuse_elementwise as IR
// text in -> IR text out, the FusionGroup verifier rules, and end to end the
// graphs of tests/codegen_cases/*.graph, which graph-codegen turned into C++
// at build time and which are linked into this test: each is called through
// the registry, exactly as a [[graph::static]] prologue would, and compared
// with the same computation written with the eager API. The CUDA source is in
// codegen_cuda_test.cpp, library-backed kernels (GEMM, reductions, slices,
// conv, autocast) in codegen_kernels_test.cpp.
#include "codegen_test_support.h"

namespace {

using namespace codegen_test;

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

// Ops whose eager kernels refuse integral inputs (the table's Floating rule)
// and an attention of mixed dtypes are type errors naming the op and line, so
// a run-time dtype specialization is refused and the eager body says why.
TEST(InferTypes, FloatingOnlyOpsAndMixedAttentionAreRefused) {
  auto error_of = [](const std::string& text) -> std::string {
    auto g = ir::parse(text);
    try {
      ir::infer_types(*g);
    } catch (const graph::Error& e) {
      return e.what();
    }
    return "no error";
  };
  for (const char* op : {"mean", "softmax{dim=0}", "log_softmax{dim=0}", "dropout{p=0.5, training=true}"}) {
    const std::string text = std::string("graph g(%x : i64[3]) {\n  %y : Tensor = ") + op + "(%x)\n  return (%y)\n}\n";
    EXPECT_NE(error_of(text).find("expected a floating input, got i64"), std::string::npos) << op << ": " << error_of(text);
  }
  EXPECT_NE(error_of(R"(graph g(%x : i1[2, 4], %w : f32[3, 4]) {
  %y : Tensor = linear(%x, %w, %w)
  return (%y)
}
)").find("'linear'"),
            std::string::npos);
  const std::string mixed = error_of(R"(graph g(%q : f32[2, 3], %k : f64[2, 3]) {
  %m : Tensor = undefined()
  %y : Tensor = scaled_dot_product_attention(%q, %k, %k, %m)
  return (%y)
}
)");
  EXPECT_NE(mixed.find("operands have different dtypes: f32 and f64"), std::string::npos) << mixed;
  // Floating inputs, and a float32 mean after an integral one is converted, still type.
  EXPECT_EQ(infer(R"(graph g(%x : i64[3], %q : f64[2, 3]) {
  %f : Tensor = to{dtype="f32"}(%x)
  %m : Tensor = mean(%f)
  %u : Tensor = undefined()
  %a : Tensor = scaled_dot_product_attention(%q, %q, %q, %u)
  return (%m, %a)
}
)"),
            R"(graph g(%x : i64[3], %q : f64[2, 3]) {
  %f : f32[3] = to{dtype="f32"}(%x)
  %m : f32[] = mean(%f)
  %u : Tensor = undefined()
  %a : f64[2, 3] = scaled_dot_product_attention(%q, %q, %q, %u)
  return (%m, %a)
}
)");
}

// A 0-d tensor takes part in promotion only when of a higher category, as
// in the eager kernels and PyTorch (fuzz finding K9): f32 [3] - f64 0-d is
// f32. With an operand of unknown rank (an input `f32`) and differing dtypes
// the dtype is left unknown, so the node runs as the eager call.
TEST(InferTypes, ZeroDimOperandsPromoteAsEager) {
  EXPECT_EQ(infer(R"(graph g(%a : f32[3], %d : f64[], %i : i64[3], %b : i1[3], %k : i32[], %u : f32, %e : f32[]) {
  %x : Tensor = sub(%a, %d)
  %y : Tensor = add(%i, %d)
  %z : Tensor = mul(%b, %k)
  %w : Tensor = add(%d, %e)
  %v : Tensor = add(%u, %d)
  %t : Tensor = add(%u, %a)
  return (%x, %y, %z, %w, %v, %t)
}
)"),
            R"(graph g(%a : f32[3], %d : f64[], %i : i64[3], %b : i1[3], %k : i32[], %u : f32, %e : f32[]) {
  %x : f32[3] = sub(%a, %d)
  %y : f64[3] = add(%i, %d)
  %z : i32[3] = mul(%b, %k)
  %w : f64[] = add(%d, %e)
  %v : Tensor = add(%u, %d)
  %t : f32 = add(%u, %a)
  return (%x, %y, %z, %w, %v, %t)
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
        const std::vector<IValue> out = call("one_loop", {x, y}, 2);
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
    const std::vector<IValue> out = call("cg_strip_mined", {x, b, s}, 3);
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
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*g, "_Z5stripv", "h", "m.cpp:1")}, "m.cpp");
  EXPECT_NE(src.find("// Strip-mined: 3 expensive ops"), std::string::npos) << src;
  // One loop per expensive op, the cheap ops before the first in a loop of their own.
  EXPECT_NE(src.find("// mul, add (strip.cpp:2, 3)"), std::string::npos) << src;
  EXPECT_NE(src.find("// tanh, gt (strip.cpp:4, 5)"), std::string::npos) << src;
  EXPECT_NE(src.find("// exp, mul, sub (strip.cpp:6, 7, 8)"), std::string::npos) << src;
  EXPECT_NE(src.find("// div, neg (strip.cpp:9, 10)"), std::string::npos) << src;
  EXPECT_NE(src.find("alignas(64) int32_t t_m[256];"), std::string::npos) << src;
  EXPECT_NE(src.find("GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static void avx512("), std::string::npos) << src;
  EXPECT_NE(src.find("::graph::cpu::pick_isa(kernel_0_entries.baseline, kernel_0_entries.avx2, kernel_0_entries.avx512)"),
            std::string::npos);
  EXPECT_NE(src.find("const ::graph::detail::FusedEntries kernel_0_entries{&kernel_0::baseline, &kernel_0::avx2, "
                     "&kernel_0::avx512, &kernel_0::strided};"),
            std::string::npos);
}

TEST(Generated, OneExpensiveOpKeepsOneLoop) {
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  // chain8 has four expensive ops (tanh, sigmoid, exp, div): strip-mined.
  EXPECT_NE(
      graph::codegen::generate_cpu_source({graph_unit(*g, "_Z5chainv", "h", "m.cpp:1")}, "m.cpp").find("Strip-mined"),
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
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*one, "_Z3onev", "h", "m.cpp:1")}, "m.cpp");
  EXPECT_EQ(src.find("Strip-mined"), std::string::npos) << src;
  EXPECT_EQ(count_of(src, "GRAPH_DENSE_LOOP  //"), 1u) << src;
}

TEST(Generated, GuardsRefuseWithAReason) {
  auto* g = graph::detail::find_graph("cg_chain8", "test-hash");
  ASSERT_NE(g, nullptr);
  std::string why;
  IValue out[1];
  std::vector<IValue> in = {graph::zeros({2, 4}, graph::kInt64), values({4}, 1), 0.5};
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

// The registration points to the table the generated guards read: interpret
// mode checks a call with it and says what the generated function says.
TEST(Generated, RegistrationCarriesTheGuardsSignature) {
  auto* g = graph::detail::find_graph("cg_chain8", "test-hash");
  ASSERT_NE(g, nullptr);
  ASSERT_NE(g->signature, nullptr);
  EXPECT_STREQ(g->signature[0].name, "x");
  EXPECT_EQ(g->signature[2].kind, graph::ir::InputKind::Float);
  IValue out[1];
  for (std::vector<IValue> in : {std::vector<IValue>{graph::zeros({2, 4}, graph::kInt64), values({4}, 1), 0.5},
                                 std::vector<IValue>{values({2, 4}, 1), values({4}, 1), int64_t{2}},
                                 std::vector<IValue>{values({2, 3}, 1), values({4}, 1), 0.5}}) {
    std::string by_fn, by_table;
    EXPECT_FALSE(g->fn(in.data(), in.size(), out, &by_fn));
    EXPECT_FALSE(graph::detail::check_inputs(g->signature, g->num_inputs, in.data(), in.size(), &by_table));
    EXPECT_EQ(by_fn, by_table);
  }
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

// A fused loop is one struct per distinct loop in a generated source: the
// same ops on the same dtypes under other value names (as a forward and its
// forward for autograd spell them) reuse it; another op makes a new one.
// The plugin's build writes a source's CPU code as two units: the fused
// loops, which include one light header, in a namespace of their own, and the
// graph functions, which see only the loops' host-value structs and entry
// tables. A fused reduction's producer (its run is called by the reduction)
// stays with the graph functions.
TEST(Generated, FusedLoopsGoToAUnitOfTheirOwn) {
  const auto graphs = codegen_case("reduce_nest.graph");
  ir::fuse_groups(*graphs[0]);
  const std::vector<graph::codegen::GraphUnit> units{graph_unit(*graphs[0], "m", "h", "red.cpp:1")};
  const std::string one = graph::codegen::generate_cpu_source(units, "red.cpp");
  const graph::codegen::CpuSources two = graph::codegen::generate_cpu_sources(units, "red.cpp", "loops_ns");
  const std::string& loops = two.loops;
  const std::string& fns = two.functions;

  EXPECT_EQ(count_of(loops, "#include"), 2u) << loops;
  EXPECT_NE(loops.find("#include <graph/detail/loop_support.h>"), std::string::npos);
  EXPECT_NE(loops.find("namespace loops_ns {"), std::string::npos);
  // Every dense loop of the one-unit source, defined in the loops' unit only.
  const size_t dense = count_of(one, "const ::graph::detail::FusedEntries kernel_");
  ASSERT_GE(dense, 1u) << one;
  EXPECT_EQ(count_of(loops, "const ::graph::detail::FusedEntries kernel_"), 2 * dense) << loops;  // extern + definition
  EXPECT_EQ(count_of(loops, "static void avx512("), dense);
  EXPECT_EQ(count_of(fns, "static void avx512("), 0u) << fns;
  EXPECT_EQ(count_of(fns, "extern const ::graph::detail::FusedEntries kernel_"), dense);
  EXPECT_NE(fns.find("using namespace ::loops_ns;"), std::string::npos);
  // The producers: in the functions' unit, as in the one-unit source.
  const size_t producers = count_of(one, "// run: a fused reduction's producer");
  EXPECT_GE(producers, 1u) << one;
  EXPECT_EQ(count_of(fns, "// run: a fused reduction's producer"), producers);
  EXPECT_EQ(count_of(loops, "// run: a fused reduction's producer"), 0u);
  // The loops' host values: one struct, declared alike in both units.
  const size_t scalars = count_of(one, "_scalars { ");
  EXPECT_EQ(count_of(loops, "_scalars { "), scalars);
  EXPECT_EQ(count_of(fns, "_scalars { "), scalars);

  EXPECT_THROW(graph::codegen::generate_cpu_sources(units, "red.cpp", ""), graph::Error);
}

TEST(Generated, SameLoopsShareOneKernelStruct) {
  const auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    return s;
  };
  const auto fused_graph = [](const std::string& text) {
    auto g = ir::parse(text);
    ir::infer_types(*g);
    ir::fuse_elementwise(*g);
    return g;
  };
  std::string renamed = replace_all(replace_all(kChain8, "graph chain(", "graph chain_b("), "%a", "%value");
  renamed = replace_all(replace_all(renamed, "%x", "%input"), "%s", "%scale");
  const std::string other = replace_all(replace_all(kChain8, "graph chain(", "graph chain_c("), "tanh(", "sin(");
  auto a = fused_graph(kChain8), b = fused_graph(renamed), c = fused_graph(other);
  const std::string src = graph::codegen::generate_cpu_source(
      {graph_unit(*a, "_Z1av", "h", "m.cpp:1"), graph_unit(*b, "_Z1bv", "h", "m.cpp:2"),
       graph_unit(*c, "_Z1cv", "h", "m.cpp:3")},
      "m.cpp");
  EXPECT_EQ(count_of(src, "\nstruct kernel_0 {") + count_of(src, "\nstruct kernel_1 {"), 2u) << src;
  EXPECT_EQ(count_of(src, "\nstruct kernel_2"), 0u) << src;
  const size_t fn_b = src.find("bool graph_chain_b("), fn_c = src.find("bool graph_chain_c(");
  ASSERT_NE(fn_b, std::string::npos);
  ASSERT_NE(fn_c, std::string::npos);
  EXPECT_NE(src.find("kernel_0_entries.strided", fn_b), std::string::npos) << "chain_b reuses chain's loop";
  EXPECT_LT(src.find("kernel_0_entries.strided", fn_b), fn_c);
  EXPECT_NE(src.find("kernel_1_entries.strided", fn_c), std::string::npos) << "chain_c's sin makes its own loop";

  // The CUDA kernels likewise: chain_b's key runs chain's launcher.
  const std::string cu = graph::codegen::generate_cuda_source(
      {graph_unit(*a, "_Z1av", "h", "m.cpp:1"), graph_unit(*b, "_Z1bv", "h", "m.cpp:2"),
       graph_unit(*c, "_Z1cv", "h", "m.cpp:3")},
      "m.cpp");
  size_t kernels = 0;
  for (size_t at = cu.find("__global__"); at != std::string::npos; at = cu.find("__global__", at + 1)) ++kernels;
  EXPECT_EQ(kernels, 2u) << cu;
  EXPECT_NE(cu.find("register_graph_chain_b_group0{\"_Z1bv#h/group0\", &launch_graph_chain_group0}"), std::string::npos)
      << cu;
  EXPECT_NE(cu.find("register_graph_chain_c_group0{\"_Z1cv#h/group0\", &launch_graph_chain_c_group0}"), std::string::npos)
      << cu;
}

TEST(Generated, SourceIsReadable) {
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*g, "_Z5chainv", "h", "m.cpp:1")}, "m.cpp");
  EXPECT_NE(src.find("\nGRAPH_GLUE bool graph_chain(const ::graph::IValue* in"), std::string::npos);
  EXPECT_NE(src.find("// fused loop: add, mul, relu, sub, tanh, sigmoid, exp, div (m.cpp:1)"), std::string::npos);
  EXPECT_NE(src.find("::graph::scalar::sigmoid<float>("), std::string::npos);
  // The loops are generated; the runtime drives them (graph/detail/fused_loop.h).
  EXPECT_NE(src.find("static void strided(const int64_t n, char* const* p, const int64_t* st"), std::string::npos);
  EXPECT_NE(src.find("::graph::detail::run_fused_strided(kernel_0_f, shape, {"), std::string::npos) << src;
  // The guards read the graph's signature table, written beside it.
  EXPECT_NE(src.find("constexpr ::graph::detail::InputGuard signature_graph_chain[] = {\n"
                     "    {\"x\", ::graph::ir::InputKind::Tensor, ::graph::DType::Float32, false, 2, "
                     "signature_graph_chain_sizes0},\n"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("if (!::graph::detail::check_inputs(signature_graph_chain, 3, in, n_in, why)) return false;"),
            std::string::npos);
  // The registration points to that table and carries the graph's IR text
  // (both for GRAPH_MODE=interpret), and the build-time answer to whether it
  // may be captured ("": yes), whether it is a static train step (no), and
  // the IR as lowered, for calls with other dtypes ("": none given).
  EXPECT_NE(src.find("{\"_Z5chainv\", \"h\", \"m.cpp:1\", &graph_chain, 3, 1, signature_graph_chain, " +
                     ir::quote(ir::print(*g)) + ", \"\", false, \"\", nullptr, {}}"),
            std::string::npos);
  graph::codegen::GraphUnit blocked = graph_unit(*g, "_Z5chainv", "h", "m.cpp:1");
  blocked.cuda_graph_blocker = "dropout: random numbers";
  blocked.lowered_ir = "graph chain()\n";
  EXPECT_NE(graph::codegen::generate_cpu_source({blocked}, "m.cpp")
                .find(", \"dropout: random numbers\", false, \"graph chain()\\n\", nullptr, {}}"),
            std::string::npos);
}

}  // namespace
