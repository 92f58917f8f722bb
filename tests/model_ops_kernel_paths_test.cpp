// The fast paths of gather, scatter_add, cumsum, triu/tril, bmm and
// adaptive_avg_pool2d (issue 19's per-op speed): each against a plain
// reference loop over every element, in the shapes that pick each path (the
// last dim, a middle dim, blocks of lines and their remainder), with strided
// inputs and indices, every dtype, empty tensors and out-of-range indices.
// Part of op_fixture_test.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "graph/cpu_isa.h"
#include "graph/graph.h"
#include "graph/scalar_ops.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::doubles;

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t d = static_cast<int64_t>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

// The position of flat element e of shape s, with dim d's coordinate set to v,
// flattened in shape t.
int64_t moved(int64_t e, const Shape& s, int64_t d, int64_t v, const Shape& t) {
  const std::vector<int64_t> ss = strides_of(s), ts = strides_of(t);
  int64_t at = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    const int64_t c = (e / ss[j]) % s[j];
    at += (static_cast<int64_t>(j) == d ? v : c) * ts[j];
  }
  return at;
}

std::vector<double> gather_ref(const Tensor& x, int64_t d, const Tensor& index) {
  const std::vector<double> xv = doubles(x), iv = doubles(index);
  std::vector<double> out(iv.size());
  for (size_t e = 0; e < iv.size(); ++e)
    out[e] = xv[moved(static_cast<int64_t>(e), index.sizes(), d, static_cast<int64_t>(iv[e]), x.sizes())];
  return out;
}

std::vector<double> scatter_add_ref(const Tensor& self, int64_t d, const Tensor& index, const Tensor& src) {
  std::vector<double> out = doubles(self);
  const std::vector<double> iv = doubles(index), sv = doubles(src);
  for (size_t e = 0; e < iv.size(); ++e) {
    const int64_t from = moved(static_cast<int64_t>(e), index.sizes(), -1, 0, src.sizes());
    out[moved(static_cast<int64_t>(e), index.sizes(), d, static_cast<int64_t>(iv[e]), self.sizes())] += sv[from];
  }
  return out;
}

// Random indices in [0, n) of the given shape.
Tensor indices(const Shape& s, int64_t n) { return (graph::rand(s) * static_cast<double>(n)).to(graph::kInt64); }

TEST(KernelPaths, GatherAlongEveryDimInEveryDtype) {
  graph::manual_seed(7);
  const Tensor x = graph::randn({5, 6, 7}) * 10.0;
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kBFloat16, graph::kInt32,
                          graph::kInt64, graph::kBool}) {
    const Tensor xd = x.to(dt);
    for (int64_t d = 0; d < 3; ++d) {
      Shape is = {4, 5, 6};
      const Tensor i = indices(is, x.size(d));
      EXPECT_EQ(doubles(graph::gather(xd, d, i)), gather_ref(xd, d, i)) << "dim " << d;
    }
  }
  // A strided input and a strided index, along the last dim (the one-load path).
  const Tensor xt = x.transpose(0, 2);  // [7, 6, 5]
  const Tensor it = indices({3, 4, 6}, 5).transpose(1, 2);  // [3, 6, 4]
  EXPECT_EQ(doubles(graph::gather(xt, 2, it)), gather_ref(xt.contiguous(), 2, it.contiguous()));
  // An index broadcast along the trailing dims (whole rows moved at once).
  const Tensor rows = indices({4, 1, 1}, 5).expand({4, 6, 7});
  EXPECT_EQ(doubles(graph::gather(x, 0, rows)), gather_ref(x, 0, rows.contiguous()));
  // Empty: no index, or an index with an empty trailing dim.
  EXPECT_EQ(graph::gather(x, 2, graph::zeros({5, 6, 0}, graph::kInt64)).sizes(), (Shape{5, 6, 0}));
  EXPECT_EQ(graph::gather(x, 0, graph::zeros({2, 6, 0}, graph::kInt64).expand({2, 6, 0})).sizes(), (Shape{2, 6, 0}));
  EXPECT_EQ(graph::gather(x, 1, graph::zeros({0, 6, 7}, graph::kInt64)).sizes(), (Shape{0, 6, 7}));
}

// Along the last dim of a contiguous input with an index as large elsewhere
// (topk's and sort's values): the row-by-row path, in every dtype, with
// indices fewer and more than the dim, 1-D, and NaN payloads copied as bits;
// with a gradient wanted, the general path and its gradient.
TEST(KernelPaths, GatherOfWholeRowsAlongTheLastDim) {
  graph::manual_seed(9);
  const Tensor x = graph::randn({3, 4, 7}) * 10.0;
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kBFloat16, graph::kInt32,
                          graph::kInt64, graph::kBool}) {
    const Tensor xd = x.to(dt);
    for (int64_t k : {0, 1, 5, 9}) {
      const Tensor i = indices({3, 4, k}, 7);
      EXPECT_EQ(doubles(graph::gather(xd, -1, i)), gather_ref(xd, 2, i)) << "k " << k;
    }
    const Tensor x1 = xd.reshape({-1}), i1 = indices({30}, 84);
    EXPECT_EQ(doubles(graph::gather(x1, 0, i1)), gather_ref(x1, 0, i1));
  }
  const float nan = std::bit_cast<float>(0x7fc01234u);
  const Tensor xn = graph::tensor<float>({{1.0f, nan}, {-0.0f, 2.0f}});
  const Tensor got = graph::gather(xn, 1, graph::tensor<int64_t>({{1, 1, 0}, {0, 1, 0}}));
  const uint32_t want[] = {0x7fc01234u, 0x7fc01234u, 0x3f800000u, 0x80000000u, 0x40000000u, 0x80000000u};
  for (int e = 0; e < 6; ++e) EXPECT_EQ(std::bit_cast<uint32_t>(got.data_ptr<float>()[e]), want[e]) << e;
  const Tensor xg = graph::randn({2, 5}).requires_grad_(true);
  const Tensor ig = graph::tensor<int64_t>({{4, 4, 0}, {1, 2, 3}});
  graph::gather(xg, 1, ig).sum().backward();
  EXPECT_EQ(doubles(xg.grad()), (std::vector<double>{1, 0, 0, 0, 2, 0, 1, 1, 1, 0}));
}

TEST(KernelPaths, IndexSelectAlongTheLastDimInEveryDtype) {
  graph::manual_seed(6);
  const Tensor x = graph::randn({3, 4, 9}) * 10.0;
  const Tensor i = graph::tensor<int64_t>({8, 0, 3, 3, 5});
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kInt32, graph::kInt64,
                          graph::kBool}) {
    const Tensor xd = x.to(dt);
    const Tensor want = graph::gather(xd, 2, i.reshape({1, 1, 5}).expand({3, 4, 5}).contiguous());
    EXPECT_EQ(doubles(graph::index_select(xd, 2, i)), doubles(want));
    EXPECT_EQ(doubles(graph::index_select(xd.transpose(0, 2), 0, i)), doubles(want.transpose(0, 2)));
  }
  EXPECT_EQ(graph::index_select(x, 2, graph::zeros({0}, graph::kInt64)).sizes(), (Shape{3, 4, 0}));
}

TEST(KernelPaths, IndicesOutOfRangeAreErrors) {
  const Tensor x = graph::zeros({2, 3});
  for (int64_t bad : {int64_t{-1}, int64_t{3}, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    const Tensor i = graph::tensor<int64_t>({{0, 1}, {2, bad}});
    try {
      graph::gather(x, 1, i);
      ADD_FAILURE() << "gather took index " << bad;
    } catch (const graph::Error& e) {
      EXPECT_NE(std::string(e.what()).find("index " + std::to_string(bad) + " is out of range"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(x.scatter_add(1, i, graph::ones({2, 2})), graph::Error);
  }
}

TEST(KernelPaths, ScatterAddAlongEveryDim) {
  graph::manual_seed(8);
  // Exact sums only (float32 would round each add, the reference adds in double).
  for (graph::DType dt : {graph::kFloat64, graph::kInt64, graph::kInt32}) {
    const Tensor self = (graph::randn({4, 5, 6}) * 10.0).to(dt);
    const Tensor src = (graph::randn({4, 6, 7}) * 10.0).to(dt);
    for (int64_t d = 0; d < 3; ++d) {
      const Tensor i = indices({3, 4, 5}, self.size(d));  // repeated positions add up
      EXPECT_EQ(doubles(self.scatter_add(d, i, src)), scatter_add_ref(self, d, i, src)) << "dim " << d;
    }
  }
  // A strided self, index and src along the last dim.
  const Tensor self = graph::randn({6, 4}, graph::kFloat64).t(), src = graph::randn({7, 4}, graph::kFloat64).t();
  const Tensor i = indices({3, 4}, 6).t();
  EXPECT_EQ(doubles(self.scatter_add(1, i, src)), scatter_add_ref(self.contiguous(), 1, i.contiguous(), src.contiguous()));
  EXPECT_EQ(doubles(self.scatter_add(1, graph::zeros({4, 0}, graph::kInt64), src)), doubles(self));
}

// The running sums in double, one line at a time.
std::vector<double> cumsum_ref(const Tensor& x, int64_t d) {
  const std::vector<double> xv = doubles(x);
  std::vector<double> out(xv.size());
  const std::vector<int64_t> st = strides_of(x.sizes());
  for (size_t e = 0; e < xv.size(); ++e) {
    const int64_t j = (static_cast<int64_t>(e) / st[d]) % x.size(d);
    out[e] = xv[e] + (j ? out[e - st[d]] : 0.0);
  }
  return out;
}

TEST(KernelPaths, CumsumInBlocksOfLinesAndTheirRemainder) {
  graph::manual_seed(9);
  // 19 lines (two blocks of 8 and 3 more) along the last dim and along the first.
  const Tensor x = graph::randn({19, 13}, graph::kFloat64);
  EXPECT_EQ(doubles(graph::cumsum(x, 1)), cumsum_ref(x, 1));
  EXPECT_EQ(doubles(graph::cumsum(x.t(), 1)), cumsum_ref(x.t().contiguous(), 1));
  const Tensor y = graph::randn({3, 5, 11}, graph::kFloat64);
  for (int64_t d = 0; d < 3; ++d) EXPECT_EQ(doubles(graph::cumsum(y, d)), cumsum_ref(y, d)) << "dim " << d;
  // float32 sums in double and rounds each running sum once.
  const Tensor f = graph::randn({9, 40});
  std::vector<double> want = cumsum_ref(f.to(graph::kFloat64), 1);
  for (double& w : want) w = static_cast<float>(w);
  EXPECT_EQ(doubles(graph::cumsum(f, 1)), want);
  const Tensor n = graph::arange(-30, 30).reshape({10, 6});  // int64
  EXPECT_EQ(doubles(graph::cumsum(n, 1)), cumsum_ref(n, 1));
  // The gradient is the reverse running sum, in blocks too.
  Tensor w = graph::randn({10, 5}, graph::kFloat64).requires_grad_();
  const Tensor g = graph::randn({10, 5}, graph::kFloat64);
  (graph::cumsum(w, 1) * g).sum().backward();
  const std::vector<double> gv = doubles(g);
  std::vector<double> rev(gv.size());
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 4; j >= 0; --j) rev[i * 5 + j] = gv[i * 5 + j] + (j < 4 ? rev[i * 5 + j + 1] : 0.0);
  EXPECT_EQ(doubles(w.grad()), rev);
}

TEST(KernelPaths, TriangleOfEveryDiagonalAndDtype) {
  const Tensor x = graph::arange(1, 1 + 2 * 4 * 6).reshape({2, 4, 6});
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64, graph::kFloat16, graph::kInt32, graph::kBool}) {
    const Tensor xd = x.to(dt);
    const std::vector<double> xv = doubles(xd);
    for (int64_t diag : {small, int64_t{-5}, int64_t{-1}, int64_t{0}, int64_t{2}, int64_t{6}, big}) {
      std::vector<double> up(xv.size()), low(xv.size());
      for (size_t e = 0; e < xv.size(); ++e) {
        const int64_t i = (static_cast<int64_t>(e) / 6) % 4, j = static_cast<int64_t>(e) % 6;
        // j - i compared without overflow at the extreme diagonals.
        const bool above = diag == small || (diag != big && j - i >= diag);
        const bool below = diag == big || (diag != small && j - i <= diag);
        up[e] = above ? xv[e] : 0.0;
        low[e] = below ? xv[e] : 0.0;
      }
      EXPECT_EQ(doubles(graph::triu(xd, diag)), up) << "diagonal " << diag;
      EXPECT_EQ(doubles(graph::tril(xd, diag)), low) << "diagonal " << diag;
    }
  }
  const Tensor t = x.transpose(1, 2);  // strided [2, 6, 4]
  EXPECT_EQ(doubles(graph::tril(t, 1)), doubles(graph::tril(t.contiguous(), 1)));
  EXPECT_EQ(graph::tril(graph::zeros({3, 0})).sizes(), (Shape{3, 0}));
}

// Products narrower than a column block (bmm of small matrices): rows in
// fours and their remainder, columns in vectors and their remainder, against
// the naive loop in the same order (the kernels never fuse multiply-adds).
template <class T>
void expect_naive_products(graph::DType dt) {
  graph::manual_seed(10);
  for (int64_t n : {1, 4, 7}) {
    for (int64_t m : {1, 3, 4, 5, 8, 13}) {
      const int64_t k = 6;
      const Tensor a = graph::randn({2, n, k}, dt), b = graph::randn({2, k, m}, dt);
      const Tensor c = graph::bmm(a, b);
      const T* pa = a.data_ptr<T>();
      const T* pb = b.data_ptr<T>();
      std::vector<double> want;
      for (int64_t s = 0; s < 2; ++s)
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < m; ++j) {
            T acc = 0;
            for (int64_t p = 0; p < k; ++p) {
              const T prod = pa[(s * n + i) * k + p] * pb[(s * k + p) * m + j];
              acc = acc + prod;
            }
            want.push_back(acc);
          }
      EXPECT_EQ(doubles(c), want) << "n " << n << ", m " << m;
    }
  }
}

TEST(KernelPaths, NarrowProductsMatchTheNaiveLoop) {
  expect_naive_products<float>(graph::kFloat32);
  expect_naive_products<double>(graph::kFloat64);
}

// matmul's batch dims taken as they are when equal (no broadcast shapes),
// else broadcast: [2, 3] batches of small products (and a large one, through
// BLAS) with strided operands, an empty batch and k = 0, against the naive
// loop in each batch's own dtype (the small kernels sum in order: exact).
template <class T>
void expect_batched_products(graph::DType dt) {
  graph::manual_seed(11);
  const auto naive = [](const Tensor& a, const Tensor& b) {  // a [B, n, k] @ b [B, k, m], broadcast already
    const Tensor ac = a.contiguous(), bc = b.contiguous();
    const int64_t B = ac.size(0), n = ac.size(1), k = ac.size(2), m = bc.size(2);
    std::vector<double> out;
    for (int64_t s = 0; s < B; ++s)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          T acc = 0;
          for (int64_t p = 0; p < k; ++p) acc = acc + ac.data_ptr<T>()[(s * n + i) * k + p] * bc.data_ptr<T>()[(s * k + p) * m + j];
          out.push_back(acc);
        }
    return out;
  };
  for (int64_t k : {0, 3, 8}) {
    const Tensor a = graph::randn({2, 3, 5, k}, dt), b = graph::randn({2, 3, 8, k}, dt).transpose(-1, -2);
    const Tensor c = graph::matmul(a, b);
    EXPECT_EQ(c.sizes(), (Shape{2, 3, 5, 8}));
    EXPECT_EQ(doubles(c), naive(a.reshape({6, 5, k}), b.reshape({6, k, 8}))) << "k " << k;
    const Tensor a1 = graph::randn({1, 3, 5, k}, dt);  // broadcast over the first batch dim
    EXPECT_EQ(doubles(graph::matmul(a1, b)), naive(a1.expand({2, 3, 5, k}).reshape({6, 5, k}), b.reshape({6, k, 8})));
  }
  const Tensor e = graph::matmul(graph::randn({0, 4, 3}, dt), graph::randn({0, 3, 2}, dt));
  EXPECT_EQ(e.sizes(), (Shape{0, 4, 2}));
  const Tensor big_a = graph::randn({2, 40, 50}, dt), big_b = graph::randn({2, 50, 30}, dt);
  const std::vector<double> got = doubles(graph::bmm(big_a, big_b)), want = naive(big_a, big_b);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3) << "element " << i;
}

TEST(KernelPaths, BatchedProductsOfEqualAndBroadcastBatchDims) {
  expect_batched_products<float>(graph::kFloat32);
  expect_batched_products<double>(graph::kFloat64);
}

// elu of float32 on AVX-512 computes expm1 only for the lanes that need it
// (x <= 0, NaN), packed into whole vectors and put back: bit for bit the
// plain loop (scalar::elu, the fused loops' math), at every length around
// the vector and block sizes, with NaN payloads, signed zeros, infinities,
// subnormal-range and -1-saturated inputs, any alpha; float64, strided and
// 16-bit inputs and the baseline variant alongside.
TEST(KernelPaths, EluOfOnlyTheLanesThatNeedExpm1IsTheScalarElu) {
  graph::manual_seed(13);
  const int best = graph::cpu::best_isa();
  const float specials[] = {std::bit_cast<float>(0x7fc01234u), std::bit_cast<float>(0xffc00001u), -0.0f, 0.0f,
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity(),
                            -100.0f, -88.0f, -17.5f, -1e-30f, 1e-30f, -1e-6f};
  for (int isa : {static_cast<int>(graph::cpu::kBaseline), best}) {
    graph::cpu::set_isa(isa);
    for (int64_t n : {0, 1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000}) {
      for (int fill : {0, 1, 2}) {  // random signs, all positive, all negative
        Tensor x = graph::randn({n});
        if (fill == 1) x = x.abs() + 0.5;
        if (fill == 2) x = -x.abs() - 1e-3;
        x = x.contiguous();
        float* px = x.data_ptr<float>();
        for (int64_t i = 0; i < n && fill == 0; i += 7) px[i] = specials[(i / 7) % 12];
        for (double alpha : {1.0, 0.5, -2.0, 0.0}) {
          const Tensor y = graph::elu(x, alpha);
          ASSERT_EQ(y.dtype(), graph::kFloat32);
          for (int64_t i = 0; i < n; ++i) {
            const float want = graph::scalar::elu(px[i], static_cast<float>(alpha));
            ASSERT_EQ(std::bit_cast<uint32_t>(y.data_ptr<float>()[i]), std::bit_cast<uint32_t>(want))
                << "n " << n << " element " << i << " x " << px[i] << " alpha " << alpha << " isa "
                << graph::cpu::isa_name(isa);
          }
        }
      }
    }
    // float64, a strided float32 input, float16: their own paths, the same math.
    const Tensor xd = graph::randn({70}, graph::kFloat64);
    const Tensor yd = graph::elu(xd, 0.7);
    for (int64_t i = 0; i < 70; ++i) ASSERT_EQ(yd.data_ptr<double>()[i], graph::scalar::elu(xd.data_ptr<double>()[i], 0.7));
    const Tensor xs = graph::randn({40, 3}).t();
    EXPECT_EQ(doubles(graph::elu(xs)), doubles(graph::elu(xs.contiguous())));
    const Tensor xh = graph::randn({33}).to(graph::kFloat16);
    EXPECT_EQ(doubles(graph::elu(xh)), doubles(graph::elu(xh.to(graph::kFloat32)).to(graph::kFloat16)));
  }
  graph::cpu::set_isa(best);
}

// A tensor with a Scalar of its dtype (dense, float32/float64) reads the
// scalar from the stack instead of a 0-d tensor: the same bits and dtype as
// the op with that 0-d tensor, and the other cases (promotion, strides,
// 0-d and empty tensors, integers, comparisons) keep their results.
TEST(KernelPaths, TensorScalarOpsMatchTheOpWithAZeroDimTensor) {
  graph::manual_seed(14);
  for (graph::DType dt : {graph::kFloat32, graph::kFloat64}) {
    for (const Shape& s : {Shape{37}, Shape{4, 9}, Shape{}, Shape{0, 3}}) {
      const Tensor x = graph::randn(s, dt);
      const Tensor c = graph::full({}, 0.3, dt);
      EXPECT_EQ(doubles(x * 0.3), doubles(x * c));
      EXPECT_EQ(doubles(x / 0.3), doubles(x / c));
      EXPECT_EQ(doubles(x - 0.3), doubles(x - c));
      EXPECT_EQ(doubles(graph::leaky_relu(x, 0.3)), doubles(graph::leaky_relu(x, c)));
      EXPECT_EQ(doubles(graph::elu(x, 0.3)), doubles(graph::elu(x, c)));
      EXPECT_EQ((x * 0.3).dtype(), dt);
      EXPECT_EQ((x * 0.3).sizes(), s);
      EXPECT_EQ((x > 0.3).dtype(), graph::kBool);
      EXPECT_EQ(doubles(x > 0.3), doubles(x > c));
    }
  }
  const Tensor xt = graph::randn({5, 6}).t();  // strided
  EXPECT_EQ(doubles(xt * 1.5), doubles(xt.contiguous() * 1.5));
  const Tensor xi = graph::tensor<int32_t>({1, 2, 3});  // promoted to float32
  EXPECT_EQ((xi * 0.5).dtype(), graph::kFloat32);
  EXPECT_EQ(doubles(xi * 0.5), (std::vector<double>{0.5, 1.0, 1.5}));
  EXPECT_EQ(doubles(xi * 2), (std::vector<double>{2, 4, 6}));
  const Tensor xh = graph::randn({9}).to(graph::kFloat16);
  EXPECT_EQ((xh * 0.5).dtype(), graph::kFloat16);
  EXPECT_EQ(doubles(xh * 0.5), doubles((xh.to(graph::kFloat32) * 0.5).to(graph::kFloat16)));
  const Tensor xg = graph::randn({3}).requires_grad_(true);
  graph::elu(xg, 0.5).sum().backward();
  ASSERT_TRUE(xg.grad().defined());
}

// adaptive_avg_pool2d's window sums, plane by plane in row-major order as
// PyTorch's CPU kernel, divided by the height, then the width; x contiguous.
template <class T>
std::vector<T> adaptive_pool_ref(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t H = x.size(-2), W = x.size(-1), planes = x.numel() / (H * W);
  const T* px = x.data_ptr<T>();
  std::vector<T> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = i * H / oh, h1 = ((i + 1) * H + oh - 1) / oh;
        const int64_t w0 = j * W / ow, w1 = ((j + 1) * W + ow - 1) / ow;
        T s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += px[p * H * W + ih * W + iw];
        out.push_back(s / static_cast<T>(h1 - h0) / static_cast<T>(w1 - w0));
      }
  return out;
}

// Bit for bit (NaN, -0.0 included): the planes summed as vector lanes (any
// count, a partial last vector, up to the stack buffer's H * W and past it),
// strided inputs, NaN, infinities and -0.0 in the windows, empty batches.
template <class T>
void expect_adaptive_pool_bits(graph::DType dt) {
  graph::manual_seed(12);
  struct Case {
    Shape in;
    int64_t oh, ow;
  };
  const std::vector<Case> cases = {
      {{1, 4, 8, 8}, 3, 3},  {{4, 8, 8}, 3, 3},   {{1, 1, 8, 8}, 3, 3},   {{2, 3, 5, 7}, 3, 4},
      {{1, 9, 7, 5}, 7, 5},  {{3, 2, 6, 6}, 1, 1}, {{1, 5, 32, 32}, 5, 3}, {{1, 3, 33, 33}, 4, 4},
      {{2, 5, 9, 1}, 4, 1},  {{0, 3, 8, 8}, 3, 3}, {{1, 7, 10, 3}, 4, 2}};
  for (const Case& c : cases) {
    for (bool strided : {false, true}) {
      Shape s = c.in;
      if (strided) std::swap(s[s.size() - 1], s[s.size() - 2]);
      Tensor x = graph::randn(s, dt);
      if (strided) x = x.transpose(-1, -2);
      if (x.numel() >= 40) {  // special values inside windows
        Tensor flat = x.contiguous();
        T* p = flat.data_ptr<T>();
        p[3] = std::numeric_limits<T>::quiet_NaN(), p[17] = -0.0, p[18] = -0.0, p[29] = std::numeric_limits<T>::infinity();
        p[37] = -std::numeric_limits<T>::infinity();
        x = strided ? flat.transpose(-1, -2).contiguous().transpose(-1, -2) : flat;
      }
      const Tensor y = graph::adaptive_avg_pool2d(x, {c.oh, c.ow});
      const std::vector<T> want = adaptive_pool_ref<T>(x.contiguous(), c.oh, c.ow);
      ASSERT_EQ(y.numel(), static_cast<int64_t>(want.size()));
      const T* got = y.contiguous().data_ptr<T>();
      for (size_t e = 0; e < want.size(); ++e)
        ASSERT_EQ(std::memcmp(&got[e], &want[e], sizeof(T)), 0)
            << "element " << e << ": " << got[e] << " vs " << want[e] << ", input " << graph::shape_str(c.in)
            << (strided ? " strided" : "") << " to " << c.oh << " x " << c.ow;
    }
  }
}

TEST(KernelPaths, AdaptiveAvgPoolMatchesThePlaneByPlaneLoopBitForBit) {
  expect_adaptive_pool_bits<float>(graph::kFloat32);
  expect_adaptive_pool_bits<double>(graph::kFloat64);
  // 16-bit floats pool in float32 and round once.
  for (graph::DType dt : {graph::kFloat16, graph::kBFloat16}) {
    const Tensor x = graph::randn({2, 3, 8, 8}).to(dt);
    const Tensor want = graph::from_vector(adaptive_pool_ref<float>(x.to(graph::kFloat32), 3, 3), {2, 3, 3, 3}).to(dt);
    EXPECT_EQ(doubles(graph::adaptive_avg_pool2d(x, {3, 3})), doubles(want));
  }
}

}  // namespace
