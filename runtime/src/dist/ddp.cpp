// graph::dist::DistributedDataParallel (dist.h): bucketed gradient
// all-reduce started from post-accumulate hooks during backward().
//
// Buckets hold parameters in reverse registration order (the order backward
// finishes them), at most bucket_cap_bytes each, one dtype each. A hook copies
// its leaf's final gradient into the bucket's flat buffer; when a bucket's last
// gradient is in, and every earlier bucket has started, its MPI_Iallreduce
// starts. Buckets start in index order on every rank because MPI requires
// collectives to be issued in the same order everywhere. backward() then runs
// the callback the first hook queued, which waits for all buckets, divides by
// the world size and writes the averages back into the leaves' .grad. Under
// no_sync() the hooks do nothing, so gradients accumulate locally; a leaf
// the synced pass does not reach is reduced with the .grad it holds.
//
// A whole static train step does the same through its graph's grad_sync
// nodes (graph/detail/grad_sync.h): every parameter is registered with this
// Impl as its GradSync, the graph hands over each gradient right after the
// node computing it (static_ready, the hook's work) and waits before the
// update (static_finish, the callback's), with the same buckets and order.
#include <chrono>
#include <memory>

#include "graph/autograd.h"
#include "graph/cpu_isa.h"
#include "graph/detail/grad_sync.h"
#include "graph/dist.h"
#include "graph/error.h"

namespace graph::dist {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Bucket {
  DType dtype = kFloat32;
  std::vector<size_t> params;   // indices into Impl::params
  std::vector<int64_t> offset;  // of each in `flat`
  int64_t numel = 0;
  Tensor flat;
  size_t pending = 0;  // gradients still to come this pass
  std::unique_ptr<Work> work;
};

// dst = sum / world in one pass (dst may be sum): the bucket's all-reduced
// sum becomes the average where the gradient lives, with no temporary.
// Contiguous tensors of one dtype and size. Dividing by a power of two is
// multiplying by its exact reciprocal (the same rounding), which vectorizes
// to memory speed; other world sizes divide.
template <class T, bool pow2>
GRAPH_ISA_KERNEL void average_loop(T* __restrict dst, const T* __restrict sum, int64_t n, T w) {
  if constexpr (pow2) {
    const T r = T(1) / w;
    for (int64_t i = 0; i < n; ++i) dst[i] = sum[i] * r;
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = sum[i] / w;
  }
}

template <class T, bool pow2>
GRAPH_ISA_KERNEL void average_in_place(T* x, int64_t n, T w) {
  if constexpr (pow2) {
    const T r = T(1) / w;
    for (int64_t i = 0; i < n; ++i) x[i] *= r;
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] /= w;
  }
}

template <class T>
void average_as(T* dst, const T* sum, int64_t n, int world) {
  const T w = static_cast<T>(world);
  const bool pow2 = (world & (world - 1)) == 0;
  if (dst == sum) pow2 ? average_in_place<T, true>(dst, n, w) : average_in_place<T, false>(dst, n, w);
  else pow2 ? average_loop<T, true>(dst, sum, n, w) : average_loop<T, false>(dst, sum, n, w);
}

void average(Tensor& dst, const Tensor& sum, int world) {
  const int64_t n = sum.numel();
  if (world == 1) {
    if (dst.raw_data() != sum.raw_data()) dst.copy_(sum);
  } else if (sum.dtype() == kFloat32) {
    average_as(dst.data_ptr<float>(), sum.data_ptr<float>(), n, world);
  } else if (sum.dtype() == kFloat64) {
    average_as(dst.data_ptr<double>(), sum.data_ptr<double>(), n, world);
  } else {  // half precision: the runtime's division, rounded once
    Tensor avg = sum / Scalar(static_cast<double>(world));
    dst.copy_(avg);
    return;
  }
  dst.bump_version();
}

}  // namespace

struct DistributedDataParallel::Impl final : detail::GradSync {
  std::shared_ptr<nn::Module> module;
  ProcessGroup* pg = nullptr;
  DdpOptions opt;
  std::vector<Tensor> params;  // those that require grad, registration order
  std::vector<size_t> hook_ids;
  std::vector<size_t> bucket_of, slot_of;
  std::vector<Bucket> buckets;
  std::vector<char> ready;  // per parameter, this pass
  size_t next_launch = 0;
  int launched_by_hooks = 0;
  bool in_pass = false;
  bool sync = true;  // false under no_sync()
  Clock::time_point first_launch, backward_end;
  DdpStats stats;

  void build_buckets() {
    for (size_t k = params.size(); k-- > 0;) {
      const Tensor& p = params[k];
      const size_t bytes = static_cast<size_t>(p.numel()) * element_size(p.dtype());
      const bool fits = !buckets.empty() && buckets.back().dtype == p.dtype() &&
                        (static_cast<size_t>(buckets.back().numel) * element_size(p.dtype()) + bytes <=
                         opt.bucket_cap_bytes);
      if (!fits) buckets.emplace_back().dtype = p.dtype();
      Bucket& b = buckets.back();
      bucket_of[k] = buckets.size() - 1;
      slot_of[k] = b.params.size();
      b.params.push_back(k);
      b.offset.push_back(b.numel);
      b.numel += p.numel();
    }
    for (Bucket& b : buckets) b.flat = zeros({b.numel}, b.dtype);
  }

  // Every rank must have the same parameters, in the same order, and the same buckets.
  void check_layout() {
    std::vector<int64_t> layout{static_cast<int64_t>(params.size()), static_cast<int64_t>(opt.bucket_cap_bytes)};
    for (const Tensor& p : params) {
      layout.push_back(static_cast<int64_t>(p.dtype()));
      layout.push_back(p.dim());
      for (int64_t d = 0; d < p.dim(); ++d) layout.push_back(p.size(d));
    }
    pg->check_same(layout, "DDP: the wrapped module's parameters (count, bucket size, then dtype, rank and sizes of each)");
  }

  void begin_pass(bool eager = true) {
    in_pass = true;
    next_launch = 0;
    launched_by_hooks = 0;
    std::fill(ready.begin(), ready.end(), 0);
    for (Bucket& b : buckets) b.pending = b.params.size();
    if (!eager) return;
    // backward() runs the callback at its end; when it throws instead, it
    // drops the callback unrun, and the token's destructor abandons the pass.
    struct Token {
      Impl* impl = nullptr;
      bool ran = false;
      ~Token() {
        if (impl && !ran) impl->abandon();
      }
    };
    auto token = std::make_shared<Token>();  // made in place: a moved-from copy would abandon
    token->impl = this;
    autograd::queue_callback([token] {
      token->ran = true;
      token->impl->finish();
    });
  }

  // The pass stopped between its first gradient and finish(): backward() or
  // the static step threw, or a static step's guard refused it. Unless no
  // bucket had started, its all-reduces are pending here, and the other ranks
  // may have gone on (or stopped elsewhere): the ranks are out of step, and a
  // later bucket would pair with another step's. So the group is marked
  // broken, as after a timeout: the next collective says why, and the group's
  // destructor ends the job rather than hang. Before any bucket started the
  // pass is only reset (as when a rank skips a step).
  void abandon() noexcept {
    if (!in_pass) return;
    in_pass = false;
    if (next_launch == 0) return;
    try {
      pg->mark_broken("a DDP step stopped with an exception (or a refused guard) after " +
                      std::to_string(next_launch) + " of its " + std::to_string(buckets.size()) +
                      " gradient buckets had started their all_reduce, so the ranks are out of step");
    } catch (...) {  // out of memory for the message: break it all the same
      pg->mark_broken({});
    }
  }

  std::string bucket_name(size_t i) const {
    const Bucket& b = buckets[i];
    return "DDP gradient all_reduce of bucket " + std::to_string(i) + " (" + std::to_string(b.numel) + " " +
           std::string(dtype_name(b.dtype)) + ", " + std::to_string(b.params.size()) + " parameters)";
  }

  // Copies parameter k's gradient (zeros when none reached it) into its
  // bucket; a gradient that is already its slot (gradient_as_bucket_view,
  // accumulated in place without zero_grad) stays where it is.
  void stage(size_t k, const Tensor& grad) {
    Bucket& b = buckets[bucket_of[k]];
    const int64_t off = b.offset[slot_of[k]], n = params[k].numel();
    Tensor dst = b.flat.slice(0, off, off + n);
    if (!grad.defined()) dst.zero_();
    else if (grad.raw_data() != dst.raw_data() || !grad.is_contiguous()) dst.copy_(grad.reshape({n}));
    ready[k] = 1;
    --b.pending;
  }

  // Starts every bucket that is complete and whose predecessors have started.
  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      Bucket& b = buckets[next_launch];
      if (next_launch == 0) first_launch = Clock::now();
      b.work = pg->start_all_reduce(b.flat, bucket_name(next_launch));
      ++next_launch;
    }
    // MPI advances nonblocking collectives only inside MPI calls.
    for (size_t i = 0; i < next_launch; ++i)
      if (buckets[i].work) buckets[i].work->test();
  }

  void on_grad(size_t k, const Tensor& grad, bool eager = true) {
    if (!sync) return;
    if (!in_pass) begin_pass(eager);
    if (ready[k]) return;
    stage(k, grad);
    const size_t before = next_launch;
    launch_ready();
    launched_by_hooks += static_cast<int>(next_launch - before);
  }

  // ---- a static train step's grad_sync nodes (detail::GradSync) ----
  bool syncing() const override { return sync; }
  void static_ready(size_t k, const Tensor& grad) override { on_grad(k, grad, false); }
  void static_abandon() noexcept override { abandon(); }
  void static_finish() override {
    if (!sync) return;
    if (!in_pass) begin_pass(false);  // no gradient reached a parameter: all are reduced from .grad
    finish();
  }

  void finish() {
    if (!in_pass) return;
    in_pass = false;
    backward_end = Clock::now();
    const bool started = next_launch > 0;
    // Parameters no gradient reached this pass: what they accumulated under
    // no_sync(), or zeros, so every bucket runs on every rank.
    for (size_t k = 0; k < params.size(); ++k)
      if (!ready[k]) stage(k, params[k].grad());
    launch_ready();
    NoGradGuard no_grad;
    const int world = pg->world_size();
    for (size_t i = 0; i < buckets.size(); ++i) {
      Bucket& b = buckets[i];
      pg->wait(*b.work, bucket_name(i));
      b.work.reset();
      if (opt.gradient_as_bucket_view) average(b.flat, b.flat, world);
      for (size_t j = 0; j < b.params.size(); ++j) {
        Tensor& p = params[b.params[j]];
        Tensor sum = b.flat.slice(0, b.offset[j], b.offset[j] + p.numel()).view(p.sizes());
        Tensor& g = p.autograd_meta()->grad;
        if (opt.gradient_as_bucket_view) {
          if (!g.defined() || g.raw_data() != sum.raw_data() || g.sizes() != p.sizes()) g = sum;
          continue;
        }
        if (!(g.defined() && g.sizes() == p.sizes() && g.dtype() == p.dtype() && g.is_contiguous()))
          g = empty(p.sizes(), p.dtype());
        average(g, sum, world);
      }
    }
    const auto end = Clock::now();
    stats.buckets = static_cast<int>(buckets.size());
    stats.started_in_backward = launched_by_hooks;
    stats.comm_in_backward_ms = started ? ms_between(first_launch, backward_end) : 0;
    stats.wait_after_backward_ms = ms_between(backward_end, end);
  }
};

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module, ProcessGroup& pg,
                                                 DdpOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!module) throw Error("DistributedDataParallel: the module is null");
  if (options.bucket_cap_bytes == 0) throw Error("DistributedDataParallel: bucket_cap_bytes must be positive");
  Impl& m = *impl_;
  m.module = std::move(module);
  m.pg = &pg;
  m.opt = options;
  for (Tensor& p : m.module->parameters())
    if (p.requires_grad()) m.params.push_back(p);
  for (const Tensor& p : m.params)
    if (!p.is_contiguous() || p.device() != kCPU)
      throw Error("DistributedDataParallel: parameters must be contiguous CPU tensors (the MPI backend)");
  m.bucket_of.resize(m.params.size());
  m.slot_of.resize(m.params.size());
  m.ready.assign(m.params.size(), 0);
  m.check_layout();
  m.build_buckets();
  {
    NoGradGuard no_grad;
    for (Tensor& p : m.module->parameters()) pg.broadcast(p, 0);
    if (options.broadcast_buffers)
      for (Tensor& b : m.module->buffers()) pg.broadcast(b, 0);
  }
  for (size_t k = 0; k < m.params.size(); ++k) {
    m.hook_ids.push_back(
        autograd::add_post_accumulate_hook(m.params[k], [impl = impl_.get(), k](Tensor& g) { impl->on_grad(k, g); }));
    try {
      detail::register_grad_sync(m.params[k], impl_.get(), k, m.hook_ids.back());
    } catch (...) {  // a parameter another wrapper owns: undo what this one did
      for (size_t j = 0; j <= k; ++j) {
        autograd::remove_post_accumulate_hook(m.params[j], m.hook_ids[j]);
        if (j < k) detail::unregister_grad_sync(m.params[j]);
      }
      throw;
    }
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (size_t k = 0; k < impl_->hook_ids.size(); ++k) {
    detail::unregister_grad_sync(impl_->params[k]);
    autograd::remove_post_accumulate_hook(impl_->params[k], impl_->hook_ids[k]);
  }
}

nn::Module& DistributedDataParallel::module() const { return *impl_->module; }

void DistributedDataParallel::finish_gradient_sync() { impl_->finish(); }

DistributedDataParallel::NoSyncGuard::NoSyncGuard(Impl* impl) : impl_(impl), saved_(impl->sync) { impl->sync = false; }

DistributedDataParallel::NoSyncGuard::~NoSyncGuard() { impl_->sync = saved_; }

DistributedDataParallel::NoSyncGuard DistributedDataParallel::no_sync() { return NoSyncGuard(impl_.get()); }

std::vector<std::vector<size_t>> DistributedDataParallel::bucket_layout() const {
  std::vector<std::vector<size_t>> r;
  for (const Bucket& b : impl_->buckets) r.push_back(b.params);
  return r;
}

DdpStats DistributedDataParallel::last_stats() const { return impl_->stats; }

}  // namespace graph::dist
