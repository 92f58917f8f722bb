// The NCCL backend of graph::dist (dist.h), built when nccl.h and libnccl are
// found with the CUDA backend. MPI starts the job and carries NCCL's unique id
// and the small metadata records; the collectives are NCCL's on a stream of
// their own, each finished when its CUDA event is.
//
// Ordering with the CUDA backend's work: the device is synchronized before a
// collective starts (correct whatever streams the kernels used; a finer
// event-based handoff is future work).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "backends.h"
#include "graph/error.h"

namespace graph::dist {

namespace {

void check_cuda(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess) throw Error(std::string("graph::dist: ") + call + " failed: " + cudaGetErrorString(rc));
}
void check_nccl(ncclResult_t rc, const char* call) {
  if (rc != ncclSuccess) throw Error(std::string("graph::dist: ") + call + " failed: " + ncclGetErrorString(rc));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
    default: throw Error("graph::dist: the NCCL backend has no type for " + std::string(dtype_name(t)));
  }
}

class NcclWork final : public Work {
 public:
  NcclWork(cudaStream_t s, std::vector<Tensor> keep) : keep_(std::move(keep)) {
    check_cuda(cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming), "cudaEventCreate");
    check_cuda(cudaEventRecord(ev_, s), "cudaEventRecord");
  }
  ~NcclWork() override { cudaEventDestroy(ev_); }
  bool test() override {
    const cudaError_t rc = cudaEventQuery(ev_);
    if (rc == cudaErrorNotReady) return false;
    check_cuda(rc, "cudaEventQuery");
    return true;
  }

 private:
  cudaEvent_t ev_{};
  std::vector<Tensor> keep_;
};

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(std::unique_ptr<Backend> mpi) : mpi_(std::move(mpi)) {
    int devices = 0;
    check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    if (devices == 0) throw Error("graph::dist: the NCCL backend needs a CUDA device; none is visible");
    check_cuda(cudaSetDevice(mpi_->rank() % devices), "cudaSetDevice");
    // Rank 0's unique id reaches the others through MPI, as NCCL's examples do.
    ncclUniqueId id{};
    if (mpi_->rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    Tensor buf = empty({static_cast<int64_t>(sizeof id)}, kInt64);  // over-sized, int64 for MPI
    std::memcpy(buf.raw_data(), &id, sizeof id);
    auto w = mpi_->broadcast(buf, 0);
    while (!w->test()) {
    }
    std::memcpy(&id, buf.raw_data(), sizeof id);
    check_nccl(ncclCommInitRank(&comm_, mpi_->world_size(), id, mpi_->rank()), "ncclCommInitRank");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~NcclBackend() override {
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return mpi_->rank(); }
  int world_size() const override { return mpi_->world_size(); }

  std::unique_ptr<Work> all_reduce(Tensor& buf) override {
    before();
    check_nccl(ncclAllReduce(buf.raw_data(), buf.raw_data(), buf.numel(), nccl_type(buf.dtype()), ncclSum, comm_,
                             stream_),
               "ncclAllReduce");
    return std::make_unique<NcclWork>(stream_, std::vector<Tensor>{buf});
  }
  std::unique_ptr<Work> broadcast(Tensor& buf, int root) override {
    before();
    check_nccl(ncclBroadcast(buf.raw_data(), buf.raw_data(), buf.numel(), nccl_type(buf.dtype()), root, comm_, stream_),
               "ncclBroadcast");
    return std::make_unique<NcclWork>(stream_, std::vector<Tensor>{buf});
  }
  std::unique_ptr<Work> all_gather(const Tensor& in, Tensor& out) override {
    before();
    check_nccl(ncclAllGather(in.raw_data(), out.raw_data(), in.numel(), nccl_type(in.dtype()), comm_, stream_),
               "ncclAllGather");
    return std::make_unique<NcclWork>(stream_, std::vector<Tensor>{in, out});
  }
  std::unique_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out) override {
    before();
    check_nccl(ncclReduceScatter(in.raw_data(), out.raw_data(), out.numel(), nccl_type(in.dtype()), ncclSum, comm_,
                                 stream_),
               "ncclReduceScatter");
    return std::make_unique<NcclWork>(stream_, std::vector<Tensor>{in, out});
  }
  std::unique_ptr<Work> barrier() override { return mpi_->barrier(); }
  std::unique_ptr<Work> all_gather_meta(const int64_t* in, int64_t* out, int n) override {
    return mpi_->all_gather_meta(in, out, n);
  }
  [[noreturn]] void abort(int code) override {
    ncclCommAbort(comm_);  // frees ranks stuck in a kernel, then ends the job
    mpi_->abort(code);
    std::_Exit(code);
  }

 private:
  void before() { check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

  std::unique_ptr<Backend> mpi_;
  ncclComm_t comm_{};
  cudaStream_t stream_{};
};

}  // namespace

std::unique_ptr<Backend> make_nccl_backend() { return std::make_unique<NcclBackend>(make_mpi_backend()); }

}  // namespace graph::dist
