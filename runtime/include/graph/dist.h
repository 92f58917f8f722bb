#pragma once
// graph::dist: data-parallel training across processes.
//
//   // mpirun -np 2 ./train
//   auto pg = graph::dist::ProcessGroup::from_environment();   // MPI_Init
//   Mlp model;                                                 // any nn::Module
//   graph::dist::DistributedDataParallel ddp(model.ptr(), pg);  // rank 0's weights everywhere
//   graph::optim::SGD opt(model->parameters(), graph::optim::SGDOptions(0.1));
//   graph::dist::DistributedSampler sampler(n_examples, pg, {.shuffle = true, .seed = 1});
//   for (int epoch = 0; epoch < E; ++epoch) {
//     sampler.set_epoch(epoch);
//     for (batch of sampler.indices()) {
//       opt.zero_grad();
//       loss(model->forward(x), y).backward();  // buckets all-reduce during backward
//       opt.step();                              // same averaged gradients on every rank
//     }
//   }
//
// A ProcessGroup is a communicator with a Backend (MPI, or NCCL for CUDA
// tensors when built with it). Every collective names its operation, checks
// that all ranks call it with the same dtype and shape (an all-gather of a
// small record before it; Options::check_shapes), and waits with a deadline
// (Options::timeout): a rank that never arrives, or has gone, gives the others
// a graph::Error naming the operation and the ranks instead of a hang. After
// such an error the group is broken: later calls throw, and its destructor
// ends the job (MPI_Abort) rather than hang in MPI_Finalize.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/nn.h"
#include "graph/tensor.h"

namespace graph::dist {

enum class ReduceOp { Sum, Avg };

// A started collective. test() advances it (MPI progresses nonblocking
// collectives only inside MPI calls) and says whether it has finished.
class Work {
 public:
  virtual ~Work() = default;
  virtual bool test() = 0;
};

// One communication library. Buffers are contiguous tensors of one dtype
// (float32, float64 or int64) and, for all_gather and reduce_scatter, `out`
// (all_gather) or `in` (reduce_scatter) holds world_size() chunks of the
// other's size. Sum only: the group divides for Avg. The group checks
// arguments before calling; a backend only starts the operation.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::unique_ptr<Work> all_reduce(Tensor& buf) = 0;  // sum, in place
  virtual std::unique_ptr<Work> broadcast(Tensor& buf, int root) = 0;
  virtual std::unique_ptr<Work> all_gather(const Tensor& in, Tensor& out) = 0;
  virtual std::unique_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out) = 0;  // sum
  virtual std::unique_ptr<Work> barrier() = 0;
  // Gathers `n` int64 values from every rank (metadata checks): out has n * world_size.
  virtual std::unique_ptr<Work> all_gather_meta(const int64_t* in, int64_t* out, int n) = 0;
  // Ends every process of the job now (after a fault; never returns).
  [[noreturn]] virtual void abort(int code) = 0;
};

struct Options {
  // How long a collective may wait for the other ranks before it throws.
  // GRAPH_DIST_TIMEOUT_S in the environment overrides the default.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // All-gather each call's op, dtype and shape first and throw on a mismatch
  // (one small collective more per call; DDP checks its buckets once instead).
  bool check_shapes = true;
};

class ProcessGroup {
 public:
  // The MPI world of the processes mpirun (or srun, any MPI launcher) started;
  // calls MPI_Init_thread once per process. A process started without a
  // launcher is a world of one. backend: "mpi" (CPU tensors) or "nccl" (CUDA
  // tensors; builds with NCCL only, one GPU per rank: rank % device count).
  static ProcessGroup from_environment(Options options = {}, const std::string& backend = "mpi");
  // True when this build has the NCCL backend.
  static bool nccl_available();
  // A group over a backend of one's own (tests, other transports).
  ProcessGroup(std::unique_ptr<Backend> backend, Options options);
  ProcessGroup(ProcessGroup&&) noexcept;
  ProcessGroup& operator=(ProcessGroup&&) noexcept;
  ~ProcessGroup();  // finalizes MPI if it started it; MPI_Abort if broken

  int rank() const;
  int world_size() const;
  const std::string& backend_name() const;
  const Options& options() const;
  void set_timeout(std::chrono::milliseconds t);

  // In place: `t` (contiguous, float32/float64/int64) becomes the sum or the
  // average over ranks (Avg of int64 divides, truncating).
  void all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum);
  // Out of place: a new tensor; `t` unchanged.
  Tensor all_reduced(const Tensor& t, ReduceOp op = ReduceOp::Sum);
  // In place: rank `root`'s `t` everywhere.
  void broadcast(Tensor& t, int root = 0);
  Tensor broadcasted(const Tensor& t, int root = 0);
  // [world_size, *t.sizes()]: row r is rank r's `t`; `out`, when given, must be that shape.
  Tensor all_gather(const Tensor& t);
  void all_gather(const Tensor& t, Tensor& out);
  // `t` is [world_size * k, ...]: rank r gets the reduced chunk r, [k, ...].
  Tensor reduce_scatter(const Tensor& t, ReduceOp op = ReduceOp::Sum);
  void reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op = ReduceOp::Sum);
  void barrier();

  // ---- for DDP: nonblocking sum of a flat buffer, no shape check ----
  // Starts the all-reduce and returns at once; finish with wait().
  std::unique_ptr<Work> start_all_reduce(Tensor& flat, const std::string& what);
  // Waits for `w` within the timeout; on expiry the group is broken and a
  // graph::Error names `what` and the ranks.
  void wait(Work& w, const std::string& what);
  // Throws unless every rank passes the same `values` (shapes of a bucket
  // layout, say); `what` names the check in the message.
  void check_same(const std::vector<int64_t>& values, const std::string& what);

  // Ends the job now, every rank (MPI_Abort).
  [[noreturn]] void abort(int code = 1);
  bool broken() const;
  // Breaks the group by hand, as a timeout does: `why` is kept for the
  // messages. DDP does this when a step stops with an exception after some of
  // its buckets started (the ranks are then out of step); the first reason stays.
  void mark_broken(const std::string& why);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Options of DistributedDataParallel.
struct DdpOptions {
  // Gradients are all-reduced in buckets of about this many bytes (the last
  // parameters first, as backward produces them); a bucket starts as soon
  // as its last gradient is final.
  size_t bucket_cap_bytes = 25u << 20;
  bool broadcast_buffers = true;  // at wrap time, with the parameters
  // As PyTorch's gradient_as_bucket_view: after a synced backward each
  // parameter's .grad is a view into its bucket, holding the average, instead
  // of a copy of it (one pass over the gradients less per step). The next
  // synced backward overwrites it, so keep a .clone() of a gradient you need
  // past the next backward.
  bool gradient_as_bucket_view = false;
};

// Times of the last step's gradient sync, for the docs' overlap figures.
struct DdpStats {
  double comm_in_backward_ms = 0;  // from the first bucket's start to the end of backward
  double wait_after_backward_ms = 0;  // what the step still waited for after backward
  int buckets = 0;
  int started_in_backward = 0;  // buckets a hook started (the rest: at backward's end)
};

// LibTorch-style DDP for a module: wrapping broadcasts rank 0's parameters
// and buffers; afterwards each backward() averages the parameters' gradients
// over the ranks (bucketed, nonblocking all-reduces started from
// post-accumulate hooks, waited for when backward ends), so the optimizer
// step is the same on every rank. Works with eager and static ([[graph::static]])
// forwards alike: a static forward's backward accumulates into the same leaves.
// A whole static train step (backward and step inside the graph) does the
// same through its graph's grad_sync nodes, which find this wrapper from the
// parameters at each call (graph/detail/grad_sync.h, docs/distributed.md).
// Call zero_grad before each step: the whole accumulated gradient is averaged
// (to accumulate over micro-batches, run all but the last under no_sync()).
class DistributedDataParallel {
  struct Impl;

 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module, ProcessGroup& pg, DdpOptions options = {});
  ~DistributedDataParallel();  // removes the hooks
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  nn::Module& module() const;

  // Gradient accumulation (torch's `with ddp.no_sync():`): while a guard
  // lives, backward() only accumulates into each rank's own .grad, with no
  // communication; the next backward() outside one averages the whole
  // accumulated gradient across the ranks.
  class NoSyncGuard {
   public:
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    friend class DistributedDataParallel;
    explicit NoSyncGuard(Impl* impl);
    Impl* impl_;
    bool saved_;
  };
  [[nodiscard]] NoSyncGuard no_sync();
  // Waits for every bucket and writes the averaged gradients back; runs by
  // itself at the end of backward(). Buckets whose parameters got no
  // gradient this pass are reduced as zeros (the same on every rank).
  void finish_gradient_sync();
  // Parameters per bucket, in launch order (indices into the module's
  // parameters that require grad, in parameters() order).
  std::vector<std::vector<size_t>> bucket_layout() const;
  DdpStats last_stats() const;

 private:
  std::unique_ptr<Impl> impl_;
};

// Options of DistributedSampler (torch.utils.data.DistributedSampler).
struct SamplerOptions {
  bool shuffle = true;
  uint64_t seed = 0;        // the same on every rank
  bool drop_last = false;  // drop the tail that does not divide evenly, else pad by wrapping around
};

// Splits the indices [0, size) of a dataset across the ranks: each epoch's
// (seed + epoch) permutation, padded (or cut) to a multiple of world_size,
// and rank r takes positions r, r + world_size, ...
class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int rank, int world_size, SamplerOptions options = {});
  DistributedSampler(int64_t dataset_size, const ProcessGroup& pg, SamplerOptions options = {});
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  int64_t num_samples() const;  // per rank
  std::vector<int64_t> indices() const;

 private:
  int64_t size_;
  int rank_, world_;
  SamplerOptions opt_;
  uint64_t epoch_ = 0;
};

}  // namespace graph::dist
