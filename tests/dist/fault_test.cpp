// Faults under mpirun -np 2 (tests/dist.cmake): rank 1 misbehaves, rank 0
// must get a graph::Error naming the operation and rank 1 within the timeout,
// then the job ends (the broken group's MPI_Abort), never hangs.
//   dist_fault_test never_arrives     rank 1 never calls the all_reduce
//   dist_fault_test exits_early       rank 1 finalizes MPI and returns first
//   dist_fault_test ddp_step_skipped  rank 1 skips a DDP backward
//   dist_fault_test static_step_skipped  rank 1 skips a whole static train
//                                     step under DDP: rank 0's error comes from
//                                     the compiled graph's grad_sync_wait
// Rank 0 prints "fault test passed" or "fault test FAILED: ...".
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <graph/dist.h>
#include <graph/graph.h>
#include <graph/optim.h>

#include "ddp_models.h"

using namespace graph;

namespace {

constexpr auto kTimeout = std::chrono::milliseconds(1500);

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs `op` on rank 0 and judges the error it must throw.
template <class Op>
int expect_timeout(dist::ProcessGroup& pg, const std::string& op_name, Op op) {
  const auto start = std::chrono::steady_clock::now();
  try {
    op();
    std::printf("fault test FAILED: no error\n");
  } catch (const Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string m = e.what();
    const bool ok = contains(m, op_name) && contains(m, "rank 1") && contains(m, "timed out") && pg.broken() &&
                    s < 1.5 + 5;
    std::printf("%s after %.1f s: %s\n", ok ? "fault test passed" : "fault test FAILED", s, m.c_str());
    // Later calls say the group is broken.
    Tensor t = ones({1});
    try {
      pg.all_reduce(t);
    } catch (const Error& again) {
      if (!contains(again.what(), "broken")) std::printf("fault test FAILED: then %s\n", again.what());
    }
  }
  std::fflush(stdout);
  return 0;  // ~ProcessGroup: broken, so MPI_Abort ends rank 1 too
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "never_arrives" && mode != "exits_early" && mode != "ddp_step_skipped" &&
      mode != "static_step_skipped") {
    std::fprintf(stderr, "usage: dist_fault_test never_arrives|exits_early|ddp_step_skipped|static_step_skipped\n");
    return 2;
  }
  dist::Options opt;
  opt.timeout = kTimeout;
  dist::ProcessGroup pg = dist::ProcessGroup::from_environment(opt);
  if (pg.world_size() != 2) {
    std::printf("fault test FAILED: run with mpirun -np 2\n");
    return 1;
  }
  if (mode == "exits_early" && pg.rank() == 1) return 0;  // ~ProcessGroup: MPI_Finalize
  if (mode == "ddp_step_skipped") {
    manual_seed(1);
    nn::Linear model(4, 2);
    dist::DistributedDataParallel ddp(model.ptr(), pg);
    if (pg.rank() == 0)
      return expect_timeout(pg, "DDP gradient all_reduce of bucket 0", [&] { model(ones({3, 4})).sum().backward(); });
  } else if (mode == "static_step_skipped") {
    manual_seed(1);
    StepMlp model(4, 8, 2);
    dist::DistributedDataParallel ddp(model.ptr(), pg);
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
    model->opt = &opt;
    if (pg.rank() == 0)
      return expect_timeout(pg, "in static graph 'train_step'", [&] {
        model->train_step(ones({3, 4}), zeros({3}, kInt64));
      });
  } else if (pg.rank() == 0) {
    Tensor t = ones({4});
    return expect_timeout(pg, "all_reduce #1 of float [4]", [&] { pg.all_reduce(t); });
  }
  // Rank 1 in the other modes: away long past the timeout; rank 0's abort ends it.
  std::this_thread::sleep_for(std::chrono::seconds(25));
  std::printf("fault test FAILED: rank 1 was not ended by rank 0's abort\n");
  return 1;
}
