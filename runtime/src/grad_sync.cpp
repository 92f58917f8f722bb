// The gradient all-reduce of a static train step (graph/detail/grad_sync.h):
// which parameters a data-parallel wrapper owns, and the two graph nodes'
// runtime (generated_support.h: grad_sync_start, grad_sync_wait).
#include "graph/detail/grad_sync.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "graph/autograd.h"
#include "graph/detail/generated_support.h"
#include "graph/error.h"
#include "graph/ops.h"

namespace graph::detail {

namespace {

struct Entry {
  GradSync* sync = nullptr;
  size_t index = 0;
  size_t hook_id = 0;
};

// Keyed by the parameter's autograd metadata: views and copies of the
// Tensor handle share it, and .grad lives there.
struct Registry {
  std::mutex mu;
  std::unordered_map<const autograd::AutogradMeta*, Entry> entries;
  std::atomic<size_t> size{0};
};

Registry& registry() {
  static Registry r;
  return r;
}

const autograd::AutogradMeta* key(const Tensor& t) { return t.defined() ? t.autograd_meta().get() : nullptr; }

bool lookup(const Tensor& t, Entry* out) {
  const autograd::AutogradMeta* k = key(t);
  if (!k || !any_grad_sync()) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.entries.find(k);
  if (it == r.entries.end()) return false;
  *out = it->second;
  return true;
}

// A gradient must fit its parameter's slot in the bucket.
void check_shape(const char* op, size_t i, const Tensor& p, const Tensor& g) {
  if (g.sizes() != p.sizes() || g.dtype() != p.dtype())
    throw Error(std::string(op) + ": the gradient of parameter " + std::to_string(i) + " is " +
                std::string(dtype_name(g.dtype())) + " " + shape_str(g.sizes()) + ", but the parameter is " +
                std::string(dtype_name(p.dtype())) + " " + shape_str(p.sizes()));
}

void check_counts(const char* op, const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  if (params.size() != grads.size())
    throw Error(std::string(op) + ": " + std::to_string(params.size()) + " parameters, " +
                std::to_string(grads.size()) + " gradients");
}

}  // namespace

void register_grad_sync(const Tensor& param, GradSync* sync, size_t index, size_t hook_id) {
  const autograd::AutogradMeta* k = key(param);
  if (!k || !sync) throw Error("register_grad_sync: the parameter must require grad, and the sync must not be null");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.entries.emplace(k, Entry{sync, index, hook_id}).second)
    throw Error("register_grad_sync: the parameter already belongs to a DistributedDataParallel; wrap a module once");
  r.size.store(r.entries.size());
}

void unregister_grad_sync(const Tensor& param) {
  const autograd::AutogradMeta* k = key(param);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.entries.erase(k);
  r.size.store(r.entries.size());
}

bool any_grad_sync() { return registry().size.load(std::memory_order_relaxed) != 0; }

void abandon_grad_syncs() noexcept {
  std::vector<GradSync*> syncs;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const auto& [meta, e] : r.entries)
      if (std::find(syncs.begin(), syncs.end(), e.sync) == syncs.end()) syncs.push_back(e.sync);
  }
  for (GradSync* s : syncs) s->static_abandon();
}

bool grad_sync_owns(const Tensor& t) {
  Entry e;
  return lookup(t, &e);
}

bool has_foreign_post_accumulate_hook(const Tensor& t) {
  if (!t.defined() || !t.autograd_meta()) return false;
  const auto& hooks = t.autograd_meta()->post_accumulate_hooks;
  if (hooks.empty()) return false;
  Entry e;
  return !lookup(t, &e) || hooks.size() != 1 || hooks[0].first != e.hook_id;
}

void grad_sync_start(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  check_counts("grad_sync_start", params, grads);
  if (!any_grad_sync()) return;
  NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    Entry e;
    if (!grads[i].defined() || !lookup(params[i], &e) || !e.sync->syncing()) continue;
    check_shape("grad_sync_start", i, params[i], grads[i]);
    // What eager backward() leaves in .grad before DDP's hook sees it.
    const Tensor old = params[i].grad();
    e.sync->static_ready(e.index, old.defined() ? old + grads[i] : grads[i]);
  }
}

std::vector<Tensor> grad_sync_wait(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  check_counts("grad_sync_wait", params, grads);
  if (!any_grad_sync()) return grads;
  NoGradGuard no_grad;
  std::vector<Entry> owned(params.size());
  std::vector<char> is_owned(params.size(), 0);
  std::vector<GradSync*> finished;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!lookup(params[i], &owned[i])) continue;
    is_owned[i] = 1;
    if (grads[i].defined()) check_shape("grad_sync_wait", i, params[i], grads[i]);
    GradSync* s = owned[i].sync;
    if (s->syncing()) {
      bool seen = false;
      for (GradSync* f : finished) seen = seen || f == s;
      if (!seen) {
        s->static_finish();  // every bucket of this DDP, in its order
        finished.push_back(s);
      }
    } else if (grads[i].defined()) {
      // no_sync(): backward only accumulates, as autograd's accumulate does.
      Tensor& g = params[i].autograd_meta()->grad;
      g = g.defined() ? g + grads[i] : grads[i].clone();
    }
  }
  std::vector<Tensor> out(grads);
  for (size_t i = 0; i < params.size(); ++i)
    if (is_owned[i]) out[i] = params[i].grad();
  return out;
}

}  // namespace graph::detail
