// Data-parallel training of an MLP across processes (graph::dist, docs/distributed.md):
//
//   mpirun -np 2 build/examples/example_ddp_mlp                 # train, print losses
//   mpirun -np 2 build/examples/example_ddp_mlp --bench 40      # time 40 steps
//   mpirun -np 2 build/examples/example_ddp_mlp --static        # the whole step as one
//                                                               # [[graph::static]] graph
//   ... --copy-grads    .grad as copies of the averages (DdpOptions' default)
//                       instead of views into the buckets
//
// Each rank builds the model from its own seed; DistributedDataParallel
// replaces the weights with rank 0's, and every backward() averages the
// gradients over the ranks while it runs. A DistributedSampler gives each rank
// its share of every epoch's shuffled examples, so the global batch is
// kGlobalBatch whatever the number of ranks, and the run computes what one
// process would on the whole batch. With --static the step (zero_grad,
// forward, loss, backward, step) is one compiled graph whose grad_sync nodes
// start each bucket's all-reduce as soon as its gradients exist.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <vector>

#include <graph/dist.h>
#include <graph/graph.h>
#include <graph/optim.h>

using namespace graph;

constexpr int64_t kExamples = 3 * 512, kGlobalBatch = 256, kClasses = 3;

struct MlpImpl : nn::Module {
  explicit MlpImpl(int64_t hidden)
      : fc1(register_module("fc1", nn::Linear(2, hidden))),
        fc2(register_module("fc2", nn::Linear(hidden, hidden))),
        fc3(register_module("fc3", nn::Linear(hidden, hidden))),
        out(register_module("out", nn::Linear(hidden, kClasses))) {}
  Tensor forward(Tensor x) { return out(relu(fc3(relu(fc2(relu(fc1(x))))))); }
  // The whole step, compiled (--static): DDP's all-reduce inside the graph.
  [[graph::static]] Tensor train_step(Tensor x, Tensor y) {
    opt->zero_grad();
    Tensor loss = cross_entropy(forward(x), y);
    loss.backward();
    opt->step();
    return loss;
  }
  nn::Linear fc1, fc2, fc3, out;
  optim::SGD* opt = nullptr;
};
GRAPH_MODULE(Mlp);

namespace {

// Three interleaved spiral arms, one class each; the same on every rank.
std::pair<Tensor, Tensor> spirals() {
  std::vector<float> points, labels;
  const int64_t per_class = kExamples / kClasses;
  for (int64_t k = 0; k < kClasses; ++k)
    for (int64_t i = 0; i < per_class; ++i) {
      const double r = static_cast<double>(i) / per_class, a = 4 * r + k * 2 * std::numbers::pi / 3;
      points.push_back(static_cast<float>(r * std::cos(a)));
      points.push_back(static_cast<float>(r * std::sin(a)));
      labels.push_back(static_cast<float>(k));
    }
  manual_seed(0);
  return {from_vector(points, {kExamples, 2}) + randn({kExamples, 2}) * 0.03f,
          from_vector(labels, {kExamples}).to(kInt64)};
}

Tensor rows(const Tensor& t, const std::vector<int64_t>& idx, size_t begin, size_t end) {
  std::vector<Tensor> picked;
  for (size_t i = begin; i < end; ++i) picked.push_back(t.slice(0, idx[i], idx[i] + 1));
  return cat(picked, 0);
}

}  // namespace

int main(int argc, char** argv) {
  int bench_steps = 0;
  bool whole_static = false, bucket_views = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bench") == 0 && i + 1 < argc) bench_steps = std::atoi(argv[++i]);
    else if (std::strcmp(argv[i], "--static") == 0) whole_static = true;
    else if (std::strcmp(argv[i], "--copy-grads") == 0) bucket_views = false;  // DDP's default: .grad copies
  }
  dist::ProcessGroup pg = dist::ProcessGroup::from_environment();
  const int rank = pg.rank(), world = pg.world_size();
  if (kGlobalBatch % world != 0) {
    if (rank == 0) std::fprintf(stderr, "ddp_mlp: the global batch %lld must divide by the world size\n",
                                static_cast<long long>(kGlobalBatch));
    return 2;
  }
  auto [x, y] = spirals();
  manual_seed(1 + rank);  // DDP broadcasts rank 0's weights: the others' do not matter
  Mlp model(bench_steps ? 512 : 64);
  dist::DistributedDataParallel ddp(model.ptr(), pg,
                                    {.bucket_cap_bytes = bench_steps ? (1u << 20) : (25u << 20),
                                     .gradient_as_bucket_view = bucket_views});
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.2).momentum(0.9));
  model->opt = &opt;
  uint64_t graph_calls = 0;
  auto count_calls = [] {
    uint64_t n = 0;
    for (const auto* g : detail::registered_graphs()) n += g->calls.load();
    return n;
  };
  const uint64_t calls_before = count_calls();
  dist::DistributedSampler sampler(kExamples, pg, {.shuffle = true, .seed = 42});
  const size_t local_batch = static_cast<size_t>(kGlobalBatch / world);

  std::vector<double> step_ms, hidden_ms, exposed_ms;
  const int epochs = bench_steps ? 1000 : 8;
  int steps = 0;
  for (int epoch = 0; epoch < epochs && (!bench_steps || steps < bench_steps); ++epoch) {
    sampler.set_epoch(epoch);
    const std::vector<int64_t> idx = sampler.indices();
    double loss_sum = 0;
    int batches = 0;
    for (size_t b = 0; b + local_batch <= idx.size() && (!bench_steps || steps < bench_steps); b += local_batch) {
      Tensor xb = rows(x, idx, b, b + local_batch), yb = rows(y, idx, b, b + local_batch);
      const auto start = std::chrono::steady_clock::now();
      Tensor loss;
      if (whole_static) {
        loss = model->train_step(xb, yb);  // the same step, one compiled graph
      } else {
        opt.zero_grad();
        loss = cross_entropy(model->forward(xb), yb);
        loss.backward();  // gradients averaged over the ranks when it returns
        opt.step();
      }
      step_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      hidden_ms.push_back(ddp.last_stats().comm_in_backward_ms);
      exposed_ms.push_back(ddp.last_stats().wait_after_backward_ms);
      loss_sum += loss.item<double>();
      ++batches;
      ++steps;
    }
    Tensor mean = pg.all_reduced(full({1}, loss_sum / batches, kFloat64), dist::ReduceOp::Avg);
    if (rank == 0 && !bench_steps) std::printf("epoch %d: mean loss %.4f\n", epoch, mean.item<double>());
  }
  graph_calls = count_calls() - calls_before;
  if (whole_static && graph_calls == 0) {
    if (rank == 0) std::printf("NO COMPILED GRAPH RAN (GRAPH_EXPLAIN=1 says why)\n");
    return 1;
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  if (rank == 0)
    std::printf("%d rank(s), global batch %lld, %d %s steps: median step %.2f ms; all-reduce in flight during "
                "backward %.2f ms, waited for after backward %.2f ms (medians, rank 0)\n",
                world, static_cast<long long>(kGlobalBatch), steps, whole_static ? "whole static" : "eager",
                median(step_ms), median(hidden_ms), median(exposed_ms));
  return 0;
}
