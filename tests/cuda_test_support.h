// What the device tests share (cuda_ops_test.cpp, cuda_blas_test.cpp, one
// binary): the fixture that skips without a device, and the comparison with
// the CPU. In a named namespace: gtest wants one fixture type per suite.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "graph/cuda/cuda.h"
#include "graph/graph.h"

namespace cuda_test {

using graph::Tensor;

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (graph::cuda::device_count(&why) == 0) GTEST_SKIP() << "no CUDA device (" << why << ")";
    graph::manual_seed(7);
  }
};

// |cuda - cpu| <= tol * (1 + |cpu|) elementwise, NaN where NaN; same
// dtype, shape and device placement expected of the result.
inline void expect_close(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.device(), graph::kCUDA) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  ASSERT_EQ(gpu.sizes(), cpu.sizes()) << what;
  const Tensor g = gpu.to(graph::kCPU).to(graph::kFloat64).contiguous();
  const Tensor c = cpu.to(graph::kFloat64).contiguous();
  const double* pg = g.data_ptr<double>();
  const double* pc = c.data_ptr<double>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (std::isnan(pc[i])) {
      EXPECT_TRUE(std::isnan(pg[i])) << what << " [" << i << "]";
    } else if (std::isinf(pc[i])) {
      EXPECT_EQ(pg[i], pc[i]) << what << " [" << i << "]";
    } else {
      EXPECT_LE(std::abs(pg[i] - pc[i]), tol * (1 + std::abs(pc[i])))
          << what << " [" << i << "]: cuda " << pg[i] << ", cpu " << pc[i];
    }
  }
}

inline Tensor cuda(const Tensor& t) { return t.to(graph::kCUDA); }

// Inputs in the domain of every op: positive for log, sqrt, rsqrt and pow.
inline Tensor positive(const graph::Shape& s) { return graph::rand(s) + 0.5; }
inline Tensor signed_values(const graph::Shape& s) { return graph::randn(s) * 3.0; }

}  // namespace cuda_test
