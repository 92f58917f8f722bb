// The runtime driver of generated fused loops (graph/detail/fused_loop.h),
// with hand-written kernels of the shape codegen writes: out = scale * (sum
// of the inputs). Results are checked against the eager ops; layouts cover
// broadcast (stride 0), transposed and stepped views, more operands than the
// driver keeps inline, and ranges split across cores mid-row.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "graph/detail/fused_loop.h"
#include "graph/graph.h"
#include "graph/parallel.h"

namespace {

using graph::Tensor;
using graph::detail::FusedKernels;

constexpr int kMaxInputs = 24;

struct Scalars {
  int inputs;
  float scale;
};

// Elements each kernel ran, to see which one the driver picked.
std::atomic<int64_t> dense_elements{0}, strided_elements{0};

void dense(int64_t begin, int64_t end, char* const* p, const void* s) {
  dense_elements += end - begin;
  const auto& sc = *static_cast<const Scalars*>(s);
  float* o = reinterpret_cast<float*>(p[0]);
  for (int64_t i = begin; i < end; ++i) {
    float acc = 0;
    for (int k = 0; k < sc.inputs; ++k) acc += reinterpret_cast<const float*>(p[1 + k])[i];
    o[i] = sc.scale * acc;
  }
}

void strided(int64_t n, char* const* p, const int64_t* st, const void* s) {
  strided_elements += n;
  const auto& sc = *static_cast<const Scalars*>(s);
  float* o = reinterpret_cast<float*>(p[0]);
  for (int64_t i = 0; i < n; ++i) {
    float acc = 0;
    for (int k = 0; k < sc.inputs; ++k) acc += reinterpret_cast<const float*>(p[1 + k])[i * st[1 + k]];
    o[i * st[0]] = sc.scale * acc;
  }
}

const graph::DType kTypes[kMaxInputs + 1] = {
    graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32,
    graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32,
    graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32,
    graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32,
    graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32, graph::DType::Float32};

// Runs the fused sum over `shape` (outputs first), and returns the output.
Tensor fused_sum(const graph::Shape& shape, const std::vector<Tensor>& inputs, float scale) {
  const Scalars sc{static_cast<int>(inputs.size()), scale};
  const FusedKernels k{&dense, &strided, &sc, kTypes};
  Tensor out = graph::empty(shape);
  std::vector<const Tensor*> operands{&out};
  for (const Tensor& t : inputs) operands.push_back(&t);
  // The driver takes an initializer_list, as generated code passes one: the
  // two operand counts the tests use.
  switch (operands.size()) {
    case 4:
      graph::detail::run_fused_strided(k, shape, {operands[0], operands[1], operands[2], operands[3]});
      break;
    default: {
      // 21 operands: more than the driver's inline storage.
      const auto& o = operands;
      graph::detail::run_fused_strided(
          k, shape, {o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8], o[9], o[10], o[11], o[12], o[13], o[14], o[15],
                     o[16], o[17], o[18], o[19], o[20]});
    }
  }
  return out;
}

Tensor eager_sum(const std::vector<Tensor>& inputs, float scale) {
  Tensor acc = inputs[0];
  for (size_t k = 1; k < inputs.size(); ++k) acc = graph::add(acc, inputs[k]);
  return graph::mul(acc, static_cast<double>(scale));
}

void expect_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const Tensor g = got.contiguous(), w = want.contiguous();
  const float* a = g.data_ptr<float>();
  const float* b = w.data_ptr<float>();
  for (int64_t i = 0; i < g.numel(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1 + std::abs(b[i]))) << "element " << i;
}

TEST(FusedLoop, BroadcastTransposedAndSteppedOperands) {
  graph::manual_seed(3);
  const Tensor a = graph::randn({4, 5});
  const Tensor row = graph::randn({5});                      // broadcast along dim 0
  const Tensor col = graph::randn({4, 1});                   // stride 0 innermost
  const Tensor t = graph::randn({5, 4}).t();                 // transposed
  const std::vector<Tensor> in{a, row, col};
  expect_equal(fused_sum({4, 5}, in, 0.5f), eager_sum(in, 0.5f));
  const Tensor stepped = graph::randn({4, 10}).slice(1, 0, 10, 2);
  expect_equal(fused_sum({4, 5}, {t, stepped, col}, 2.0f), eager_sum({t, stepped, col}, 2.0f));
  // All contiguous: one dense run.
  expect_equal(fused_sum({4, 5}, {a, a, a}, 1.0f), eager_sum({a, a, a}, 1.0f));
}

// Rows of 16 or more where an input is one value per row (stride 0, as
// `x * x.sum(1, true)`) go to the dense (vectorized) kernel, that input
// spread along the row; shorter rows and other strides keep the strided one.
TEST(FusedLoop, ValuesBroadcastAlongLongRowsTakeTheDenseKernel) {
  graph::manual_seed(6);
  for (int64_t row : {16, 40, 8}) {
    SCOPED_TRACE("row " + std::to_string(row));
    const Tensor a = graph::randn({6, row}), col = graph::randn({6, 1}), other = graph::randn({6, 1}) * 3;
    dense_elements = strided_elements = 0;
    const std::vector<Tensor> in{col, a, other};
    expect_equal(fused_sum({6, row}, in, 0.5f), eager_sum(in, 0.5f));
    EXPECT_EQ(dense_elements.load(), row >= 16 ? 6 * row : 0);
    EXPECT_EQ(strided_elements.load(), row >= 16 ? 0 : 6 * row);
  }
  // A transposed input in the row: strided.
  const Tensor t = graph::randn({20, 3}).t(), col = graph::randn({3, 1});
  dense_elements = strided_elements = 0;
  expect_equal(fused_sum({3, 20}, {t, col, t}, 1.0f), eager_sum({t, col, t}, 1.0f));
  EXPECT_EQ(strided_elements.load(), 60);
}

TEST(FusedLoop, MoreOperandsThanKeptInline) {
  graph::manual_seed(4);
  std::vector<Tensor> in;
  for (int k = 0; k < 20; ++k) {
    if (k % 3 == 0) in.push_back(graph::randn({3, 1, 6}));
    else if (k % 3 == 1) in.push_back(graph::randn({6, 7, 3}).permute({2, 1, 0}));
    else in.push_back(graph::randn({7, 6}));
  }
  expect_equal(fused_sum({3, 7, 6}, in, 0.25f), eager_sum(in, 0.25f));
}

TEST(FusedLoop, RangesSplitAcrossCoresMidRow) {
  // Enough elements for several chunks of kElementwiseGrain, rows that do
  // not divide them, and a transposed operand so every run is strided.
  graph::manual_seed(5);
  const Tensor a = graph::randn({257, 301}).t();
  const Tensor b = graph::randn({301, 1});
  const Tensor c = graph::randn({301, 257});
  ASSERT_GT(a.numel(), 2 * graph::cpu::kElementwiseGrain);
  expect_equal(fused_sum({301, 257}, {a, b, c}, 1.5f), eager_sum({a, b, c}, 1.5f));
}

TEST(FusedLoop, EmptyShapeRunsNothing) {
  const Tensor a = graph::zeros({0, 3}), b = graph::zeros({3});
  EXPECT_EQ(fused_sum({0, 3}, {a, b, a}, 1.0f).numel(), 0);
}

TEST(FusedLoop, RefusesAnotherDtypeAndShapesThatDoNotBroadcast) {
  const Tensor f = graph::zeros({2, 3});
  const Tensor d = graph::zeros({2, 3}, graph::DType::Float64);
  try {
    fused_sum({2, 3}, {f, d, f}, 1.0f);
    FAIL() << "a float64 operand was read as float32";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("data_ptr: tensor is"), std::string::npos) << e.what();
  }
  try {
    fused_sum({2, 3}, {f, graph::zeros({4}), f}, 1.0f);
    FAIL() << "shape [4] was broadcast to [2, 3]";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be broadcast to [2, 3]"), std::string::npos) << e.what();
  }
}

}  // namespace
