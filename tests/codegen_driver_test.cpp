// graph-codegen's output: a comparison mask in a fused loop (the backward's
// relu'(h)) gives eager's bits in every instruction-set variant. The generated sources are tests/codegen_cases/*.graph, linked
// into codegen_test (codegen.cmake).
#include "codegen_test_support.h"

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

}  // namespace
