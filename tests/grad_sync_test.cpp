// The data-parallel gradient sync of a static train step without MPI: a
// compiled step (ir::compile, so place_grad_sync ran) on the interpreter,
// with a stand-in for DistributedDataParallel registered as the parameters'
// GradSync (graph/detail/grad_sync.h). It checks what the nodes hand over and
// when, that the update uses what the sync wrote, that nothing happens
// without a registration, and the errors. tests/dist/ddp_test.cpp runs the
// real DDP over MPI with the generated code.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/generated_support.h"
#include "graph/detail/grad_sync.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/compile.h"
#include "graph/ir/ir.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "graph/optim.h"
#include "graph/static.h"
#include "two_layer_step_ir.h"

namespace graph {
namespace {


// Plays a world of two ranks whose other rank's gradients are `other`
// times this one's: the average is (1 + other) / 2 times the gradient.
struct FakeSync : detail::GradSync {
  std::vector<Tensor> params;
  double other = 3.0;
  bool sync = true;
  std::vector<size_t> order;        // static_ready's indices, in call order
  std::vector<Tensor> staged;       // per parameter
  int finishes = 0;
  int ready_before_finish = 0;

  bool syncing() const override { return sync; }
  void static_ready(size_t k, const Tensor& g) override {
    order.push_back(k);
    staged[k] = g.clone();
  }
  // Called by static.cpp's train-step runner, which graph::run bypasses
  // (tests/dist/ddp_interrupted_test.cpp covers it with the real DDP).
  void static_abandon() noexcept override {}
  void static_finish() override {
    ++finishes;
    ready_before_finish = static_cast<int>(order.size());
    for (size_t k = 0; k < params.size(); ++k) {
      Tensor g = staged[k].defined() ? staged[k] : params[k].grad();
      params[k].autograd_meta()->grad = g * ((1.0 + other) / 2.0);
    }
  }
};

struct Fixture {
  Tensor x, y;
  std::vector<Tensor> params;  // w1, b1, w2, b2

  Fixture() {
    manual_seed(3);
    x = randn({6, 4});
    y = (rand({6}) * 3.0).to(kInt64).clamp_(0, 2);
    for (Shape s : {Shape{5, 4}, Shape{5}, Shape{3, 5}, Shape{3}}) params.push_back((randn(s) * 0.5).requires_grad_());
  }

  // The gradients by eager autograd, the independent reference.
  std::vector<Tensor> eager_grads() const {
    std::vector<Tensor> leaves;
    for (const Tensor& p : params) leaves.push_back(p.detach().clone().requires_grad_());
    Tensor loss = cross_entropy(linear(relu(linear(x, leaves[0], leaves[1])), leaves[2], leaves[3]), y);
    loss.backward();
    std::vector<Tensor> g;
    for (const Tensor& l : leaves) g.push_back(l.grad());
    return g;
  }

  void run_step(const ir::Graph& g, optim::SGD& opt) {
    std::vector<IValue> in{x, y, params[0], params[1], params[2], params[3], detail::optimizer_handle(&opt)};
    NoGradGuard no_grad;  // as static.cpp runs a train step
    graph::run(g, in, RunOptions{1, {}});
  }
};

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return amax(abs(a.detach().to(kFloat64) - b.detach().to(kFloat64))).item<double>();
}

TEST(GradSync, WithoutARegistrationTheStepIsUnchanged) {
  auto c = ir::compile(*ir::parse(test::kTwoLayerStep));
  Fixture f;
  const std::vector<Tensor> want = f.eager_grads();
  std::vector<Tensor> before;
  for (const Tensor& p : f.params) before.push_back(p.detach().clone());
  optim::SGD opt(f.params, optim::SGDOptions(0.1));
  f.run_step(*c.optimized, opt);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_LT(max_abs_diff(f.params[k].grad(), want[k]), 1e-6) << k;
    EXPECT_LT(max_abs_diff(f.params[k], before[k] - want[k] * 0.1), 1e-6) << k;
  }
}

TEST(GradSync, NodesHandOverEachGradientThenTheStepUsesTheAverage) {
  auto c = ir::compile(*ir::parse(test::kTwoLayerStep));
  Fixture f;
  const std::vector<Tensor> want = f.eager_grads();
  std::vector<Tensor> before;
  for (const Tensor& p : f.params) before.push_back(p.detach().clone());
  FakeSync sync;
  sync.params = f.params;
  sync.staged.resize(4);
  for (size_t k = 0; k < 4; ++k) detail::register_grad_sync(f.params[k], &sync, k, 0);
  optim::SGD opt(f.params, optim::SGDOptions(0.1));
  f.run_step(*c.optimized, opt);
  for (size_t k = 0; k < 4; ++k) detail::unregister_grad_sync(f.params[k]);
  // fc2's gradients first (backward's order), each once, all before the wait.
  ASSERT_EQ(sync.order.size(), 4u);
  EXPECT_EQ(sync.order, (std::vector<size_t>{2, 3, 0, 1}));
  EXPECT_EQ(sync.finishes, 1);
  EXPECT_EQ(sync.ready_before_finish, 4);
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_LT(max_abs_diff(sync.staged[k], want[k]), 1e-6) << k;  // after zero_grad: the step's own gradient
    // .grad is the sync's average (set_grads did not add to it), and SGD used it.
    EXPECT_LT(max_abs_diff(f.params[k].grad(), want[k] * 2.0), 1e-6) << k;
    EXPECT_LT(max_abs_diff(f.params[k], before[k] - want[k] * 0.2), 1e-6) << k;
  }
}

TEST(GradSync, UnderNoSyncGradientsOnlyAccumulate) {
  auto c = ir::compile(*ir::parse(test::kTwoLayerStep));
  Fixture f;
  const std::vector<Tensor> want = f.eager_grads();
  FakeSync sync;
  sync.params = f.params;
  sync.staged.resize(4);
  sync.sync = false;
  for (size_t k = 0; k < 4; ++k) detail::register_grad_sync(f.params[k], &sync, k, 0);
  optim::SGD opt(f.params, optim::SGDOptions(0.1));
  f.run_step(*c.optimized, opt);
  for (size_t k = 0; k < 4; ++k) detail::unregister_grad_sync(f.params[k]);
  EXPECT_TRUE(sync.order.empty());
  EXPECT_EQ(sync.finishes, 0);
  for (size_t k = 0; k < 4; ++k) EXPECT_LT(max_abs_diff(f.params[k].grad(), want[k]), 1e-6) << k;
}

TEST(GradSync, StagedGradientIncludesWhatDotGradHeld) {
  // Without zero_grad first, eager backward() adds into .grad before DDP's
  // hook reads it: the start node hands over the same sum.
  Tensor w = ones({3}).requires_grad_();
  w.autograd_meta()->grad = full({3}, 2.0);
  FakeSync sync;
  sync.params = {w};
  sync.staged.resize(1);
  detail::register_grad_sync(w, &sync, 0, 0);
  detail::grad_sync_start({w}, {full({3}, 0.5)});
  std::vector<Tensor> out = detail::grad_sync_wait({w}, {full({3}, 0.5)});
  detail::unregister_grad_sync(w);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_LT(max_abs_diff(sync.staged[0], full({3}, 2.5)), 0.0 + 1e-12);
  EXPECT_LT(max_abs_diff(out[0], full({3}, 5.0)), 1e-12);  // 2.5 * (1 + 3) / 2
}

TEST(GradSync, BadInputIsAnError) {
  Tensor w = ones({2, 3}).requires_grad_();
  FakeSync sync;
  sync.params = {w};
  sync.staged.resize(1);
  detail::register_grad_sync(w, &sync, 0, 0);
  try {
    detail::grad_sync_start({w}, {ones({3, 2})});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("grad_sync_start: the gradient of parameter 0 is float [3, 2], but the "
                                         "parameter is float [2, 3]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(sync.order.empty());  // nothing handed over
  EXPECT_THROW(detail::grad_sync_wait({w}, {}), Error);
  // A parameter belongs to one sync.
  FakeSync other;
  EXPECT_THROW(detail::register_grad_sync(w, &other, 0, 0), Error);
  EXPECT_THROW(detail::register_grad_sync(Tensor(), &other, 0, 0), Error);
  detail::unregister_grad_sync(w);
  EXPECT_FALSE(detail::grad_sync_owns(w));
}

TEST(GradSync, OnlyTheSyncsOwnHookLetsTheGraphRun) {
  Tensor w = ones({3}).requires_grad_();
  const size_t id = autograd::add_post_accumulate_hook(w, [](Tensor&) {});
  EXPECT_TRUE(detail::has_foreign_post_accumulate_hook(w));  // nobody's sync
  FakeSync sync;
  detail::register_grad_sync(w, &sync, 0, id);
  EXPECT_FALSE(detail::has_foreign_post_accumulate_hook(w));
  const size_t extra = autograd::add_post_accumulate_hook(w, [](Tensor&) {});
  EXPECT_TRUE(detail::has_foreign_post_accumulate_hook(w));
  autograd::remove_post_accumulate_hook(w, extra);
  detail::unregister_grad_sync(w);
  autograd::remove_post_accumulate_hook(w, id);
  EXPECT_FALSE(detail::has_foreign_post_accumulate_hook(w));
}

}  // namespace
}  // namespace graph

namespace graph {
namespace {

// set_grads inside a train-step run (TakenGrads): a gradient nothing else
// can see becomes the .grad as it is; one that shares its storage with a
// data tensor, a parameter or another gradient is copied; after the run, a
// taken .grad that an output shares gets a copy of its own.
TEST(SetGrads, TakesOnlyGradientsNothingElseSees) {
  Tensor w1 = randn({3, 2}).requires_grad_(), w2 = randn({3, 2}).requires_grad_(), w3 = randn({4}).requires_grad_();
  Tensor w4 = randn({4}).requires_grad_();
  const Tensor x = randn({3, 2});
  const Tensor fresh = randn({3, 2}), twice = randn({4});
  IValue outputs[1];
  {
    detail::TakenGrads taken;
    // w1 gets a fresh gradient; w2 gets the data tensor x; w3 and w4 the same tensor.
    detail::set_grads({w1, w2, w3, w4}, {fresh, x, twice, twice}, {x});
    EXPECT_EQ(w1.grad().raw_data(), fresh.raw_data());
    EXPECT_NE(w2.grad().raw_data(), x.raw_data());
    EXPECT_NE(w3.grad().raw_data(), twice.raw_data());
    EXPECT_NE(w4.grad().raw_data(), twice.raw_data());
    outputs[0] = fresh;  // the graph also returns w1's gradient
    taken.unshare(outputs, 1);
  }
  EXPECT_NE(w1.grad().raw_data(), fresh.raw_data());
  EXPECT_EQ(max(abs(w1.grad() - fresh)).item<double>(), 0.0);
  EXPECT_EQ(max(abs(w2.grad() - x)).item<double>(), 0.0);
  EXPECT_EQ(max(abs(w4.grad() - twice)).item<double>(), 0.0);

  // Outside a run, and into a .grad that already holds a value: copied or added, as before.
  Tensor w5 = randn({2}).requires_grad_();
  const Tensor g5 = randn({2});
  detail::set_grads({w5}, {g5}, {});
  EXPECT_NE(w5.grad().raw_data(), g5.raw_data());
  {
    detail::TakenGrads taken;
    detail::set_grads({w5}, {g5}, {});
  }
  EXPECT_EQ(max(abs(w5.grad() - g5 * 2)).item<double>(), 0.0);
}

}  // namespace
}  // namespace graph
