// graph::dist::ProcessGroup (dist.h): argument checks, the cross-rank shape
// check, deadlines and messages around a Backend's collectives.
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "backends.h"
#include "graph/dist.h"
#include "graph/error.h"

namespace graph::dist {

namespace {

enum class Op : int64_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Barrier };

const char* op_name(Op op) {
  switch (op) {
    case Op::AllReduce: return "all_reduce";
    case Op::Broadcast: return "broadcast";
    case Op::AllGather: return "all_gather";
    case Op::ReduceScatter: return "reduce_scatter";
    case Op::Barrier: return "barrier";
  }
  return "?";
}

// What every rank must agree on before a collective: a fixed-size record,
// all-gathered. Up to kDims dims are kept for the message; a hash covers all.
constexpr int kDims = 6;
constexpr int kRecord = 6 + kDims;  // seq, op, dtype, root, ndim, hash, dims

std::vector<int64_t> record_of(int64_t seq, Op op, const Tensor* t, int root) {
  std::vector<int64_t> r(kRecord, -1);
  r[0] = seq;
  r[1] = static_cast<int64_t>(op);
  r[3] = root;
  if (!t) return r;
  r[2] = static_cast<int64_t>(t->dtype());
  r[4] = t->dim();
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the dims
  for (int64_t d = 0; d < t->dim(); ++d) {
    h = (h ^ static_cast<uint64_t>(t->size(d))) * 1099511628211ull;
    if (d < kDims) r[6 + d] = t->size(d);
  }
  r[5] = static_cast<int64_t>(h);
  return r;
}

std::string describe(const int64_t* r) {
  std::ostringstream o;
  o << op_name(static_cast<Op>(r[1])) << " #" << r[0];
  if (r[2] >= 0) {
    o << " of " << dtype_name(static_cast<DType>(r[2])) << " [";
    for (int64_t d = 0; d < r[4]; ++d) o << (d ? ", " : "") << (d < kDims ? std::to_string(r[6 + d]) : "...");
    o << "]";
  }
  if (r[1] == static_cast<int64_t>(Op::Broadcast)) o << " from root " << r[3];
  return o.str();
}

std::string others(int rank, int world) {
  std::ostringstream o;
  int n = 0;
  for (int r = 0; r < world; ++r)
    if (r != rank) o << (n++ ? ", " : "") << r;
  return (n == 1 ? "rank " : "one or more of ranks ") + o.str();
}

std::chrono::milliseconds env_timeout(std::chrono::milliseconds dflt) {
  const char* s = std::getenv("GRAPH_DIST_TIMEOUT_S");
  if (!s || !*s) return dflt;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (*end || v <= 0) throw Error("graph::dist: GRAPH_DIST_TIMEOUT_S must be a positive number of seconds, got '" +
                                  std::string(s) + "'");
  return std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
}

}  // namespace

struct ProcessGroup::State {
  std::unique_ptr<Backend> backend;
  Options opt;
  std::string backend_name;
  int64_t seq = 0;  // collectives issued, for messages
  std::string broken;  // why, once a collective failed

  std::string where() const {
    return "on rank " + std::to_string(backend->rank()) + " of " + std::to_string(backend->world_size());
  }
  void check_usable(const std::string& what) const {
    if (!broken.empty())
      throw Error("graph::dist: " + what + " " + where() + ": the process group is broken (" + broken +
                  "); end the job");
  }
  void check_tensor(const char* op, const Tensor& t, const char* arg = "tensor") const {
    if (!t.defined()) throw Error(std::string("graph::dist: ") + op + ": the " + arg + " is undefined");
    if (t.dtype() != kFloat32 && t.dtype() != kFloat64 && t.dtype() != kInt64)
      throw Error(std::string("graph::dist: ") + op + ": dtype " + std::string(dtype_name(t.dtype())) +
                  " is not supported (float32, float64, int64)");
    if (!t.is_contiguous())
      throw Error(std::string("graph::dist: ") + op + ": the " + arg + " must be contiguous (call .contiguous())");
    if (t.device() != kCPU && backend_name == "mpi")
      throw Error(std::string("graph::dist: ") + op + ": the MPI backend takes CPU tensors; the " + arg + " is on " +
                  std::string(device_name(t.device())));
    if (t.device() != kCUDA && backend_name == "nccl")
      throw Error(std::string("graph::dist: ") + op + ": the NCCL backend takes CUDA tensors; the " + arg + " is on " +
                  std::string(device_name(t.device())));
  }

  // Polls `w` until done or the deadline: yields first (low latency), then sleeps.
  void wait(Work& w, const std::string& what) {
    const auto deadline = std::chrono::steady_clock::now() + opt.timeout;
    for (int spins = 0;; ++spins) {
      if (w.test()) return;
      if (std::chrono::steady_clock::now() > deadline) break;
      if (spins < 2000) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(spins < 20000 ? 20 : 500));
    }
    const double secs = std::chrono::duration<double>(opt.timeout).count();
    std::ostringstream o;
    o << what << " timed out after " << secs << " s " << where() << ": " << others(backend->rank(), backend->world_size())
      << " did not take part (not arrived, stuck, or exited)";
    broken = o.str();
    throw Error("graph::dist: " + broken + "; the process group is broken, end the job (ProcessGroup::abort)");
  }

  // All-gathers the call's record and throws on any difference between ranks.
  void agree(Op op, const Tensor* t, int root) {
    const int world = backend->world_size();
    std::vector<int64_t> mine = record_of(seq, op, t, root), all(static_cast<size_t>(kRecord) * world);
    const std::string what = describe(mine.data());
    auto w = backend->all_gather_meta(mine.data(), all.data(), kRecord);
    wait(*w, what);
    for (int r = 0; r < world; ++r) {
      const int64_t* theirs = all.data() + static_cast<size_t>(r) * kRecord;
      if (std::equal(mine.begin(), mine.end(), theirs)) continue;
      // Every rank saw every record and throws too: nothing is left pending,
      // so the group stays usable.
      throw Error("graph::dist: mismatch across ranks: " + what + " " + where() + " does not match rank " +
                  std::to_string(r) + ": " + describe(theirs));
    }
  }

  // One checked, timed collective.
  template <class Start>
  void run(Op op, const Tensor* t, int root, Start start) {
    ++seq;
    const std::string what = describe(record_of(seq, op, t, root).data());
    check_usable(what);
    if (opt.check_shapes && backend->world_size() > 1) agree(op, t, root);
    std::unique_ptr<Work> w = start();
    wait(*w, what);
  }

  void divide(Tensor& t) const {
    const int64_t n = backend->world_size();
    if (t.dtype() != kInt64) {
      t.div_(Scalar(static_cast<double>(n)));
      return;
    }
    int64_t* p = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] /= n;
  }
};

ProcessGroup ProcessGroup::from_environment(Options options, const std::string& backend) {
  if (backend == "mpi") return ProcessGroup(make_mpi_backend(), options);
#if CXXGRAPH_HAS_NCCL
  if (backend == "nccl") return ProcessGroup(make_nccl_backend(), options);
#else
  if (backend == "nccl")
    throw Error("graph::dist: this build has no NCCL backend (it needs the CUDA backend, nccl.h and libnccl)");
#endif
  throw Error("graph::dist: unknown backend '" + backend + "' (mpi or nccl)");
}

bool ProcessGroup::nccl_available() {
#if CXXGRAPH_HAS_NCCL
  return true;
#else
  return false;
#endif
}

ProcessGroup::ProcessGroup(std::unique_ptr<Backend> backend, Options options) : s_(std::make_unique<State>()) {
  if (!backend) throw Error("graph::dist: ProcessGroup needs a backend");
  s_->backend = std::move(backend);
  s_->backend_name = s_->backend->name();
  options.timeout = env_timeout(options.timeout);
  if (options.timeout.count() <= 0) throw Error("graph::dist: the timeout must be positive");
  s_->opt = options;
}

ProcessGroup::ProcessGroup(ProcessGroup&&) noexcept = default;
ProcessGroup& ProcessGroup::operator=(ProcessGroup&&) noexcept = default;

ProcessGroup::~ProcessGroup() {
  // MPI_Finalize would wait for the collective that never finished.
  if (s_ && !s_->broken.empty()) s_->backend->abort(1);
}

int ProcessGroup::rank() const { return s_->backend->rank(); }
int ProcessGroup::world_size() const { return s_->backend->world_size(); }
const std::string& ProcessGroup::backend_name() const { return s_->backend_name; }
const Options& ProcessGroup::options() const { return s_->opt; }
bool ProcessGroup::broken() const { return !s_->broken.empty(); }
void ProcessGroup::mark_broken(const std::string& why) {
  if (s_->broken.empty()) s_->broken = why.empty() ? std::string("marked broken") : why;
}
void ProcessGroup::abort(int code) {
  s_->backend->abort(code);
  std::_Exit(code);  // a backend's abort does not return; the compiler cannot know
}

void ProcessGroup::set_timeout(std::chrono::milliseconds t) {
  if (t.count() <= 0) throw Error("graph::dist: the timeout must be positive");
  s_->opt.timeout = t;
}

void ProcessGroup::all_reduce(Tensor& t, ReduceOp op) {
  s_->check_tensor("all_reduce", t);
  s_->run(Op::AllReduce, &t, -1, [&] { return s_->backend->all_reduce(t); });
  t.bump_version();
  if (op == ReduceOp::Avg) s_->divide(t);
}

Tensor ProcessGroup::all_reduced(const Tensor& t, ReduceOp op) {
  s_->check_tensor("all_reduce", t);
  Tensor r = t.detach().clone();
  all_reduce(r, op);
  return r;
}

void ProcessGroup::broadcast(Tensor& t, int root) {
  s_->check_tensor("broadcast", t);
  if (root < 0 || root >= world_size())
    throw Error("graph::dist: broadcast: root " + std::to_string(root) + " is not a rank of a world of " +
                std::to_string(world_size()));
  s_->run(Op::Broadcast, &t, root, [&] { return s_->backend->broadcast(t, root); });
  t.bump_version();
}

Tensor ProcessGroup::broadcasted(const Tensor& t, int root) {
  s_->check_tensor("broadcast", t);
  Tensor r = t.detach().clone();
  broadcast(r, root);
  return r;
}

Tensor ProcessGroup::all_gather(const Tensor& t) {
  s_->check_tensor("all_gather", t);
  Shape s = t.sizes();
  s.insert(s.begin(), world_size());
  Tensor out = empty(s, t.dtype());
  all_gather(t, out);
  return out;
}

void ProcessGroup::all_gather(const Tensor& t, Tensor& out) {
  s_->check_tensor("all_gather", t);
  s_->check_tensor("all_gather", out, "output");
  Shape want = t.sizes();
  want.insert(want.begin(), world_size());
  if (out.sizes() != want || out.dtype() != t.dtype())
    throw Error("graph::dist: all_gather: the output must be " + std::string(dtype_name(t.dtype())) + " " +
                shape_str(want) + " (world_size rows of the input), got " + std::string(dtype_name(out.dtype())) +
                " " + shape_str(out.sizes()));
  s_->run(Op::AllGather, &t, -1, [&] { return s_->backend->all_gather(t, out); });
  out.bump_version();
}

Tensor ProcessGroup::reduce_scatter(const Tensor& t, ReduceOp op) {
  s_->check_tensor("reduce_scatter", t);
  if (t.dim() == 0 || t.size(0) % world_size() != 0)
    throw Error("graph::dist: reduce_scatter: the input's first dim must be a multiple of the world size " +
                std::to_string(world_size()) + ", got shape " + shape_str(t.sizes()));
  Shape s = t.sizes();
  s[0] /= world_size();
  Tensor out = empty(s, t.dtype());
  reduce_scatter(t, out, op);
  return out;
}

void ProcessGroup::reduce_scatter(const Tensor& t, Tensor& out, ReduceOp op) {
  s_->check_tensor("reduce_scatter", t);
  s_->check_tensor("reduce_scatter", out, "output");
  Shape want = t.sizes();
  if (want.empty() || want[0] % world_size() != 0)
    throw Error("graph::dist: reduce_scatter: the input's first dim must be a multiple of the world size " +
                std::to_string(world_size()) + ", got shape " + shape_str(t.sizes()));
  want[0] /= world_size();
  if (out.sizes() != want || out.dtype() != t.dtype())
    throw Error("graph::dist: reduce_scatter: the output must be " + std::string(dtype_name(t.dtype())) + " " +
                shape_str(want) + ", got " + std::string(dtype_name(out.dtype())) + " " + shape_str(out.sizes()));
  s_->run(Op::ReduceScatter, &t, -1, [&] { return s_->backend->reduce_scatter(t, out); });
  out.bump_version();
  if (op == ReduceOp::Avg) s_->divide(out);
}

void ProcessGroup::barrier() {
  s_->run(Op::Barrier, nullptr, -1, [&] { return s_->backend->barrier(); });
}

std::unique_ptr<Work> ProcessGroup::start_all_reduce(Tensor& flat, const std::string& what) {
  s_->check_usable(what);
  s_->check_tensor("all_reduce", flat);
  ++s_->seq;
  return s_->backend->all_reduce(flat);
}

void ProcessGroup::wait(Work& w, const std::string& what) { s_->wait(w, what); }

void ProcessGroup::check_same(const std::vector<int64_t>& values, const std::string& what) {
  s_->check_usable(what);
  const int world = world_size();
  // The count first, so that ranks with different counts get a message, not garbage.
  std::vector<int64_t> head{static_cast<int64_t>(values.size())}, heads(world);
  auto w = s_->backend->all_gather_meta(head.data(), heads.data(), 1);
  s_->wait(*w, what);
  for (int r = 0; r < world; ++r)
    if (heads[r] != head[0]) {
      throw Error("graph::dist: mismatch across ranks: " + what + " " + s_->where() + ": " +
                  std::to_string(head[0]) + " entries here, " + std::to_string(heads[r]) + " on rank " +
                  std::to_string(r));
    }
  if (values.empty()) return;
  std::vector<int64_t> all(values.size() * world);
  auto w2 = s_->backend->all_gather_meta(values.data(), all.data(), static_cast<int>(values.size()));
  s_->wait(*w2, what);
  for (int r = 0; r < world; ++r)
    for (size_t i = 0; i < values.size(); ++i)
      if (all[r * values.size() + i] != values[i]) {
        throw Error("graph::dist: mismatch across ranks: " + what + " " + s_->where() + ": entry " +
                    std::to_string(i) + " is " + std::to_string(values[i]) + " here, " +
                    std::to_string(all[r * values.size() + i]) + " on rank " + std::to_string(r));
      }
}

}  // namespace graph::dist
