// Graph breaks end to end (break_functions.cpp): each function runs as its
// static regions (compiled graphs, counted in the registry) with the eager
// statements between them, and as its whole eager body; the results agree,
// and agree with values computed here from the eager ops. The islands' own
// helpers count their calls, so each island is seen to run exactly once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "break_functions.h"
#include "e2e_util.h"

namespace breaks {

int observed_calls = 0;
double observed_sum = 0;
int shift_calls = 0;

void observe(const Tensor& t) {
  ++observed_calls;
  observed_sum += t.sum().item<float>();
}

Tensor shift_eagerly(const Tensor& t, float by) {
  ++shift_calls;
  return t + by;
}

double max_abs(const Tensor& t) { return graph::abs(t).reshape({-1}).amax({0}).item<float>(); }

std::pair<Tensor, double> scaled_pair(const Tensor& t) { return {t * 2, 0.25}; }

}  // namespace breaks

namespace {

using graph::Tensor;

using namespace e2e;  // pattern, expect_close, calls, compiled_mode

// Runs `f` with its static regions (each region in `regions` must run once)
// and eagerly (none may run), and compares the two results.
template <class F>
Tensor regions_vs_eager(const std::string& mangled, const std::vector<int>& regions, F&& f) {
  std::vector<uint64_t> before;
  for (int r : regions) before.push_back(calls(mangled + ".region" + std::to_string(r)));
  graph::set_mode(compiled_mode());
  Tensor split = f();
  for (size_t i = 0; i < regions.size(); ++i)
    EXPECT_EQ(calls(mangled + ".region" + std::to_string(regions[i])), before[i] + 1)
        << mangled << ": static region " << regions[i] << " did not run";
  graph::set_mode(graph::Mode::Eager);
  Tensor eager = f();
  for (size_t i = 0; i < regions.size(); ++i)
    EXPECT_EQ(calls(mangled + ".region" + std::to_string(regions[i])), before[i] + 1)
        << mangled << ": eager mode ran static region " << regions[i];
  graph::set_mode(compiled_mode());
  expect_close(eager, split);
  return split;
}

class GraphBreak : public testing::Test {
 protected:
  void SetUp() override {
    const char* m = std::getenv("GRAPH_MODE");
    if (m && std::string(m) == "eager") GTEST_SKIP() << "GRAPH_MODE=eager: covered by EagerEnv";
  }
};

TEST_F(GraphBreak, PrintfBetweenRegions) {
  Tensor x = pattern({3, 4}, 0.4f, -0.9f);
  Tensor r = regions_vs_eager("_ZN6breaks13print_betweenEN5graph6TensorEf", {0, 1},
                              [&] { return breaks::print_between(x, 1.5f); });
  Tensor y = graph::relu(x) * 1.5f + 1;
  expect_close((graph::tanh(y) * x) * 2 - y, r);
}

TEST_F(GraphBreak, CoutBetweenRegions) {
  Tensor x = pattern({5}, 0.3f, -0.6f);
  Tensor r = regions_vs_eager("_ZN6breaks12cout_betweenEN5graph6TensorE", {0, 1},
                              [&] { return breaks::cout_between(x); });
  Tensor y = graph::exp(x) - 1;
  expect_close(y * x + y, r);
}

TEST_F(GraphBreak, IslandAssignsATensor) {
  Tensor x = pattern({2, 3}, 0.5f, -1.0f), w = pattern({3, 4}, -0.3f, 0.7f);
  int shifts = breaks::shift_calls;
  Tensor r = regions_vs_eager("_ZN6breaks14island_assignsEN5graph6TensorES1_", {0, 1},
                              [&] { return breaks::island_assigns(x, w); });
  EXPECT_EQ(breaks::shift_calls, shifts + 2) << "the island runs once per call";
  // The shift the island applied reaches the second region.
  expect_close(graph::relu(graph::matmul(x, w) + 0.5f) * 4, r);
}

TEST_F(GraphBreak, TwoIslandsThreeRegions) {
  Tensor x = pattern({4}, 0.7f, -1.1f);
  int seen = breaks::observed_calls;
  breaks::observed_sum = 0;
  graph::set_mode(compiled_mode());
  Tensor split = breaks::two_islands(x, 2);
  EXPECT_EQ(breaks::observed_calls, seen + 2);
  const double split_sum = breaks::observed_sum;
  Tensor r = regions_vs_eager("_ZN6breaks11two_islandsEN5graph6TensorEi", {0, 1, 2},
                              [&] { return breaks::two_islands(x, 2); });
  Tensor a = graph::sigmoid(x) * 2, b = a * a + x;
  expect_close(b - a * 3, r);
  expect_close(r, split);
  // The islands saw the regions' values: a, then b.
  EXPECT_NEAR(split_sum, a.sum().item<float>() + b.sum().item<float>(), 1e-4);
}

TEST_F(GraphBreak, IslandDeclaresVariablesUsedLater) {
  Tensor x = pattern({2, 5}, 0.35f, -1.4f);
  // The two eager statements are adjacent: one eager stretch, two regions.
  Tensor r = regions_vs_eager("_ZN6breaks15island_declaresEN5graph6TensorE", {0, 1},
                              [&] { return breaks::island_declares(x); });
  Tensor y = x * 3;
  double m = graph::abs(y).reshape({-1}).amax({0}).item<float>();
  expect_close((y - 1.0f) / m + y, r);
}

TEST_F(GraphBreak, ReturnFromTheIsland) {
  Tensor x = pattern({6}, 0.45f, -1.2f);
  Tensor r = regions_vs_eager("_ZN6breaks14island_returnsEN5graph6TensorE", {0},
                              [&] { return breaks::island_returns(x); });
  expect_close((graph::relu(x) + 1 + 2.0f) * x, r);
}

TEST_F(GraphBreak, MemberFunctionReadsThis) {
  breaks::Scaler s{pattern({3}, -0.6f, 0.4f)};
  Tensor x = pattern({3}, 0.8f, -0.3f);
  Tensor r = regions_vs_eager("_ZN6breaks6Scaler7forwardEN5graph6TensorE", {0, 1}, [&] { return s.forward(x); });
  expect_close(x * s.w + s.w, r);
  // A new member value is read by the next call's regions.
  s.w = s.w * 2;
  expect_close(x * s.w + s.w, s.forward(x));
}

// The regions' guards: a float64 input misses the float32 code's guard and
// each region runs its graph specialized for float64; the result is eager's.
TEST_F(GraphBreak, Float64CallRunsTheRegionsSpecialized) {
  Tensor x = pattern({3}, 0.4f, -0.2f).to(graph::kFloat64);
  Tensor r = breaks::print_between(x, 2.0f);
  Tensor y = graph::relu(x) * 2.0f + 1;
  expect_close((graph::tanh(y) * x) * 2 - y, r);
}

// Training through a split function: each region records one node on the
// eager tape, the eager statement between them records its own ops, and the
// gradients equal eager autograd's.
TEST_F(GraphBreak, GradientsFlowThroughRegionsAndTheIsland) {
  const std::string name = "_ZN6breaks14island_assignsEN5graph6TensorES1_";
  Tensor grads[2][2];
  for (int eager = 0; eager < 2; ++eager) {
    graph::set_mode(eager ? graph::Mode::Eager : compiled_mode());
    Tensor x = pattern({2, 3}, 0.5f, -1.0f).requires_grad_(), w = pattern({3, 4}, -0.3f, 0.7f).requires_grad_();
    uint64_t before = calls(name + ".region1");
    Tensor y = breaks::island_assigns(x, w);
    EXPECT_EQ(calls(name + ".region1"), before + (eager ? 0 : 1));
    (y * pattern({2, 4}, 0.9f, 0.1f)).sum().backward();
    grads[eager][0] = x.grad();
    grads[eager][1] = w.grad();
  }
  graph::set_mode(compiled_mode());
  ASSERT_TRUE(grads[0][0].defined() && grads[0][1].defined());
  expect_close(grads[1][0], grads[0][0]);
  expect_close(grads[1][1], grads[0][1]);
}

// An unlowerable statement nested in an `if`: the whole `if` runs eagerly
// between the two regions, reading and assigning a tensor and a double they
// hold; both branches.
TEST_F(GraphBreak, NestedIfIsland) {
  const std::string name = "_ZN6breaks9nested_ifEN5graph6TensorEb";
  Tensor x = pattern({3, 4}, 0.4f, -0.8f);
  for (bool verbose : {false, true}) {
    Tensor r = regions_vs_eager(name, {0, 1}, [&] { return breaks::nested_if(x, verbose); });
    Tensor y = graph::relu(x) * 2;
    expect_close(verbose ? (y + 1) * x * 2.0 : y * x * 0.5, r);
  }
}

// Nested in a loop: the loop runs eagerly, once per call; a `return` inside
// it returns from the function (the region after it does not run).
TEST_F(GraphBreak, LoopIslandAndReturnFromIt) {
  const std::string name = "_ZN6breaks12loop_returnsEN5graph6TensorEi";
  Tensor x = pattern({5}, 0.6f, -1.3f);
  int shifts = breaks::shift_calls;
  Tensor r = regions_vs_eager(name, {0, 1}, [&] { return breaks::loop_returns(x, 2); });
  EXPECT_EQ(breaks::shift_calls, shifts + 4) << "2 trips, compiled and eager";
  expect_close(x * 0.5f + 2 + x, r);
  uint64_t after = calls(name + ".region1");
  r = regions_vs_eager(name, {0}, [&] { return breaks::loop_returns(x, 5); });
  EXPECT_EQ(calls(name + ".region1"), after) << "the island returned: region 1 must not run";
  expect_close((x * 0.5f + 3) * 10, r);
}

// Nested in a `switch` (with a `return` in one case) next to a block that
// declares its own tensor: one eager stretch between two regions.
TEST_F(GraphBreak, SwitchAndBlockIsland) {
  const std::string name = "_ZN6breaks13switch_islandEN5graph6TensorEi";
  Tensor x = pattern({2, 3}, 0.3f, -0.5f);
  Tensor y = graph::exp(x) - 1;
  expect_close(((y * 3) + 0.25f) * 2, regions_vs_eager(name, {0, 1}, [&] { return breaks::switch_island(x, 0); }));
  uint64_t after = calls(name + ".region1");
  expect_close(y + 4, regions_vs_eager(name, {0}, [&] { return breaks::switch_island(x, 1); }));
  EXPECT_EQ(calls(name + ".region1"), after);
  expect_close((y + 0.25f) * 2 + x * 5,
               regions_vs_eager(name, {0, 1}, [&] { return breaks::switch_island(x, 5); }));
}

// A tuple and structured bindings defined in a region cross two breaks, a
// pair defined in an island crosses into the next region, and a nested
// island assigns the tuple.
TEST_F(GraphBreak, TuplesPairsAndBindingsCross) {
  const std::string name = "_ZN6breaks12tuples_crossEN5graph6TensorEb";
  Tensor x = pattern({4}, 0.5f, -0.9f);
  for (bool shift : {false, true}) {
    Tensor r = regions_vs_eager(name, {0, 1, 2}, [&] { return breaks::tuples_cross(x, shift); });
    Tensor a = x * 2, t0 = graph::relu(x);
    Tensor c = a * 2 * 0.25 + t0;
    expect_close((shift ? t0 + 1 : t0) * (shift ? 4 : 3) + a * 1.5 + c, r);
  }
}

// constexpr and static const locals declared before a break are used in
// constant expressions after it (std::get<kIndex>, static_assert).
TEST_F(GraphBreak, ConstantsStayConstants) {
  Tensor x = pattern({3}, 0.7f, -0.4f);
  Tensor r = regions_vs_eager("_ZN6breaks15constants_crossEN5graph6TensorE", {0, 1},
                              [&] { return breaks::constants_cross(x); });
  expect_close(x * 7, r);
}

// `Tensor y;` declared in a region (undefined there), assigned on both paths
// of the island, read by the next region.
TEST_F(GraphBreak, DeclaredBeforeAssignedInTheIsland) {
  const std::string name = "_ZN6breaks18assigned_in_islandEN5graph6TensorEb";
  Tensor x = pattern({2, 2}, 0.9f, -0.6f);
  expect_close((x + 1) * 3 * x, regions_vs_eager(name, {1}, [&] { return breaks::assigned_in_island(x, true); }));
  expect_close((x - 3) * x, regions_vs_eager(name, {1}, [&] { return breaks::assigned_in_island(x, false); }));
}

// Gradients through functions split around nested islands equal eager
// autograd's.
TEST_F(GraphBreak, GradientsThroughNestedIslands) {
  for (int which = 0; which < 3; ++which) {
    Tensor grads[2];
    for (int eager = 0; eager < 2; ++eager) {
      graph::set_mode(eager ? graph::Mode::Eager : compiled_mode());
      Tensor x = pattern({2, 3}, 0.45f, -0.7f).requires_grad_();
      Tensor y = which == 0   ? breaks::nested_if(x, true)
                 : which == 1 ? breaks::tuples_cross(x, true)
                              : breaks::loop_returns(x, 2);
      (y * pattern({2, 3}, -0.8f, 0.3f)).sum().backward();
      grads[eager] = x.grad();
    }
    graph::set_mode(compiled_mode());
    ASSERT_TRUE(grads[0].defined()) << which;
    expect_close(grads[1], grads[0]);
  }
  // And against the hand-derived gradient of nested_if(x, true) = (2 relu(x) + 1) x * 2.
  Tensor x = pattern({2, 3}, 0.45f, -0.7f).requires_grad_(), g = pattern({2, 3}, -0.8f, 0.3f);
  (breaks::nested_if(x, true) * g).sum().backward();
  Tensor xd = x.detach(), pos = (xd > 0).to(graph::kFloat32);
  expect_close(((graph::relu(xd) * 2 + 1) * 2 + pos * 4 * xd) * g, x.grad());
}

}  // namespace

// GRAPH_MODE=eager (ctest e2e_graph_mode_eager): the whole eager body runs,
// no region does.
TEST(EagerEnv, GraphBreaksRunTheEagerBody) {
  const char* m = std::getenv("GRAPH_MODE");
  if (!m || std::string(m) != "eager") GTEST_SKIP() << "needs GRAPH_MODE=eager";
  Tensor x = pattern({4}, 0.7f, -1.1f);
  const std::string name = "_ZN6breaks11two_islandsEN5graph6TensorEi";
  uint64_t r0 = calls(name + ".region0"), r2 = calls(name + ".region2");
  int seen = breaks::observed_calls;
  Tensor r = breaks::two_islands(x, 2);
  EXPECT_EQ(calls(name + ".region0"), r0);
  EXPECT_EQ(calls(name + ".region2"), r2);
  EXPECT_EQ(breaks::observed_calls, seen + 2);
  Tensor a = graph::sigmoid(x) * 2, b = a * a + x;
  expect_close(b - a * 3, r);
}

// GRAPH_MODE=eager: functions split around nested islands run their bodies.
TEST(EagerEnv, NestedGraphBreaksRunTheEagerBody) {
  const char* m = std::getenv("GRAPH_MODE");
  if (!m || std::string(m) != "eager") GTEST_SKIP() << "needs GRAPH_MODE=eager";
  Tensor x = pattern({4}, 0.7f, -1.1f);
  const std::string name = "_ZN6breaks12tuples_crossEN5graph6TensorEb";
  uint64_t r0 = calls(name + ".region0"), r2 = calls(name + ".region2");
  Tensor r = breaks::tuples_cross(x, true);
  EXPECT_EQ(calls(name + ".region0"), r0);
  EXPECT_EQ(calls(name + ".region2"), r2);
  Tensor a = x * 2, t0 = graph::relu(x);
  expect_close((t0 + 1) * 4 + a * 1.5 + (a * 2 * 0.25 + t0), r);
}
