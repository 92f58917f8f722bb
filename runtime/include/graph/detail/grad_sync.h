#pragma once
// The gradient all-reduce of a static train step (ops.def: grad_sync_start,
// grad_sync_wait; ir/passes.h's place_grad_sync puts them in the graph).
//
// The step is compiled at build time; data parallelism is chosen at run time
// by wrapping the module (graph::dist::DistributedDataParallel). The wrapper
// registers each parameter it averages here, with itself as its GradSync; the
// graph's nodes look their parameters up at every call and do nothing for a
// parameter with no registration. So the same compiled step trains alone and
// under DDP, and the runtime needs no MPI (graph::dist implements GradSync).
#include <cstddef>
#include <vector>

#include "graph/tensor.h"

namespace graph::detail {

// What a data-parallel wrapper does for a static train step; the same buckets
// and arithmetic as its eager hooks, so both paths give the same bits.
class GradSync {
 public:
  virtual ~GradSync() = default;
  // False while gradients only accumulate locally (DDP's no_sync()).
  virtual bool syncing() const = 0;
  // Parameter `index`'s gradient of this step, as backward would have left it
  // in .grad (the old .grad added when there is one): staged into its bucket;
  // every bucket it completes starts its all-reduce.
  virtual void static_ready(size_t index, const Tensor& grad) = 0;
  // Waits for every bucket and writes each parameter's average into its .grad
  // (parameters no gradient reached this step are reduced with their .grad).
  virtual void static_finish() = 0;
  // The step stopped (an exception, or a guard refused it) after handing
  // over gradients and before static_finish: the sync must not take the
  // next step's gradients as this one's.
  virtual void static_abandon() noexcept = 0;
};

// Parameter `param` (a leaf that requires grad) is averaged by `sync` as its
// parameter `index`; `hook_id` is the sync's post-accumulate hook on it (the
// eager path), which a static step may then bypass.
void register_grad_sync(const Tensor& param, GradSync* sync, size_t index, size_t hook_id);
void unregister_grad_sync(const Tensor& param);
// Whether `t` has post-accumulate hooks other than its registered sync's:
// a static train step cannot run those, so the call runs its eager body.
bool has_foreign_post_accumulate_hook(const Tensor& t);
// Whether `t` is registered to a sync (its .grad is then the sync's to write).
bool grad_sync_owns(const Tensor& t);
// Whether any parameter is registered now (one atomic load).
bool any_grad_sync();
// static_abandon() on every registered sync (static.cpp, when a train step
// under DDP ends without reaching its grad_sync_wait).
void abandon_grad_syncs() noexcept;

}  // namespace graph::detail
