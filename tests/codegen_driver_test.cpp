// graph-codegen's output beside the plugin's: both go through
// codegen::compile_unit, so a graph the CLI generated registers its lowered
// IR (a float64 call runs it specialized) and its gradient (a call that
// requires grad runs the generated backward); a comparison mask in a fused
// loop (the backward's relu'(h)) gives eager's bits in every instruction-set
// variant. The generated sources are tests/codegen_cases/*.graph, linked
// into codegen_test (codegen.cmake).
#include "codegen_test_support.h"
#include "graph/detail/static_autograd.h"
#include "graph/static.h"

namespace {

using namespace codegen_test;

Tensor mask_mul_eager(const Tensor& g, const Tensor& h, double t) {
  using namespace graph;
  return mul(mul(g, gt(h, t)), t);
}

// Its dense loop converts the mask to float through int32_t (so GCC's
// baseline vectorizes it, codegen_vectorized_mask_mul): the same 0 or 1.
TEST(Generated, MaskMulVariantsGiveEagerBits) {
  for_each_isa([](const std::string& isa) {
    for (int64_t n : {1, 3, 17, 129}) {
      Tensor g = values({n, 4}, 21);
      g.data_ptr<float>()[0] = std::nanf("");  // NaN times a 0 mask stays NaN, as eagerly
      const Tensor h = values({n, 4}, 22);
      const Tensor want = at_baseline([&] { return mask_mul_eager(g, h, 0.25); });
      expect_bitwise(tensor_out(call("cg_mask_mul", {g, h, 0.25}, 1), 0), want, isa + ", rows=" + std::to_string(n));
    }
  });
}

std::string case_text(const std::string& file) {
  std::ifstream in(std::string(CXXGRAPH_CODEGEN_CASES) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GraphCodegen, RegistersTheLoweredIr) {
  const auto* g = graph::detail::find_graph("cg_mask_mul", "test-hash");
  ASSERT_NE(g, nullptr);
  ASSERT_NE(g->lowered_ir, nullptr);
  // The graph as the file has it, before any pass (as the plugin registers it).
  EXPECT_EQ(std::string(g->lowered_ir), ir::print(*ir::parse_all(case_text("mask_mul.graph")).at(0)));
}

// float64 fails the compiled code's float32 guard; without the lowered IR
// the call would run the eager body (run() false).
TEST(GraphCodegen, Float64CallRunsTheGraphSpecialized) {
  graph::detail::StaticFunction f("cg_mask_mul", "test-hash");
  const Tensor g = values({5, 4}, 23).to(graph::kFloat64), h = values({5, 4}, 24).to(graph::kFloat64);
  Tensor got;
  ASSERT_TRUE(f.run(got, nullptr, g, h, 0.25));
  EXPECT_EQ(got.dtype(), graph::kFloat64);
  expect_close(got, mask_mul_eager(g, h, 0.25));
}

// The backward graph graph-codegen now writes (ir::compile's gradient):
// relu'(h)'s mask loop again, equal to eager autograd.
TEST(GraphCodegen, GradCallRunsTheGeneratedBackward) {
  const auto* d = graph::detail::find_gradient("cg_mask_mul", "test-hash");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->unsupported, nullptr) << d->unsupported;
  graph::detail::StaticFunction f("cg_mask_mul", "test-hash");
  Tensor g = values({6, 4}, 25).requires_grad_(), h = values({6, 4}, 26);
  Tensor got;
  ASSERT_TRUE(f.run(got, nullptr, g, h, 0.5));
  got.sum().backward();
  Tensor ge = values({6, 4}, 25).requires_grad_();
  mask_mul_eager(ge, h, 0.5).sum().backward();
  expect_close(got, mask_mul_eager(ge, h, 0.5).detach());
  expect_close(g.grad(), ge.grad());
}

// A tensor passed to run() as an rvalue (the prologue passes by-value
// parameters so) is lent to the graph: moved into its inputs, no reference
// count taken, and moved back before run returns, whether the graph ran or a
// guard refused the call and the eager body is to run with it.
TEST(GraphCodegen, LentTensorComesBackAfterTheGraphRan) {
  graph::detail::StaticFunction f("cg_mask_mul", "test-hash");
  Tensor g = values({5, 4}, 31);
  const Tensor h = values({5, 4}, 32), same = g;
  const uint64_t before = graph::detail::graph_calls("cg_mask_mul");
  Tensor got;
  ASSERT_TRUE(f.run(got, nullptr, std::move(g), h, 0.25));
  EXPECT_EQ(graph::detail::graph_calls("cg_mask_mul"), before + 1);
  ASSERT_TRUE(g.defined());
  EXPECT_EQ(g.storage(), same.storage());
  EXPECT_EQ(g.sizes(), same.sizes());
  EXPECT_EQ(g.strides(), same.strides());
  EXPECT_EQ(g.storage().use_count(), 2);  // g and same: the graph kept nothing
  expect_bitwise(got, mask_mul_eager(same, h, 0.25), "lent input");
}

TEST(GraphCodegen, LentTensorComesBackWhenAGuardFails) {
  graph::detail::StaticFunction f("cg_mask_mul", "test-hash");
  Tensor g = values({5, 4}, 33), h = values({5, 4}, 34);
  const Tensor same_g = g, same_h = h;
  const uint64_t before = graph::detail::graph_calls("cg_mask_mul");
  Tensor got;
  // An int where the graph takes a float: check_inputs refuses the call.
  EXPECT_FALSE(f.run(got, nullptr, std::move(g), std::move(h), int64_t{1}));
  EXPECT_EQ(graph::detail::graph_calls("cg_mask_mul"), before);
  EXPECT_FALSE(got.defined());
  ASSERT_TRUE(g.defined() && h.defined());
  EXPECT_EQ(g.storage(), same_g.storage());
  EXPECT_EQ(h.storage(), same_h.storage());
  // An undefined tensor where the graph needs one: refused too, and lent back as it was.
  Tensor none;
  EXPECT_FALSE(f.run(got, nullptr, std::move(g), std::move(none), 0.25));
  EXPECT_EQ(g.storage(), same_g.storage());
  EXPECT_FALSE(none.defined());
}

// The text of a graph that takes no buffer (one eager op) leases none, and
// the local it returns is not const, so it is moved into the outputs; a
// fused loop's graph still leases its buffers.
TEST(GraphCodegen, OneEagerOpLeasesNoBuffersAndMovesItsResult) {
  auto sum = graph::ir::parse("graph one_sum(%a : f32) {\n  %r : f32[] = sum(%a)\n  return (%r)\n}\n");
  auto relu = graph::ir::parse("graph one_relu(%a : f32) {\n  %r : f32 = relu(%a)\n  return (%r)\n}\n");
  graph::ir::infer_types(*sum);
  graph::ir::infer_types(*relu);
  graph::ir::fuse_elementwise(*relu);
  const std::string src = graph::codegen::generate_cpu_source(
      {graph_unit(*sum, "one_sum", "h", "one.cpp:1"), graph_unit(*relu, "one_relu", "h", "one.cpp:2")}, "one.cpp");
  const size_t sum_at = src.find("bool graph_one_sum("), relu_at = src.find("bool graph_one_relu(");
  ASSERT_NE(sum_at, std::string::npos) << src;
  ASSERT_NE(relu_at, std::string::npos) << src;
  const std::string sum_fn = src.substr(sum_at, src.find("\n}\n", sum_at) - sum_at);
  const std::string relu_fn = src.substr(relu_at, src.find("\n}\n", relu_at) - relu_at);
  EXPECT_EQ(count_of(sum_fn, "GraphBuffers::Lease"), 0u) << sum_fn;
  EXPECT_NE(sum_fn.find("    ::graph::Tensor v_r = "), std::string::npos) << sum_fn;
  EXPECT_NE(sum_fn.find("out[0].emplace<::graph::Tensor>(std::move(v_r));"), std::string::npos) << sum_fn;
  EXPECT_EQ(count_of(relu_fn, "GraphBuffers::Lease buffers(buffers_graph_one_relu);"), 1u) << relu_fn;
}

// Each tensor local of the top block dies after the last node that reads it
// (as an eager temporary at the end of its statement), so the caching
// allocator hands its block to the next op while it is still in cache; the
// base of a lazy slice lives as long as the slice, and outputs are moved.
TEST(GraphCodegen, LocalsAreReleasedAfterTheirLastUse) {
  auto g = graph::ir::parse(
      "graph chain(%a : f32, %w : f32) {\n"
      "  %b : Tensor = matmul(%a, %w)\n"
      "  %c : Tensor = matmul(%b, %w)\n"
      "  %s : Tensor = slice{dim=1, start=0, end=2}(%c)\n"
      "  %d : Tensor = matmul(%c, %w)\n"
      "  %r : Tensor = matmul(%s, %d)\n"
      "  return (%r)\n}\n");
  graph::ir::infer_types(*g);
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*g, "chain", "h", "chain.cpp:1")}, "chain.cpp");
  const size_t at = src.find("bool graph_chain(");
  ASSERT_NE(at, std::string::npos) << src;
  const std::string fn = src.substr(at, src.find("\n}\n", at) - at);
  // b: read by c's GEMM only, released right after it; non-const to be reset.
  const size_t b_decl = fn.find("::graph::Tensor v_b = "), c_decl = fn.find("::graph::Tensor v_c = ");
  const size_t b_free = fn.find("v_b = ::graph::Tensor();  // last use");
  ASSERT_NE(b_decl, std::string::npos) << fn;
  ASSERT_GE(b_decl, 6u) << fn;
  ASSERT_NE(b_free, std::string::npos) << fn;
  EXPECT_LT(c_decl, b_free) << fn;
  EXPECT_NE(fn.substr(b_decl - 6, 6), "const ") << fn;
  // d: released after r's GEMM; c: a slice's base, never; r: moved out.
  const size_t d_free = fn.find("v_d = ::graph::Tensor();  // last use");
  ASSERT_NE(d_free, std::string::npos) << fn;
  EXPECT_LT(fn.find("::graph::Tensor v_r = "), d_free) << fn;
  EXPECT_EQ(fn.find("v_c = ::graph::Tensor()"), std::string::npos) << fn;
  EXPECT_EQ(fn.find("v_r = ::graph::Tensor()"), std::string::npos) << fn;
  EXPECT_NE(fn.find("out[0].emplace<::graph::Tensor>(std::move(v_r));"), std::string::npos) << fn;
}

// A fused loop's output released at its last use hands its buffer slot to
// the next loop output of its type: that buffer was just written and read,
// still in cache (eager's caching allocator hands out such a block). Values
// alive at once never share, and the graph's output keeps a slot of its own.
TEST(GraphCodegen, LoopOutputsShareSlotsByLifetime) {
  auto g = graph::ir::parse(
      "graph share(%a : f32, %w : f32) {\n"
      "  %h1 : Tensor = relu(%a)\n"
      "  %m1 : Tensor = matmul(%h1, %w)\n"
      "  %h2 : Tensor = tanh(%m1)\n"
      "  %m2 : Tensor = matmul(%h2, %w)\n"
      "  %h3 : Tensor = sigmoid(%m2)\n"
      "  %m3 : Tensor = matmul(%h3, %h2)\n"
      "  %r : Tensor = relu(%m3)\n"
      "  return (%r)\n}\n");
  graph::ir::infer_types(*g);
  graph::ir::fuse_elementwise(*g);
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*g, "share", "h", "share.cpp:1")}, "share.cpp");
  const size_t at = src.find("bool graph_share(");
  ASSERT_NE(at, std::string::npos) << src;
  const std::string fn = src.substr(at, src.find("\n}\n", at) - at);
  const auto slot_of = [&](const std::string& v) {
    const size_t p = fn.find(v + " = buffers.take(");
    EXPECT_NE(p, std::string::npos) << v << "\n" << fn;
    return p == std::string::npos ? std::string("?") : fn.substr(p + v.size() + 16, fn.find(',', p) - p - v.size() - 16);
  };
  // h1 dies at m1's GEMM: h2 takes its slot. h2 is still read by m3 when h3
  // is written: h3 gets another. r, the output, never shares.
  EXPECT_EQ(slot_of("v_h2"), slot_of("v_h1"));
  EXPECT_NE(slot_of("v_h3"), slot_of("v_h2"));
  EXPECT_NE(slot_of("v_r"), slot_of("v_h1"));
  EXPECT_NE(slot_of("v_r"), slot_of("v_h3"));
  EXPECT_NE(fn.find("v_h1 = ::graph::Tensor();  // last use"), std::string::npos) << fn;
  EXPECT_LT(fn.find("v_h1 = ::graph::Tensor();  // last use"), fn.find("v_h2 = buffers.take(")) << fn;
  EXPECT_EQ(fn.find("v_r = ::graph::Tensor()"), std::string::npos) << fn;
  // The output is written in place: a reference into `out`, never moved.
  EXPECT_NE(fn.find("::graph::Tensor& v_r = out[0].emplace<::graph::Tensor>();"), std::string::npos) << fn;
  EXPECT_EQ(fn.find("std::move(v_r)"), std::string::npos) << fn;
}

}  // namespace
