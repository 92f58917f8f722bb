// DistributedDataParallel under mpirun -np 2: wrapping broadcasts rank 0's
// weights; 20 steps of DDP on each rank's share of a batch equal one process
// training on the whole batch (losses and parameters), bitwise the same on
// every rank; with eager and static forwards and a whole static train step,
// one bucket or many; gradient accumulation under no_sync(); mismatched
// models are reported; unused parameters get zeros; hooks go with the wrapper.
#include <gtest/gtest.h>

#include <cmath>

#include <graph/detail/generated_support.h>
#include <graph/optim.h>
#include <graph/static.h>

#include "ddp_models.h"
#include "mpi_main.h"

using namespace graph;

namespace {

constexpr int64_t kIn = 5, kHidden = 16, kOut = 3, kPerRank = 6;
constexpr int kSteps = 20;

// The global batch, the same on every rank; rank r trains on rows [r * kPerRank, (r + 1) * kPerRank).
std::pair<Tensor, Tensor> global_batch(DType dt) {
  manual_seed(7);
  const int64_t n = kPerRank * pg().world_size();
  Tensor x = randn({n, kIn}).to(dt);
  Tensor y = (rand({n}) * static_cast<double>(kOut)).to(kInt64).clamp_(0, kOut - 1);
  return {x, y};
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  Tensor x = a.to(kFloat64).contiguous(), y = b.to(kFloat64).contiguous();
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double u = x.data_ptr<double>()[i], v = y.data_ptr<double>()[i];
    worst = std::max(worst, std::fabs(u - v) / std::max(1.0, std::fabs(v)));
  }
  return worst;
}

// Every rank's copy of each parameter is bit for bit rank 0's.
void expect_same_on_all_ranks(const std::vector<Tensor>& params) {
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor g = pg().all_gather(params[k].detach().contiguous());
    for (int r = 1; r < pg().world_size(); ++r)
      EXPECT_EQ(max_rel_diff(g.slice(0, r, r + 1), g.slice(0, 0, 1)), 0.0) << "parameter " << k << ", rank " << r;
  }
}

struct Result {
  double max_loss_diff = 0, max_param_diff = 0;
};

// Trains `make(seed)` with DDP on this rank's rows and a reference on the
// whole batch (the model rank 0 starts from), and compares them.
template <class Make>
Result train_against_single_process(Make make, DType dt, dist::DdpOptions opt, int* buckets = nullptr) {
  auto [x, y] = global_batch(dt);
  const int r = pg().rank();
  manual_seed(100 + r);  // different weights on each rank: DDP must broadcast rank 0's
  auto model = make();
  model->to(dt);
  dist::DistributedDataParallel ddp(model.ptr(), pg(), opt);
  manual_seed(100);
  auto ref = make();
  ref->to(dt);
  const std::vector<Tensor> mp = model->parameters(), rp = ref->parameters();
  for (size_t k = 0; k < mp.size(); ++k) EXPECT_EQ(max_rel_diff(mp[k], rp[k]), 0.0) << "broadcast, parameter " << k;
  if (buckets) *buckets = static_cast<int>(ddp.bucket_layout().size());

  optim::SGD opt_d(mp, optim::SGDOptions(0.1).momentum(0.9)), opt_r(rp, optim::SGDOptions(0.1).momentum(0.9));
  Tensor xr = x.slice(0, r * kPerRank, (r + 1) * kPerRank), yr = y.slice(0, r * kPerRank, (r + 1) * kPerRank);
  Result res;
  for (int s = 0; s < kSteps; ++s) {
    opt_d.zero_grad();
    Tensor loss = cross_entropy(model->forward(xr), yr);
    loss.backward();  // the hooks all-reduce; the gradients are averaged when it returns
    opt_d.step();
    opt_r.zero_grad();
    Tensor ref_loss = cross_entropy(ref->forward(x), y);
    ref_loss.backward();
    opt_r.step();
    Tensor mean_loss = pg().all_reduced(loss.detach(), dist::ReduceOp::Avg);
    res.max_loss_diff = std::max(res.max_loss_diff, max_rel_diff(mean_loss, ref_loss));
  }
  for (size_t k = 0; k < mp.size(); ++k) res.max_param_diff = std::max(res.max_param_diff, max_rel_diff(mp[k], rp[k]));
  expect_same_on_all_ranks(mp);
  return res;
}

auto make_mlp = [] { return Mlp(kIn, kHidden, kOut); };
auto make_static_mlp = [] { return StaticMlp(kIn, kHidden, kOut); };
auto make_step_mlp = [] { return StepMlp(kIn, kHidden, kOut); };
auto make_step_cnn = [] { return StepCnn(kOut); };

uint64_t static_graph_runs() {
  uint64_t n = 0;
  for (const auto* g : detail::registered_graphs()) n += g->calls.load();
  return n;
}

}  // namespace

TEST(Ddp, EagerFloat64MatchesSingleProcessOnTheWholeBatch) {
  int buckets = 0;
  Result r = train_against_single_process(make_mlp, kFloat64, {}, &buckets);
  EXPECT_EQ(buckets, 1);  // 25 MB holds the whole model
  EXPECT_LT(r.max_loss_diff, 1e-12);
  EXPECT_LT(r.max_param_diff, 1e-12);
}

TEST(Ddp, EagerFloat32ManyBucketsMatchesSingleProcess) {
  int buckets = 0;
  Result r = train_against_single_process(make_mlp, kFloat32, {.bucket_cap_bytes = 300}, &buckets);
  EXPECT_EQ(buckets, 4);  // {fc3.bias, fc3.weight, fc2.bias}, {fc2.weight}, {fc1.bias}, {fc1.weight}
  EXPECT_LT(r.max_loss_diff, 1e-6);
  EXPECT_LT(r.max_param_diff, 1e-6);
}

TEST(Ddp, StaticForwardUsesTheGeneratedBackward) {
  const uint64_t before = static_graph_runs();
  int buckets = 0;
  Result r = train_against_single_process(make_static_mlp, kFloat32, {.bucket_cap_bytes = 1024}, &buckets);
  EXPECT_GE(static_graph_runs() - before, static_cast<uint64_t>(2 * kSteps)) << "the compiled forward did not run";
  EXPECT_GT(buckets, 1);
  EXPECT_LT(r.max_loss_diff, 1e-6);
  EXPECT_LT(r.max_param_diff, 1e-6);
}

// A whole static train step (zero_grad, forward, backward and step in one
// [[graph::static]] member) on a DDP-wrapped module runs as a graph: its
// grad_sync_start nodes hand each layer's gradients to DDP right after the
// generated backward computes them (the buckets start before the wait), its
// grad_sync_wait averages them before the update. 20 steps equal one process
// on the whole batch, the same bits on every rank, and equal the same step
// run eagerly under DDP (GRAPH_MODE=eager: the eager hooks' path).
struct StaticStepRun {
  std::vector<Tensor> params;
  double loss_diff = 0;
  uint64_t graph_runs = 0;
  dist::DdpStats stats;
};

template <class Make>
StaticStepRun train_static_step(Make make, Mode mode, const Tensor& x, const Tensor& y, const Tensor& xr,
                                const Tensor& yr) {
  const int r = pg().rank();
  manual_seed(100 + r);
  auto model = make();
  dist::DistributedDataParallel ddp(model.ptr(), pg(), {.bucket_cap_bytes = 300});
  const int buckets = static_cast<int>(ddp.bucket_layout().size());
  EXPECT_GT(buckets, 1);
  manual_seed(100);
  auto ref = make();
  const std::vector<Tensor> mp = model->parameters(), rp = ref->parameters();
  optim::SGD opt_d(mp, optim::SGDOptions(0.1).momentum(0.9)), opt_r(rp, optim::SGDOptions(0.1).momentum(0.9));
  model->opt = &opt_d;
  StaticStepRun run;
  const Mode saved = graph::mode();
  set_mode(mode);
  const uint64_t before = static_graph_runs();
  for (int s = 0; s < kSteps; ++s) {
    Tensor loss = model->train_step(xr, yr);
    EXPECT_EQ(ddp.last_stats().buckets, buckets) << "step " << s << ": DDP did not average the gradients";
    opt_r.zero_grad();
    Tensor ref_loss = cross_entropy(ref->forward(x), y);
    ref_loss.backward();
    opt_r.step();
    run.loss_diff = std::max(run.loss_diff, max_rel_diff(pg().all_reduced(loss.detach(), dist::ReduceOp::Avg), ref_loss));
  }
  run.graph_runs = static_graph_runs() - before;
  set_mode(saved);
  run.stats = ddp.last_stats();
  double param_diff = 0;
  for (size_t k = 0; k < mp.size(); ++k) param_diff = std::max(param_diff, max_rel_diff(mp[k], rp[k]));
  EXPECT_LT(run.loss_diff, 1e-6);
  EXPECT_LT(param_diff, 1e-6);
  expect_same_on_all_ranks(mp);
  for (const Tensor& p : mp) run.params.push_back(p.detach().clone());
  return run;
}

TEST(Ddp, WholeStaticTrainStepAllReducesInsideTheGraph) {
  auto [x, y] = global_batch(kFloat32);
  const int r = pg().rank();
  Tensor xr = x.slice(0, r * kPerRank, (r + 1) * kPerRank), yr = y.slice(0, r * kPerRank, (r + 1) * kPerRank);
  const StaticStepRun graph_run = train_static_step(make_step_mlp, Mode::Static, x, y, xr, yr);
  EXPECT_EQ(graph_run.graph_runs, static_cast<uint64_t>(kSteps)) << "the step ran its eager body (GRAPH_EXPLAIN=1)";
  // Every bucket was started by a grad_sync_start node, before the wait.
  EXPECT_EQ(graph_run.stats.started_in_backward, 4);
  const StaticStepRun eager_run = train_static_step(make_step_mlp, Mode::Eager, x, y, xr, yr);
  EXPECT_EQ(eager_run.graph_runs, 0u);
  EXPECT_EQ(eager_run.stats.started_in_backward, 4);  // the eager hooks
  double worst = 0;
  for (size_t k = 0; k < graph_run.params.size(); ++k)
    worst = std::max(worst, max_rel_diff(graph_run.params[k], eager_run.params[k]));
  EXPECT_LT(worst, 1e-6) << "the compiled step under DDP differs from the eager DDP step";
}

// The same step interpreted (GRAPH_MODE=interpret: the interpreter's binding
// of the nodes) equals the compiled one.
TEST(Ddp, WholeStaticTrainStepInterpreted) {
  auto [x, y] = global_batch(kFloat32);
  const int r = pg().rank();
  Tensor xr = x.slice(0, r * kPerRank, (r + 1) * kPerRank), yr = y.slice(0, r * kPerRank, (r + 1) * kPerRank);
  const StaticStepRun compiled = train_static_step(make_step_mlp, Mode::Static, x, y, xr, yr);
  const StaticStepRun interpreted = train_static_step(make_step_mlp, Mode::Interpret, x, y, xr, yr);
  EXPECT_EQ(interpreted.graph_runs, static_cast<uint64_t>(kSteps));
  EXPECT_EQ(interpreted.stats.started_in_backward, 4);
  double worst = 0;
  for (size_t k = 0; k < compiled.params.size(); ++k)
    worst = std::max(worst, max_rel_diff(compiled.params[k], interpreted.params[k]));
  EXPECT_LT(worst, 1e-6);
}

// The small CNN (conv, relu, max_pool, conv, relu, linear) as a whole static
// train step, compiled and interpreted, and its eager body under DDP's hooks:
// 20 steps on each rank's images equal one process on the whole batch.
TEST(Ddp, SmallCnnWholeStaticTrainStep) {
  manual_seed(11);
  const int64_t n = kPerRank * pg().world_size();
  Tensor x = randn({n, 1, 8, 8});
  Tensor y = (rand({n}) * static_cast<double>(kOut)).to(kInt64).clamp_(0, kOut - 1);
  const int r = pg().rank();
  Tensor xr = x.slice(0, r * kPerRank, (r + 1) * kPerRank), yr = y.slice(0, r * kPerRank, (r + 1) * kPerRank);
  const StaticStepRun compiled = train_static_step(make_step_cnn, Mode::Static, x, y, xr, yr);
  EXPECT_EQ(compiled.graph_runs, static_cast<uint64_t>(kSteps)) << "the step ran its eager body (GRAPH_EXPLAIN=1)";
  EXPECT_EQ(compiled.stats.started_in_backward, compiled.stats.buckets);
  const StaticStepRun interpreted = train_static_step(make_step_cnn, Mode::Interpret, x, y, xr, yr);
  EXPECT_EQ(interpreted.graph_runs, static_cast<uint64_t>(kSteps));
  const StaticStepRun eager = train_static_step(make_step_cnn, Mode::Eager, x, y, xr, yr);
  EXPECT_EQ(eager.graph_runs, 0u);
  double worst = 0;
  for (size_t k = 0; k < compiled.params.size(); ++k) {
    worst = std::max(worst, max_rel_diff(compiled.params[k], interpreted.params[k]));
    worst = std::max(worst, max_rel_diff(compiled.params[k], eager.params[k]));
  }
  EXPECT_LT(worst, 1e-6);
}

// Without DDP the same compiled step runs as a graph too, its sync nodes
// doing nothing; a gradient of the wrong shape handed to DDP is an error
// before anything is communicated, and the group stays usable.
TEST(Ddp, WholeStaticTrainStepWithoutDdpAndBadGradients) {
  auto [x, y] = global_batch(kFloat32);
  manual_seed(100);
  auto plain = StepMlp(kIn, kHidden, kOut);
  optim::SGD opt(plain->parameters(), optim::SGDOptions(0.1));
  plain->opt = &opt;
  const uint64_t before = static_graph_runs();
  plain->train_step(x, y);
  EXPECT_EQ(static_graph_runs() - before, 1u) << "the whole step did not run as a graph without DDP";
  {
    dist::DistributedDataParallel ddp(plain.ptr(), pg());
    Tensor w = plain->fc1->weight;
    try {
      detail::grad_sync_start({w}, {zeros({w.size(1), w.size(0)})});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the gradient of parameter 0 is float [5, 16], but the parameter is float "
                                           "[16, 5]"),
                std::string::npos)
          << e.what();
    }
  }
  pg().barrier();  // still in step
}

TEST(Ddp, BucketsStartDuringBackward) {
  manual_seed(1);
  Mlp model(kIn, kHidden, kOut);
  dist::DistributedDataParallel ddp(model.ptr(), pg(), {.bucket_cap_bytes = 300});
  auto [x, y] = global_batch(kFloat32);
  cross_entropy(model->forward(x), y).backward();
  // Last parameters first, as backward finishes them; at most 300 bytes unless one alone is larger.
  EXPECT_EQ(ddp.bucket_layout(), (std::vector<std::vector<size_t>>{{5, 4, 3}, {2}, {1}, {0}}));
  const dist::DdpStats st = ddp.last_stats();
  EXPECT_EQ(st.buckets, 4);
  // Every bucket was started by a hook, none left for the end of backward.
  EXPECT_EQ(st.started_in_backward, st.buckets);
}

// Gradient accumulation: two micro-batches per step, the first under
// no_sync(), equal one process stepping on the sum over every rank's
// micro-batches divided by the world size; the no_sync backward communicates
// nothing (the ranks' gradients then differ).
TEST(Ddp, NoSyncAccumulatesLocallyAndTheNextBackwardAveragesTheSum) {
  auto [x, y] = global_batch(kFloat64);
  const int r = pg().rank(), world = pg().world_size();
  manual_seed(100 + r);
  auto model = make_mlp();
  model->to(kFloat64);
  dist::DistributedDataParallel ddp(model.ptr(), pg());
  manual_seed(100);
  auto ref = make_mlp();
  ref->to(kFloat64);
  const std::vector<Tensor> mp = model->parameters(), rp = ref->parameters();
  optim::SGD opt_d(mp, optim::SGDOptions(0.1).momentum(0.9)), opt_r(rp, optim::SGDOptions(0.1).momentum(0.9));
  constexpr int64_t kMicro = kPerRank / 2;
  auto rows = [&](const Tensor& t, int rank, int part) {
    const int64_t b = rank * kPerRank + part * kMicro;
    return t.slice(0, b, b + kMicro);
  };
  for (int s = 0; s < kSteps; ++s) {
    opt_d.zero_grad();
    {
      auto guard = ddp.no_sync();
      cross_entropy(model->forward(rows(x, r, 0)), rows(y, r, 0)).backward();
    }
    if (s == 0) {  // local only so far: rank 1's fc3 gradient is its own, not rank 0's
      Tensor g = pg().all_gather(model->fc3->weight.grad().contiguous());
      EXPECT_GT(max_rel_diff(g.slice(0, 1, 2), g.slice(0, 0, 1)), 1e-6);
    }
    cross_entropy(model->forward(rows(x, r, 1)), rows(y, r, 1)).backward();
    opt_d.step();
    opt_r.zero_grad();
    Tensor total = zeros({}, kFloat64);
    for (int q = 0; q < world; ++q)
      for (int part = 0; part < 2; ++part) total = total + cross_entropy(ref->forward(rows(x, q, part)), rows(y, q, part));
    (total / static_cast<double>(world)).backward();
    opt_r.step();
  }
  double worst = 0;
  for (size_t k = 0; k < mp.size(); ++k) worst = std::max(worst, max_rel_diff(mp[k], rp[k]));
  EXPECT_LT(worst, 1e-12);
  expect_same_on_all_ranks(mp);
}

// gradient_as_bucket_view: the same training bit for bit as copies, the
// gradients alias one place across steps, and a second backward without
// zero_grad (accumulating into the view) averages as the copies do.
TEST(Ddp, GradientsAsBucketViewsTrainAsCopiesDo) {
  Result r = train_against_single_process(make_mlp, kFloat32,
                                          {.bucket_cap_bytes = 300, .gradient_as_bucket_view = true});
  EXPECT_LT(r.max_loss_diff, 1e-6);
  EXPECT_LT(r.max_param_diff, 1e-6);

  auto [x, y] = global_batch(kFloat32);
  const int rank = pg().rank();
  Tensor xr = x.slice(0, rank * kPerRank, (rank + 1) * kPerRank), yr = y.slice(0, rank * kPerRank, (rank + 1) * kPerRank);
  auto run = [&](bool views, std::vector<const void*>* where) {
    manual_seed(100);
    auto model = make_mlp();
    dist::DistributedDataParallel ddp(model.ptr(), pg(), {.bucket_cap_bytes = 300, .gradient_as_bucket_view = views});
    const std::vector<Tensor> mp = model->parameters();
    optim::SGD opt(mp, optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      cross_entropy(model->forward(xr), yr).backward();
      if (where && s > 0)
        for (size_t k = 0; k < mp.size(); ++k) EXPECT_EQ(mp[k].grad().raw_data(), (*where)[k]) << "parameter " << k;
      if (where && s == 0) {
        for (const Tensor& p : mp) where->push_back(p.grad().raw_data());
        // Bucket 0 holds fc3.bias, fc3.weight, fc2.bias end to end (parameters 5, 4, 3).
        const auto at = [&](size_t k) { return static_cast<const float*>(mp[k].grad().raw_data()); };
        EXPECT_EQ(at(4), at(5) + mp[5].numel());
        EXPECT_EQ(at(3), at(4) + mp[4].numel());
      }
      opt.step();
    }
    cross_entropy(model->forward(xr), yr).backward();  // no zero_grad: both backwards' averages summed
    cross_entropy(model->forward(xr * 0.5f), yr).backward();
    std::vector<Tensor> out;
    for (const Tensor& p : mp) out.push_back(p.grad().clone());
    for (const Tensor& p : mp) out.push_back(p.detach().clone());
    return out;
  };
  std::vector<const void*> where;
  const std::vector<Tensor> viewed = run(true, &where), copied = run(false, nullptr);
  for (size_t k = 0; k < viewed.size(); ++k) EXPECT_EQ(max_rel_diff(viewed[k], copied[k]), 0.0) << "tensor " << k;
}

TEST(Ddp, DifferentModelsAcrossRanksAreReported) {
  Mlp model(kIn, pg().rank() == 0 ? kHidden : kHidden + 1, kOut);
  try {
    dist::DistributedDataParallel ddp(model.ptr(), pg());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mismatch across ranks: DDP"), std::string::npos) << e.what();
  }
  pg().barrier();  // still in step
}

struct WithUnused : nn::Module {
  WithUnused() : fc(register_module("fc", nn::Linear(kIn, kOut))) { unused = register_parameter("unused", ones({4})); }
  nn::Linear fc;
  Tensor unused;
};

TEST(Ddp, UnusedParametersGetZeroGradients) {
  auto m = std::make_shared<WithUnused>();
  dist::DistributedDataParallel ddp(m, pg());
  auto [x, y] = global_batch(kFloat32);
  m->fc(x).sum().backward();
  ASSERT_TRUE(m->unused.grad().defined());
  EXPECT_EQ(max_rel_diff(m->unused.grad(), zeros({4})), 0.0);
}

TEST(Ddp, HooksGoWithTheWrapper) {
  manual_seed(1);
  Mlp model(kIn, kHidden, kOut);
  auto [x, y] = global_batch(kFloat32);
  const int r = pg().rank();
  Tensor xr = x.slice(0, r * kPerRank, (r + 1) * kPerRank);
  { dist::DistributedDataParallel ddp(model.ptr(), pg()); }
  model->forward(xr).sum().backward();  // no collective: a rank's own gradient
  Tensor local = model->fc3->weight.grad().clone();
  model->zero_grad();
  model->forward(xr).sum().backward();
  EXPECT_EQ(max_rel_diff(model->fc3->weight.grad(), local), 0.0);
}

TEST(Ddp, BadOptions) {
  manual_seed(1);
  Mlp model(kIn, kHidden, kOut);
  EXPECT_THROW(dist::DistributedDataParallel(model.ptr(), pg(), {.bucket_cap_bytes = 0}), Error);
  EXPECT_THROW(dist::DistributedDataParallel(nullptr, pg()), Error);
}

int main(int argc, char** argv) { return dist_test::run_all(argc, argv); }
