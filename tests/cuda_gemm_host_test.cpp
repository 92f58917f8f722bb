// The device matmul's host logic, tested without a GPU: which operands
// cuBLAS reads in place (cuda.h gemm_operand) and the cuBLAS call made of
// them (plan_gemm). A reference of the column-major BLAS contract (as the
// cuBLAS documentation defines gemv, gemm and the strided batched gemm) runs
// each planned call on the CPU over the tensors' own storage and is checked
// against graph::matmul on the CPU: a wrong transpose, leading dimension or
// batch stride shows up as a wrong value.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "graph/cuda/cuda.h"
#include "graph/graph.h"

namespace {

using graph::Shape;
using graph::Tensor;
using graph::cuda::BlasCall;
using graph::cuda::gemm_operand;
using graph::cuda::GemmOperand;
using graph::cuda::plan_gemm;

GemmOperand operand_of(const Shape& sizes, const Shape& strides) {
  EXPECT_EQ(sizes.size(), strides.size());
  return gemm_operand(static_cast<int>(sizes.size()), sizes.data(), strides.data());
}

GemmOperand operand_of(const Tensor& t) { return operand_of(t.sizes(), t.strides()); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const graph::Error& e) {
    return e.what();
  }
  return "";
}

// ---- gemm_operand ------------------------------------------------------------

TEST(CudaGemmOperand, RowMajorMatricesAreReadAsStoredWithTheirRowStride) {
  GemmOperand o = operand_of({4, 3}, {3, 1});
  EXPECT_TRUE(o.in_place);
  EXPECT_FALSE(o.transposed);
  EXPECT_EQ(o.ld, 3);
  EXPECT_EQ(o.batch_stride, 0);
  o = operand_of({4, 2}, {3, 1});  // x[:, :2]: rows 3 apart
  EXPECT_TRUE(o.in_place && !o.transposed);
  EXPECT_EQ(o.ld, 3);
  o = operand_of({1, 5}, {1, 1});  // one row: its row stride is never stepped
  EXPECT_TRUE(o.in_place && !o.transposed);
  EXPECT_EQ(o.ld, 5);
}

TEST(CudaGemmOperand, TransposedViewsAreReadTransposedWithTheirColumnStride) {
  GemmOperand o = operand_of({4, 3}, {1, 4});  // [3, 4].t()
  EXPECT_TRUE(o.in_place);
  EXPECT_TRUE(o.transposed);
  EXPECT_EQ(o.ld, 4);
  o = operand_of({4, 2}, {1, 5});  // [2, 5][:, :4].t()
  EXPECT_TRUE(o.in_place && o.transposed);
  EXPECT_EQ(o.ld, 5);
  o = operand_of({1, 6}, {1, 7});  // one row taken down a column of a [6, 7] matrix
  EXPECT_TRUE(o.in_place && o.transposed);
  EXPECT_EQ(o.ld, 7);
}

TEST(CudaGemmOperand, OtherLayoutsNeedACopy) {
  EXPECT_FALSE(operand_of({4, 3}, {2, 8}).in_place);  // every other row and column
  EXPECT_FALSE(operand_of({4, 3}, {1, 0}).in_place);  // a column expanded across
  EXPECT_FALSE(operand_of({4, 3}, {0, 1}).in_place);  // a row expanded down
  EXPECT_FALSE(operand_of({4, 3}, {1, 2}).in_place);  // columns overlap (ld 2 < 4 rows)
  EXPECT_FALSE(operand_of({4, 3}, {int64_t{1} << 31, 1}).in_place);  // ld beyond cuBLAS's int
  EXPECT_FALSE(operand_of({3}, {1}).in_place);                        // not a matrix
}

TEST(CudaGemmOperand, BatchDimsMustStepByOneStride) {
  GemmOperand o = operand_of({2, 4, 3}, {12, 3, 1});
  EXPECT_TRUE(o.in_place && !o.transposed);
  EXPECT_EQ(o.batch_stride, 12);
  o = operand_of({2, 4, 3}, {12, 1, 4});  // [2, 3, 4].transpose(-1, -2)
  EXPECT_TRUE(o.in_place && o.transposed);
  EXPECT_EQ(o.ld, 4);
  EXPECT_EQ(o.batch_stride, 12);
  o = operand_of({5, 4, 3}, {0, 3, 1});  // one matrix broadcast over the batch
  EXPECT_TRUE(o.in_place);
  EXPECT_EQ(o.batch_stride, 0);
  o = operand_of({2, 3, 4, 5}, {60, 20, 5, 1});  // two batch dims of a dense stack
  EXPECT_TRUE(o.in_place);
  EXPECT_EQ(o.batch_stride, 20);
  o = operand_of({1, 2, 4, 3}, {999, 12, 3, 1});  // size-1 batch dims are never stepped
  EXPECT_TRUE(o.in_place);
  EXPECT_EQ(o.batch_stride, 12);
  EXPECT_FALSE(operand_of({2, 3, 4, 5}, {0, 20, 5, 1}).in_place);   // expanded over a stack: two strides
  EXPECT_FALSE(operand_of({2, 3, 4, 5}, {20, 60, 5, 1}).in_place);  // batch dims permuted
  EXPECT_FALSE(operand_of({2, 4, 3}, {-12, 3, 1}).in_place);
}

// ---- plan_gemm -----------------------------------------------------------------

TEST(CudaGemmPlan, OneRowIsAGemvAndOneProductAClassicGemm) {
  const GemmOperand row{true, false, 64, 0}, w{true, false, 256, 0}, wt{true, true, 64, 0};
  BlasCall c = plan_gemm(row, w, 1, 1, 256, 64);  // [1, 64] @ [64, 256]
  EXPECT_EQ(c.kind, BlasCall::Kind::Gemv);
  EXPECT_FALSE(c.transa);
  EXPECT_EQ(std::vector<int64_t>({c.m, c.n, c.lda, c.incx}), (std::vector<int64_t>{256, 64, 256, 1}));
  c = plan_gemm(row, wt, 1, 1, 256, 64);  // [1, 64] @ W[256, 64].t()
  EXPECT_EQ(c.kind, BlasCall::Kind::Gemv);
  EXPECT_TRUE(c.transa);
  EXPECT_EQ(std::vector<int64_t>({c.m, c.n, c.lda}), (std::vector<int64_t>{64, 256, 64}));
  c = plan_gemm(GemmOperand{true, false, 64, 0}, w, 1, 8, 256, 64);
  EXPECT_EQ(c.kind, BlasCall::Kind::Gemm);
  c = plan_gemm(GemmOperand{true, false, 64, 512}, w, 3, 1, 256, 64);  // one row per batch: still batched
  EXPECT_EQ(c.kind, BlasCall::Kind::StridedBatched);
  EXPECT_EQ(std::vector<int64_t>({c.stride_a, c.stride_b, c.stride_c, c.batch}),
            (std::vector<int64_t>{0, 512, 256, 3}));
}

TEST(CudaGemmPlan, RejectsSizesBeyondIntAndOperandsThatNeedACopy) {
  const GemmOperand ok{true, false, 4, 0};
  EXPECT_NE(error_of([&] { plan_gemm(ok, ok, 1, int64_t{1} << 31, 4, 4); }).find("beyond 2^31 - 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { plan_gemm(ok, ok, int64_t{1} << 31, 4, 4, 4); }).find("beyond 2^31 - 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { plan_gemm(GemmOperand{}, ok, 1, 4, 4, 4); }).find("cannot read"), std::string::npos);
}

// ---- the planned calls, run by a CPU reference of the BLAS contract -----------

// Column-major op(X)(i, j) of a matrix stored with leading dimension ld.
double at(const double* x, bool trans, int64_t ld, int64_t i, int64_t j) {
  return trans ? x[j + i * ld] : x[i + j * ld];
}

// What cuBLAS computes for `c` (alpha 1, beta 0), with its A = pb, B (or x) = pa.
void reference_blas(const BlasCall& c, const double* pa, const double* pb, double* out) {
  if (c.kind == BlasCall::Kind::Gemv) {
    const int64_t rows = c.transa ? c.n : c.m, cols = c.transa ? c.m : c.n;
    for (int64_t i = 0; i < rows; ++i) {
      double s = 0;
      for (int64_t j = 0; j < cols; ++j) s += at(pb, c.transa, c.lda, i, j) * pa[j * c.incx];
      out[i] = s;
    }
    return;
  }
  for (int64_t q = 0; q < c.batch; ++q)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < c.k; ++p)
          s += at(pb + q * c.stride_a, c.transa, c.lda, i, p) * at(pa + q * c.stride_b, c.transb, c.ldb, p, j);
        out[q * c.stride_c + i + j * c.ldc] = s;
      }
}

// a [..., m, k] @ b [..., k, n] (equal batch dims, or a 2-D b) as the device
// matmul plans it, run by the reference; copies where gemm_operand says so.
Tensor planned_matmul(const Tensor& a, const Tensor& b) {
  const auto prepare = [](const Tensor& t, Tensor& keep) {
    keep = t;
    GemmOperand o = operand_of(t);
    if (!o.in_place) o = operand_of(keep = t.contiguous());
    return o;
  };
  Tensor ka, kb;
  const GemmOperand oa = prepare(a, ka), ob = prepare(b, kb);
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape shape = a.sizes();
  shape.back() = n;
  Tensor out = graph::full(shape, -7.0, graph::kFloat64);  // every element must be written
  const int64_t batch = out.numel() / (m * n);
  reference_blas(plan_gemm(oa, ob, batch, m, n, k), ka.data_ptr<double>(), kb.data_ptr<double>(),
                 out.data_ptr<double>());
  return out;
}

void expect_matches_matmul(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor want = graph::matmul(a, b), got = planned_matmul(a, b);
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const double* pw = want.contiguous().data_ptr<double>();
  const double* pg = got.data_ptr<double>();
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(pg[i], pw[i], 1e-12) << what << " at " << i;
}

Tensor values(const Shape& shape) {
  graph::manual_seed(3);
  return graph::randn(shape, graph::kFloat64);
}

TEST(CudaGemmPlan, EveryLayoutComputesTheProduct) {
  const Tensor a = values({5, 7}), b = values({7, 3}) * 2.0;
  expect_matches_matmul(a, b, "plain");
  expect_matches_matmul(values({7, 5}).t(), b, "a transposed");
  expect_matches_matmul(a, values({3, 7}).t(), "b transposed");
  expect_matches_matmul(values({7, 5}).t(), values({3, 7}).t(), "both transposed");
  expect_matches_matmul(values({5, 9}).slice(1, 1, 8), values({7, 6}).slice(1, 2, 5), "column slices");
  expect_matches_matmul(values({9, 5}).slice(0, 1, 8).t(), values({3, 9}).slice(1, 0, 7).t(),
                        "transposed slices");
  expect_matches_matmul(values({10, 14}).slice(0, 0, 10, 2).slice(1, 0, 14, 2), b, "a strided both ways (copied)");
  expect_matches_matmul(values({5}).unsqueeze(1).expand({5, 7}), b, "an expanded a (copied)");
}

TEST(CudaGemmPlan, OneRowProductsTakeGemvInEveryLayout) {
  const Tensor w = values({64, 256});
  expect_matches_matmul(values({1, 64}), w, "row @ [k, n]");
  expect_matches_matmul(values({1, 64}), values({256, 64}).t(), "row @ W.t()");
  expect_matches_matmul(values({64, 3}).slice(1, 1, 2).t(), w, "a column as the row");
  expect_matches_matmul(values({64, 3}).slice(1, 1, 2).t(), values({256, 64}).t(), "a column @ W.t()");
  expect_matches_matmul(values({1, 1}), values({1, 5}), "k = 1");
  expect_matches_matmul(values({1, 5}), values({5, 1}), "n = 1");
}

TEST(CudaGemmPlan, BatchedOperandsWithTransposedLastDims) {
  const Tensor a = values({3, 4, 6}), b = values({3, 6, 5});
  expect_matches_matmul(a, b, "dense stacks");
  expect_matches_matmul(values({3, 6, 4}).transpose(-1, -2), b, "a transposed per batch");
  expect_matches_matmul(a, values({3, 5, 6}).transpose(-1, -2), "b transposed per batch");
  expect_matches_matmul(values({3, 6, 4}).transpose(-1, -2), values({3, 5, 6}).transpose(-1, -2), "both");
  expect_matches_matmul(a, values({6, 5}).unsqueeze(0).expand({3, 6, 5}), "b broadcast over the batch");
  expect_matches_matmul(values({2, 3, 4, 6}), values({2, 3, 6, 5}), "two batch dims");
  expect_matches_matmul(values({3, 2, 4, 6}).transpose(0, 1), values({2, 3, 6, 5}), "batch dims permuted (copied)");
  expect_matches_matmul(values({3, 1, 6}), values({3, 6, 5}), "one row per batch");
}

}  // namespace
