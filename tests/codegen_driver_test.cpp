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

}  // namespace
