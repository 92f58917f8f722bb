// Every eager op with a CUDA kernel, on the device against the CPU. Skipped
// (GTEST_SKIP) when cudaGetDeviceCount finds no device, as in CI; built in
// every CUDA build so the code stays compiled.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <tuple>
#include <vector>
#include <string>

#include "cuda_test_support.h"
#include "graph/cuda/capture.h"
#include "graph/detail/backward_kernels.h"
#include "graph/cuda/cuda.h"
#include "../runtime/src/device.h"
#include "graph/cuda/fused.h"
#include "graph/graph.h"
#include "graph/static.h"
#include "graph/detail/generated_support.h"

namespace {

using namespace cuda_test;

TEST_F(Cuda, CopiesRoundTripEveryDtype) {
  for (graph::DType d : graph::kAllDTypes) {
    const Tensor x = graph::arange(0, 12).to(d).reshape({3, 4});
    const Tensor back = cuda(x).to(graph::kCPU);
    EXPECT_EQ(back.device(), graph::kCPU);
    expect_close(cuda(x), x, 0, std::string(graph::dtype_name(d)));
    expect_close(cuda(x).t().contiguous(), x.t().contiguous(), 0, "transposed copy");
    expect_close(cuda(x).to(graph::kFloat32), x.to(graph::kFloat32), 0, "dtype conversion on the device");
  }
  EXPECT_EQ(cuda(graph::full({}, 2.5)).item<float>(), 2.5f);
  EXPECT_TRUE(static_cast<bool>(cuda(graph::ones({1}, graph::kBool))));
}

#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                                \
  TEST_F(Cuda, Unary_##name) {                                                                  \
    const Tensor x = std::string(#name) == "logical_not" ? graph::rand({37, 65}) > 0.5          \
                     : graph::DTypeRule::rule == graph::DTypeRule::ToFloat ? positive({37, 65}) \
                                                                           : signed_values({37, 65}); \
    expect_close(graph::name(cuda(x)), graph::name(x), 1e-5, #name " contiguous");              \
    expect_close(graph::name(cuda(x).t()), graph::name(x.t()), 1e-5, #name " transposed");      \
    expect_close(graph::name(cuda(x).reshape({-1}).slice(0, 1, 2405)),                          \
                 graph::name(x.reshape({-1}).slice(0, 1, 2405)), 1e-5, #name " misaligned");    \
  }
#include "graph/ops.def"

#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                         \
  TEST_F(Cuda, Binary_##name) {                                                                   \
    const Tensor a = positive({33, 64}), b = positive({33, 64}), row = positive({64});            \
    expect_close(graph::name(cuda(a), cuda(b)), graph::name(a, b), 1e-5, #name " dense");         \
    expect_close(graph::name(cuda(a), cuda(row)), graph::name(a, row), 1e-5, #name " broadcast"); \
    expect_close(graph::name(cuda(a).t(), cuda(b).t()), graph::name(a.t(), b.t()), 1e-5,          \
                 #name " strided");                                                               \
    expect_close(graph::name(cuda(a), 2.0), graph::name(a, 2.0), 1e-5, #name " tensor-scalar");   \
    expect_close(graph::name(2, cuda(a)), graph::name(2, a), 1e-5, #name " scalar-tensor");       \
    const Tensor ia = graph::arange(1, 41).reshape({5, 8}), ib = graph::arange(3, 43).reshape({5, 8}); \
    expect_close(graph::name(cuda(ia), cuda(ib)), graph::name(ia, ib), 1e-6, #name " int64");     \
  }
#include "graph/ops.def"

TEST_F(Cuda, ReductionsOverDims) {
  const Tensor x = signed_values({6, 7, 300});
  const Tensor ix = graph::arange(0, 42).reshape({6, 7});
  for (const graph::Shape& dims : {graph::Shape{}, graph::Shape{0}, graph::Shape{2}, graph::Shape{0, 2}}) {
    for (bool keep : {false, true}) {
      const std::string what = graph::shape_str(dims) + (keep ? " keepdim" : "");
      if (dims.empty()) {
        expect_close(graph::sum(cuda(x)), graph::sum(x), 1e-4, "sum all");
        expect_close(graph::mean(cuda(x)), graph::mean(x), 1e-4, "mean all");
        expect_close(graph::amax(cuda(x)), graph::amax(x), 0, "amax all");
        expect_close(graph::amin(cuda(x)), graph::amin(x), 0, "amin all");
        continue;
      }
      expect_close(graph::sum(cuda(x), dims, keep), graph::sum(x, dims, keep), 1e-4, "sum " + what);
      expect_close(graph::mean(cuda(x), dims, keep), graph::mean(x, dims, keep), 1e-4, "mean " + what);
      expect_close(graph::amax(cuda(x), dims, keep), graph::amax(x, dims, keep), 0, "amax " + what);
      expect_close(graph::amin(cuda(x), dims, keep), graph::amin(x, dims, keep), 0, "amin " + what);
    }
  }
  expect_close(graph::sum(cuda(ix), graph::Shape{1}, false), graph::sum(ix, graph::Shape{1}, false), 0, "int sum");
  expect_close(graph::sum(cuda(ix > 20)), graph::sum(ix > 20), 0, "bool sum");
  for (int64_t d : {0, 1, 2, -1})
    for (bool keep : {false, true})
      expect_close(graph::argmax(cuda(x), d, keep), graph::argmax(x, d, keep), 0, "argmax " + std::to_string(d));
  expect_close(graph::argmax(cuda(x)), graph::argmax(x), 0, "argmax all");
}

// Reduced dims leading a dense input (cuda.h reduce_columns): a bias
// gradient's sum over the batch, more columns than one block's 32, rows
// not a multiple of the 32 row groups, ties and NaN for argmax.
TEST_F(Cuda, ReductionsOverLeadingDimsReadColumns) {
  const Tensor g = signed_values({1000, 70});
  expect_close(graph::sum(cuda(g), graph::Shape{0}, false), graph::sum(g, graph::Shape{0}, false), 1e-4, "bias grad");
  const Tensor x = signed_values({5, 3, 37, 2});
  for (const graph::Shape& dims : {graph::Shape{0}, graph::Shape{0, 1}, graph::Shape{0, 1, 2}})
    for (bool keep : {false, true}) {
      const std::string what = graph::shape_str(dims) + (keep ? " keepdim" : "");
      expect_close(graph::sum(cuda(x), dims, keep), graph::sum(x, dims, keep), 1e-4, "sum " + what);
      expect_close(graph::mean(cuda(x), dims, keep), graph::mean(x, dims, keep), 1e-4, "mean " + what);
      expect_close(graph::amax(cuda(x), dims, keep), graph::amax(x, dims, keep), 0, "amax " + what);
      expect_close(graph::amin(cuda(x), dims, keep), graph::amin(x, dims, keep), 0, "amin " + what);
    }
  const Tensor ties = (graph::rand({50, 4}) * 3.0).to(graph::kInt64);  // 0, 1, 2: many ties
  expect_close(graph::sum(cuda(ties), graph::Shape{0}, false), graph::sum(ties, graph::Shape{0}, false), 0, "int64");
  expect_close(graph::argmax(cuda(ties), 0, false), graph::argmax(ties, 0, false), 0, "argmax ties");
  Tensor nan = g.clone();
  nan.slice(0, 700, 701).fill_(std::numeric_limits<float>::quiet_NaN());
  expect_close(graph::argmax(cuda(nan), 0, false), graph::argmax(nan, 0, false), 0, "argmax NaN");
  expect_close(graph::amax(cuda(nan), graph::Shape{0}, false), graph::amax(nan, graph::Shape{0}, false), 0, "amax NaN");
  const Tensor gt = signed_values({70, 1000});  // a transposed input: the rows kernel on a copy
  expect_close(graph::sum(cuda(gt).t(), graph::Shape{0}, false), graph::sum(gt.t(), graph::Shape{0}, false), 1e-4,
               "transposed input");
}

TEST_F(Cuda, SoftmaxAndLogSoftmax) {
  const Tensor x = signed_values({4, 5, 129});
  for (int64_t d : {0, 1, 2}) {
    expect_close(graph::softmax(cuda(x), d), graph::softmax(x, d), 1e-5, "softmax " + std::to_string(d));
    expect_close(graph::log_softmax(cuda(x), d), graph::log_softmax(x, d), 1e-5, "log_softmax " + std::to_string(d));
  }
}

TEST_F(Cuda, AutogradFlowsThroughTheDevice) {
  Tensor w = signed_values({4, 3}).requires_grad_();
  const Tensor x = signed_values({5, 4});
  graph::sum(graph::tanh(graph::matmul(cuda(x), cuda(w)) * 2.0)).backward();
  const Tensor gw_gpu = w.grad();
  w.zero_grad();
  graph::sum(graph::tanh(graph::matmul(x, w) * 2.0)).backward();
  ASSERT_EQ(gw_gpu.device(), graph::kCPU);  // to(kCUDA)'s backward brings it back
  expect_close(cuda(gw_gpu), w.grad(), 1e-4, "dL/dw");
}

// Module::to(kCUDA) and an optimizer on the device: parameters that are
// device leaves get device gradients, and SGD with momentum and Adam update
// them in place there, as the same steps on the CPU do.
TEST_F(Cuda, ModulesMoveToTheDeviceAndOptimizersStepThere) {
  for (int which = 0; which < 2; ++which) {
    graph::manual_seed(11);
    graph::nn::Linear cpu(8, 3), gpu(8, 3);
    gpu->weight.detach().copy_(cpu->weight.detach());
    gpu->bias.detach().copy_(cpu->bias.detach());
    gpu->to(graph::kCUDA);
    ASSERT_EQ(gpu->weight.device(), graph::kCUDA);
    ASSERT_TRUE(gpu->weight.requires_grad());
    auto make = [&](graph::nn::Linear& m) -> std::unique_ptr<graph::optim::Optimizer> {
      if (which == 0) return std::make_unique<graph::optim::SGD>(m->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
      return std::make_unique<graph::optim::Adam>(m->parameters(), graph::optim::AdamOptions(0.01));
    };
    auto opt_cpu = make(cpu), opt_gpu = make(gpu);
    const Tensor x = signed_values({5, 8});
    for (int step = 0; step < 3; ++step) {
      for (auto [m, opt, in] : {std::tuple{&cpu, opt_cpu.get(), x}, std::tuple{&gpu, opt_gpu.get(), cuda(x)}}) {
        opt->zero_grad();
        graph::sum(graph::tanh((*m)->forward(in))).backward();
        opt->step();
      }
    }
    ASSERT_EQ(gpu->weight.grad().device(), graph::kCUDA);
    expect_close(gpu->weight.detach(), cpu->weight.detach(), 1e-4, which ? "Adam weight" : "SGD weight");
    expect_close(gpu->bias.detach(), cpu->bias.detach(), 1e-4, which ? "Adam bias" : "SGD bias");
    gpu->to(graph::kCPU);
    EXPECT_EQ(gpu->weight.device(), graph::kCPU);
  }
}

TEST_F(Cuda, TheAllocatorReusesBlocksAcrossSteps) {
  const Tensor x = cuda(positive({256, 256}));
  (void)graph::exp(x);  // first use: a block of this size
  const auto before = graph::cuda::device_allocator().stats();
  for (int i = 0; i < 10; ++i) (void)graph::exp(x);
  const auto after = graph::cuda::device_allocator().stats();
  EXPECT_EQ(after.device_allocs, before.device_allocs);
  EXPECT_EQ(after.cache_hits - before.cache_hits, 10u);
}

// ---- nn ops on the device: cuDNN conv2d and pooling, hand kernels ----------

TEST_F(Cuda, CrossEntropyWithDeviceTargets) {
  // Class indices on the device, one of them PyTorch's ignore_index (-100):
  // the loss and the logits' gradient match the CPU's, the bad target names itself.
  const Tensor logits = signed_values({5, 7}), target = graph::tensor({3, 0, -100, 6, 3});
  const auto f = [&](const std::vector<Tensor>& in) {
    return graph::cross_entropy(in[0], in[0].device() == graph::kCUDA ? cuda(target) : target);
  };
  expect_close(f({cuda(logits)}), f({logits}), 1e-6, "cross_entropy");
  expect_grads_close(f, {logits}, {}, 1e-6, "cross_entropy");
  const Tensor all = graph::tensor({1, 2, 3, 4, 5});
  expect_close(graph::cross_entropy(cuda(logits.to(graph::kFloat64)), cuda(all)),
               graph::cross_entropy(logits.to(graph::kFloat64), all), 1e-12, "cross_entropy float64");
  try {
    graph::cross_entropy(cuda(logits), cuda(graph::tensor({0, 1, 7, 2, 3})));
    ADD_FAILURE() << "no error for target 7";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy: target 7 is out of range for 7 classes"), std::string::npos)
        << e.what();
  }
  // No ignored target: the rows are picked on the device. The check is kept
  // per version of the labels: the same labels pass again without a copy,
  // and a bad label written in place is still caught, forward and backward.
  const auto g = [&](const Tensor& labels) {
    return [&, labels](const std::vector<Tensor>& in) {
      return graph::cross_entropy(in[0], in[0].device() == graph::kCUDA ? cuda(labels) : labels);
    };
  };
  expect_grads_close(g(all), {logits}, {}, 1e-6, "cross_entropy, no ignored target");
  Tensor labels = cuda(all);
  for (int step = 0; step < 3; ++step)
    expect_close(graph::cross_entropy(cuda(logits), labels), graph::cross_entropy(logits, all), 1e-6,
                 "the same labels, step " + std::to_string(step));
  labels.copy_(cuda(graph::tensor({1, 2, 9, 4, 5})));
  try {
    graph::cross_entropy(cuda(logits), labels);
    ADD_FAILURE() << "no error for target 9 written in place";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cross_entropy: target 9 is out of range for 7 classes"), std::string::npos)
        << e.what();
  }
  try {
    graph::detail::cross_entropy_backward(graph::ones({}, graph::kFloat32, graph::kCUDA), cuda(logits), labels,
                                          graph::detail::kAllGrads, Tensor());
    ADD_FAILURE() << "no error from the backward for target 9";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("target 9 is out of range for 7 classes"), std::string::npos) << e.what();
  }
}

TEST_F(Cuda, Conv2dThroughCudnnForwardAndBackward) {
  struct Case {
    graph::Shape x, w, stride, padding, dilation;
    int64_t groups;
    bool bias;
  };
  for (const Case& c : std::vector<Case>{{{2, 3, 9, 9}, {4, 3, 3, 3}, {1}, {1}, {1}, 1, true},
                                         {{1, 4, 11, 8}, {6, 2, 3, 2}, {2, 1}, {1, 0}, {2, 1}, 2, false},
                                         {{3, 5, 6, 6}, {2, 5, 1, 1}, {1}, {0}, {1}, 1, true},
                                         {{4, 7, 7}, {3, 4, 2, 2}, {1}, {0}, {1}, 1, true}}) {
    for (graph::DType d : {graph::kFloat32, graph::kFloat64}) {
      const Tensor x = signed_values(c.x).to(d), w = signed_values(c.w).to(d);
      const Tensor b = c.bias ? signed_values({c.w[0]}).to(d) : Tensor();
      const auto f = [&](const std::vector<Tensor>& in) {
        return graph::conv2d(in[0], in[1], c.bias ? in[2] : Tensor(), c.stride, c.padding, c.dilation, c.groups);
      };
      std::vector<Tensor> leaves{x, w};
      if (c.bias) leaves.push_back(b);
      const Tensor want = f(leaves);
      const double tol = d == graph::kFloat64 ? 1e-10 : 1e-4;
      const std::string what = "conv2d " + graph::shape_str(c.x) + " " + std::string(graph::dtype_name(d));
      expect_close(f({cuda(x), cuda(w), c.bias ? cuda(b) : Tensor()}), want, tol, what);
      expect_grads_close(f, leaves, want.sizes(), tol, what);
    }
  }
}

TEST_F(Cuda, PoolingThroughCudnnForwardAndBackward) {
  for (graph::DType d : {graph::kFloat32, graph::kFloat64}) {
    const Tensor x = signed_values({2, 3, 9, 8}).to(d);  // random: no ties in a window
    for (bool max : {true, false}) {
      for (const auto& [k, s, p] : std::vector<std::tuple<graph::Shape, graph::Shape, graph::Shape>>{
               {{2}, {}, {0}}, {{3}, {2}, {1}}, {{3, 2}, {1, 2}, {1, 0}}}) {
        const auto f = [&](const std::vector<Tensor>& in) {
          return max ? graph::max_pool2d(in[0], k, s, p) : graph::avg_pool2d(in[0], k, s, p);
        };
        const Tensor want = f({x});
        const std::string what = std::string(max ? "max" : "avg") + "_pool2d k" + graph::shape_str(k);
        expect_close(f({cuda(x)}), want, 1e-6, what);
        expect_grads_close(f, {x}, want.sizes(), 1e-5, what);
      }
    }
  }
  const Tensor u = signed_values({3, 6, 6});  // unbatched
  expect_close(graph::max_pool2d(cuda(u), {2}), graph::max_pool2d(u, {2}), 0, "unbatched");
}

TEST_F(Cuda, LayerNormKernelForwardAndBackward) {
  for (graph::DType d : {graph::kFloat32, graph::kFloat64}) {
    const double tol = d == graph::kFloat64 ? 1e-10 : 2e-4;
    const Tensor x = (signed_values({6, 5, 40}) + 100.0).to(d);  // far from 0: the two-pass variance matters
    const Tensor w = signed_values({5, 40}).to(d), b = signed_values({5, 40}).to(d);
    const auto f = [](const std::vector<Tensor>& in) { return graph::layer_norm(in[0], {5, 40}, in[1], in[2], 1e-5); };
    expect_close(f({cuda(x), cuda(w), cuda(b)}), f({x, w, b}), tol, "layer_norm");
    expect_grads_close(f, {x, w, b}, x.sizes(), tol * 10, "layer_norm");
    const auto g = [](const std::vector<Tensor>& in) { return graph::layer_norm(in[0], {40}, Tensor(), Tensor(), 1e-5); };
    expect_close(g({cuda(x)}), g({x}), tol, "layer_norm without affine");
    expect_grads_close(g, {x}, x.sizes(), tol * 10, "layer_norm without affine");
  }
}

TEST_F(Cuda, WhereCatStackEmbeddingAndFactories) {
  const Tensor a = signed_values({4, 5}), b = signed_values({5});
  const Tensor c = graph::gt(a, 0.0);
  expect_close(graph::where(cuda(c), cuda(a), cuda(b)), graph::where(c, a, b), 0, "where broadcast");
  expect_close(graph::where(cuda(c), cuda(a), graph::zeros({})), graph::where(c, a, graph::zeros({})), 0,
               "where host scalar");
  expect_close(graph::where(cuda(c).t(), cuda(a).t(), cuda(a.to(graph::kFloat64)).t()),
               graph::where(c.t(), a.t(), a.to(graph::kFloat64).t()), 0, "where transposed, promoted");
  expect_grads_close([](const std::vector<Tensor>& in) { return graph::where(graph::gt(in[0], 0.0), in[0], in[1]); },
                     {a, signed_values({4, 5})}, {4, 5}, 1e-6, "where");
  const Tensor p = signed_values({2, 3}), q = signed_values({2, 4});
  expect_close(graph::cat({cuda(p), cuda(q)}, 1), graph::cat({p, q}, 1), 0, "cat");
  expect_close(graph::cat({cuda(p), cuda(p.to(graph::kInt64))}, 0), graph::cat({p, p.to(graph::kInt64)}, 0), 0,
               "cat promotes");
  expect_close(graph::stack({cuda(p), cuda(p)}, 1), graph::stack({p, p}, 1), 0, "stack");
  expect_grads_close([](const std::vector<Tensor>& in) { return graph::cat({in[0], in[1]}, 1); }, {p, q}, {2, 7}, 0,
                     "cat");
  // pad: one fill and a strided copy on the device; its gradient is pad again.
  expect_close(graph::pad(cuda(q), {1, -2, 2, 0}, 0.5), graph::pad(q, {1, -2, 2, 0}, 0.5), 0, "pad");
  expect_grads_close([](const std::vector<Tensor>& in) { return graph::pad(in[0], {-1, 2, 0, 1}, -1.0); }, {q},
                     {3, 5}, 0, "pad");
  const Tensor table = signed_values({10, 6}), idx = graph::tensor({3, 0, 9, 3});
  expect_close(graph::embedding(cuda(table), cuda(idx)), graph::embedding(table, idx), 0, "embedding");
  expect_grads_close([&](const std::vector<Tensor>& in) { return graph::embedding(in[0], in[0].device() == graph::kCUDA ? cuda(idx) : idx); },
                     {table}, {4, 6}, 1e-5, "embedding (repeated index)");
  try {
    graph::embedding(cuda(table), cuda(graph::tensor({1, 10})));
    ADD_FAILURE() << "no error for index 10";
  } catch (const graph::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "embedding: index 10 is out of range for a table of 10 rows (weight shape [10, 6], indices shape [2])");
  }
  expect_close(graph::zeros({3, 2}, graph::kFloat64, graph::kCUDA), graph::zeros({3, 2}, graph::kFloat64), 0, "zeros");
  expect_close(graph::ones({5}, graph::kInt32, graph::kCUDA), graph::ones({5}, graph::kInt32), 0, "ones");
  expect_close(graph::full({2, 2}, 1.5, graph::kFloat16, graph::kCUDA), graph::full({2, 2}, 1.5, graph::kFloat16), 0,
               "full");
  expect_close(graph::arange(1, 10, 3, graph::kCUDA), graph::arange(1, 10, 3), 0, "arange");
  EXPECT_EQ(graph::empty({4}, graph::kFloat32, graph::kCUDA).device(), graph::kCUDA);
}

// ---- generated fusion-group kernels (tests/cuda.cmake: codegen cases) ----------

// Calls graph `mangled` of the linked generated sources; fails the test
// when it is missing or its guards refuse.
std::vector<graph::IValue> call_graph(const char* mangled, std::vector<graph::IValue> in, size_t n_out) {
  auto* g = graph::detail::find_graph(mangled, "test-hash");
  EXPECT_NE(g, nullptr) << mangled;
  if (!g) return {};
  std::vector<graph::IValue> out(n_out);
  std::string why;
  EXPECT_TRUE(g->fn(in.data(), in.size(), out.data(), &why)) << why;
  return out;
}

Tensor out_tensor(const std::vector<graph::IValue>& out, size_t k) { return std::get<Tensor>(out.at(k)); }

// Runs without a device: the registrars of the generated .graph.cu ran.
TEST(GeneratedKernels, EveryGroupOfTheLinkedSourcesIsRegistered) {
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_chain8#test-hash/group0"), nullptr);
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_scalar_mix#test-hash/group0"), nullptr);
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_loop#test-hash/group0"), nullptr);  // inside the Loop
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_matmul_epilogue#test-hash/group1"), nullptr);  // after a matmul
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_reduce_fused#test-hash/group0"), nullptr);  // before a sum
  EXPECT_EQ(graph::cuda::find_fused_kernel("cg_chain8#other-hash/group0"), nullptr);
  // Fused reduce kernels: one per qualifying reduce group, besides its producers' kernel.
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_reduce_fused#test-hash/group0/reduce"), nullptr);  // sum
  EXPECT_NE(graph::cuda::find_fused_kernel("cg_reduce_fused#test-hash/group2/reduce"), nullptr);  // mean
  for (int k = 0; k < 6; ++k)
    EXPECT_NE(graph::cuda::find_fused_kernel(("cg_reduce_nest#test-hash/group" + std::to_string(k) + "/reduce").c_str()),
              nullptr)
        << k;
  EXPECT_EQ(graph::cuda::find_fused_kernel("cg_chain8#test-hash/group0/reduce"), nullptr);  // not a reduce group
}

// Runs without a device: cuda_fused_reduce's checks come before any launch.
TEST(GeneratedKernels, FusedReduceRefusesBadInput) {
  const Tensor x = graph::ones({4, 3});
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const graph::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] {
              graph::detail::cuda_fused_reduce("nope#h/group0/reduce", "graph_k_reduce0", {4}, 4, 3, graph::kFloat32,
                                               {&x}, {});
            }).find("graph_k_reduce0: no CUDA kernel is registered for this fused reduction"),
            std::string::npos);
  EXPECT_NE(message([&] {
              graph::detail::cuda_fused_reduce("cg_reduce_nest#test-hash/group0/reduce", "graph_red_f32_reduce0", {4},
                                               4, 3, graph::kFloat32, {&x, &x}, {graph::detail::host_scalar(1.0)});
            }).find("needs dense cuda inputs of one shape, got a cpu tensor of shape [4, 3]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              graph::detail::cuda_fused_reduce("cg_reduce_nest#test-hash/group0/reduce", "graph_red_f32_reduce0", {5},
                                               4, 3, graph::kFloat32, {&x, &x}, {});
            }).find("a fused reduction of 4 rows of 3 into shape [5]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              graph::detail::cuda_fused_reduce("cg_reduce_nest#test-hash/group0/reduce", "graph_red_f32_reduce0", {4},
                                               4, 3, graph::kInt32, {&x}, {});
            }).find("(float32, float64 only)"),
            std::string::npos);
}

// The same graph with device inputs (its fused groups run as the generated
// kernels: the CPU loop would stop at data_ptr) against host inputs (the CPU
// loop).
TEST_F(Cuda, GeneratedKernelOfABroadcastChainMatchesTheCpuLoop) {
  const Tensor x = signed_values({37, 4}), b = positive({4});
  const Tensor cpu = out_tensor(call_graph("cg_chain8", {x, b, 0.75}, 1), 0);
  expect_close(out_tensor(call_graph("cg_chain8", {cuda(x), cuda(b), 0.75}, 1), 0), cpu, 1e-5, "chain8 broadcast");
  // A transposed device input takes the strided path.
  const Tensor xt = signed_values({4, 37});
  const Tensor cpu_t = out_tensor(call_graph("cg_chain8", {xt.t(), b, -1.5}, 1), 0);
  expect_close(out_tensor(call_graph("cg_chain8", {cuda(xt).t(), cuda(b), -1.5}, 1), 0), cpu_t, 1e-5,
               "chain8 transposed");
  // A device input of 100k elements: more elements than threads in flight on small grids.
  const Tensor big = signed_values({25000, 4});
  expect_close(out_tensor(call_graph("cg_chain8", {cuda(big), cuda(b), 0.5}, 1), 0),
               out_tensor(call_graph("cg_chain8", {big, b, 0.5}, 1), 0), 1e-5, "chain8 large");
}

TEST_F(Cuda, GeneratedKernelWithIntScalarsAndSeveralOutputs) {
  const Tensor x = signed_values({3, 5});
  const auto cpu = call_graph("cg_scalar_mix", {x, int64_t{3}, 0.5}, 6);
  const auto dev = call_graph("cg_scalar_mix", {cuda(x), int64_t{3}, 0.5}, 6);
  expect_close(out_tensor(dev, 0), out_tensor(cpu, 0), 1e-5, "scalar_mix out");
  expect_close(out_tensor(dev, 5), out_tensor(cpu, 5), 0, "scalar_mix mi (int64 from a bool)");
  EXPECT_EQ(std::get<int64_t>(dev.at(1)), 6);
}

TEST_F(Cuda, GeneratedKernelInsideALoop) {
  const Tensor h0 = signed_values({6, 3}), w = positive({3});
  const auto cpu = call_graph("cg_loop", {int64_t{4}, h0, w}, 2);
  const auto dev = call_graph("cg_loop", {int64_t{4}, cuda(h0), cuda(w)}, 2);
  EXPECT_EQ(std::get<int64_t>(dev.at(0)), 4);
  expect_close(out_tensor(dev, 1), out_tensor(cpu, 1), 1e-5, "loop_carried");
}

TEST_F(Cuda, GeneratedEpiloguesAfterCublasAndProducersOfReductions) {
  const Tensor x = signed_values({5, 8}), w1 = signed_values({16, 8}), b1 = signed_values({16});
  const Tensor w2 = signed_values({16, 4}), b2 = signed_values({4});
  expect_close(out_tensor(call_graph("cg_matmul_epilogue", {cuda(x), cuda(w1), cuda(b1), cuda(w2), cuda(b2)}, 1), 0),
               out_tensor(call_graph("cg_matmul_epilogue", {x, w1, b1, w2, b2}, 1), 0), 1e-4, "mlp");
  const Tensor a = signed_values({7, 6}), b = signed_values({7, 6});
  const auto cpu = call_graph("cg_reduce_fused", {a, b}, 3);
  const auto dev = call_graph("cg_reduce_fused", {cuda(a), cuda(b)}, 3);
  for (size_t k = 0; k < 3; ++k)
    expect_close(out_tensor(dev, k), out_tensor(cpu, k), 1e-5, "sq_err output " + std::to_string(k));
}

// Fused reduce kernels on the device against the CPU loop nest: rows (one
// block per row), a single output over many blocks (stage 1 partials +
// stage 2), keepdim, float and double, NaN through amax/amin, and a strided
// input (the two-step path: producers' kernel, then the eager reduction).
TEST_F(Cuda, GeneratedFusedReductionsMatchTheCpuLoopNest) {
  for (const graph::Shape& shape : {graph::Shape{7, 6}, graph::Shape{300, 1100}, graph::Shape{3, 70000}}) {
    const Tensor x = signed_values(shape), y = signed_values(shape);
    const std::string at = graph::shape_str(shape);
    const auto cpu = call_graph("cg_reduce_nest", {x, y, 0.25}, 6);
    const auto dev = call_graph("cg_reduce_nest", {cuda(x), cuda(y), 0.25}, 6);
    for (size_t k = 0; k < 6; ++k) {
      EXPECT_EQ(out_tensor(dev, k).device(), graph::kCUDA);
      EXPECT_EQ(out_tensor(dev, k).sizes(), out_tensor(cpu, k).sizes());
      expect_close(out_tensor(dev, k), out_tensor(cpu, k), 1e-4, "red_f32 output " + std::to_string(k) + " " + at);
    }
    const Tensor xd = x.to(graph::kFloat64), yd = y.to(graph::kFloat64);
    const auto cpu64 = call_graph("red_f64", {xd, yd}, 4);
    const auto dev64 = call_graph("red_f64", {cuda(xd), cuda(yd)}, 4);
    for (size_t k = 0; k < 4; ++k)
      expect_close(out_tensor(dev64, k), out_tensor(cpu64, k), 1e-10, "red_f64 output " + std::to_string(k) + " " + at);
  }
  // NaN wins in amax and amin, on the device as in eager.
  Tensor x = signed_values({5, 9});
  x.data_ptr<float>()[13] = std::numeric_limits<float>::quiet_NaN();
  const Tensor y = signed_values({5, 9});
  const auto cpu = call_graph("cg_reduce_nest", {x, y, 1.0}, 6);
  const auto dev = call_graph("cg_reduce_nest", {cuda(x), cuda(y), 1.0}, 6);
  EXPECT_TRUE(std::isnan(out_tensor(dev, 2).to(graph::kCPU).data_ptr<float>()[0]));  // amax over everything
  expect_close(out_tensor(dev, 2), out_tensor(cpu, 2), 0, "amax with a NaN");
  // A strided device input: the two-step path, same values.
  const Tensor xs = signed_values({40, 30}), yt = signed_values({30, 40});
  ASSERT_FALSE(cuda(xs).t().is_contiguous());
  const auto cpu_t = call_graph("cg_reduce_nest", {xs.t(), yt, 0.5}, 6);
  const auto dev_t = call_graph("cg_reduce_nest", {cuda(xs).t(), cuda(yt), 0.5}, 6);
  for (size_t k = 0; k < 6; ++k)
    expect_close(out_tensor(dev_t, k), out_tensor(cpu_t, k), 1e-4, "strided output " + std::to_string(k));
}

TEST_F(Cuda, GeneratedKernelRefusesMixedDevices) {
  const Tensor x = signed_values({5, 4}), b = positive({4});
  auto* g = graph::detail::find_graph("cg_chain8", "test-hash");
  ASSERT_NE(g, nullptr);
  std::vector<graph::IValue> in{cuda(x), b, 1.0}, out(1);
  try {
    g->fn(in.data(), in.size(), out.data(), nullptr);
    FAIL() << "no error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("graph_chain8_group0: expected tensors on one device"), std::string::npos)
        << e.what();
  }
}

}  // namespace

namespace {

// GRAPH_CUDA_GRAPHS: a static graph on device inputs is run once uncaptured,
// captured on its second call with a signature, replayed after; each result
// still matches the CPU's, for new input values every call.
TEST_F(Cuda, StaticGraphsAreCapturedPerSignatureAndReplayed) {
  graph::detail::set_cuda_graphs(true);
  graph::detail::StaticFunction chain("cg_chain8", "test-hash"), mlp("cg_matmul_epilogue", "test-hash");
  auto& cache = graph::cuda::graph_capture_cache();
  const auto before = cache.stats();
  const Tensor b = positive({4});
  for (int call = 0; call < 4; ++call) {
    const Tensor x = signed_values({37, 4});
    Tensor got;
    ASSERT_TRUE(chain.run(got, nullptr, cuda(x), cuda(b), 0.75)) << call;
    expect_close(got, out_tensor(call_graph("cg_chain8", {x, b, 0.75}, 1), 0), 1e-5, "chain8 call " + std::to_string(call));
  }
  // Another scalar value is another signature: warmed up and captured anew.
  for (int call = 0; call < 3; ++call) {
    const Tensor x = signed_values({37, 4});
    Tensor got;
    ASSERT_TRUE(chain.run(got, nullptr, cuda(x), cuda(b), -2.0));
    expect_close(got, out_tensor(call_graph("cg_chain8", {x, b, -2.0}, 1), 0), 1e-5, "chain8 s=-2");
  }
  const Tensor w1 = signed_values({16, 8}), b1 = signed_values({16}), w2 = signed_values({16, 4}), b2 = signed_values({4});
  for (int call = 0; call < 3; ++call) {
    const Tensor x = signed_values({5, 8});
    Tensor got;
    ASSERT_TRUE(mlp.run(got, nullptr, cuda(x), cuda(w1), cuda(b1), cuda(w2), cuda(b2)));
    expect_close(got, graph::tanh(graph::matmul(graph::relu(graph::linear(x, w1, b1)), w2) + b2), 1e-4, "mlp");
  }
  const auto after = cache.stats();
  graph::detail::set_cuda_graphs(false);
  EXPECT_EQ(after.captures - before.captures, 3u);
  EXPECT_EQ(after.replays - before.replays, 3u + 2u + 2u);  // the capturing call replays too
  EXPECT_EQ(after.failures, before.failures);
}

// Small uploads go through pinned staging slots without waiting for the
// stream: more uploads than slots (the ring wraps), each source overwritten
// as soon as its copy returns, and a large one past the staging size; every
// device copy keeps the values it was given.
TEST_F(Cuda, UploadsKeepTheirValuesWhenTheSourceIsReusedAtOnce) {
  std::vector<Tensor> on_device;
  for (int i = 0; i < 100; ++i) {
    Tensor h = graph::full({257}, static_cast<double>(i));
    on_device.push_back(h.to(graph::kCUDA) * 2.0);  // the scalar is an upload too
    h.fill_(-1.0);
  }
  Tensor big = graph::full({40000}, 3.0);  // 160 KB: the synchronous path
  const Tensor big_device = big.to(graph::kCUDA);
  big.fill_(-1.0);
  for (int i = 0; i < 100; ++i) {
    const Tensor back = on_device[i].to(graph::kCPU);
    const float* p = back.data_ptr<float>();
    for (int64_t j = 0; j < back.numel(); ++j) ASSERT_EQ(p[j], 2.0f * i) << "upload " << i << ", element " << j;
  }
  const Tensor back = big_device.to(graph::kCPU);
  EXPECT_EQ(graph::amin(back).item<float>(), 3.0f);
  EXPECT_EQ(graph::amax(back).item<float>(), 3.0f);
}

// A replay skips the copy of an input that is the tensor last copied there,
// unchanged since (weights): so an in-place write, another tensor, or a view
// of the same storage at another offset must still reach the graph.
TEST_F(Cuda, ReplaysSeeInPlaceWritesNewTensorsAndOtherViews) {
  graph::detail::set_cuda_graphs(true);
  graph::detail::StaticFunction chain("cg_chain8", "test-hash");
  auto& cache = graph::cuda::graph_capture_cache();
  const auto before = cache.stats();
  const Tensor x = signed_values({37, 4}), b = positive({4});
  Tensor dx = cuda(x), db = cuda(b);
  const auto expect_call = [&](const Tensor& device_x, const Tensor& host_x, const Tensor& host_b,
                               const std::string& what) {
    Tensor got;
    ASSERT_TRUE(chain.run(got, nullptr, device_x, db, 0.75)) << what;
    expect_close(got, out_tensor(call_graph("cg_chain8", {host_x, host_b, 0.75}, 1), 0), 1e-5, what);
  };
  for (int call = 0; call < 4; ++call) expect_call(dx, x, b, "same tensors, call " + std::to_string(call));
  const Tensor x2 = signed_values({37, 4});
  dx.copy_(cuda(x2));  // in place: the version moves on
  expect_call(dx, x2, b, "after x.copy_");
  expect_call(dx, x2, b, "after x.copy_, again");
  const Tensor b2 = positive({4});
  db.copy_(cuda(b2));
  expect_call(dx, x2, b2, "after b.copy_");
  const Tensor x3 = signed_values({37, 4});
  expect_call(cuda(x3), x3, b2, "another tensor");
  // Two rows of one storage: same sizes and strides, other offsets.
  const Tensor both = signed_values({2, 37, 4}), dboth = cuda(both);
  expect_call(dboth.select(0, 0), both.select(0, 0).contiguous(), b2, "view at offset 0");
  expect_call(dboth.select(0, 1), both.select(0, 1).contiguous(), b2, "view at the second offset");
  expect_call(dboth.select(0, 0), both.select(0, 0).contiguous(), b2, "view at offset 0 again");
  const auto after = cache.stats();
  graph::detail::set_cuda_graphs(false);
  EXPECT_EQ(after.failures, before.failures);
  EXPECT_GE(after.replays - before.replays, 8u);
}

}  // namespace

namespace {

// GRAPH_CUDA_GRAPHS with If and Loop on device conditions: captured once
// per signature into CUDA conditional nodes (If with an else body, While),
// then replayed while the condition changes from call to call; every result
// matches the uncaptured run on the CPU. Needs a GPU and a driver with
// conditional nodes (CUDA 12.8+ for the else body).
TEST_F(Cuda, IfAndWhileOnDeviceConditionsAreCapturedAsConditionalNodes) {
  graph::detail::set_cuda_graphs(true);
  graph::detail::StaticFunction branch("cg_if_tensor", "test-hash"), grow("while_sum", "test-hash");
  auto& cache = graph::cuda::graph_capture_cache();
  const auto before = cache.stats();
  for (int call = 0; call < 6; ++call) {
    // The condition flips every call: the replays must follow it.
    const Tensor c = graph::tensor({call % 2 ? -1.5f : 2.0f}), x = signed_values({33});
    Tensor got;
    ASSERT_TRUE(branch.run(got, nullptr, cuda(c), cuda(x))) << call;
    expect_close(got, out_tensor(call_graph("cg_if_tensor", {c, x}, 1), 0), 1e-5, "if_tensor call " + std::to_string(call));
  }
  for (int call = 0; call < 6; ++call) {
    // A different number of iterations every call (sum 100 needs 1 to 6 doublings).
    const Tensor x = positive({4}) * (0.5 + 4.0 * call);
    Tensor got;
    ASSERT_TRUE(grow.run(got, nullptr, cuda(x))) << call;
    expect_close(got, out_tensor(call_graph("while_sum", {x}, 1), 0), 1e-5, "while_sum call " + std::to_string(call));
  }
  const auto after = cache.stats();
  graph::detail::set_cuda_graphs(false);
  EXPECT_EQ(after.failures, before.failures);  // GRAPH_EXPLAIN=1 prints why a capture was refused
  EXPECT_EQ(after.captures - before.captures, 2u);
  EXPECT_EQ(after.replays - before.replays, 5u + 5u);  // the capturing call replays too
}

}  // namespace

