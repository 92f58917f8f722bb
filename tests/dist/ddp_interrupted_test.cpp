// A DDP step that stops with an exception between its first gradient and the
// wait (eager backward() and a whole static train step, compiled and
// interpreted), without MPI: the ProcessGroup runs over a loopback backend
// that plays two ranks, the other with twice this rank's gradients (a bucket's
// sum is 3 times this rank's, the average 1.5 times), and can fail its n-th
// bucket all-reduce on demand. What must hold:
// - interrupted before any bucket started: the next step is exact (before the
//   fix, the stale pass made it skip the gradients it had already staged);
// - interrupted after a bucket started: the group is broken, and the next
//   step says why instead of pairing buckets of different steps.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <graph/dist.h>
#include <graph/graph.h>
#include <graph/optim.h>

#include "ddp_models.h"

namespace graph {
namespace {

struct DoneWork final : dist::Work {
  bool test() override { return true; }
};

// Two ranks, the other's gradients twice ours. Only what DDP calls is implemented.
class Loopback final : public dist::Backend {
 public:
  int fail_at = -1;  // the all_reduce (0-based count) that throws
  int all_reduces = 0;

  std::string name() const override { return "loopback"; }
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  std::unique_ptr<dist::Work> all_reduce(Tensor& buf) override {
    if (all_reduces++ == fail_at) throw Error("loopback: injected failure of an all_reduce");
    buf.mul_(3.0);
    return std::make_unique<DoneWork>();
  }
  std::unique_ptr<dist::Work> broadcast(Tensor&, int) override { return std::make_unique<DoneWork>(); }
  std::unique_ptr<dist::Work> all_gather(const Tensor&, Tensor&) override { throw Error("loopback: all_gather"); }
  std::unique_ptr<dist::Work> reduce_scatter(const Tensor&, Tensor&) override {
    throw Error("loopback: reduce_scatter");
  }
  std::unique_ptr<dist::Work> barrier() override { return std::make_unique<DoneWork>(); }
  std::unique_ptr<dist::Work> all_gather_meta(const int64_t* in, int64_t* out, int n) override {
    std::memcpy(out, in, sizeof(int64_t) * n);
    std::memcpy(out + n, in, sizeof(int64_t) * n);
    return std::make_unique<DoneWork>();
  }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

// A broken group's destructor ends the process (MPI_Abort): tests that break
// theirs leak it.
struct Group {
  Loopback* backend = new Loopback;
  dist::ProcessGroup* pg = new dist::ProcessGroup(std::unique_ptr<dist::Backend>(backend), {});
  ~Group() {
    if (!pg->broken()) delete pg;
  }
};

Tensor inputs() {
  manual_seed(7);
  return randn({6, 4});
}
Tensor labels() { return from_vector({0, 1, 1, 0, 1, 0}, {6}).to(kInt64); }

// 1.5 times the gradients of one plain step: DDP's average over the two ranks.
template <class Model>
std::vector<Tensor> reference_grads(Model& model) {
  for (Tensor& p : model->parameters()) p.autograd_meta()->grad = Tensor();
  cross_entropy(model->forward(inputs()), labels()).backward();
  std::vector<Tensor> g;
  for (Tensor& p : model->parameters()) g.push_back(p.grad() * 1.5);
  for (Tensor& p : model->parameters()) p.autograd_meta()->grad = Tensor();
  return g;
}

void expect_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& want) {
  ASSERT_EQ(params.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_TRUE(params[k].grad().defined()) << k;
    EXPECT_LT(amax(abs(params[k].grad() - want[k])).item<float>(), 1e-6f) << "parameter " << k;
  }
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(DdpInterrupted, EagerBeforeAnyBucketStartedTheNextStepIsExact) {
  Group g;
  Mlp model(4, 8, 2);
  const std::vector<Tensor> want = reference_grads(model);
  // One bucket: it starts only when every gradient is in, so the failure of
  // its all_reduce stops the pass with nothing started.
  dist::DistributedDataParallel ddp(model.ptr(), *g.pg);
  g.backend->fail_at = 0;
  expect_error([&] { cross_entropy(model->forward(inputs()), labels()).backward(); }, {"injected failure"});
  EXPECT_FALSE(g.pg->broken());
  for (Tensor& p : model->parameters()) p.autograd_meta()->grad = Tensor();
  cross_entropy(model->forward(inputs()), labels()).backward();
  expect_grads(model->parameters(), want);
}

TEST(DdpInterrupted, EagerAfterABucketStartedBreaksTheGroup) {
  Group g;
  Mlp model(4, 8, 2);
  // A bucket per parameter: fc3's start, the third all_reduce fails.
  dist::DistributedDataParallel ddp(model.ptr(), *g.pg, {.bucket_cap_bytes = 8});
  g.backend->fail_at = 2;
  expect_error([&] { cross_entropy(model->forward(inputs()), labels()).backward(); }, {"injected failure"});
  EXPECT_TRUE(g.pg->broken());
  expect_error([&] { cross_entropy(model->forward(inputs()), labels()).backward(); },
               {"process group is broken", "2 of its 6 gradient buckets had started", "out of step"});
  // Every later collective says so too.
  Tensor t = ones({2});
  expect_error([&] { g.pg->all_reduce(t); }, {"out of step"});
}

// The whole static train step (ddp_models.cpp, compiled by the plugin); in
// GRAPH_MODE=interpret the same cases run the interpreter.
struct StaticStep {
  StepMlp model{4, 8, 2};
  optim::SGD opt{model->parameters(), optim::SGDOptions(0.0)};  // lr 0: the weights stay put
  StaticStep() { model->opt = &opt; }
  void step(double scale = 1.0) { model->train_step(inputs() * scale, labels()); }
};

TEST(DdpInterrupted, StaticStepBeforeAnyBucketStartedTheNextStepIsExact) {
  Group g;
  StaticStep s;
  const std::vector<Tensor> want = reference_grads(s.model);
  dist::DistributedDataParallel ddp(s.model.ptr(), *g.pg);
  g.backend->fail_at = 0;
  // Other inputs than the next step's, whose gradients a stale pass would reuse.
  expect_error([&] { s.step(2.0); }, {"injected failure"});
  EXPECT_FALSE(g.pg->broken());
  s.step();
  expect_grads(s.model->parameters(), want);
  EXPECT_EQ(g.backend->all_reduces, 2);  // the failed one, then the step's one bucket
}

TEST(DdpInterrupted, StaticStepAfterABucketStartedBreaksTheGroup) {
  Group g;
  StaticStep s;
  dist::DistributedDataParallel ddp(s.model.ptr(), *g.pg, {.bucket_cap_bytes = 8});
  g.backend->fail_at = 3;
  expect_error([&] { s.step(); }, {"injected failure"});
  EXPECT_TRUE(g.pg->broken());
  expect_error([&] { s.step(); }, {"process group is broken", "3 of its 6 gradient buckets had started"});
}

TEST(DdpInterrupted, StaticStepsInARowStayExact) {
  // The guard does nothing to steps that finish.
  Group g;
  StaticStep s;
  const std::vector<Tensor> want = reference_grads(s.model);
  dist::DistributedDataParallel ddp(s.model.ptr(), *g.pg, {.bucket_cap_bytes = 8});
  for (int i = 0; i < 3; ++i) {
    s.step();
    expect_grads(s.model->parameters(), want);
  }
  EXPECT_EQ(g.backend->all_reduces, 18);
}

}  // namespace
}  // namespace graph
