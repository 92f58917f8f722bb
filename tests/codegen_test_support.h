#pragma once
// Helpers shared by the codegen tests (codegen_test.cpp, codegen_cuda_test.cpp,
// codegen_kernels_test.cpp): IR text through the passes, deterministic inputs,
// calls of the graphs graph-codegen generated into the test binary, and
// bitwise comparisons across instruction-set variants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/codegen/cpp.h"
#include "graph/cpu_isa.h"
#include "graph/parallel.h"
#include "graph/codegen/grad.h"
#include "graph/codegen/unit.h"
#include "graph/autocast.h"
#include "graph/detail/conv_stats.h"
#include "graph/detail/generated_support.h"
#include "graph/graph.h"
#include "graph/ir/ir.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"

namespace codegen_test {

using graph::Tensor;
using graph::IValue;
namespace ir = graph::ir;
// GraphUnits of graphs optimized by hand, decided as compile_unit decides.
using graph::codegen::graph_unit;

inline std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + "\n";
  return out;
}

// parse -> infer_types (-> fuse_elementwise) -> print, verifying after each.
inline std::string infer(const std::string& text) {
  auto g = ir::parse(text);
  ir::infer_types(*g);
  EXPECT_EQ(join(ir::verify(*g)), "");
  return ir::print(*g);
}

inline std::unique_ptr<ir::Graph> fused(const std::string& text, bool run_infer = true) {
  auto g = ir::parse(text);
  if (run_infer) ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  EXPECT_EQ(join(ir::verify(*g)), "") << ir::print(*g);
  return g;
}

inline size_t count_ops(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  ir::walk(g.top(), [&](const ir::Node* node) { n += node->op() == op; });
  return n;
}

inline const std::string kChain8 = R"(graph chain(%x : f32[N, 4], %b : f32[4], %s : float) {
  %a1 : f32[N, 4] = add(%x, %b) @"m.cpp":1:1
  %a2 : f32[N, 4] = mul(%a1, %s)
  %a3 : f32[N, 4] = relu(%a2)
  %a4 : f32[N, 4] = sub(%a3, %x)
  %a5 : f32[N, 4] = tanh(%a4)
  %a6 : f32[N, 4] = sigmoid(%a5)
  %a7 : f32[N, 4] = exp(%a6)
  %a8 : f32[N, 4] = div(%a7, %b)
  return (%a8)
}
)";

// Deterministic values in [-2, 2) without a random generator.
inline Tensor values(const graph::Shape& shape, int seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.7 * (i + 1) + seed * 1.3) * 2.0);
  return graph::from_vector(v, shape);
}

inline void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.dtype(), want.dtype());
  const Tensor g = got.to(graph::kFloat32).contiguous(), w = want.to(graph::kFloat32).contiguous();
  const float* pg = g.data_ptr<float>();
  const float* pw = w.data_ptr<float>();
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_NEAR(pg[i], pw[i], 1e-5) << "element " << i;
}

// Calls the registered graph; fails the test when the guards refuse.
inline std::vector<IValue> call(const char* mangled, std::vector<IValue> in, size_t n_out) {
  auto* g = graph::detail::find_graph(mangled, "test-hash");
  EXPECT_NE(g, nullptr) << mangled << " is not registered";
  if (!g) return {};
  EXPECT_EQ(g->num_inputs, in.size());
  EXPECT_EQ(g->num_outputs, n_out);
  std::vector<IValue> out(n_out);
  std::string why;
  EXPECT_TRUE(g->fn(in.data(), in.size(), out.data(), &why)) << why;
  return out;
}

inline Tensor tensor_out(const std::vector<IValue>& out, size_t k) { return std::get<Tensor>(out.at(k)); }

// Same shape, dtype and bits (NaNs included).
inline void expect_bitwise(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  const uint32_t* pg = static_cast<const uint32_t*>(static_cast<const void*>(g.data_ptr<float>()));
  const uint32_t* pw = static_cast<const uint32_t*>(static_cast<const void*>(w.data_ptr<float>()));
  int64_t bad = 0;
  for (int64_t i = 0; i < g.numel() && bad < 5; ++i)
    if (pg[i] != pw[i]) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " is " << g.data_ptr<float>()[i] << ", eager gives "
                    << w.data_ptr<float>()[i];
    }
}

// Runs `body` once per instruction-set variant this CPU has, then restores
// the best one.
template <class F>
inline void for_each_isa(F body) {
  const int best = graph::cpu::best_isa();
  for (int isa = graph::cpu::kBaseline; isa <= best; ++isa) {
    ASSERT_EQ(graph::cpu::set_isa(isa), isa);
    ASSERT_EQ(graph::cpu::isa(), isa);
    body(std::string("isa ") + graph::cpu::isa_name(isa));
  }
  graph::cpu::set_isa(best);
}

// f() computed with the baseline variant, the reference every variant must
// match; the variant in use is restored after.
template <class F>
inline auto at_baseline(F f) {
  const int was = graph::cpu::isa();
  graph::cpu::set_isa(graph::cpu::kBaseline);
  auto r = f();
  graph::cpu::set_isa(was);
  return r;
}

inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every graph of tests/codegen_cases/<file>, typed and fused.
inline std::vector<std::unique_ptr<ir::Graph>> codegen_case(const std::string& file) {
  std::ifstream in(std::string(CXXGRAPH_CODEGEN_CASES) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  auto graphs = ir::parse_all(text.str());
  for (auto& g : graphs) {
    ir::infer_types(*g);
    ir::fuse_elementwise(*g);
    EXPECT_EQ(join(ir::verify(*g)), "") << ir::print(*g);
  }
  return graphs;
}

}  // namespace codegen_test
