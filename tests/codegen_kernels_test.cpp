// Generated code that calls library kernels: matmul epilogues, packed-weight
// linear layers, reductions as one loop nest, slices read in place, the conv
// epilogue and bf16 autocast. Each graph of tests/codegen_cases is compared with
// the eager API and, where it matters, an independent double reference.
#include "codegen_test_support.h"

namespace {

using namespace codegen_test;

TEST(Generated, MatmulEpiloguesMatchEager) {
  const Tensor w1 = values({16, 8}, 20), b1 = values({16}, 21), w2 = values({16, 4}, 22), b2 = values({4}, 23);
  for (int64_t batch : {1, 3, 40}) {
    const Tensor x = values({batch, 8}, 24);
    const Tensor want = graph::tanh(graph::add(graph::matmul(graph::relu(graph::linear(x, w1, b1)), w2), b2));
    expect_close(tensor_out(call("cg_matmul_epilogue", {x, w1, b1, w2, b2}, 1), 0), want);
  }
  // A transposed weight is handed to BLAS as such; a strided input goes eager.
  const Tensor x = values({5, 8}, 25);
  const Tensor w1t = values({8, 16}, 26).t();
  expect_close(tensor_out(call("cg_matmul_epilogue", {x, w1t, b1, w2, b2}, 1), 0),
               graph::tanh(graph::add(graph::matmul(graph::relu(graph::linear(x, w1t, b1)), w2), b2)));
  const Tensor xs = values({8, 5}, 27).t();
  expect_close(tensor_out(call("cg_matmul_epilogue", {xs, w1, b1, w2, b2}, 1), 0),
               graph::tanh(graph::add(graph::matmul(graph::relu(graph::linear(xs, w1, b1)), w2), b2)));
}

TEST(Generated, GemmShapeErrorNamesTheLine) {
  // cg_seed's matmul has no static sizes, so the guards pass and the GEMM
  // (through the eager op's checks) reports the mismatch with its line.
  auto* g = graph::detail::find_graph("cg_seed", "test-hash");
  ASSERT_NE(g, nullptr);
  std::vector<IValue> in = {values({3, 5}, 1), values({4, 2}, 2), values({2}, 3), false};
  IValue out[1];
  std::string why;
  try {
    g->fn(in.data(), in.size(), out, &why);
    FAIL() << "expected a graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be multiplied"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at model.cpp:5:14, matmul in static graph 'seed'"), std::string::npos)
        << e.what();
  }
}

// ---- float32 linear layers on packed weights (runtime/src/packed_gemm.cpp) ----

struct MlpParams {
  Tensor w1, b1, w2, b2, w3, b3;
  std::vector<IValue> args(const Tensor& x) const { return {x, w1, b1, w2, b2, w3, b3}; }
};

MlpParams mlp_params(int seed) {
  return {graph::mul(values({128, 96}, seed), 0.1),     values({128}, seed + 1),
          graph::mul(values({128, 128}, seed + 2), 0.1), values({128}, seed + 3),
          graph::mul(values({10, 128}, seed + 4), 0.1),  values({10}, seed + 5)};
}

// linear(relu(linear(relu(linear(x, w1, b1)), w2, b2)), w3, b3) in double,
// by plain loops over the float inputs: the independent reference.
std::vector<double> mlp_reference(const Tensor& x, const MlpParams& p) {
  const auto d = [](const Tensor& t) {
    const Tensor c = t.detach().to(graph::kFloat64).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  const auto layer = [&](const std::vector<double>& in, int64_t rows, const Tensor& w, const Tensor& b, bool relu) {
    const int64_t m = w.size(0), k = w.size(1);
    const std::vector<double> wd = d(w), bd = d(b);
    std::vector<double> out(static_cast<size_t>(rows * m));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = bd[j];
        for (int64_t q = 0; q < k; ++q) s += in[i * k + q] * wd[j * k + q];
        out[i * m + j] = relu ? std::max(s, 0.0) : s;
      }
    return out;
  };
  const int64_t rows = x.size(0);
  return layer(layer(layer(d(x), rows, p.w1, p.b1, true), rows, p.w2, p.b2, true), rows, p.w3, p.b3, false);
}

// Within float32 rounding of sums of ~100 terms of size ~1.
void expect_near_reference(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  const Tensor g = got.contiguous();
  int bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i)
    if (std::fabs(g.data_ptr<float>()[i] - want[i]) > 2e-5 * (1 + std::fabs(want[i])))
      ADD_FAILURE() << what << ": element " << i << " is " << g.data_ptr<float>()[i] << ", want " << want[i], ++bad;
}

Tensor mlp_eager(const Tensor& x, const MlpParams& p) {
  using namespace graph;
  return linear(relu(linear(relu(linear(x, p.w1, p.b1)), p.w2, p.b2)), p.w3, p.b3);
}

// The static graph's result, copied (the graph reuses its output buffer).
Tensor mlp_static(const Tensor& x, const MlpParams& p) {
  return tensor_out(call("cg_packed_mlp", p.args(x), 1), 0).clone();
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr<float>(), y.data_ptr<float>(), static_cast<size_t>(x.numel()) * sizeof(float)) == 0;
}

TEST(PackedGemm, LinearBiasReluMatchesEagerAndDoubleReference) {
  const MlpParams p = mlp_params(50);
  const Tensor w1t = graph::mul(values({96, 128}, 56), 0.1);  // a transposed weight: w1t.t() is [128, 96]
  for (int64_t batch : {2, 4, 64, 100}) {
    const Tensor x = values({batch, 96}, 60);
    const std::vector<double> want = mlp_reference(x, p);
    const std::string what = "batch " + std::to_string(batch);
    for (int call_no = 0; call_no < 3; ++call_no)  // first use, packing, packed
      expect_near_reference(mlp_static(x, p), want, what + ", call " + std::to_string(call_no));
    expect_near_reference(mlp_eager(x, p), want, what + ", eager");
    // Batch 2: below the primitive's row minimum, dnnl_sgemm as in eager.
    if (batch == 2) {
      EXPECT_TRUE(same_bits(mlp_static(x, p), mlp_eager(x, p)));
    }
    MlpParams q = p;
    q.w1 = w1t.t();
    expect_near_reference(mlp_static(x, q), mlp_reference(x, q), what + ", transposed w1");
  }
}

TEST(PackedGemm, CacheHitsOnUnchangedWeightsWithTheSameBits) {
  graph::detail::clear_packed_gemm_cache();
  const MlpParams p = mlp_params(70);
  const Tensor x = values({64, 96}, 71);
  using graph::detail::packed_gemm_stats;
  const auto s0 = packed_gemm_stats();
  const Tensor first = mlp_static(x, p);  // each weight's first use: read as it is
  const auto s1 = packed_gemm_stats();
  EXPECT_EQ(s1.unpacked - s0.unpacked, 3u);
  EXPECT_EQ(s1.packs - s0.packs, 0u);
  const Tensor second = mlp_static(x, p);  // second use: packed
  const auto s2 = packed_gemm_stats();
  EXPECT_EQ(s2.packs - s1.packs, 3u);
  EXPECT_EQ(s2.hits - s1.hits, 0u);
  const Tensor third = mlp_static(x, p);
  const auto s3 = packed_gemm_stats();
  EXPECT_EQ(s3.hits - s2.hits, 3u);
  EXPECT_EQ(s3.packs - s2.packs, 0u);
  EXPECT_EQ(s3.calls - s0.calls, 9u);
  EXPECT_EQ(s3.entries, 3u);
  // The primitive on the weight as it is and on its packed copy: same sums.
  EXPECT_TRUE(same_bits(first, second));
  EXPECT_TRUE(same_bits(first, third));
}

// Module parameters require grad. A call that records no tape (inference)
// still packs them; only a forward run for a backward (graph_gemm.cpp) gives
// trained weights the eager GEMM.
TEST(PackedGemm, WeightsThatRequireGradArePackedForInference) {
  graph::detail::clear_packed_gemm_cache();
  MlpParams p = mlp_params(75);
  for (Tensor* w : {&p.w1, &p.w2, &p.w3}) w->requires_grad_();
  const Tensor x = values({64, 96}, 76);
  using graph::detail::packed_gemm_stats;
  const auto s0 = packed_gemm_stats();
  for (int i = 0; i < 3; ++i) expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "call " + std::to_string(i));
  const auto s1 = packed_gemm_stats();
  EXPECT_EQ(s1.packs - s0.packs, 3u);
  EXPECT_EQ(s1.hits - s0.hits, 3u);
}

TEST(PackedGemm, InPlaceWeightUpdatesArePackedAgain) {
  MlpParams p = mlp_params(80);
  const Tensor x = values({64, 96}, 81);
  for (int i = 0; i < 3; ++i) mlp_static(x, p);  // all three weights packed
  using graph::detail::packed_gemm_stats;

  // add_ on a weight: a new version, so no stale packed copy is used.
  p.w2.add_(graph::mul(values({128, 128}, 82), 0.05));
  auto s0 = packed_gemm_stats();
  expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "after add_");
  auto s1 = packed_gemm_stats();
  EXPECT_EQ(s1.hits - s0.hits, 2u);  // w1 and w3
  EXPECT_EQ(s1.unpacked - s0.unpacked, 1u);  // w2 at its new version
  EXPECT_TRUE(same_bits(mlp_static(x, p), mlp_static(x, p)));  // packs w2, then hits

  // An optimizer step on w1 (gradient from the eager MLP).
  p.w1.requires_grad_();
  graph::optim::SGD opt({p.w1}, graph::optim::SGDOptions(0.05));
  graph::sum(mlp_eager(x, p)).backward();
  opt.step();
  p.w1 = p.w1.detach();
  s0 = packed_gemm_stats();
  const Tensor after_step = mlp_static(x, p);
  s1 = packed_gemm_stats();
  expect_near_reference(after_step, mlp_reference(x, p), "after an SGD step");
  expect_near_reference(mlp_eager(x, p), mlp_reference(x, p), "eager after an SGD step");
  EXPECT_EQ(s1.unpacked - s0.unpacked, 1u);

  // A new weight tensor in place of a dropped one (its storage may reuse
  // the dropped one's memory and even its address).
  p.w3 = Tensor();
  p.w3 = graph::mul(values({10, 128}, 83), 0.1);
  expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "a new w3");
  expect_near_reference(mlp_static(x, p), mlp_reference(x, p), "a new w3, packed");
}

TEST(PackedGemm, GraphBufferReusedAsWeightIsPackedAgain) {
  // A graph output handed back as a weight lives in one of the graph's kept
  // buffers: once dropped, the next call overwrites that same storage. Its
  // version moves (GraphBuffers::take), so its old packed copy is not used.
  const MlpParams pa = mlp_params(90);
  MlpParams producer = pa;
  producer.w3 = graph::mul(values({128, 128}, 91), 0.1);  // output [10, 128]
  producer.b3 = values({128}, 92);
  MlpParams consumer = mlp_params(93);
  const Tensor x = values({64, 96}, 94);
  std::vector<IValue> out = call("cg_packed_mlp", producer.args(values({10, 96}, 95)), 1);
  consumer.w3 = tensor_out(out, 0);
  {
    const void* kept = consumer.w3.storage().get();
    for (int i = 0; i < 3; ++i) expect_near_reference(mlp_static(x, consumer), mlp_reference(x, consumer), "w3 = out");
    consumer.w3 = Tensor();
    out.clear();
    out = call("cg_packed_mlp", producer.args(values({10, 96}, 96)), 1);  // new values, same kept buffer
    consumer.w3 = tensor_out(out, 0);
    EXPECT_EQ(consumer.w3.storage().get(), kept) << "the graph did not reuse its buffer: the case is not exercised";
  }
  expect_near_reference(mlp_static(x, consumer), mlp_reference(x, consumer), "w3 = the next out");
}

TEST(PackedGemm, BadShapesThrowWithTheSourceLine) {
  MlpParams p = mlp_params(100);
  p.w2 = values({128, 100}, 101);  // in_features 100, but h1 has 128
  auto* g = graph::detail::find_graph("cg_packed_mlp", "test-hash");
  ASSERT_NE(g, nullptr);
  const std::vector<IValue> in = p.args(values({64, 96}, 102));
  IValue out[1];
  std::string why;
  try {
    g->fn(in.data(), in.size(), out, &why);
    FAIL() << "expected a graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear: input features 128 do not match weight in_features 100"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("at mlp.cpp:4:12, linear in static graph 'packed_mlp'"), std::string::npos)
        << e.what();
  }
}

// The LSTM-style cell written with the eager API.
std::pair<Tensor, Tensor> lstm_eager(const Tensor& x, Tensor h, Tensor c, const std::vector<Tensor>& w, const Tensor& b,
                                     int64_t steps) {
  using namespace graph;
  for (int64_t t = 0; t < steps; ++t) {
    const Tensor xh = add(x, h);
    const Tensor i = sigmoid(linear(xh, w[0], b)), f = sigmoid(linear(xh, w[1], b));
    const Tensor g = tanh(linear(xh, w[2], b)), o = sigmoid(linear(xh, w[3], b));
    c = add(mul(f, c), mul(i, g));
    h = mul(o, tanh(c));
  }
  return {h, c};
}

TEST(Generated, LstmLoopMatchesEager) {
  const Tensor x = values({1, 8}, 30), h0 = values({1, 8}, 31), c0 = values({1, 8}, 32), b = values({8}, 33);
  std::vector<Tensor> w;
  for (int k = 0; k < 4; ++k) w.push_back(graph::mul(values({8, 8}, 34 + k), 0.3));
  for (int64_t steps : {0, 1, 7}) {
    auto out = call("lstm", {x, h0, c0, w[0], w[1], w[2], w[3], b, steps}, 2);
    const auto [h, c] = lstm_eager(x, h0, c0, w, b, steps);
    expect_close(tensor_out(out, 0), h);
    expect_close(tensor_out(out, 1), c);
  }
}

TEST(Generated, ReductionsOfFusedLoops) {
  const Tensor x = values({5, 6}, 40), y = values({5, 6}, 41);
  auto out = call("cg_reduce_fused", {x, y}, 3);
  const Tensor d = graph::sub(x, y);
  expect_close(tensor_out(out, 0), graph::sum(graph::mul(d, d), {1}));
  expect_close(tensor_out(out, 1), graph::amax(graph::exp(x), {-1}, true));
  expect_close(tensor_out(out, 2), graph::mean(graph::tanh(y)));
}

// ---- reductions as one loop nest (fused_groups.cpp: fused_reduction) ------

// Values whose float sum depends on the order of the double accumulation:
// mostly in [-2, 2), plus every seventh element a large value (+-1e12 and
// more) that the next seventh cancels, so the rounding at 1e12 shows in a
// small result.
Tensor mixed(const graph::Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>(std::sin(0.37 * (i + 1) + seed * 1.3) * 2.0);
    if (i % 7 == 3) v[i] = static_cast<float>(((i / 7) % 2 ? -1e12 : 1e12) * (1 + (i / 14 + seed) % 3));
  }
  return graph::from_vector(v, shape);
}

// Same shape, dtype and bytes (any NaN equals any NaN).
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.to(graph::kFloat64).contiguous(), w = want.to(graph::kFloat64).contiguous();
  const bool f32 = got.dtype() == graph::kFloat32;
  const Tensor gr = got.contiguous(), wr = want.contiguous();
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i) {
    const double a = g.data_ptr<double>()[i], b = w.data_ptr<double>()[i];
    const bool same = (std::isnan(a) && std::isnan(b)) ||
                      (f32 ? std::memcmp(gr.data_ptr<float>() + i, wr.data_ptr<float>() + i, 4) == 0
                           : std::memcmp(gr.data_ptr<double>() + i, wr.data_ptr<double>() + i, 8) == 0);
    if (!same) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << a << ", eager gives " << b;
    }
  }
}

// red_f32 of reduce_nest.graph, op by op.
std::vector<Tensor> red_f32_eager(const Tensor& x, const Tensor& y, double s) {
  using namespace graph;
  return {sum(relu(add(mul(x, y), s)), {-1}),       mean(mul(sub(x, y), sub(x, y))),
          amax(mul(x, s), {0, -1}, true),           amin(neg(y), {-1}, false),
          mean(abs(x), {-1}, true),                 sum(add(x, y))};
}

const char* const kRedNames[] = {"sum rows", "mean all", "amax [0, -1]", "amin rows", "mean rows keepdim", "sum all"};

std::vector<Tensor> red_f32_static(const Tensor& x, const Tensor& y, double s) {
  auto out = call("cg_reduce_nest", {x, y, s}, 6);
  std::vector<Tensor> r;
  for (size_t k = 0; k < out.size(); ++k) r.push_back(tensor_out(out, k));
  return r;
}

// Sizes around the lanes (16), the blocks (256) and the chunks (64K).
const std::vector<graph::Shape> kRedShapes = {{1, 1},   {3, 15},    {2, 16},     {4, 17},   {1, 255},
                                              {2, 256}, {3, 257},   {1, 65535},  {1, 65536}, {2, 65537},
                                              {1, 3 * 65536 + 5},   {64, 2048},  {2, 3, 5}, {3, 4, 70}};

TEST(GeneratedReduce, OneLoopNestMatchesEagerBitwise) {
  for (const auto& shape : kRedShapes) {
    const Tensor x = mixed(shape, 1), y = mixed(shape, 2);
    const auto got = red_f32_static(x, y, 0.5), want = red_f32_eager(x, y, 0.5);
    for (size_t k = 0; k < want.size(); ++k)
      expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + " of " + graph::shape_str(shape));
  }
}

TEST(GeneratedReduce, EveryIsaGivesTheSameBits) {
  const Tensor x = mixed({3, 1000}, 3), y = mixed({3, 1000}, 4);
  const auto want = red_f32_eager(x, y, -1.25);
  for_each_isa([&](const std::string& isa) {
    const auto got = red_f32_static(x, y, -1.25);
    for (size_t k = 0; k < want.size(); ++k) expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + ", " + isa);
  });
}

TEST(GeneratedReduce, DoubleMatchesEagerBitwise) {
  for (const graph::Shape& shape : std::vector<graph::Shape>{{1, 17}, {3, 257}, {1, 65537}, {2, 3, 33}}) {
    const Tensor x = mixed(shape, 5).to(graph::kFloat64), y = mixed(shape, 6).to(graph::kFloat64);
    auto out = call("red_f64", {x, y}, 4);
    using namespace graph;
    const std::string at = " of " + shape_str(shape);
    expect_same_bits(tensor_out(out, 0), sum(mul(x, y), {-1}), "sum rows" + at);
    expect_same_bits(tensor_out(out, 1), mean(sub(x, y)), "mean all" + at);
    expect_same_bits(tensor_out(out, 2), amax(add(x, y)), "amax all" + at);
    expect_same_bits(tensor_out(out, 3), amin(mul(y, y), {-1}, true), "amin rows keepdim" + at);
  }
}

TEST(GeneratedReduce, AgreesWithAnIndependentReference) {
  // sum(x + y) and the row sums against long double sums of the float
  // values; amax/amin against a plain scan.
  const graph::Shape shape{3, 65537};
  const Tensor x = values(shape, 7), y = values(shape, 8);
  const auto got = red_f32_static(x, y, 0.5);
  const float* px = x.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  long double all = 0, mag = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float t = px[i] + py[i];
    all += t;
    mag += std::fabs(t);
  }
  EXPECT_NEAR(got[5].item<float>(), static_cast<double>(all), 1e-6 * static_cast<double>(mag));
  for (int64_t r = 0; r < 3; ++r) {
    long double s = 0, m = 0;
    float lo = INFINITY;
    for (int64_t j = 0; j < 65537; ++j) {
      const int64_t i = r * 65537 + j;
      const float t = std::max(px[i] * py[i] + 0.5f, 0.0f);
      s += t;
      m += t;
      lo = std::min(lo, -py[i]);
    }
    EXPECT_NEAR(got[0].data_ptr<float>()[r], static_cast<double>(s), 1e-6 * static_cast<double>(m) + 1e-3) << r;
    EXPECT_EQ(got[3].data_ptr<float>()[r], lo) << r;
  }
  float hi = -INFINITY;
  for (int64_t i = 0; i < x.numel(); ++i) hi = std::max(hi, px[i] * 0.5f);
  EXPECT_EQ(got[2].item<float>(), hi);
}

TEST(GeneratedReduce, NanAndInfinity) {
  for (const graph::Shape& shape : std::vector<graph::Shape>{{2, 17}, {2, 65537}}) {
    std::vector<float> xv(static_cast<size_t>(shape[0] * shape[1]), 0.25f), yv(xv.size(), -1.0f);
    xv[3] = NAN;                          // row 0: NaN
    xv[shape[1] + 5] = INFINITY;          // row 1: +inf
    yv[shape[1] + 9] = -INFINITY;         // row 1: x * y = -inf, relu -> 0; neg(y) = +inf
    const Tensor x = graph::from_vector(xv, shape), y = graph::from_vector(yv, shape);
    const auto got = red_f32_static(x, y, 0.5), want = red_f32_eager(x, y, 0.5);
    for (size_t k = 0; k < want.size(); ++k)
      expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + " of " + graph::shape_str(shape));
    EXPECT_TRUE(std::isnan(got[2].item<float>()));                       // amax propagates the NaN
    EXPECT_TRUE(std::isnan(got[1].item<float>()));                       // so does the mean
    EXPECT_EQ(got[3].data_ptr<float>()[0], 1.0f);                        // amin of -y, row 0
    EXPECT_TRUE(std::isnan(got[4].data_ptr<float>()[0]));                // mean |x| of row 0
    EXPECT_EQ(got[4].data_ptr<float>()[1], INFINITY);                    // row 1 has +inf
  }
}

TEST(GeneratedReduce, OneThreadAndAllThreadsGiveTheSameBits) {
  // A parallel_for inside a chunk runs on its caller alone: the graph called
  // from a chunk is the single-threaded run.
  for (const graph::Shape& shape : std::vector<graph::Shape>{{1, 3 * 65536 + 5}, {64, 2048}}) {
    const Tensor x = mixed(shape, 9), y = mixed(shape, 10);
    const auto many = red_f32_static(x, y, 0.5);
    std::vector<Tensor> one;
    graph::cpu::parallel_for(2, 1, [&](int64_t b, int64_t) {
      if (b == 0) one = red_f32_static(x, y, 0.5);
    });
    if (one.empty()) one = red_f32_static(x, y, 0.5);  // one thread in all: the same run
    for (size_t k = 0; k < many.size(); ++k)
      expect_same_bits(one[k], many[k], std::string(kRedNames[k]) + " of " + graph::shape_str(shape));
    const Tensor eager_one = [&] {
      Tensor r;
      graph::cpu::parallel_for(2, 1, [&](int64_t b, int64_t) {
        if (b == 0) r = graph::sum(x);
      });
      return r.defined() ? r : graph::sum(x);
    }();
    expect_same_bits(eager_one, graph::sum(x), "eager sum of " + graph::shape_str(shape));
  }
}

TEST(GeneratedReduce, FallsBackForBroadcastAndStridedInputs) {
  // A broadcast operand, a transposed one, and dims that are not trailing
  // (amax over [0, -1] of a 3-D input) take the fused loop + eager reduction.
  const Tensor x = mixed({4, 33}, 11), row = mixed({33}, 12), xt = mixed({33, 4}, 13).t();
  auto check = [](const Tensor& a, const Tensor& b, const std::string& what) {
    const auto got = red_f32_static(a, b, 0.5), want = red_f32_eager(a, b, 0.5);
    for (size_t k = 0; k < want.size(); ++k) expect_same_bits(got[k], want[k], std::string(kRedNames[k]) + ", " + what);
  };
  check(x, row, "broadcast");
  check(xt, x, "transposed");
}

TEST(GeneratedReduce, BadDimGivesTheEagerErrorAndLine) {
  std::string msg;
  try {
    call("bad_dim", {mixed({2, 3}, 1)}, 1);
  } catch (const graph::Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("sum"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dim"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.cpp:7:30"), std::string::npos) << msg;
  // The same graph on a 3-D input is fine (one loop nest: dim 2 is the last).
  const Tensor x = mixed({2, 3, 4}, 2);
  expect_same_bits(tensor_out(call("bad_dim", {x}, 1), 0), graph::sum(graph::exp(x), {2}), "3-D");
}

TEST(GeneratedReduce, SourceWritesNoIntermediateTensor) {
  auto graphs = codegen_case("reduce_nest.graph");
  ASSERT_EQ(graphs.size(), 3u);
  ir::fuse_groups(*graphs[0]);
  const std::string src =
      graph::codegen::generate_cpu_source({graph_unit(*graphs[0], "_Z3redv", "h", "m.cpp:1")}, "m.cpp");
  // Six reductions, each one loop nest with a two-step fallback.
  EXPECT_EQ(count_of(src, "// One loop nest:"), 6u) << src;
  size_t at = 0;
  for (int k = 0; k < 6; ++k) {
    const size_t begin = src.find("// One loop nest:", at);
    ASSERT_NE(begin, std::string::npos);
    const size_t end = src.find("// Broadcast, strided or on the device", begin);
    ASSERT_NE(end, std::string::npos);
    const std::string nest = src.substr(begin, end - begin);
    // Buffers: the result, and the partials of a single slot's chunks; the
    // producers go through a stack block.
    EXPECT_EQ(count_of(nest, "buffers.take("), 2u) << nest;
    EXPECT_NE(nest.find("alignas(64) float block[256];"), std::string::npos) << nest;
    EXPECT_NE(nest.find("::graph::reduce_order::lanes_add<"), std::string::npos) << nest;
    EXPECT_EQ(nest.find("StridedLoop"), std::string::npos) << nest;
    at = end;
  }
  EXPECT_NE(src.find("lanes_add<::graph::reduce_order::Max>"), std::string::npos);
  EXPECT_NE(src.find("lanes_add<::graph::reduce_order::Min>"), std::string::npos);
}

// ---- slices read in place (graph::detail::LazySlice) and the dense fast
// path (every operand dense at one shape): tests/codegen_cases/views.graph.

// x's values with the other memory layout: the same [r, c] tensor, stored
// column-major (strides [1, r]).
Tensor column_major(const Tensor& x) { return x.t().contiguous().t(); }
// A [1, c] row with the same values at stride 2 (a row of a [2, c] column-major tensor).
Tensor strided_row(const Tensor& x) { return graph::cat({x.t(), x.t()}, 1).t().slice(0, 0, 1); }

// cg_views(x, y, w) written with the eager API.
std::vector<Tensor> views_eager(const Tensor& x, const Tensor& y, const Tensor& w) {
  using namespace graph;
  const Tensor a = x.slice(1, 1, 4), b = x.slice(1, 5, 8), c = y.slice(0, 0, -1, 2);
  return {mul(tanh(add(a, b)), c), add(matmul(a, w), a), sum(b), b};
}

TEST(Generated, SlicesReadInPlaceGiveEagerBits) {
  // [1, 9] and [2, 3] bases: every slice is dense at [1, 3], the fast path.
  // [3, 9] bases: the slices skip elements between rows, the strided loop;
  // a column-major base too.
  const Tensor w = values({3, 3}, 52);
  struct Case {
    Tensor x, y;
    std::string what;
  };
  const std::vector<Case> cases = {
      {values({1, 9}, 50), values({2, 3}, 51), "[1, 9] base (dense slices)"},
      {values({3, 9}, 50), values({7, 3}, 51), "[3, 9] base"},
      {column_major(values({3, 9}, 50)), column_major(values({7, 3}, 51)), "column-major base"},
      {strided_row(values({1, 9}, 50)), values({2, 3}, 51), "[1, 9] base at stride 2"},
  };
  for (const Case& k : cases) {
    auto out = call("cg_views", {k.x, k.y, w}, 4);
    const std::vector<Tensor> want = views_eager(k.x, k.y, w);
    expect_bitwise(tensor_out(out, 0), want[0], k.what + ", the elementwise group");
    expect_bitwise(tensor_out(out, 1), want[1], k.what + ", the epilogue re-reading a slice");
    expect_bitwise(tensor_out(out, 2), want[2], k.what + ", a reduction of a slice");
    // A slice returned as it is: a view of x, as the eager slice is.
    const Tensor ret = tensor_out(out, 3);
    expect_bitwise(ret, want[3], k.what + ", the returned slice");
    EXPECT_EQ(ret.storage().get(), k.x.storage().get()) << k.what;
    EXPECT_EQ(ret.storage_offset(), want[3].storage_offset()) << k.what;
    EXPECT_EQ(ret.strides(), want[3].strides()) << k.what;
  }
}

TEST(Generated, DenseFastPathAndStridedLoopGiveTheSameBits) {
  // The same values through both paths of each group: dense slices take the
  // fast path, the same slices of strided bases the strided loop.
  const Tensor x = values({1, 9}, 53), y = values({2, 3}, 54), w = values({3, 3}, 55);
  ASSERT_EQ(strided_row(x).strides()[1], 2);
  auto fast = call("cg_views", {x, y, w}, 4);
  auto strided = call("cg_views", {strided_row(x), column_major(y), w}, 4);
  for (size_t k = 0; k < 3; ++k)
    expect_bitwise(tensor_out(fast, k), tensor_out(strided, k), "output " + std::to_string(k));
}

TEST(Generated, GateSlicesAreReadInPlaceInTheSource) {
  // lstm_gates: the four slices are LazySlices, never Tensor::slice calls in
  // the loop body; the cell update's fast path tests all five operands; the
  // carried tensors are bound by reference and moved at the end of a step.
  auto graphs = codegen_case("views.graph");
  ASSERT_EQ(graphs.size(), 3u);
  const std::string src =
      graph::codegen::generate_cpu_source({graph_unit(*graphs[1], "lstm_gates", "h", "gates.cpp:1")}, "gates.cpp");
  EXPECT_EQ(count_of(src, "const ::graph::detail::LazySlice v_"), 4u) << src;
  EXPECT_EQ(count_of(src, ".slice("), 0u) << src;
  EXPECT_NE(src.find("if (::graph::detail::operand_dense(v_gi, dense_shape_2) && ::graph::detail::operand_dense(v_gf, "
                     "dense_shape_2) && ::graph::detail::operand_dense(v_gc, dense_shape_2) && "
                     "::graph::detail::operand_dense(v_go, dense_shape_2) && ::graph::detail::operand_dense(v_c, "
                     "dense_shape_2))"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("const ::graph::Tensor& v_h = v_h_2;"), std::string::npos) << src;
  EXPECT_NE(src.find("v_h_2 = std::move(v_h_n);"), std::string::npos) << src;
  EXPECT_NE(src.find("v_c_2 = std::move(v_c_n);"), std::string::npos) << src;
}

TEST(Generated, SlicesOfCarriedValuesAndSwappedReturns) {
  const Tensor a = values({9}, 70), b = values({9}, 71);
  for (int64_t n : {0, 1, 3}) {
    auto out = call("views_carried", {a, b, n}, 4);
    // x drops its first element each step; y is the previous x without its last.
    Tensor x = a, y = a;
    for (int64_t k = 0; k < n; ++k) {
      const Tensor s = x.slice(0, 1, 1000), t = x.slice(0, 0, -1);
      x = s;
      y = t;
    }
    const std::string at = std::to_string(n) + " steps";
    expect_bitwise(tensor_out(out, 0), x, "x, " + at);
    expect_bitwise(tensor_out(out, 1), y, "y, " + at);
    expect_bitwise(tensor_out(out, 2), n % 2 ? b : a, "p, " + at);
    expect_bitwise(tensor_out(out, 3), n % 2 ? a : b, "q, " + at);
  }
}

TEST(Generated, BadSliceBoundsThrowWithTheSourceLine) {
  auto* g = graph::detail::find_graph("cg_views", "test-hash");
  ASSERT_NE(g, nullptr);
  // Calls cg_views on `in`; it must throw a graph::Error holding each of `parts`.
  const auto expect_error = [&](std::vector<IValue> in, std::vector<std::string> parts) {
    IValue out[4];
    std::string why;
    try {
      g->fn(in.data(), in.size(), out, &why);
      ADD_FAILURE() << "expected a graph::Error";
    } catch (const graph::Error& e) {
      const std::string msg = e.what();
      for (const std::string& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
    }
  };
  // A 1-D x has no dim 1: Tensor::slice's message plus the slice's line.
  expect_error({values({9}, 56), values({7, 3}, 57), values({3, 3}, 58)},
               {"slice: dim 1 is out of range for a tensor of shape [9]",
                "(at views.cpp:3:16, slice in static graph 'views')"});
  // A 0-d y: the third slice (its own line) refuses it.
  expect_error({values({3, 9}, 56), graph::full({}, 1.0f), values({3, 3}, 58)},
               {"slice: cannot slice a 0-d tensor", "(at views.cpp:5:16, slice in static graph 'views')"});
  // Slices that clamp to different lengths ([3, 3] and [3, 0]): the group's
  // operands do not broadcast, and the op whose shapes disagree says so.
  expect_error({values({3, 5}, 56), values({7, 3}, 57), values({3, 3}, 58)},
               {"(at views.cpp:6:14, add in static graph 'views')"});
}

TEST(Generated, LstmGateSlicesGiveEagerBits) {
  using namespace graph;
  // Odd hidden size: the gates start at offsets 5, 10, 15 of each row. One
  // row: dense gates (the fast path); two rows: the strided loop.
  const int64_t H = 5;
  for (const int64_t B : {1, 2})
  for (int64_t steps : {0, 1, 4}) {
    const Tensor x = values({B, 3}, 60), h0 = values({B, H}, 61), c0 = values({B, H}, 62);
    const Tensor wx = mul(values({3, 4 * H}, 63), 0.5), wh = mul(values({H, 4 * H}, 64), 0.5), b = values({4 * H}, 65);
    auto out = call("lstm_gates", {x, h0, c0, wx, wh, b, steps, H}, 2);
    const Tensor xw = add(matmul(x, wx), b);
    Tensor h = h0, c = c0;
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor g = add(xw, matmul(h, wh));
      const Tensor i = sigmoid(g.slice(1, 0, H)), f = sigmoid(g.slice(1, H, 2 * H));
      const Tensor cc = tanh(g.slice(1, 2 * H, 3 * H)), o = sigmoid(g.slice(1, 3 * H, 4 * H));
      c = add(mul(f, c), mul(i, cc));
      h = mul(o, tanh(c));
    }
    const std::string at = "B=" + std::to_string(B) + ", " + std::to_string(steps) + " steps";
    expect_bitwise(tensor_out(out, 0), h, "h, " + at);
    expect_bitwise(tensor_out(out, 1), c, "c, " + at);
  }
}

// ---------------------------------------------------------------------------
// conv2d epilogues (tests/codegen_cases/conv_relu.graph): conv2d -> relu is one
// oneDNN convolution with a relu post-op; another chain keeps its fused loop.

TEST(ConvEpilogue, SourceFusesReluIntoTheConvolution) {
  auto graphs = codegen_case("conv_relu.graph");
  for (auto& g : graphs) ir::fuse_groups(*g);
  EXPECT_EQ(join(ir::verify(*graphs.at(0))), "");
  EXPECT_EQ(count_ops(*graphs.at(0), "FusionGroup"), 2u) << ir::print(*graphs.at(0));
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*graphs.at(0), "m", "h", "")}, "cnn.cpp");
  EXPECT_EQ(count_of(src, "::graph::detail::conv2d_relu(v_x, v_w1, v_b1, "), 1u) << src;
  EXPECT_EQ(count_of(src, "::graph::conv2d("), 1u) << src;  // the second conv2d, then its fused loop
  EXPECT_NE(src.find("matmul epilogue: conv2d, relu"), std::string::npos) << src;
  EXPECT_NE(src.find("matmul epilogue: conv2d, sigmoid, mul"), std::string::npos) << src;
}

TEST(ConvEpilogue, MatchesEagerAndSeesWeightUpdates) {
  // The second conv2d is small enough for the direct loop; this is about the library's.
  const int64_t direct = graph::detail::set_direct_conv_limit(0);
  const Tensor x = values({2, 4, 9, 8}, 1), b1 = values({6}, 3), w2 = graph::mul(values({4, 3, 3, 3}, 4), 0.2);
  Tensor w1 = graph::mul(values({6, 4, 3, 3}, 2), 0.3);
  const auto eager = [&](const Tensor& w) {
    const Tensor h = graph::relu(graph::conv2d(x, w, b1, {1, 1}, {1, 1}));
    const Tensor c2 = graph::conv2d(h, w2, Tensor(), {2, 2}, {0, 1}, {1, 1}, 2);
    return std::make_pair(h, graph::mul(c2, graph::sigmoid(c2)));
  };
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto s0 = graph::detail::dnnl_conv_stats();
    const std::vector<IValue> out = call("cg_conv_relu", {x, w1, b1, w2}, 2);
    const auto s1 = graph::detail::dnnl_conv_stats();
    EXPECT_EQ(s1.forward - s0.forward, 2u);  // both conv2d ran oneDNN's primitive
    const auto [h, y] = eager(w1);
    expect_close(tensor_out(out, 0), h);
    expect_close(tensor_out(out, 1), y);
    if (round == 1) {
      EXPECT_EQ(s1.weight_reorders - s0.weight_reorders, 0u);  // both weights kept
    } else if (round == 2) {
      EXPECT_EQ(s1.weight_reorders - s0.weight_reorders, 1u);  // w1 was updated
    }
    if (round == 1) w1.add_(graph::full({6, 4, 3, 3}, 0.05, graph::kFloat32));  // bumps w1's version
  }
  graph::detail::set_direct_conv_limit(direct);
}

// ---------------------------------------------------------------------------
// gelu(linear) (tests/codegen_cases/linear_gelu.graph): one linear_gelu call,
// the exact GELU as the packed GEMM's post-op; a linear whose output is also
// used elsewhere keeps its GEMM and fused gelu loop.

TEST(LinearGeluEpilogue, SourceFusesOnlyTheSoleUseGelu) {
  auto graphs = codegen_case("linear_gelu.graph");
  for (auto& g : graphs) ir::fuse_groups(*g);
  EXPECT_EQ(join(ir::verify(*graphs.at(0))), "");
  EXPECT_EQ(count_ops(*graphs.at(0), "FusionGroup"), 2u) << ir::print(*graphs.at(0));
  const std::string src = graph::codegen::generate_cpu_source({graph_unit(*graphs.at(0), "m", "h", "")}, "ffn.cpp");
  EXPECT_EQ(count_of(src, "::graph::detail::linear_gelu(buffers, "), 1u) << src;
  EXPECT_EQ(count_of(src, ", v_x, v_w1, v_b1)"), 1u) << src;  // the first linear's operands
  EXPECT_EQ(count_of(src, "::graph::detail::gemm(buffers, "), 1u) << src;  // the second, then its loop
  EXPECT_EQ(count_of(src, "::graph::scalar::gelu<float>("), 2u) << src;  // the second gelu's loop (two variants)
}

// gelu(x @ w^T + b) in float64 from the float32 operands: the reference.
Tensor gelu_linear_f64(const Tensor& x, const Tensor& w, const Tensor& b) {
  const Tensor x64 = x.to(graph::kFloat64), w64 = w.to(graph::kFloat64), b64 = b.to(graph::kFloat64);
  const Tensor z = graph::add(graph::matmul(x64, w64.t()), b64);
  const Tensor zc = z.contiguous();
  const double* zs = zc.data_ptr<double>();
  Tensor out = graph::empty(zc.sizes(), graph::kFloat64);
  double* po = out.data_ptr<double>();
  for (int64_t i = 0; i < zc.numel(); ++i) po[i] = zs[i] * 0.5 * (1.0 + std::erf(zs[i] / std::sqrt(2.0)));
  return out;
}

void expect_near_ref(const Tensor& got, const Tensor& ref, double tol, const std::string& what) {
  ASSERT_EQ(got.sizes(), ref.sizes()) << what;
  const Tensor gc = got.to(graph::kFloat64).contiguous(), rc = ref.to(graph::kFloat64).contiguous();
  const double* g = gc.data_ptr<double>();
  const double* r = rc.data_ptr<double>();
  for (int64_t i = 0; i < gc.numel(); ++i)
    ASSERT_NEAR(g[i], r[i], tol * (1 + std::fabs(r[i]))) << what << ", element " << i;
}

TEST(LinearGeluEpilogue, MatchesEagerAndDoubleOnEveryPath) {
  // 64 x 48 x 40 is past the small-product kernel: the packed GEMM with the
  // post-op. 3 rows: dnnl_sgemm, then graph::gelu (the graph's inputs are
  // float32: the float64 fallback is gemm's, tested with it).
  const Tensor w1 = graph::mul(values({40, 48}, 2), 0.2), b1 = values({40}, 3);
  const Tensor w2 = graph::mul(values({24, 40}, 4), 0.2), b2 = values({24}, 5);
  for (const int64_t rows : {64, 3}) {
    const std::string at = std::to_string(rows) + " rows";
    const Tensor x = values({rows, 48}, 1);
    const auto s0 = graph::detail::packed_gemm_stats();
    std::vector<IValue> out;
    for (int call_no = 0; call_no < 3; ++call_no) out = call("cg_linear_gelu", {x, w1, b1, w2, b2}, 2);  // packs at the second
    const auto s1 = graph::detail::packed_gemm_stats();
    if (rows == 64) {
      EXPECT_EQ(s1.calls - s0.calls, 6u) << at;  // both linears, three calls
    }
    const Tensor h = graph::gelu(graph::linear(x, w1, b1)), l2 = graph::linear(h, w2, b2);
    expect_close(tensor_out(out, 1), l2);
    expect_close(tensor_out(out, 0), graph::gelu(l2));
    const Tensor h_ref = gelu_linear_f64(x, w1, b1);
    expect_near_ref(tensor_out(out, 1), graph::add(graph::matmul(h_ref, w2.to(graph::kFloat64).t()), b2.to(graph::kFloat64)),
                    1e-5, at);
  }
}

TEST(LinearGeluEpilogue, ShapeMismatchIsLinearsError) {
  auto* g = graph::detail::find_graph("cg_linear_gelu", "test-hash");
  ASSERT_NE(g, nullptr);
  std::vector<IValue> in = {values({64, 47}, 1), values({40, 48}, 2), values({40}, 3), values({24, 40}, 4),
                            values({24}, 5)};
  IValue out[2];
  std::string why;
  try {
    g->fn(in.data(), in.size(), out, &why);
    FAIL() << "expected a graph::Error";
  } catch (const graph::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("linear"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ffn.cpp:3"), std::string::npos) << msg;  // the user's line
  }
}

// ---------------------------------------------------------------------------
// bf16 autocast (graph/autocast.h): generated code calls the runtime's GEMM and
// conv entry points, so a static graph follows the caller's scope like eager
// code does: the same bf16 products (within float32 sums of each other),
// visibly different from the float32 graph.

double max_rel_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(graph::kFloat64).contiguous(), y = b.to(graph::kFloat64).contiguous();
  double m = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    m = std::max(m, std::fabs(x.data_ptr<double>()[i] - y.data_ptr<double>()[i]) / (1 + std::fabs(y.data_ptr<double>()[i])));
  return m;
}

TEST(Autocast, StaticGraphsFollowTheScope) {
  const MlpParams p = mlp_params(120);
  const Tensor x = values({64, 96}, 121);
  const Tensor f32_static = mlp_static(x, p);
  Tensor static_bf16, eager_bf16;
  {
    graph::AutocastGuard autocast(graph::kBFloat16);
    const auto s0 = graph::detail::autocast_stats();
    static_bf16 = mlp_static(x, p);
    EXPECT_EQ(graph::detail::autocast_stats().gemms - s0.gemms, 3u);  // the three linears
    // The packed linear keeps a bf16 copy of each weight: the next call hits.
    const auto p0 = graph::detail::packed_gemm_stats();
    EXPECT_LT(max_rel_diff(mlp_static(x, p), static_bf16), 1e-7);
    EXPECT_EQ(graph::detail::packed_gemm_stats().hits - p0.hits, 3u);
    eager_bf16 = mlp_eager(x, p);
  }
  EXPECT_EQ(static_bf16.dtype(), graph::kFloat32);
  EXPECT_LT(max_rel_diff(static_bf16, eager_bf16), 1e-5);
  EXPECT_GT(max_rel_diff(static_bf16, f32_static), 1e-3);
  // After the scope: float32 again, and the packed weights still serve it.
  EXPECT_LT(max_rel_diff(mlp_static(x, p), f32_static), 1e-6);

  const Tensor cx = values({2, 4, 9, 8}, 1), w1 = graph::mul(values({6, 4, 3, 3}, 2), 0.3), b1 = values({6}, 3);
  const Tensor w2 = graph::mul(values({4, 3, 3, 3}, 4), 0.2);
  const std::vector<IValue> f32_out = call("cg_conv_relu", {cx, w1, b1, w2}, 2);
  const Tensor f32_h = tensor_out(f32_out, 0).clone();
  graph::AutocastGuard autocast(graph::kBFloat16);
  const auto s0 = graph::detail::autocast_stats();
  const Tensor h = tensor_out(call("cg_conv_relu", {cx, w1, b1, w2}, 2), 0).clone();
  EXPECT_EQ(graph::detail::autocast_stats().convs - s0.convs, 2u);  // the fused conv2d_relu and the plain conv2d
  EXPECT_LT(max_rel_diff(h, graph::relu(graph::conv2d(cx, w1, b1, {1, 1}, {1, 1}))), 1e-5);
  EXPECT_GT(max_rel_diff(h, f32_h), 1e-3);
}

}  // namespace
