// Matrix products (cuBLAS, cuBLASLt epilogues, the layouts read in place)
// and the optimizers' device steps, on the device against the CPU. Part of
// cuda_ops_test (tests/cuda.cmake); skipped without a device.
#include <string>
#include <vector>

#include "cuda_test_support.h"
#include "graph/detail/generated_support.h"
#include "graph/optim.h"

namespace {

using namespace cuda_test;

TEST_F(Cuda, MatmulThroughCublas) {
  const Tensor a = signed_values({17, 33}), b = signed_values({33, 9});
  expect_close(graph::matmul(cuda(a), cuda(b)), graph::matmul(a, b), 1e-4, "2-D");
  expect_close(graph::matmul(cuda(a).t().t(), cuda(b.t()).t()), graph::matmul(a, b), 1e-4, "transposed operand");
  const Tensor ba = signed_values({3, 5, 8}), bb = signed_values({3, 8, 4});
  expect_close(graph::matmul(cuda(ba), cuda(bb)), graph::matmul(ba, bb), 1e-4, "batched");
  expect_close(graph::matmul(cuda(ba), cuda(bb.slice(0, 0, 1).squeeze(0))), graph::matmul(ba, bb.slice(0, 0, 1).squeeze(0)), 1e-4, "batch @ matrix");
  const Tensor v = signed_values({8});
  expect_close(graph::matmul(cuda(ba), cuda(v)), graph::matmul(ba, v), 1e-4, "batch @ vector");
  const Tensor da = a.to(graph::kFloat64), db = b.to(graph::kFloat64);
  expect_close(graph::matmul(cuda(da), cuda(db)), graph::matmul(da, db), 1e-12, "float64");
  // linear's weight.t(): B read transposed in place, float64 and one column too.
  expect_close(graph::matmul(cuda(da), cuda(db.t()).t()), graph::matmul(da, db), 1e-12, "float64 transposed operand");
  const Tensor col = b.slice(1, 0, 1).contiguous();
  expect_close(graph::matmul(cuda(a), cuda(col)), graph::matmul(a, col), 1e-4, "one column");
  const Tensor bias = signed_values({9});
  expect_close(graph::linear(cuda(a), cuda(b.t()), cuda(bias)), graph::linear(a, b.t(), bias), 1e-4, "linear");
  expect_close(graph::matmul(cuda(graph::zeros({2, 0})), cuda(graph::zeros({0, 3}))), graph::zeros({2, 3}), 0, "k = 0");
}

TEST_F(Cuda, CublasLtEpilogueMatchesTheGemmAndItsOps) {
  using graph::detail::GemmEpilogue;
  const Tensor x = signed_values({37, 24}), w = signed_values({24, 19}), wl = signed_values({19, 24});
  const Tensor b = signed_values({19});
  const auto run = [&](const Tensor& a, const Tensor& m, bool linear, const Tensor& bias, GemmEpilogue e) {
    return graph::detail::cuda_gemm_epilogue(cuda(a), cuda(m), linear, bias.defined() ? cuda(bias) : Tensor(), e);
  };
  expect_close(run(x, wl, true, b, GemmEpilogue::ReluBias), graph::relu(graph::linear(x, wl, b)), 1e-4, "linear relu");
  expect_close(run(x, w, false, b, GemmEpilogue::Bias), graph::matmul(x, w) + b, 1e-4, "matmul bias");
  expect_close(run(x, w, false, Tensor(), GemmEpilogue::Relu), graph::relu(graph::matmul(x, w)), 1e-4, "matmul relu");
  const Tensor x3 = signed_values({2, 5, 24});
  expect_close(run(x3, w, false, b, GemmEpilogue::ReluBias), graph::relu(graph::matmul(x3, w) + b), 1e-4, "batched rows");
  // Fallbacks to the eager ops: float64, a broadcast [1, n] bias, a transposed input.
  const Tensor xd = x.to(graph::kFloat64), wd = w.to(graph::kFloat64), bd = b.to(graph::kFloat64);
  expect_close(run(xd, wd, false, bd, GemmEpilogue::Bias), graph::matmul(xd, wd) + bd, 1e-12, "float64");
  expect_close(run(x, w, false, b.reshape({1, 19}), GemmEpilogue::Bias), graph::matmul(x, w) + b.reshape({1, 19}), 1e-4,
               "[1, n] bias");
  const Tensor xt = signed_values({24, 37});
  expect_close(graph::detail::cuda_gemm_epilogue(cuda(xt).t(), cuda(w), false, cuda(b), GemmEpilogue::Bias),
               graph::matmul(xt.t(), w) + b, 1e-4, "transposed input");
}

// Operands cuBLAS reads in place (cuda.h gemm_operand): non-square shapes,
// so a wrong transpose or leading dimension gives wrong values or a cuBLAS
// error instead of passing by symmetry.
TEST_F(Cuda, MatmulReadsTransposedOperandsInPlace) {
  const Tensor a = signed_values({37, 23}), b = signed_values({23, 11});
  const Tensor at = signed_values({23, 37}), bt = signed_values({11, 23});
  expect_close(graph::matmul(cuda(at).t(), cuda(b)), graph::matmul(at.t(), b), 1e-4, "a transposed");
  expect_close(graph::matmul(cuda(a), cuda(bt).t()), graph::matmul(a, bt.t()), 1e-4, "b transposed");
  expect_close(graph::matmul(cuda(at).t(), cuda(bt).t()), graph::matmul(at.t(), bt.t()), 1e-4, "both transposed");
  // The weight gradient's g.t() @ x (MLP backward), and column slices (ld > cols).
  const Tensor g = signed_values({64, 10}), x = signed_values({64, 30});
  expect_close(graph::matmul(cuda(g).t(), cuda(x)), graph::matmul(g.t(), x), 1e-4, "g.t() @ x");
  expect_close(graph::matmul(cuda(a).slice(1, 3, 20), cuda(b).slice(0, 3, 20)),
               graph::matmul(a.slice(1, 3, 20), b.slice(0, 3, 20)), 1e-4, "column slices");
  expect_close(graph::matmul(cuda(at).slice(0, 2, 21).t(), cuda(b).slice(0, 2, 21)),
               graph::matmul(at.slice(0, 2, 21).t(), b.slice(0, 2, 21)), 1e-4, "a transposed slice");
  // Batched operands transposed in their last two dims; a broadcast b.
  const Tensor ba = signed_values({3, 8, 5}), bb = signed_values({3, 4, 8});
  expect_close(graph::matmul(cuda(ba).transpose(-1, -2), cuda(bb).transpose(-1, -2)),
               graph::matmul(ba.transpose(-1, -2), bb.transpose(-1, -2)), 1e-4, "batched, both transposed");
  expect_close(graph::matmul(cuda(ba).transpose(-1, -2), cuda(b.slice(0, 0, 8))),
               graph::matmul(ba.transpose(-1, -2), b.slice(0, 0, 8)), 1e-4, "batched a transposed @ matrix");
  // Interleaved batch matrices (batch stride 5, ld 40): read in place.
  const Tensor bc = signed_values({8, 3, 2});
  expect_close(graph::matmul(cuda(ba).transpose(0, 1).transpose(-1, -2), cuda(bc)),
               graph::matmul(ba.transpose(0, 1).transpose(-1, -2), bc), 1e-4, "batch dims permuted");
  // One row (gemv), as an LSTM step's [1, 64] @ [64, 256], in every layout.
  const Tensor row = signed_values({1, 64}), w = signed_values({64, 256}), wl = signed_values({256, 64});
  expect_close(graph::matmul(cuda(row), cuda(w)), graph::matmul(row, w), 1e-4, "m = 1");
  expect_close(graph::matmul(cuda(row), cuda(wl).t()), graph::matmul(row, wl.t()), 1e-4, "m = 1, b transposed");
  const Tensor cols = signed_values({64, 3});
  expect_close(graph::matmul(cuda(cols).slice(1, 1, 2).t(), cuda(w)), graph::matmul(cols.slice(1, 1, 2).t(), w), 1e-4,
               "m = 1, a column as the row");
  const Tensor rd = row.to(graph::kFloat64), wd = wl.to(graph::kFloat64);
  expect_close(graph::matmul(cuda(rd), cuda(wd).t()), graph::matmul(rd, wd.t()), 1e-12, "m = 1, float64");
  expect_close(graph::matmul(cuda(at.to(graph::kFloat64)).t(), cuda(b.to(graph::kFloat64))),
               graph::matmul(at.to(graph::kFloat64).t(), b.to(graph::kFloat64)), 1e-12, "float64 a transposed");
  const Tensor bias = signed_values({256});
  expect_close(graph::linear(cuda(row), cuda(wl), cuda(bias)), graph::linear(row, wl, bias), 1e-4, "linear, one row");
  EXPECT_THROW(graph::matmul(cuda(a), cuda(b.to(graph::kFloat64))), graph::Error);
  EXPECT_THROW(graph::matmul(cuda(a), cuda(bt)), graph::Error);
}

// The static path's GEMM of one row and no epilogue: classic cuBLAS (gemv).
TEST_F(Cuda, OneRowGemmWithoutEpilogueTakesClassicCublas) {
  using graph::detail::GemmEpilogue;
  const Tensor row = signed_values({1, 64}), w = signed_values({64, 256}), wl = signed_values({256, 64});
  const auto run = [](const Tensor& a, const Tensor& m, bool linear) {
    return graph::detail::cuda_gemm_epilogue(cuda(a), cuda(m), linear, Tensor(), GemmEpilogue::Bias);
  };
  expect_close(run(row, w, false), graph::matmul(row, w), 1e-4, "matmul");
  expect_close(run(row, wl, true), graph::linear(row, wl), 1e-4, "linear");
  expect_close(run(row.reshape({1, 1, 64}), wl, true), graph::linear(row.reshape({1, 1, 64}), wl), 1e-4, "[1, 1, k]");
}

// One row of a small matrix: cuda::small_gemv (a programmatic dependent
// launch), in every size class around its split of k and its 256-column
// blocks; past its limit, cuBLAS. Products that read the previous one's
// result check that each launch waits for the kernel before it.
TEST_F(Cuda, OneRowProductsOfSmallMatricesMatchTheCpu) {
  for (int64_t k : {1, 3, 64, 257, 2048}) {
    for (int64_t n : {1, 5, 256, 300, 511}) {
      const Tensor row = signed_values({1, k}), w = signed_values({k, n});
      const std::string what = "[1, " + std::to_string(k) + "] @ [" + std::to_string(k) + ", " + std::to_string(n) + "]";
      EXPECT_EQ(graph::cuda::small_gemv_applies(k, n), true) << what;
      // Both sides sum k float32 products in their own order: the rounding
      // grows with k (2.6e-5 seen at k 257, 2e-4 at 2048 on an H200).
      expect_close(graph::matmul(cuda(row), cuda(w)), graph::matmul(row, w), 1e-5 + 2e-7 * static_cast<double>(k), what);
    }
  }
  const Tensor big = signed_values({64, 600}), col = signed_values({64, 3});
  // W a column slice (row stride 600), x a column of another matrix (stride 3).
  const Tensor ws = big.slice(1, 100, 356), xs = col.slice(1, 1, 2).t();
  expect_close(graph::matmul(cuda(xs), cuda(big).slice(1, 100, 356)), graph::matmul(xs, ws), 1e-5, "strided operands");
  EXPECT_FALSE(graph::cuda::small_gemv_applies(4096, 16));
  EXPECT_FALSE(graph::cuda::small_gemv_applies(1024, 2048));
  const Tensor r4 = signed_values({1, 4096}), w4 = signed_values({4096, 16});
  expect_close(graph::matmul(cuda(r4), cuda(w4)), graph::matmul(r4, w4), 1e-4, "past the limit: cuBLAS");
  // A chain of dependent launches, each reading the one before. The weights
  // keep the recurrence contracting: with 5x larger ones it is chaotic, and
  // float32 and float64 on the CPU alone end 1.4e-2 apart after 20 steps.
  const Tensor h = signed_values({1, 64}), wh = signed_values({64, 64}) * 0.04;
  Tensor dh = cuda(h), ch = h;
  for (int i = 0; i < 20; ++i) {
    dh = graph::tanh(graph::matmul(dh, cuda(wh)));
    ch = graph::tanh(graph::matmul(ch, wh));
  }
  expect_close(dh, ch, 1e-5, "20 dependent steps");
}

// The eager linear on the device: the bias in cuBLASLt's epilogue where it
// fits, matmul + add where not; gradients unchanged either way.
TEST_F(Cuda, EagerLinearAddsItsBiasInTheGemmEpilogue) {
  const Tensor x = signed_values({37, 24}), w = signed_values({19, 24}), b = signed_values({19});
  expect_close(graph::linear(cuda(x), cuda(w), cuda(b)), graph::linear(x, w, b), 1e-4, "2-D");
  const Tensor x3 = signed_values({2, 5, 24});
  expect_close(graph::linear(cuda(x3), cuda(w), cuda(b)), graph::linear(x3, w, b), 1e-4, "3-D input");
  const Tensor xt = signed_values({24, 37});
  expect_close(graph::linear(cuda(xt).t(), cuda(w), cuda(b)), graph::linear(xt.t(), w, b), 1e-4, "strided input");
  const Tensor b1 = signed_values({1});
  expect_close(graph::linear(cuda(x), cuda(w), cuda(b1)), graph::linear(x, w, b1), 1e-4, "broadcast bias");
  const Tensor xd = x.to(graph::kFloat64), wd = w.to(graph::kFloat64), bd = b.to(graph::kFloat64);
  expect_close(graph::linear(cuda(xd), cuda(wd), cuda(bd)), graph::linear(xd, wd, bd), 1e-12, "float64");
  Tensor wg = cuda(w).requires_grad_(), bg = cuda(b).requires_grad_();
  Tensor wc = w.clone().requires_grad_(), bc = b.clone().requires_grad_();
  graph::sum(graph::tanh(graph::linear(cuda(x), wg, bg))).backward();
  graph::sum(graph::tanh(graph::linear(x, wc, bc))).backward();
  expect_close(wg.grad(), wc.grad(), 1e-4, "dL/dw");
  expect_close(bg.grad(), bc.grad(), 1e-4, "dL/db");
  EXPECT_THROW(graph::linear(cuda(x), w, cuda(b)), graph::Error);  // a cpu weight
}

// The fused device optimizer kernels against the CPU loops, 3 steps each,
// with fixed gradients (d/dp of sum(p * c) is c on both devices).
template <class Opt, class Options>
void expect_optimizer_matches_cpu(const Options& o, graph::DType dt, double tol, const std::string& what) {
  graph::manual_seed(5);
  const Tensor init = signed_values({33, 7}).to(dt);
  std::vector<Tensor> coefs;
  for (int s = 0; s < 3; ++s) coefs.push_back(signed_values({33, 7}).to(dt));
  Tensor pc = init.clone().requires_grad_(), pg = cuda(init).requires_grad_();
  Opt cpu({pc}, o), gpu({pg}, o);
  for (int s = 0; s < 3; ++s) {
    for (auto [p, opt, c] : {std::tuple{&pc, &cpu, coefs[s]}, std::tuple{&pg, &gpu, cuda(coefs[s])}}) {
      opt->zero_grad();
      graph::sum(*p * c).backward();
      opt->step();
    }
  }
  ASSERT_EQ(pg.device(), graph::kCUDA) << what;
  expect_close(pg.detach(), pc.detach(), tol, what);
}

TEST_F(Cuda, SgdStepsInOneKernelAsOnTheCpu) {
  using graph::optim::SGD;
  using graph::optim::SGDOptions;
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64}) {
    const double tol = dt == graph::kFloat32 ? 1e-6 : 1e-14;
    const std::string d(graph::dtype_name(dt));
    expect_optimizer_matches_cpu<SGD>(SGDOptions(0.1), dt, tol, "plain " + d);
    expect_optimizer_matches_cpu<SGD>(SGDOptions(0.1).momentum(0.9), dt, tol, "momentum " + d);
    expect_optimizer_matches_cpu<SGD>(SGDOptions(0.1).momentum(0.9).dampening(0.3), dt, tol, "dampening " + d);
    expect_optimizer_matches_cpu<SGD>(SGDOptions(0.1).weight_decay(0.01), dt, tol, "weight decay " + d);
    expect_optimizer_matches_cpu<SGD>(SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(true), dt, tol, "nesterov " + d);
  }
}

TEST_F(Cuda, AdamStepsInOneKernelAsOnTheCpu) {
  using graph::optim::Adam;
  using graph::optim::AdamOptions;
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64}) {
    const double tol = dt == graph::kFloat32 ? 1e-6 : 1e-14;
    const std::string d(graph::dtype_name(dt));
    expect_optimizer_matches_cpu<Adam>(AdamOptions(0.01), dt, tol, "plain " + d);
    expect_optimizer_matches_cpu<Adam>(AdamOptions(0.01).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.02), dt, tol, "weight decay " + d);
    expect_optimizer_matches_cpu<Adam>(AdamOptions(0.01).amsgrad(true), dt, tol, "amsgrad " + d);
  }
}

}  // namespace
