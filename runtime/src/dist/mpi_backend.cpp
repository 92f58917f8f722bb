// The MPI backend of graph::dist (dist.h): nonblocking collectives
// (MPI_Iallreduce and friends) on a duplicate of MPI_COMM_WORLD. The process
// group polls them with a deadline, so a missing rank is a timeout, not a hang.
#include <mpi.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "backends.h"
#include "graph/error.h"

namespace graph::dist {

namespace {

// MPI is initialized once per process; the last backend out finalizes it if
// graph::dist initialized it (a program that called MPI_Init itself keeps it).
std::atomic<int> live_backends{0};
bool we_initialized = false;

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string("graph::dist: ") + call + " failed: " + std::string(msg, len));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
    default: throw Error("graph::dist: the MPI backend has no type for " + std::string(dtype_name(t)));
  }
}

int count(const Tensor& t) {
  if (t.numel() > INT32_MAX) throw Error("graph::dist: MPI counts are int: a tensor over 2^31 elements must be split");
  return static_cast<int>(t.numel());
}

// Keeps the buffers alive until the request completes. A request still
// pending when its Work dies (after a timeout) is left to MPI_Abort.
class MpiWork final : public Work {
 public:
  MpiWork(std::vector<Tensor> keep) : keep_(std::move(keep)) {}
  MPI_Request req = MPI_REQUEST_NULL;
  bool test() override {
    if (done_) return true;
    int flag = 0;
    check(MPI_Test(&req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
    done_ = flag != 0;
    return done_;
  }

 private:
  std::vector<Tensor> keep_;
  bool done_ = false;
};

class MpiBackend final : public Backend {
 public:
  MpiBackend() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      // Funneled: graph::dist calls MPI from the thread that runs backward() only.
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      we_initialized = true;
    }
    ++live_backends;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as codes (thrown as graph::Error), not abort the job.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &world_);
  }
  ~MpiBackend() override {
    MPI_Comm_free(&comm_);
    if (--live_backends == 0 && we_initialized) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    }
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  std::unique_ptr<Work> all_reduce(Tensor& buf) override {
    auto w = std::make_unique<MpiWork>(std::vector<Tensor>{buf});
    check(MPI_Iallreduce(MPI_IN_PLACE, buf.raw_data(), count(buf), mpi_type(buf.dtype()), MPI_SUM, comm_, &w->req),
          "MPI_Iallreduce");
    return w;
  }
  std::unique_ptr<Work> broadcast(Tensor& buf, int root) override {
    auto w = std::make_unique<MpiWork>(std::vector<Tensor>{buf});
    check(MPI_Ibcast(buf.raw_data(), count(buf), mpi_type(buf.dtype()), root, comm_, &w->req), "MPI_Ibcast");
    return w;
  }
  std::unique_ptr<Work> all_gather(const Tensor& in, Tensor& out) override {
    auto w = std::make_unique<MpiWork>(std::vector<Tensor>{in, out});
    const MPI_Datatype t = mpi_type(in.dtype());
    check(MPI_Iallgather(in.raw_data(), count(in), t, out.raw_data(), count(in), t, comm_, &w->req),
          "MPI_Iallgather");
    return w;
  }
  std::unique_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out) override {
    auto w = std::make_unique<MpiWork>(std::vector<Tensor>{in, out});
    check(MPI_Ireduce_scatter_block(in.raw_data(), out.raw_data(), count(out), mpi_type(in.dtype()), MPI_SUM, comm_,
                                    &w->req),
          "MPI_Ireduce_scatter_block");
    return w;
  }
  std::unique_ptr<Work> barrier() override {
    auto w = std::make_unique<MpiWork>(std::vector<Tensor>{});
    check(MPI_Ibarrier(comm_, &w->req), "MPI_Ibarrier");
    return w;
  }
  std::unique_ptr<Work> all_gather_meta(const int64_t* in, int64_t* out, int n) override {
    auto w = std::make_unique<MpiWork>(std::vector<Tensor>{});
    check(MPI_Iallgather(in, n, MPI_INT64_T, out, n, MPI_INT64_T, comm_, &w->req), "MPI_Iallgather");
    return w;
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, world_ = 1;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend() { return std::make_unique<MpiBackend>(); }

}  // namespace graph::dist
