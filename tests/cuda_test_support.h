// What the device tests share (cuda_ops_test.cpp, cuda_blas_test.cpp, one
// binary): the fixture that skips without a device, and the comparison with
// the CPU. In a named namespace: gtest wants one fixture type per suite.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

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

// Gradients of sum(f(inputs) * r) for a fixed random r, on the CPU and on the
// device (leaves on the CPU; to(kCUDA)'s backward brings the gradient back).
inline std::vector<Tensor> grads(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> leaves,
                          bool device, const Tensor& r) {
  for (Tensor& t : leaves) t = t.detach().clone().requires_grad_();
  std::vector<Tensor> in;
  for (const Tensor& t : leaves) in.push_back(device ? cuda(t) : t);
  const Tensor out = f(in);
  graph::sum(out * (device ? cuda(r) : r)).backward();
  std::vector<Tensor> gs;
  for (const Tensor& t : leaves) gs.push_back(t.grad());
  return gs;
}

inline void expect_grads_close(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& leaves,
                        const graph::Shape& out_shape, double tol, const std::string& what) {
  const Tensor r = signed_values(out_shape).to(leaves[0].dtype());
  const auto gc = grads(f, leaves, false, r), gg = grads(f, leaves, true, r);
  for (size_t i = 0; i < gc.size(); ++i) expect_close(cuda(gg[i]), gc[i], tol, what + " grad " + std::to_string(i));
}

}  // namespace cuda_test
