// Dtypes: PyTorch's promotion table, 16-bit float conversions (rounding,
// subnormals, inf/NaN), views and conversions across dtypes, devices.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/graph.h"

namespace {

using graph::DType;

TEST(DType, PromotionTableMatchesPyTorch) {
  // torch.promote_types for every pair of our dtypes (symmetric).
  const DType f32 = graph::kFloat32, f64 = graph::kFloat64, f16 = graph::kFloat16, bf16 = graph::kBFloat16,
              i32 = graph::kInt32, i64 = graph::kInt64, b = graph::kBool;
  struct Row { DType a, b, want; };
  const Row rows[] = {
      {f32, f64, f64}, {f32, f16, f32}, {f32, bf16, f32}, {f16, bf16, f32}, {f16, f16, f16},
      {f32, i64, f32}, {f16, i64, f16}, {bf16, i32, bf16}, {i32, i64, i64}, {b, i32, i32},
      {b, f16, f16},   {b, b, b},       {f64, bf16, f64}, {i64, i64, i64},  {i32, f64, f64},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(graph::promote_types(r.a, r.b), r.want) << graph::dtype_name(r.a) << " + " << graph::dtype_name(r.b);
    EXPECT_EQ(graph::promote_types(r.b, r.a), r.want);
  }
  // Wrapped numbers (Python/C++ scalars) only raise the category.
  EXPECT_EQ(graph::promote_with_scalar(i32, f64), f32);
  EXPECT_EQ(graph::promote_with_scalar(f16, f64), f16);
  EXPECT_EQ(graph::promote_with_scalar(b, i64), i64);
  EXPECT_EQ(graph::promote_with_scalar(i32, i64), i32);
  EXPECT_EQ(graph::promote_with_scalar(f32, b), f32);
}

// The names users write (the build's DTYPES list, the plugin's dtypes=):
// PyTorch's attribute names and the IR tokens; LibTorch's C++ aliases are not.
TEST(DType, NamedAsPyTorchOrByToken) {
  const std::pair<const char*, DType> names[] = {
      {"float32", graph::kFloat32}, {"float64", graph::kFloat64}, {"float16", graph::kFloat16},
      {"bfloat16", graph::kBFloat16}, {"int32", graph::kInt32},   {"int64", graph::kInt64},
      {"bool", graph::kBool},         {"f64", graph::kFloat64},    {"bf16", graph::kBFloat16},
      {"i1", graph::kBool}};
  for (const auto& [name, want] : names) {
    DType d = graph::kBool;
    EXPECT_TRUE(graph::dtype_from_name(name, d)) << name;
    EXPECT_EQ(d, want) << name;
  }
  DType d;
  for (const char* bad : {"double", "long", "float8", "", "Float64", "f64 "}) EXPECT_FALSE(graph::dtype_from_name(bad, d)) << bad;
}

TEST(DType, HalfAndBFloat16Conversions) {
  EXPECT_EQ(static_cast<float>(graph::Half(1.0f / 3)), 0.333251953125f);  // nearest binary16
  EXPECT_EQ(static_cast<float>(graph::BFloat16(1.0f / 3)), 0.333984375f);
  EXPECT_EQ(static_cast<float>(graph::Half(65504.0f)), 65504.0f);        // largest finite
  EXPECT_TRUE(std::isinf(static_cast<float>(graph::Half(65520.0f))));   // rounds past it
  EXPECT_EQ(static_cast<float>(graph::Half(5.9604644775390625e-08f)), 5.9604644775390625e-08f);  // smallest subnormal
  EXPECT_EQ(static_cast<float>(graph::Half(2.0f * 5.9604644775390625e-08f)), 2.0f * 5.9604644775390625e-08f);
  EXPECT_EQ(static_cast<float>(graph::Half(1e-9f)), 0.0f);
  EXPECT_EQ(graph::Half(-0.0f).bits, 0x8000);
  EXPECT_TRUE(std::isnan(static_cast<float>(graph::Half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(static_cast<float>(graph::BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(graph::Half(1.0f + 1.0f / 2048)), 1.0f);  // tie rounds to even
  EXPECT_EQ(static_cast<float>(graph::Half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(static_cast<float>(graph::BFloat16(1.0f + 1.0f / 256)), 1.0f);  // tie to even
  // Round trip of every finite half value.
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    graph::Half h;
    h.bits = static_cast<uint16_t>(bits);
    ASSERT_EQ(graph::Half(static_cast<float>(h)).bits, bits);
  }
}

TEST(DType, TensorsOfEveryDtype) {
  for (DType d : graph::kAllDTypes) {
    graph::Tensor t = graph::arange(0, 6).to(d).view({2, 3});
    EXPECT_EQ(t.dtype(), d);
    EXPECT_EQ(graph::element_size(d) * 6, static_cast<size_t>(t.numel()) * graph::element_size(d));
    graph::Tensor back = t.t().contiguous().to(graph::kInt64);
    EXPECT_EQ(back.data_ptr<int64_t>()[1], d == graph::kBool ? 1 : 3) << graph::dtype_name(d);
  }
  EXPECT_EQ(graph::ones({2}, graph::kFloat16).sum().item<float>(), 2.0f);
}

TEST(Device, NoDeviceToCudaThrows) {
  if (graph::cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  graph::Tensor t = graph::ones({2});
  EXPECT_EQ(t.device(), graph::kCPU);
  EXPECT_EQ(t.to(graph::kCPU).data_ptr<float>(), t.data_ptr<float>());
  try {
    t.to(graph::kCUDA);
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos);
  }
}

}  // namespace

namespace {

// As in PyTorch: relu keeps NaN (the comparison alone would give 0).
TEST(SpecialValuesEager, ReluKeepsNaN) {
  graph::Tensor x = graph::tensor({-1.0f, 0.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()});
  graph::Tensor r = graph::relu(x);
  EXPECT_EQ(r.data_ptr<float>()[0], 0.0f);
  EXPECT_EQ(r.data_ptr<float>()[2], 2.0f);
  EXPECT_TRUE(std::isnan(r.data_ptr<float>()[3]));
}

// A floating tensor times a bool mask of its shape (relu's backward) runs in
// one pass: the same bits as the mask converted to 0/1 and multiplied, either
// operand order, with signed zeros, inf and NaN; a strided mask takes the
// generic path. Large enough (2 * 64K elements) to split across threads.
TEST(SpecialValuesEager, MaskProductMatchesConvertedMask) {
  const int64_t n = 1 << 17;
  for (DType dt : {graph::kFloat32, graph::kFloat64}) {
    graph::Tensor x = graph::randn({2, n / 2}, dt) * 3.0;
    graph::Tensor mask = graph::empty({2, n / 2}, graph::kBool);
    for (int64_t i = 0; i < n; ++i) mask.data_ptr<bool>()[i] = (i * 7919) % 3 != 0;
    graph::Tensor special = x.reshape({-1}).slice(0, 0, 4);
    special.copy_(graph::tensor({-0.0, std::numeric_limits<double>::infinity(), -2.5,
                                 std::numeric_limits<double>::quiet_NaN()}).to(dt));
    mask.data_ptr<bool>()[0] = false;  // -0 * 0
    mask.data_ptr<bool>()[1] = false;  // inf * 0: NaN
    const graph::Tensor want = x * mask.to(dt);
    for (const graph::Tensor& got : {x * mask, mask * x, x * mask.t().contiguous().t()}) {
      ASSERT_EQ(got.dtype(), dt);
      ASSERT_EQ(got.sizes(), want.sizes());
      const graph::Tensor g = got.contiguous().to(graph::kFloat64), w = want.to(graph::kFloat64);
      for (int64_t i = 0; i < n; ++i) {
        const double a = g.data_ptr<double>()[i], b = w.data_ptr<double>()[i];
        ASSERT_TRUE((std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)))
            << graph::dtype_name(dt) << " element " << i << ": " << a << " vs " << b;
      }
    }
  }
}

}  // namespace
