// The issue-19 ops with device kernels (cuda/src/index.cu, sort.cu,
// batch_norm.cu, interpolate.cu) against their CPU kernels: index_select,
// gather, scatter_add, triu/tril, cumsum, argsort (and sort/topk through
// it), batch_norm, interpolate; values, dtypes, gradients, the backward
// kernels of graphs, and bad input. Part of cuda_ops_test; skipped without
// a device.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_support.h"
#include "graph/detail/backward_kernels.h"
#include "graph/graph.h"
#include "graph/trace.h"

namespace {

using namespace cuda_test;
using graph::Shape;

const graph::DType kSome[] = {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kInt32, graph::kInt64,
                              graph::kBool};

// x (CPU) as dtype d; bool from the sign.
Tensor as(const Tensor& x, graph::DType d) { return d == graph::kBool ? graph::gt(x, 0.0) : x.to(d); }

// The message of the error f throws, or "" when none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const graph::Error& e) {
    return e.what();
  }
  return "";
}

// The device throws the CPU's error, word for word.
void expect_same_error(const std::function<void(bool device)>& f, const std::string& what) {
  const std::string cpu = error_of([&] { f(false); }), gpu = error_of([&] { f(true); });
  EXPECT_FALSE(cpu.empty()) << what;
  EXPECT_EQ(gpu, cpu) << what;
}

Tensor on(bool device, const Tensor& t) { return device ? cuda(t) : t; }

// Indices in [0, n) of the given shape, repeats likely.
Tensor indices(const Shape& s, int64_t n) { return (graph::rand(s) * static_cast<double>(n)).to(graph::kInt64).clamp(0, n - 1); }

TEST_F(Cuda, IndexSelectEveryDtypeDimAndStride) {
  const Tensor base = signed_values({5, 6, 7});
  for (graph::DType d : kSome) {
    const Tensor x = as(base, d);
    const std::string dn(graph::dtype_name(d));
    for (int64_t dim : {0, 1, 2, -1}) {
      const Tensor idx = indices({9}, x.size(dim));
      expect_close(graph::index_select(cuda(x), dim, cuda(idx)), graph::index_select(x, dim, idx), 0,
                   "index_select " + dn + " dim " + std::to_string(dim));
      expect_close(graph::index_select(cuda(x).transpose(0, 2), dim, cuda(idx.clamp(0, 4))),
                   graph::index_select(x.transpose(0, 2), dim, idx.clamp(0, 4)), 0, "index_select strided " + dn);
      expect_close(graph::index_select(cuda(x), dim, cuda(idx.to(graph::kInt32))),
                   graph::index_select(x, dim, idx.to(graph::kInt32)), 0, "index_select int32 index " + dn);
    }
  }
  const Tensor idx = graph::tensor({4, 0, 4, 2});
  for (graph::DType d : {graph::kFloat32, graph::kFloat64})
    expect_grads_close([&](const std::vector<Tensor>& in) { return graph::index_select(in[0], 1, on(in[0].device() == graph::kCUDA, idx)); },
                       {base.to(d)}, {5, 4, 7}, 1e-6, "index_select");
}

TEST_F(Cuda, GatherEveryDtypeDimAndStride) {
  const Tensor base = signed_values({4, 5, 6});
  for (graph::DType d : kSome) {
    const Tensor x = as(base, d);
    const std::string dn(graph::dtype_name(d));
    for (int64_t dim : {0, 1, 2}) {
      Shape is = {3, 4, 5};
      const Tensor idx = indices(is, x.size(dim));
      expect_close(graph::gather(cuda(x), dim, cuda(idx)), graph::gather(x, dim, idx), 0, "gather " + dn);
      expect_close(graph::gather(cuda(x).transpose(1, 2), dim, cuda(idx.clamp(0, 3))),
                   graph::gather(x.transpose(1, 2), dim, idx.clamp(0, 3)), 0, "gather strided input " + dn);
      const Tensor wide = indices({4, 1, 1}, x.size(dim)).expand({4, 5, 6});  // a broadcast index
      expect_close(graph::gather(cuda(x), dim, cuda(wide)), graph::gather(x, dim, wide), 0, "gather broadcast " + dn);
    }
  }
  const Tensor idx = indices({4, 3, 6}, 5);
  for (graph::DType d : {graph::kFloat32, graph::kFloat64})
    expect_grads_close([&](const std::vector<Tensor>& in) { return graph::gather(in[0], 1, on(in[0].device() == graph::kCUDA, idx)); },
                       {base.to(d)}, {4, 3, 6}, 1e-6, "gather (repeated indices)");
}

TEST_F(Cuda, ScatterAddEveryDtypeWithRepeats) {
  for (graph::DType d : kSome) {
    const std::string dn(graph::dtype_name(d));
    const Tensor self = as(signed_values({5, 6}), d), src = as(signed_values({7, 6}), d);
    for (int64_t dim : {0, 1}) {
      const Tensor idx = indices({4, 5}, self.size(dim));
      const double tol = d == graph::kFloat32 || d == graph::kFloat16 ? 1e-3 : 1e-12;  // atomic adds: any order
      expect_close(graph::scatter_add(cuda(self), dim, cuda(idx), cuda(src)), graph::scatter_add(self, dim, idx, src),
                   tol, "scatter_add " + dn + " dim " + std::to_string(dim));
      expect_close(graph::scatter_add(cuda(self), dim, cuda(idx), cuda(src.t().contiguous()).t()),
                   graph::scatter_add(self, dim, idx, src.t().contiguous().t()), tol, "scatter_add strided src " + dn);
    }
  }
  const Tensor idx = indices({4, 6}, 5);
  expect_grads_close(
      [&](const std::vector<Tensor>& in) {
        return graph::scatter_add(in[0], 0, on(in[0].device() == graph::kCUDA, idx), in[1]);
      },
      {signed_values({5, 6}), signed_values({7, 6})}, {5, 6}, 1e-6, "scatter_add");
}

TEST_F(Cuda, IndexOpsReportBadIndicesAsTheCpu) {
  const Tensor x = signed_values({4, 5});
  expect_same_error([&](bool g) { graph::index_select(on(g, x), 1, on(g, graph::tensor({0, 5, 7}))); },
                    "index_select past the end");
  expect_same_error([&](bool g) { graph::index_select(on(g, x), 0, on(g, graph::tensor({-1}))); },
                    "index_select negative");
  expect_same_error([&](bool g) { graph::gather(on(g, x), 0, on(g, graph::tensor({{0, 1}, {4, 9}}))); },
                    "gather: the first bad index is named");
  expect_same_error([&](bool g) { graph::scatter_add(on(g, x), 1, on(g, graph::tensor({{6}})), on(g, x)); },
                    "scatter_add");
  expect_same_error([&](bool g) { graph::gather(on(g, x), 0, on(g, graph::tensor({{0}}).to(graph::kInt32))); },
                    "gather: an int32 index");
  // The index on the other device: an error naming both.
  const std::string mixed = error_of([&] { graph::gather(cuda(x), 0, graph::tensor({{0}})); });
  EXPECT_NE(mixed.find("gather: expected the index on the input's device (cuda), got cpu"), std::string::npos) << mixed;
  // After a bad index the device is still usable.
  expect_close(graph::gather(cuda(x), 1, cuda(graph::tensor({{1}, {2}, {3}, {4}}))),
               graph::gather(x, 1, graph::tensor({{1}, {2}, {3}, {4}})), 0, "gather after an error");
}

TEST_F(Cuda, TriangleEveryDtypeAndDiagonal) {
  const Tensor base = signed_values({3, 5, 7});
  for (graph::DType d : kSome) {
    const Tensor x = as(base, d);
    for (int64_t k : {-7, -2, 0, 1, 3, 100}) {
      const std::string what = std::string(graph::dtype_name(d)) + " diagonal " + std::to_string(k);
      expect_close(graph::triu(cuda(x), k), graph::triu(x, k), 0, "triu " + what);
      expect_close(graph::tril(cuda(x), k), graph::tril(x, k), 0, "tril " + what);
      expect_close(graph::triu(cuda(x).transpose(1, 2), k), graph::triu(x.transpose(1, 2), k), 0, "triu strided " + what);
    }
  }
  expect_grads_close([](const std::vector<Tensor>& in) { return graph::tril(in[0], -1) + graph::triu(in[0], 2); },
                     {base}, {3, 5, 7}, 0, "triu + tril");
}

TEST_F(Cuda, CumsumEveryDtypeAndDim) {
  const Tensor base = signed_values({4, 33, 5});
  for (graph::DType d : kSome) {
    const Tensor x = as(base, d);
    for (int64_t dim : {0, 1, 2, -1}) {
      const std::string what = std::string(graph::dtype_name(d)) + " dim " + std::to_string(dim);
      expect_close(graph::cumsum(cuda(x), dim), graph::cumsum(x, dim), 1e-6, "cumsum " + what);  // the CPU's order
      expect_close(graph::cumsum(cuda(x).transpose(0, 2), dim), graph::cumsum(x.transpose(0, 2), dim), 1e-6,
                   "cumsum strided " + what);
    }
  }
  expect_close(graph::cumsum(cuda(graph::full({}, 2.5)), 0), graph::cumsum(graph::full({}, 2.5), 0), 0, "0-d");
  for (graph::DType d : {graph::kFloat32, graph::kFloat64})
    expect_grads_close([](const std::vector<Tensor>& in) { return graph::cumsum(in[0], 1); }, {base.to(d)},
                       {4, 33, 5}, 1e-6, "cumsum");
  const Tensor g = signed_values({4, 33, 5});
  expect_close(graph::detail::cumsum_backward(cuda(g), cuda(base), 1, graph::detail::kAllGrads)[0],
               graph::detail::cumsum_backward(g, base, 1, graph::detail::kAllGrads)[0], 1e-6, "cumsum_backward");
}

TEST_F(Cuda, ArgsortIsStableWithNanLastAndSignedZerosEqual) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor special = graph::tensor({{3.0, nan, -0.0, 0.0, -inf, 1.0, 0.0, nan, -0.0, inf, 3.0, -2.0}});
  for (graph::DType d : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kBFloat16})
    for (bool desc : {false, true})
      expect_close(graph::argsort(cuda(special.to(d)), -1, desc), graph::argsort(special.to(d), -1, desc), 0,
                   std::string("argsort special values ") + std::string(graph::dtype_name(d)) + (desc ? " descending" : ""));
  // Many ties (rounded values), every dtype, every dim, long and short rows.
  for (const Shape& s : {Shape{6, 5, 7}, Shape{3, 2000}}) {
    const Tensor base = signed_values(s).to(graph::kInt64).to(graph::kFloat32);  // many ties
    for (graph::DType d : kSome) {
      const Tensor x = as(base, d);
      for (int64_t dim = 0; dim < x.dim(); ++dim)
        for (bool desc : {false, true}) {
          const std::string what = std::string(graph::dtype_name(d)) + " " + graph::shape_str(s) + " dim " +
                                   std::to_string(dim) + (desc ? " descending" : "");
          expect_close(graph::argsort(cuda(x), dim, desc), graph::argsort(x, dim, desc), 0, "argsort " + what);
          const auto [vg, ig] = graph::sort(cuda(x), dim, desc);
          const auto [vc, ic] = graph::sort(x, dim, desc);
          expect_close(vg, vc, 0, "sort values " + what);
          expect_close(ig, ic, 0, "sort indices " + what);
        }
      const auto [tg, tig] = graph::topk(cuda(x), 2, 0, true);
      const auto [tc, tic] = graph::topk(x, 2, 0, true);
      expect_close(tg, tc, 0, "topk values");
      expect_close(tig, tic, 0, "topk indices");
    }
  }
  expect_close(graph::argsort(cuda(graph::full({}, 1.0))), graph::argsort(graph::full({}, 1.0)), 0, "0-d");
  expect_grads_close([](const std::vector<Tensor>& in) { return std::get<0>(graph::sort(in[0], 1)); },
                     {signed_values({4, 9})}, {4, 9}, 0, "sort values");
}

TEST_F(Cuda, BatchNormTrainEvalAndRunningStats) {
  for (graph::DType d : {graph::kFloat32, graph::kFloat64, graph::kFloat16}) {
    const double tol = d == graph::kFloat64 ? 1e-10 : d == graph::kFloat16 ? 2e-3 : 1e-5;
    const std::string dn(graph::dtype_name(d));
    for (const Shape& s : {Shape{8, 3}, Shape{4, 3, 10}, Shape{2, 3, 5, 6}}) {
      const Tensor x = (signed_values(s) + 50.0).to(d);  // far from 0: the two-pass variance matters
      const Tensor w = signed_values({3}).to(d), b = signed_values({3}).to(d);
      const std::string what = dn + " " + graph::shape_str(s);
      // Training with running stats: the output and the updated stats.
      Tensor rm = signed_values({3}).to(d), rv = positive({3}).to(d);
      Tensor rmg = cuda(rm), rvg = cuda(rv);
      expect_close(graph::batch_norm(cuda(x), rmg, rvg, cuda(w), cuda(b), true, 0.3, 1e-5),
                   graph::batch_norm(x, rm, rv, w, b, true, 0.3, 1e-5), tol, "batch_norm train " + what);
      expect_close(rmg, rm, tol, "running_mean " + what);
      expect_close(rvg, rv, tol, "running_var " + what);
      expect_close(graph::batch_norm(cuda(x), rmg, rvg, cuda(w), cuda(b), false, 0.3, 1e-5),
                   graph::batch_norm(x, rm, rv, w, b, false, 0.3, 1e-5), tol, "batch_norm eval " + what);
      expect_close(graph::batch_norm(cuda(x), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3),
                   graph::batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3), tol,
                   "batch_norm without stats or affine " + what);
      if (d == graph::kFloat16) continue;
      for (bool training : {true, false}) {
        const auto f = [&, training](const std::vector<Tensor>& in) {
          const bool g = in[0].device() == graph::kCUDA;
          return graph::batch_norm(in[0], on(g, rm), on(g, rv), in[1], in[2], training, 0.0, 1e-5);
        };
        expect_grads_close(f, {x, w, b}, s, tol * 100, "batch_norm grads " + what + (training ? " train" : " eval"));
        const Tensor g = signed_values(s).to(d);
        const auto gg = graph::detail::batch_norm_backward(cuda(g), cuda(x), cuda(rm), cuda(rv), cuda(w), cuda(b),
                                                           training, 1e-5, graph::detail::kAllGrads);
        const auto gc = graph::detail::batch_norm_backward(g, x, rm, rv, w, b, training, 1e-5, graph::detail::kAllGrads);
        for (size_t i : {0, 3, 4}) expect_close(gg[i], gc[i], tol * 100, "batch_norm_backward " + std::to_string(i));
      }
    }
  }
  expect_same_error([](bool g) { graph::batch_norm(on(g, graph::ones({4, 3})), on(g, graph::zeros({2})), on(g, graph::ones({2}))); },
                    "batch_norm: running stats of the wrong size");
}

TEST_F(Cuda, InterpolateModesAndGradients) {
  using graph::interpolate;
  const Tensor x4 = signed_values({2, 3, 5, 7}), x3 = signed_values({2, 3, 9});
  for (graph::DType d : kSome) {
    const std::string dn(graph::dtype_name(d));
    expect_close(interpolate(cuda(as(x4, d)), {11, 4}), interpolate(as(x4, d), {11, 4}), 0, "nearest 2-D " + dn);
    expect_close(interpolate(cuda(as(x4, d)), {10, 14}), interpolate(as(x4, d), {10, 14}), 0, "nearest 2x " + dn);
    expect_close(interpolate(cuda(as(x3, d)), {20}), interpolate(as(x3, d), {20}), 0, "nearest 1-D " + dn);
    expect_close(graph::interpolate_scale(cuda(as(x4, d)), 1.7), graph::interpolate_scale(as(x4, d), 1.7), 0,
                 "nearest scale " + dn);
  }
  for (graph::DType d : {graph::kFloat32, graph::kFloat64, graph::kFloat16}) {
    const std::string dn(graph::dtype_name(d));
    // The CPU's arithmetic, rounded alike (no fma): equal unless the host
    // compiler contracted the blends.
    const double tol = d == graph::kFloat64 ? 1e-14 : d == graph::kFloat16 ? 1e-3 : 1e-6;
    for (bool ac : {false, true}) {
      const std::string what = dn + (ac ? " align_corners" : "");
      expect_close(interpolate(cuda(x4.to(d)), {9, 13}, graph::kBilinear, ac),
                   interpolate(x4.to(d), {9, 13}, graph::kBilinear, ac), tol, "bilinear up " + what);
      expect_close(interpolate(cuda(x4.to(d)), {3, 4}, graph::kBilinear, ac),
                   interpolate(x4.to(d), {3, 4}, graph::kBilinear, ac), tol, "bilinear down " + what);
      expect_close(interpolate(cuda(x3.to(d)), {16}, graph::kLinear, ac), interpolate(x3.to(d), {16}, graph::kLinear, ac),
                   tol, "linear " + what);
      expect_close(graph::interpolate_scale(cuda(x4.to(d)), 2.5, graph::kBilinear, ac),
                   graph::interpolate_scale(x4.to(d), 2.5, graph::kBilinear, ac), tol, "bilinear scale " + what);
      expect_close(interpolate(cuda(x4.to(d)).transpose(2, 3), {6, 6}, graph::kBilinear, ac),
                   interpolate(x4.to(d).transpose(2, 3), {6, 6}, graph::kBilinear, ac), tol, "bilinear strided " + what);
    }
  }
  for (graph::InterpolateMode m : {graph::kNearest, graph::kBilinear})
    expect_grads_close([m](const std::vector<Tensor>& in) { return interpolate(in[0], {8, 12}, m); }, {x4},
                       {2, 3, 8, 12}, 1e-5, "interpolate 2-D grads");
  expect_grads_close([](const std::vector<Tensor>& in) { return interpolate(in[0], {4}, graph::kLinear, true); },
                     {x3}, {2, 3, 4}, 1e-5, "interpolate linear grads");
  const Tensor g = signed_values({2, 3, 10, 3});
  expect_close(graph::detail::interpolate_backward(cuda(g), cuda(x4), {10, 3}, 0.0, 2, false),
               graph::detail::interpolate_backward(g, x4, {10, 3}, 0.0, 2, false), 1e-5, "interpolate_backward");
  expect_same_error([&](bool dev) { interpolate(on(dev, x4.to(graph::kInt64)), {3, 3}, graph::kBilinear); },
                    "interpolate: bilinear of integers");
}

TEST_F(Cuda, IndexBackwardKernelsOfGraphs) {
  using namespace graph::detail;
  const Tensor x = signed_values({4, 5, 6}), gsel = signed_values({4, 3, 6}), idx1 = graph::tensor({4, 0, 4});
  expect_close(index_select_backward(cuda(gsel), cuda(x), cuda(idx1), 1, kAllGrads)[0],
               index_select_backward(gsel, x, idx1, 1, kAllGrads)[0], 1e-6, "index_select_backward");
  const Tensor idx = indices({4, 3, 6}, 5);
  expect_close(gather_backward(cuda(gsel), cuda(x), cuda(idx), 1, kAllGrads)[0],
               gather_backward(gsel, x, idx, 1, kAllGrads)[0], 1e-6, "gather_backward");
  const Tensor src = signed_values({4, 7, 6}), gs = signed_values({4, 5, 6});
  const auto sg = scatter_add_backward(cuda(gs), cuda(x), cuda(idx), cuda(src), 1, kAllGrads);
  const auto sc = scatter_add_backward(gs, x, idx, src, 1, kAllGrads);
  expect_close(sg[0], sc[0], 0, "scatter_add_backward self");
  expect_close(sg[2], sc[2], 0, "scatter_add_backward src (zeros past the index)");
}

// A graph of these ops (traced on the CPU, run by the interpreter) on device
// inputs: every node runs its device kernel.
TEST_F(Cuda, TracedGraphOfTheseOpsRunsOnTheDevice) {
  const graph::TraceFn f = [](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &idx = in[1], &rm = in[2], &rv = in[3], &sel = in[4];
    return std::vector<Tensor>{graph::gather(x, 3, idx) * 2.0,
                               graph::cumsum(x, 2),
                               graph::triu(x, 1) + graph::tril(x, -1),
                               graph::argsort(x, 3, true),
                               graph::interpolate(x, {7, 9}, graph::kBilinear),
                               graph::batch_norm(x, rm, rv, Tensor(), Tensor(), false, 0.1, 1e-5),
                               graph::scatter_add(x, 3, idx, x),
                               graph::index_select(x, 3, sel)};
  };
  const std::vector<Tensor> in = {signed_values({2, 3, 4, 5}), indices({2, 3, 4, 2}, 5), signed_values({3}),
                                  positive({3}), graph::tensor({4, 0, 4})};
  const graph::TracedGraph tg = graph::trace(f, in);
  std::vector<Tensor> din;
  for (const Tensor& t : in) din.push_back(cuda(t));
  const std::vector<Tensor> gpu = tg.run(din), cpu = f(in);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) expect_close(gpu[i], cpu[i], 1e-5, "traced output " + std::to_string(i));
}

}  // namespace
