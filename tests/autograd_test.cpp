// Autograd: every differentiable op's backward against central finite
// differences in float64, plus the engine's behaviour (accumulation,
// NoGradGuard, detach, retain_graph, errors).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/graph.h"
#include "support/gradcheck.h"

namespace {

using graph::Shape;
using graph::Tensor;
using gradcheck_support::Fn;

using gradcheck_support::gradcheck;
using gradcheck_support::values;

// ---- elementwise ops -----------------------------------------------------------

struct UnaryCase {
  const char* name;
  Tensor (*fn)(const Tensor&);
  double lo, hi;
};

TEST(Gradcheck, UnaryOps) {
  const UnaryCase cases[] = {
      {"neg", graph::neg, -2, 2},     {"abs", graph::abs, 0.1, 2},       {"relu", graph::relu, 0.1, 2},
      {"exp", graph::exp, -2, 2},     {"log", graph::log, 0.1, 3},       {"sqrt", graph::sqrt, 0.1, 3},
      {"rsqrt", graph::rsqrt, 0.2, 3}, {"tanh", graph::tanh, -2, 2},     {"sigmoid", graph::sigmoid, -3, 3},
      {"erf", graph::erf, -2, 2},     {"gelu", graph::gelu, -3, 3},      {"silu", graph::silu, -3, 3},
  };
  for (const UnaryCase& c : cases) {
    SCOPED_TRACE(c.name);
    gradcheck([&](const auto& in) { return c.fn(in[0]); }, {values({3, 4}, c.lo, c.hi, 1)});
  }
  // abs and relu on negative inputs too (away from the kink at 0).
  gradcheck([](const auto& in) { return graph::abs(in[0]) + graph::relu(in[0]); }, {values({5}, -2, -0.1, 2)});
}

TEST(Gradcheck, BinaryOpsWithBroadcasting) {
  Tensor a = values({3, 1}, 0.5, 2, 3), b = values({1, 4}, 0.5, 2, 4);
  gradcheck([](const auto& in) { return in[0] + in[1]; }, {a, b});
  gradcheck([](const auto& in) { return in[0] - in[1]; }, {a, b});
  gradcheck([](const auto& in) { return in[0] * in[1]; }, {a, b});
  gradcheck([](const auto& in) { return in[0] / in[1]; }, {a, b});
  gradcheck([](const auto& in) { return graph::pow(in[0], in[1]); }, {a, b});
  gradcheck([](const auto& in) { return graph::maximum(in[0], in[1]); }, {a, values({1, 4}, 0.5, 2, 5)});
  gradcheck([](const auto& in) { return graph::minimum(in[0], in[1]); }, {a, values({1, 4}, 0.5, 2, 5)});
}

TEST(Gradcheck, TensorScalarMixes) {
  Tensor x = values({2, 3}, 0.5, 2, 6);
  gradcheck([](const auto& in) { return in[0] * 3.0 + 1.5; }, {x});
  gradcheck([](const auto& in) { return 2.0 / in[0] - in[0] / 4; }, {x});
  gradcheck([](const auto& in) { return graph::pow(in[0], 2.5) + graph::pow(2.0, in[0]); }, {x});
  gradcheck([](const auto& in) { return graph::clamp(in[0], 0.8, 1.6); }, {values({2, 3}, 0.5, 2, 7)});
}

TEST(Gradcheck, Where) {
  Tensor cond = graph::tensor({true, false, true, false});
  gradcheck([&](const auto& in) { return graph::where(cond, in[0], in[1]); },
            {values({3, 4}, -1, 1, 8), values({4}, -1, 1, 9)});
}

// ---- reductions ------------------------------------------------------------------

TEST(Gradcheck, Reductions) {
  Tensor x = values({2, 3, 4}, -1, 1, 10);
  gradcheck([](const auto& in) { return in[0].sum(); }, {x});
  gradcheck([](const auto& in) { return in[0].sum(1); }, {x});
  gradcheck([](const auto& in) { return in[0].sum({0, 2}, true); }, {x});
  gradcheck([](const auto& in) { return in[0].mean(); }, {x});
  gradcheck([](const auto& in) { return in[0].mean({-1}, false); }, {x});
  gradcheck([](const auto& in) { return graph::amax(in[0], {1}, false); }, {x});
  gradcheck([](const auto& in) { return graph::amin(in[0], {0, 2}, true); }, {x});
  gradcheck([](const auto& in) { return graph::softmax(in[0], 1); }, {x});
  gradcheck([](const auto& in) { return graph::log_softmax(in[0], -1); }, {x});
}

TEST(Reductions, AmaxTiesShareTheGradient) {
  Tensor x = graph::tensor({1.0, 3.0, 3.0, 2.0}).to(graph::kFloat64).requires_grad_();
  graph::amax(x).backward();
  Tensor g = x.grad();
  EXPECT_DOUBLE_EQ(g.data_ptr<double>()[1], 0.5);
  EXPECT_DOUBLE_EQ(g.data_ptr<double>()[2], 0.5);
  EXPECT_DOUBLE_EQ(g.data_ptr<double>()[0], 0.0);
}

// ---- matmul and views ---------------------------------------------------------------

TEST(Gradcheck, Matmul) {
  gradcheck([](const auto& in) { return graph::matmul(in[0], in[1]); }, {values({3, 4}, -1, 1, 11), values({4, 2}, -1, 1, 12)});
  // Batched with broadcasting batch dims, and transposed operands.
  gradcheck([](const auto& in) { return graph::matmul(in[0], in[1].transpose(-1, -2)); },
            {values({2, 1, 3, 4}, -1, 1, 13), values({3, 5, 4}, -1, 1, 14)});
  // Vectors.
  gradcheck([](const auto& in) { return graph::matmul(in[0], in[1]); }, {values({4}, -1, 1, 15), values({4, 3}, -1, 1, 16)});
  gradcheck([](const auto& in) { return graph::matmul(in[0], in[1]); }, {values({2, 4}, -1, 1, 17), values({4}, -1, 1, 18)});
  gradcheck([](const auto& in) { return graph::matmul(in[0], in[1]); }, {values({4}, -1, 1, 19), values({4}, -1, 1, 20)});
}

TEST(Gradcheck, Views) {
  Tensor x = values({2, 3, 4}, -1, 1, 21);
  gradcheck([](const auto& in) { return in[0].transpose(0, 2) * 2; }, {x});
  gradcheck([](const auto& in) { return in[0].permute({2, 0, 1}).contiguous(); }, {x});
  gradcheck([](const auto& in) { return in[0].slice(2, 1, 4, 2); }, {x});
  gradcheck([](const auto& in) { return in[0].reshape({6, 4}).t(); }, {x});
  gradcheck([](const auto& in) { return in[0].flatten(1); }, {x});
  gradcheck([](const auto& in) { return in[0].unsqueeze(1).expand({2, 5, 3, 4}); }, {x});
  gradcheck([](const auto& in) { return in[0].slice(1, 0, 1).squeeze(1); }, {x});
}

// ---- the engine ------------------------------------------------------------------

TEST(Engine, GradientsAccumulateAcrossBackwardCalls) {
  Tensor w = graph::full({2}, 3.0f).requires_grad_();
  (w * w).sum().backward();
  (w * 2.0f).sum().backward();
  Tensor g = w.grad();
  EXPECT_FLOAT_EQ(g.data_ptr<float>()[0], 6.0f + 2.0f);
  w.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(Engine, SharedSubexpressionSumsPaths) {
  Tensor x = graph::full({}, 2.0f).requires_grad_();
  Tensor y = x * x;       // used twice below
  (y * y + y).backward();  // d/dx (x^4 + x^2) = 4x^3 + 2x = 36
  EXPECT_FLOAT_EQ(x.grad().item<float>(), 36.0f);
}

TEST(Engine, NoGradGuardAndDetachRecordNothing) {
  Tensor x = graph::ones({3}).requires_grad_();
  {
    graph::NoGradGuard guard;
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
  }
  Tensor z = (x * 2).detach();
  EXPECT_FALSE(z.requires_grad());
  Tensor w = x * 2;
  EXPECT_TRUE(w.requires_grad());
  EXPECT_FALSE(w.is_leaf());
}

TEST(Engine, NonDifferentiableOutputsDoNotRecord) {
  Tensor x = graph::ones({3}).requires_grad_();
  EXPECT_FALSE((x > 0).requires_grad());
  EXPECT_FALSE(graph::argmax(x).requires_grad());
}

TEST(Engine, Errors) {
  Tensor x = graph::ones({3}).requires_grad_();
  Tensor y = x * 2;
  try {
    y.backward();
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("one-element"), std::string::npos) << e.what();
  }
  Tensor s = y.sum();
  s.backward(graph::ones({}), /*retain_graph=*/true);
  s.backward();  // the graph was retained
  EXPECT_FLOAT_EQ(x.grad().data_ptr<float>()[0], 4.0f);
  try {
    s.backward();
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos) << e.what();
  }
  EXPECT_THROW(graph::ones({2}).backward(), graph::Error);
  EXPECT_THROW(graph::ones({2}, graph::kInt64).requires_grad_(), graph::Error);
}

TEST(Engine, GradientKeepsTheLeafDtype) {
  Tensor w = graph::ones({2}).requires_grad_();       // float32 leaf
  (w.to(graph::kFloat64) * 3.0).sum().backward();    // float64 graph
  EXPECT_EQ(w.grad().dtype(), graph::kFloat32);
  EXPECT_FLOAT_EQ(w.grad().data_ptr<float>()[1], 3.0f);
}

// Post-accumulate hooks (graph::dist's DDP starts all-reduces from them):
// once per backward per leaf, when its gradient is final, even for a leaf
// reached along several edges; callbacks queued by hooks run at the end.
TEST(Engine, PostAccumulateHookRunsOnceWhenTheGradientIsFinal) {
  Tensor a = graph::ones({2}).requires_grad_(), b = graph::ones({2}).requires_grad_();
  std::vector<std::string> events;
  auto ha = graph::autograd::add_post_accumulate_hook(a, [&](Tensor& g) {
    events.push_back("a=" + std::to_string(g.data_ptr<float>()[0]));
    graph::autograd::queue_callback([&] { events.push_back("end"); });
  });
  graph::autograd::add_post_accumulate_hook(b, [&](Tensor& g) {
    events.push_back("b=" + std::to_string(g.data_ptr<float>()[0]));
  });
  ((a * 2 + a * 3) * b).sum().backward();  // a along two edges: 2 + 3
  ASSERT_EQ(events.size(), 3u);
  EXPECT_TRUE(events[0] == "a=5.000000" || events[1] == "a=5.000000");
  EXPECT_TRUE(events[0] == "b=5.000000" || events[1] == "b=5.000000");
  EXPECT_EQ(events[2], "end");
  graph::autograd::remove_post_accumulate_hook(a, ha);
  events.clear();
  (b * 1).sum().backward();
  EXPECT_EQ(events, (std::vector<std::string>{"b=6.000000"}));
  EXPECT_THROW(graph::autograd::add_post_accumulate_hook(a * 2, [](Tensor&) {}), graph::Error);
  EXPECT_THROW(graph::autograd::queue_callback([] {}), graph::Error);  // outside backward
}

}  // namespace
