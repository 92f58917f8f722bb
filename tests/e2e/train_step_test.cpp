// Static train steps: a [[graph::static]] member function holding a loss and
// loss.backward() lowers to one graph (forward, backward, set_grads). Each
// test runs N steps on a compiled copy of a model and on an identical copy in
// eager mode (the same function's body, eager autograd) and compares losses
// step by step and parameters, gradients and optimizer effects at the end.
// The registry's call counts prove the graph ran. GRAPH_MODE=interpret runs
// the same tests on the interpreter (e2e_train_step_interpret).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "e2e_util.h"
#include "graph/optim.h"
#include "train_step_functions.h"

namespace {

using graph::Mode;
using graph::Tensor;

// Completed runs of the registered train-step graphs (a function's or one of
// its regions') whose mangled name holds `fragment`.
uint64_t calls_of(const std::string& fragment) {
  uint64_t n = 0;
  for (const auto* g : graph::detail::registered_graphs())
    if (g->train_step && std::string(g->mangled_name).find(fragment) != std::string::npos) n += g->calls.load();
  return n;
}

struct ModeScope {
  explicit ModeScope(Mode m) { graph::set_mode(m); }
  ~ModeScope() { graph::set_mode(Mode::Static); }
};

ts::MLP make_mlp(int64_t in, int64_t hidden, int64_t out, graph::DType dtype = graph::kFloat32) {
  ts::MLP m(in, hidden, out);
  m->to(dtype);
  graph::autograd::NoGradGuard no_grad;
  float shift = 0.1f;
  for (Tensor& p : m->parameters()) {
    p.copy_(e2e::pattern(p.sizes(), 0.37f, shift) * 0.5);
    shift += 0.3f;
  }
  return m;
}

Tensor targets(int64_t batch, int64_t classes) {
  Tensor t = graph::empty({batch}, graph::kInt64);
  for (int64_t i = 0; i < batch; ++i) t.data_ptr<int64_t>()[i] = (i * 7) % classes;
  return t;
}

// A learning-rate change between steps, through the options as users make it.
void halve_lr(graph::optim::Optimizer* opt) {
  if (auto* sgd = dynamic_cast<graph::optim::SGD*>(opt)) sgd->options().lr(sgd->options().lr() * 0.5);
  if (auto* adam = dynamic_cast<graph::optim::Adam*>(opt)) adam->options().lr(adam->options().lr() * 0.5);
}

void expect_same_parameters(ts::MLP& a, ts::MLP& b, float tol) {
  auto pa = a->parameters(), pb = b->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    SCOPED_TRACE("parameter " + std::to_string(i));
    e2e::expect_close(pb[i], pa[i], tol);
    ASSERT_EQ(pa[i].grad().defined(), pb[i].grad().defined());
    if (pa[i].grad().defined()) e2e::expect_close(pb[i].grad(), pa[i].grad(), tol);
  }
}

// N steps of `step` on a compiled and an eager copy of one model, each with its own optimizer.
void compare_training(const std::function<std::unique_ptr<graph::optim::Optimizer>(ts::MLP&)>& make_opt,
                      bool whole_step) {
  const int kSteps = 5;
  ts::MLP a = make_mlp(12, 16, 5), b = make_mlp(12, 16, 5);
  auto opt_a = make_opt(a), opt_b = make_opt(b);
  a->opt = opt_a.get();
  b->opt = opt_b.get();
  const Tensor x = e2e::pattern({8, 12}, 0.21f, -0.4f), y = targets(8, 5);
  const std::string fn = whole_step ? "train_step" : "loss_step";
  const uint64_t before = calls_of(fn);
  for (int s = 0; s < kSteps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    Tensor la, lb;
    if (whole_step) {
      la = a->train_step(x, y);
      ModeScope eager(Mode::Eager);
      lb = b->train_step(x, y);
    } else {
      opt_a->zero_grad();
      la = a->loss_step(x, y);
      opt_a->step();
      ModeScope eager(Mode::Eager);
      opt_b->zero_grad();
      lb = b->loss_step(x, y);
      opt_b->step();
    }
    ASSERT_FALSE(la.requires_grad());  // the graph's loss is a value, not on a tape
    EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-5 * (1 + std::fabs(lb.item<double>())));
    if (s == 1) halve_lr(opt_a.get()), halve_lr(opt_b.get());
  }
  EXPECT_EQ(calls_of(fn) - before, uint64_t{kSteps});
  expect_same_parameters(a, b, 1e-5f);
}

TEST(TrainStep, SgdMomentumWeightDecayMatchesEager) {
  compare_training([](ts::MLP& m) {
    return std::make_unique<graph::optim::SGD>(
        m->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(1e-2));
  }, false);
}

TEST(TrainStep, AdamAmsgradMatchesEager) {
  compare_training([](ts::MLP& m) {
    return std::make_unique<graph::optim::Adam>(
        m->parameters(), graph::optim::AdamOptions(1e-2).weight_decay(1e-3).amsgrad(true));
  }, false);
}

TEST(TrainStep, WholeStepWithOptimizerMatchesEager) {
  // zero_grad() and step() in the graph (optimizer_zero_grad, optimizer_step).
  compare_training([](ts::MLP& m) {
    return std::make_unique<graph::optim::SGD>(m->parameters(),
                                               graph::optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
  }, true);
}

// The optimizer's state of a and b equal at the end (momentum buffers, Adam's
// moments and step counts).
void expect_same_state(graph::optim::Optimizer* a, graph::optim::Optimizer* b, float tol) {
  ASSERT_EQ(a->parameters().size(), b->parameters().size());
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    SCOPED_TRACE("state of parameter " + std::to_string(i));
    auto same = [&](const Tensor& x, const Tensor& y) {
      ASSERT_EQ(x.defined(), y.defined());
      if (x.defined()) e2e::expect_close(y, x, tol);
    };
    if (auto* sa = dynamic_cast<graph::optim::SGD*>(a)) {
      auto* sb = dynamic_cast<graph::optim::SGD*>(b);
      same(sa->momentum_buffer(i), sb->momentum_buffer(i));
    } else {
      auto* da = dynamic_cast<graph::optim::Adam*>(a);
      auto* db = dynamic_cast<graph::optim::Adam*>(b);
      EXPECT_EQ(da->step_count(i), db->step_count(i));
      same(da->exp_avg(i), db->exp_avg(i));
      same(da->exp_avg_sq(i), db->exp_avg_sq(i));
      same(da->max_exp_avg_sq(i), db->max_exp_avg_sq(i));
    }
  }
}

// kSteps whole steps (zero_grad, loss, backward, step in ONE graph) on a
// compiled and an eager copy: losses step by step, then parameters, .grad and
// optimizer state; an lr change after step 1 on both.
void compare_whole_steps(const std::function<std::unique_ptr<graph::optim::Optimizer>(ts::MLP&)>& make_opt,
                         float tol = 1e-6f) {
  const int kSteps = 6;
  ts::MLP a = make_mlp(12, 16, 5), b = make_mlp(12, 16, 5);
  auto opt_a = make_opt(a), opt_b = make_opt(b);
  a->opt = opt_a.get();
  b->opt = opt_b.get();
  const Tensor x = e2e::pattern({8, 12}, 0.21f, -0.4f), y = targets(8, 5);
  const uint64_t before = graph::detail::graph_calls("_ZN2ts7MLPImpl10train_stepEN5graph6TensorES2_");
  for (const auto* g : graph::detail::registered_graphs())
    EXPECT_EQ(std::string(g->mangled_name).find("train_stepEN5graph6TensorES2_.region"), std::string::npos)
        << "train_step is split into regions: " << g->mangled_name;
  for (int s = 0; s < kSteps; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    Tensor la = a->train_step(x, y), lb;
    {
      ModeScope eager(Mode::Eager);
      lb = b->train_step(x, y);
    }
    EXPECT_NEAR(la.item<double>(), lb.item<double>(), tol * (1 + std::fabs(lb.item<double>())));
    if (s == 1) halve_lr(opt_a.get()), halve_lr(opt_b.get());
  }
  EXPECT_EQ(graph::detail::graph_calls("_ZN2ts7MLPImpl10train_stepEN5graph6TensorES2_") - before,
            uint64_t{kSteps});
  expect_same_parameters(a, b, tol);
  expect_same_state(opt_a.get(), opt_b.get(), tol);
}

TEST(TrainStep, WholeStepPlainSgd) {
  compare_whole_steps([](ts::MLP& m) { return std::make_unique<graph::optim::SGD>(m->parameters(), 0.1); });
}

TEST(TrainStep, WholeStepSgdMomentumDampeningWeightDecay) {
  compare_whole_steps([](ts::MLP& m) {
    return std::make_unique<graph::optim::SGD>(
        m->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(1e-2));
  });
}

TEST(TrainStep, WholeStepSgdNesterovWeightDecay) {
  compare_whole_steps([](ts::MLP& m) {
    return std::make_unique<graph::optim::SGD>(
        m->parameters(), graph::optim::SGDOptions(0.05).momentum(0.8).nesterov(true).weight_decay(1e-3));
  });
}

TEST(TrainStep, WholeStepAdam) {
  compare_whole_steps([](ts::MLP& m) {
    return std::make_unique<graph::optim::Adam>(m->parameters(), graph::optim::AdamOptions(1e-2).betas({0.8, 0.99}));
  });
}

TEST(TrainStep, WholeStepAdamAmsgradWeightDecay) {
  compare_whole_steps([](ts::MLP& m) {
    return std::make_unique<graph::optim::Adam>(
        m->parameters(), graph::optim::AdamOptions(1e-2).weight_decay(1e-3).amsgrad(true));
  });
}

TEST(TrainStep, WholeStepOptimizerOverHalfTheLayers) {
  // The optimizer holds fc2 only: the graph maps its parameters onto the
  // graph's own, fc1 keeps its values and gets its .grad, as eagerly.
  compare_whole_steps([](ts::MLP& m) {
    return std::make_unique<graph::optim::SGD>(m->fc2->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  });
}

// A subclass may override step(): the guard refuses it (the call runs its
// eager body, explained with GRAPH_EXPLAIN=1), and the results are eager's.
struct CountingSGD : graph::optim::SGD {
  using SGD::SGD;
  void step() override {
    ++steps;
    SGD::step();
  }
  int steps = 0;
};

TEST(TrainStep, OptimizerSubclassRunsEagerly) {
  ts::MLP a = make_mlp(12, 16, 5), b = make_mlp(12, 16, 5);
  CountingSGD opt_a(a->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  graph::optim::SGD opt_b(b->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  a->opt = &opt_a;
  b->opt = &opt_b;
  const Tensor x = e2e::pattern({8, 12}, 0.21f, -0.4f), y = targets(8, 5);
  const uint64_t before = graph::detail::graph_calls("_ZN2ts7MLPImpl10train_stepEN5graph6TensorES2_");
  for (int s = 0; s < 3; ++s) {
    Tensor la = a->train_step(x, y);
    ModeScope eager(Mode::Eager);
    Tensor lb = b->train_step(x, y);
    EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-6 * (1 + std::fabs(lb.item<double>())));
  }
  EXPECT_EQ(opt_a.steps, 3);  // its own step() ran
  EXPECT_EQ(graph::detail::graph_calls("_ZN2ts7MLPImpl10train_stepEN5graph6TensorES2_") - before, 0u);
  expect_same_parameters(a, b, 1e-6f);
}

// A post-accumulate hook (what graph::dist's DDP all-reduces from) may change
// .grad; the graph would skip it, so a whole step on hooked parameters runs
// its eager body: the hook runs once per step and the step uses what it wrote.
TEST(TrainStep, PostAccumulateHookRunsTheEagerBody) {
  ts::MLP a = make_mlp(12, 16, 5), b = make_mlp(12, 16, 5);
  graph::optim::SGD opt_a(a->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  graph::optim::SGD opt_b(b->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  a->opt = &opt_a;
  b->opt = &opt_b;
  int hooked = 0;
  auto halve = [&hooked](Tensor& g) {
    ++hooked;
    g.mul_(0.5);  // as DDP writes back the average
  };
  graph::autograd::add_post_accumulate_hook(a->fc2->weight, halve);
  graph::autograd::add_post_accumulate_hook(b->fc2->weight, halve);
  const Tensor x = e2e::pattern({8, 12}, 0.21f, -0.4f), y = targets(8, 5);
  const uint64_t before = calls_of("train_step") + calls_of("loss_step");
  for (int s = 0; s < 3; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    Tensor la = a->train_step(x, y);
    ModeScope eager(Mode::Eager);
    Tensor lb = b->train_step(x, y);
    EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-6 * (1 + std::fabs(lb.item<double>())));
  }
  a->loss_step(x, y);  // backward() in the graph without an optimizer: the same guard
  {
    ModeScope eager(Mode::Eager);
    b->loss_step(x, y);
  }
  EXPECT_EQ(hooked, 2 * 4);
  EXPECT_EQ(calls_of("train_step") + calls_of("loss_step") - before, 0u);
  expect_same_parameters(a, b, 1e-6f);
  expect_same_state(&opt_a, &opt_b, 1e-6f);
}

TEST(TrainStep, StepInsideAnIfRunsEagerly) {
  ts::MLP a = make_mlp(12, 16, 5), b = make_mlp(12, 16, 5);
  graph::optim::SGD opt_a(a->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  graph::optim::SGD opt_b(b->parameters(), graph::optim::SGDOptions(0.1).momentum(0.9));
  a->opt = &opt_a;
  b->opt = &opt_b;
  const Tensor x = e2e::pattern({8, 12}, 0.21f, -0.4f), y = targets(8, 5);
  for (int s = 0; s < 4; ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    Tensor la = a->step_in_if(x, y, s != 2);
    ModeScope eager(Mode::Eager);
    Tensor lb = b->step_in_if(x, y, s != 2);
    EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-6 * (1 + std::fabs(lb.item<double>())));
  }
  EXPECT_GT(calls_of("step_in_if"), 0u);
  expect_same_parameters(a, b, 1e-6f);
  expect_same_state(&opt_a, &opt_b, 1e-6f);
}

TEST(TrainStep, GradientsAccumulateLikeEager) {
  // Without zero_grad the second call adds to .grad, as eager backward() does.
  ts::MLP a = make_mlp(6, 7, 3), b = make_mlp(6, 7, 3);
  const Tensor x = e2e::pattern({4, 6}, 0.3f, 0.2f), y = targets(4, 3);
  for (int i = 0; i < 2; ++i) {
    a->loss_step(x, y);
    ModeScope eager(Mode::Eager);
    b->loss_step(x, y);
  }
  expect_same_parameters(a, b, 1e-5f);
}

TEST(TrainStep, FrozenParameterGetsNoGradient) {
  ts::MLP a = make_mlp(6, 7, 3), b = make_mlp(6, 7, 3);
  for (ts::MLP* m : {&a, &b}) (*m)->fc1->weight.requires_grad_(false);
  const Tensor x = e2e::pattern({4, 6}, 0.3f, 0.2f), y = targets(4, 3);
  const uint64_t before = calls_of("loss_step");
  a->loss_step(x, y);
  {
    ModeScope eager(Mode::Eager);
    b->loss_step(x, y);
  }
  EXPECT_EQ(calls_of("loss_step") - before, 1u);
  EXPECT_FALSE(a->fc1->weight.grad().defined());
  expect_same_parameters(a, b, 1e-5f);
}

TEST(TrainStep, GradientsMatchFloat64FiniteDifferences) {
  // The graph's float32 .grad against central differences of the loss of
  // the same model in float64 (its forward runs the graph specialized for
  // float64 on the interpreter).
  ts::MLP m = make_mlp(5, 4, 3), m64 = make_mlp(5, 4, 3, graph::kFloat64);
  const Tensor x = e2e::pattern({6, 5}, 0.3f, -0.1f), y = e2e::pattern({6, 3}, 0.5f, 0.4f);
  const Tensor x64 = x.to(graph::kFloat64), y64 = y.to(graph::kFloat64);
  const uint64_t before = calls_of("mse_step");
  m->mse_step(x, y);
  EXPECT_EQ(calls_of("mse_step") - before, 1u);
  graph::autograd::NoGradGuard no_grad;
  const double h = 1e-6;
  auto params = m->parameters(), params64 = m64->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    SCOPED_TRACE("parameter " + std::to_string(k));
    const Tensor g = params[k].grad().contiguous();
    ASSERT_TRUE(g.defined());
    double* w = params64[k].data_ptr<double>();
    for (int64_t i = 0; i < g.numel(); ++i) {
      const double v = w[i];
      w[i] = v + h;
      const double up = graph::mse_loss(m64->forward(x64), y64).item<double>();
      w[i] = v - h;
      const double down = graph::mse_loss(m64->forward(x64), y64).item<double>();
      w[i] = v;
      const double want = (up - down) / (2 * h);
      EXPECT_NEAR(g.data_ptr<float>()[i], want, 1e-5 + 1e-4 * std::fabs(want)) << "element " << i;
    }
  }
}

TEST(TrainStep, DataArgumentThatRequiresGradIsAnErrorAtItsLine) {
  ts::MLP m = make_mlp(6, 7, 3);
  Tensor x = e2e::pattern({4, 6}, 0.3f, 0.2f);
  x.requires_grad_();
  try {
    m->loss_step(x, targets(4, 3));
    FAIL() << "no error";
  } catch (const graph::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("a tensor argument requires grad"), std::string::npos) << what;
    EXPECT_NE(what.find("train_step_functions.cpp:13"), std::string::npos) << what;
  }
  for (const Tensor& p : m->parameters()) EXPECT_FALSE(p.grad().defined());  // checked before any write
}

}  // namespace
