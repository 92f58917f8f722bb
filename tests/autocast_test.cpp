// graph::AutocastGuard (graph/autocast.h): matmul, linear and conv2d with bf16
// operands and float32 sums inside the scope, against
//  - PyTorch's torch.autocast("cpu", torch.bfloat16) results
//    (tests/fixtures/autocast_bf16.txt, make_autocast_fixtures.py), within
//    bf16 tolerance (PyTorch rounds its results to bf16, we keep float32);
//  - the same op in float64 on bf16-rounded operands (the exact products
//    that bf16 x bf16 -> float32 computes), within float32 tolerance, which
//    the float32 op outside the scope does not meet: so the operands really
//    were rounded;
// and the counters showing oneDNN's bf16 primitives ran.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../runtime/src/blas.h"
#include "graph/autocast.h"
#include "graph/cpu_isa.h"
#include "graph/graph.h"

namespace {

using graph::Shape;
using graph::Tensor;

struct Case {
  std::string name, op;
  std::map<std::string, std::string> attrs;
  std::vector<Tensor> inputs;
  Tensor output;
};

Tensor parse_tensor(std::istringstream& in) {
  std::string shape_text;
  in >> shape_text;
  Shape shape;
  std::string dims = shape_text.substr(1, shape_text.size() - 2);
  std::istringstream ds(dims);
  for (std::string d; std::getline(ds, d, ',');) shape.push_back(std::stoll(d));
  std::vector<float> v;
  for (float x; in >> x;) v.push_back(x);
  return graph::from_vector(v, shape);
}

const std::vector<Case>& fixtures() {
  static const std::vector<Case> cases = [] {
    std::ifstream f(std::string(CXXGRAPH_FIXTURES) + "/autocast_bf16.txt");
    EXPECT_TRUE(f.good()) << "cannot read autocast_bf16.txt";
    std::vector<Case> out;
    for (std::string line; std::getline(f, line);) {
      std::istringstream in(line);
      std::string word;
      in >> word;
      if (word == "case") {
        out.emplace_back();
        in >> out.back().name >> out.back().op;
        for (std::string kv; in >> kv;) out.back().attrs[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
      } else if (word == "input") {
        out.back().inputs.push_back(parse_tensor(in));
      } else if (word == "output") {
        out.back().output = parse_tensor(in);
      }
    }
    return out;
  }();
  return cases;
}

Shape pair(const std::string& v) {
  return {std::stoll(v.substr(0, v.find(','))), std::stoll(v.substr(v.find(',') + 1))};
}

// The case's op on `in` (any floating dtype).
Tensor run(const Case& c, const std::vector<Tensor>& in) {
  using namespace graph;
  if (c.op == "matmul") return matmul(in[0], in[1]);
  if (c.op == "linear") return linear(in[0], in[1], in[2]);
  if (c.op == "conv2d")
    return conv2d(in[0], in[1], in[2], pair(c.attrs.at("stride")), pair(c.attrs.at("padding")), {1, 1},
                  std::stoll(c.attrs.at("groups")));
  if (c.op == "mlp") return linear(relu(linear(relu(linear(in[0], in[1], in[2])), in[3], in[4])), in[5], in[6]);
  ADD_FAILURE() << "unknown op " << c.op;
  return Tensor();
}

// The op in float64 on the inputs and weights rounded to bf16 (biases stay
// float32: AutocastGuard adds them to the float32 sums). For the MLP the
// hidden layers are float32 values, rounded again as the next product's
// operand.
Tensor emulated(const Case& c) {
  using namespace graph;
  const auto r = [](const Tensor& t) { return t.to(kBFloat16).to(kFloat64); };
  const auto d = [](const Tensor& t) { return t.to(kFloat64); };
  const std::vector<Tensor>& in = c.inputs;
  if (c.op == "matmul") return run(c, {r(in[0]), r(in[1])});
  if (c.op != "mlp") return run(c, {r(in[0]), r(in[1]), d(in[2])});
  const Tensor h1 = relu(linear(r(in[0]), r(in[1]), d(in[2]))).to(kFloat32);
  const Tensor h2 = relu(linear(r(h1), r(in[3]), d(in[4]))).to(kFloat32);
  return linear(r(h2), r(in[5]), d(in[6]));
}

std::vector<double> vec(const Tensor& t) {
  const Tensor c = t.detach().to(graph::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// Largest |got - want| / (1 + |want|).
double max_rel(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.sizes(), want.sizes());
  const auto g = vec(got), w = vec(want);
  double m = 0;
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) m = std::max(m, std::fabs(g[i] - w[i]) / (1 + std::fabs(w[i])));
  return m;
}

TEST(Autocast, MatchesPyTorchAutocastAndRoundsOperands) {
  ASSERT_EQ(fixtures().size(), 6u);
  for (const Case& c : fixtures()) {
    SCOPED_TRACE(c.name);
    const auto s0 = graph::detail::autocast_stats();
    Tensor got;
    {
      graph::AutocastGuard autocast(graph::kBFloat16);
      got = run(c, c.inputs);
    }
    const auto s1 = graph::detail::autocast_stats();
    EXPECT_EQ(got.dtype(), graph::kFloat32);
    const uint64_t products = c.op == "mlp" ? 3 : 1;
    if (c.op == "conv2d") {
      EXPECT_EQ(s1.convs - s0.convs, 1u);
    } else {
      EXPECT_EQ(s1.gemms - s0.gemms, products);
    }
    // PyTorch's result is rounded to bf16 (2^-9 relative) after sums in
    // its own order; the MLP's hidden layers are rounded too.
    EXPECT_LT(max_rel(got, c.output), 1.5e-2) << "against torch.autocast";
    // Against the exact products of the rounded operands: float32 sums.
    const Tensor ref = emulated(c);
    const double bf16_err = max_rel(got, ref);
    EXPECT_LT(bf16_err, 2e-5) << "against float64 on bf16-rounded operands";
    // Outside the scope: float32 operands, visibly different from the
    // rounded ones, and no bf16 primitive.
    const Tensor plain = run(c, c.inputs);
    EXPECT_EQ(graph::detail::autocast_stats().gemms, s1.gemms);
    EXPECT_EQ(graph::detail::autocast_stats().convs, s1.convs);
    EXPECT_GT(max_rel(plain, ref), 10 * std::max(bf16_err, 1e-7)) << "the float32 op matches the rounded operands";
  }
}

TEST(Autocast, ScopesNestAndAreThreadLocal) {
  EXPECT_FALSE(graph::autocast_bf16());
  {
    graph::AutocastGuard outer(graph::kBFloat16);
    EXPECT_TRUE(graph::autocast_bf16());
    {
      graph::AutocastGuard inner(graph::kBFloat16, /*enabled=*/false);
      EXPECT_FALSE(graph::autocast_bf16());
      const auto s0 = graph::detail::autocast_stats();
      graph::matmul(graph::rand({40, 40}), graph::rand({40, 40}));
      EXPECT_EQ(graph::detail::autocast_stats().gemms, s0.gemms);
    }
    EXPECT_TRUE(graph::autocast_bf16());
    bool other_thread = true;
    std::thread([&] { other_thread = graph::autocast_bf16(); }).join();
    EXPECT_FALSE(other_thread);
  }
  EXPECT_FALSE(graph::autocast_bf16());
}

// float64 (and integer) products are not cast, as in PyTorch.
TEST(Autocast, Float64IsUntouched) {
  const Tensor a = graph::rand({48, 40}, graph::kFloat64), b = graph::rand({40, 36}, graph::kFloat64);
  const Tensor want = graph::matmul(a, b);
  graph::AutocastGuard autocast(graph::kBFloat16);
  const auto s0 = graph::detail::autocast_stats();
  const Tensor got = graph::matmul(a, b);
  EXPECT_EQ(graph::detail::autocast_stats().gemms, s0.gemms);
  EXPECT_EQ(max_rel(got, want), 0.0);
}

// Transposed operands (linear's weight.t(), a.t()) and a GEMM with beta = 1
// (the conv fallback's bias) take the bf16 path with the right values.
TEST(Autocast, TransposedOperands) {
  const Tensor a = graph::rand({70, 50}), b = graph::rand({60, 70});
  const auto r = [](const Tensor& t) { return t.to(graph::kBFloat16).to(graph::kFloat64); };
  graph::AutocastGuard autocast(graph::kBFloat16);
  EXPECT_LT(max_rel(graph::matmul(a.t(), b.t()), graph::matmul(r(a).t(), r(b).t())), 2e-5);
  EXPECT_LT(max_rel(graph::matmul(b, a), graph::matmul(r(b), r(a))), 2e-5);
}

TEST(Autocast, RefusesOtherDtypes) {
  EXPECT_THROW(graph::AutocastGuard(graph::kFloat16), graph::Error);
  EXPECT_THROW(graph::AutocastGuard(graph::kFloat32), graph::Error);
  EXPECT_FALSE(graph::autocast_bf16());
}

}  // namespace

namespace cpu = graph::cpu;

// The operand rounding (bf16_gemm.cpp's round_to_bf16) on every instruction
// set: round to nearest even on the float's bits, denormals kept, NaN quieted,
// against a reference that picks the nearer of the two bf16 neighbours in
// double arithmetic.
TEST(Autocast, OperandRoundingIsNearestEvenOnEveryPath) {
  std::vector<float> src;
  const uint32_t special[] = {0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x007fffff, 0x00800000,
                              0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
                              0x7f800001, 0xffc00000, 0x7fbfffff, 0x3f7f8000, 0x477fe000};
  for (uint32_t u : special) src.push_back(std::bit_cast<float>(u));
  uint32_t s = 12345;
  for (int i = 0; i < 4000; ++i) {  // random bits, and exact halfway cases
    s = s * 1664525u + 1013904223u;
    src.push_back(std::bit_cast<float>(i % 2 ? s : ((s & 0xffff0000u) | 0x8000u)));
  }
  const auto reference = [](float f) -> uint16_t {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
    const uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    const double dl = std::fabs(static_cast<double>(std::bit_cast<float>(lo)) - f);
    const double dh = std::isinf(std::bit_cast<float>(hi)) ? std::fabs(std::ldexp(1.0, 128) - std::fabs(f))
                                                           : std::fabs(static_cast<double>(std::bit_cast<float>(hi)) - f);
    const bool up = dh < dl || (dh == dl && ((lo >> 16) & 1));
    return static_cast<uint16_t>((up ? hi : lo) >> 16);
  };
  const int64_t cols = 37, rows = static_cast<int64_t>(src.size()) / cols;  // odd rows: the vector tails
  for (int isa : {cpu::kBaseline, cpu::kAvx2, cpu::kAvx512}) {
    const int used = cpu::set_isa(isa);
    std::vector<uint16_t> out(static_cast<size_t>(rows * cols));
    cpu::round_to_bf16(src.data(), rows, cols, cols, out.data());
    for (int64_t i = 0; i < rows * cols; ++i)
      ASSERT_EQ(out[i], reference(src[i])) << "isa " << used << ", element " << i << " bits 0x" << std::hex
                                           << std::bit_cast<uint32_t>(src[i]);
  }
  cpu::set_isa(cpu::best_isa());
}

// Attention under autocast: heads of at most 2^20 products (L * S * E) run the
// fused float32 kernel, the same bits as outside the scope and no bf16 GEMM;
// larger heads take the math path, whose two products run in bf16.
TEST(Autocast, SmallAttentionHeadsStayFloat32LargeOnesRunInBf16) {
  graph::manual_seed(3);
  const Tensor q = graph::randn({2, 3, 64, 32}), k = graph::randn({2, 3, 48, 32}), v = graph::randn({2, 3, 48, 32});
  const Tensor plain = graph::scaled_dot_product_attention(q, k, v);
  const auto before = graph::detail::autocast_stats();
  Tensor small;
  {
    graph::AutocastGuard autocast(graph::kBFloat16);
    small = graph::scaled_dot_product_attention(q, k, v);
  }
  EXPECT_EQ(graph::detail::autocast_stats().gemms, before.gemms);
  EXPECT_EQ(graph::max(graph::abs(small - plain)).item<double>(), 0.0);

  const Tensor ql = graph::randn({1, 1, 256, 64}), kl = graph::randn({1, 1, 256, 64}), vl = graph::randn({1, 1, 256, 64});
  const Tensor exact = graph::scaled_dot_product_attention(ql.to(graph::kFloat64), kl.to(graph::kFloat64),
                                                           vl.to(graph::kFloat64));
  const auto mid = graph::detail::autocast_stats();
  Tensor large;
  {
    graph::AutocastGuard autocast(graph::kBFloat16);
    large = graph::scaled_dot_product_attention(ql, kl, vl);  // 256 * 256 * 64 = 2^22 products
  }
  EXPECT_EQ(graph::detail::autocast_stats().gemms, mid.gemms + 2);
  const double err = graph::max(graph::abs(large.to(graph::kFloat64) - exact)).item<double>();
  EXPECT_GT(err, 1e-6);  // bf16 operands: not the float32 result
  EXPECT_LT(err, 5e-2);
}
