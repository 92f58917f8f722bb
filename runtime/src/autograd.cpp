// The autograd engine (autograd.h): recording, and the backward pass.
#include "graph/autograd.h"

#include <atomic>
#include <functional>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/ops.h"
#include "storage.h"

namespace graph {
namespace autograd {

namespace {

thread_local bool grad_mode = true;
// Callbacks queued during a backward() (queue_callback), run at its end.
thread_local std::vector<std::function<void()>>* final_callbacks = nullptr;

bool tracks_grad(const Tensor& t) { return t.defined() && t.autograd_meta() && t.autograd_meta()->requires_grad; }

// True when `g` is the only handle on all of its storage: nothing else can
// see it, so it may become a leaf's .grad without a copy.
bool sole_owner(const Tensor& g) {
  const auto& s = g.storage();
  return s && s.use_count() == 1 && g.storage_offset() == 0 && g.is_contiguous() &&
         static_cast<size_t>(g.numel()) * element_size(g.dtype()) == s->nbytes;
}

// Adds `g` into a leaf's gradient. Gradients are plain values: no history.
// The first gradient is taken as is where nothing else holds its storage
// (as PyTorch's AccumulateGrad steals it), else copied, so an in-place edit
// of .grad never reaches another tensor.
void accumulate(AutogradMeta& leaf, Tensor g) {
  if (leaf.grad.defined()) {
    leaf.grad = leaf.grad + g;
    return;
  }
  leaf.grad = sole_owner(g) ? g.detach() : g.clone();
}

// Nodes reachable from `roots` without entering `blocked` ones, each with
// the number of edges into it.
std::unordered_map<Node*, int> dependencies(const std::vector<Node*>& roots,
                                            const std::unordered_set<const Node*>& blocked) {
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack;
  for (Node* r : roots)
    if (deps.emplace(r, 0).second) stack.push_back(r);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.fn || blocked.count(e.fn.get())) continue;
      auto [it, fresh] = deps.emplace(e.fn.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.fn.get());
    }
  }
  return deps;
}

// Takes a gradient arriving along an edge (summed to the input's shape and
// dtype): true when it ends there (a leaf, a captured target; the sink may
// then move it away), false when it flows on into the edge's node.
using EdgeSink = std::function<bool(const Edge&, Tensor&)>;

// Runs a leaf's post-accumulate hooks (its gradient is final for this pass).
void run_post_accumulate_hooks(AutogradMeta& leaf) {
  // A copy: a hook may add or remove hooks.
  auto hooks = leaf.post_accumulate_hooks;
  for (auto& [id, hook] : hooks) hook(leaf.grad);
}

// For each leaf with post-accumulate hooks, the number of edges into it from
// the nodes this pass runs: its gradient is final once that many have passed.
std::unordered_map<AutogradMeta*, int> hooked_leaf_edges(const std::unordered_map<Node*, int>& deps) {
  std::unordered_map<AutogradMeta*, int> count;
  for (const auto& [n, d] : deps)
    for (const Edge& e : n->next)
      if (e.leaf && !e.leaf->post_accumulate_hooks.empty()) ++count[e.leaf.get()];
  return count;
}

// The backward pass from `grads` (per root node, one gradient per output):
// runs every node reachable from them, except `blocked` ones, once each in
// dependency order, summing gradients that meet. With `leaf_hooks`, a leaf's
// post-accumulate hooks run as soon as its last incoming edge has passed.
void run_backward(std::unordered_map<Node*, std::vector<Tensor>> grads, const std::unordered_set<const Node*>& blocked,
                  const EdgeSink& sink, bool retain_graph, bool leaf_hooks = false) {
  std::vector<Node*> roots;
  for (auto& [n, g] : grads) roots.push_back(n);
  auto deps = dependencies(roots, blocked);
  std::unordered_map<AutogradMeta*, int> pending_leaves;
  if (leaf_hooks) pending_leaves = hooked_leaf_edges(deps);
  std::vector<Node*> ready;
  for (Node* r : roots)
    if (deps[r] == 0) ready.push_back(r);
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    std::vector<Tensor> gn = std::move(grads[n]);
    grads.erase(n);
    if (!n->backward)
      throw Error("backward: trying to go through the graph of '" + n->name +
                  "' a second time; pass retain_graph=true to the first backward");
    // No gradient reached this node (every path was non-differentiable):
    // its inputs get none either, but their dependency counts still drop.
    gn.resize(n->num_outputs);
    bool any = false;
    for (const Tensor& t : gn) any = any || t.defined();
    std::vector<Tensor> in_grads = any ? n->backward(gn) : std::vector<Tensor>{};
    if (!retain_graph) n->backward = nullptr;  // frees the saved tensors
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      if (!e.fn && !e.leaf) continue;
      const bool flows = e.fn && !blocked.count(e.fn.get());
      Tensor gi = i < in_grads.size() ? std::move(in_grads[i]) : Tensor();
      if (gi.defined()) {
        gi = sum_to(gi, e.sizes);
        if (gi.dtype() != e.dtype) gi = gi.to(e.dtype);
        if (!sink(e, gi) && flows) {
          std::vector<Tensor>& slots = grads[e.fn.get()];
          slots.resize(e.fn->num_outputs);
          Tensor& slot = slots[e.output_nr];
          slot = slot.defined() ? slot + gi : gi;
        }
      }
      if (flows && --deps[e.fn.get()] == 0) ready.push_back(e.fn.get());
      if (e.leaf && !pending_leaves.empty()) {
        auto it = pending_leaves.find(e.leaf.get());
        if (it != pending_leaves.end() && --it->second == 0) run_post_accumulate_hooks(*e.leaf);
      }
    }
  }
}

}  // namespace

bool grad_mode_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : prev_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = prev_; }

// For the autodiff pass's gradient kernels (grad_kernels.cpp).
GradModeGuard::GradModeGuard(bool on) : prev_(grad_mode) { grad_mode = on; }
GradModeGuard::~GradModeGuard() { grad_mode = prev_; }

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!grad_mode) return false;
  for (const Tensor* t : inputs)
    if (tracks_grad(*t)) return true;
  return false;
}

namespace {

std::shared_ptr<Node> make_node(std::string name, size_t num_outputs, const std::vector<Tensor>& inputs,
                                MultiBackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->name = std::move(name);
  node->num_outputs = num_outputs;
  node->backward = std::move(backward);
  for (const Tensor& in : inputs) {
    Edge e;
    if (tracks_grad(in)) {
      const auto& meta = in.autograd_meta();
      if (meta->grad_fn) {
        e.fn = meta->grad_fn;
        e.output_nr = meta->output_nr;
      } else {
        e.leaf = meta;
      }
      e.sizes = in.sizes();
      e.dtype = in.dtype();
    }
    node->next.push_back(std::move(e));
  }
  return node;
}

void attach(Tensor& out, std::shared_ptr<Node> node, size_t output_nr) {
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = std::move(node);
  meta->output_nr = output_nr;
  out.set_autograd_meta(std::move(meta));
}

}  // namespace

void record(std::string name, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn backward) {
  attach(out,
         make_node(std::move(name), 1, inputs,
                   [backward = std::move(backward)](const std::vector<Tensor>& g) { return backward(g[0]); }),
         0);
}

void record_multi(std::string name, const std::vector<Tensor*>& outs, const std::vector<Tensor>& inputs,
                  MultiBackwardFn backward) {
  std::shared_ptr<Node> node = make_node(std::move(name), outs.size(), inputs, std::move(backward));
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]->defined() && is_floating(outs[i]->dtype())) attach(*outs[i], node, i);
}

bool records_unary(const Tensor& out, const Tensor& in) { return needs_grad({&in}) && is_floating(out.dtype()); }

Tensor record_unary_now(std::string_view name, Tensor out, const Tensor& in,
                        std::function<Tensor(const Tensor&)> backward) {
  record(std::string(name), out, {in}, [backward = std::move(backward)](const Tensor& g) {
    return std::vector<Tensor>{backward(g)};
  });
  return out;
}

Tensor sum_to(const Tensor& grad, const Shape& sizes) {
  if (grad.sizes() == sizes) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  if (lead < 0) throw Error("sum_to: gradient of shape " + shape_str(grad.sizes()) + " cannot be reduced to " +
                            shape_str(sizes));
  Shape dims;
  for (int64_t d = 0; d < grad.dim(); ++d)
    if (d < lead || (sizes[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  Tensor r = dims.empty() ? grad : sum(grad, dims, true);
  return r.reshape(sizes);
}

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  detail::check_defined("backward", root);
  if (!tracks_grad(root))
    throw Error("backward: the tensor (shape " + shape_str(root.sizes()) +
                ") does not require grad and has no grad_fn");
  Tensor g = grad;
  if (!g.defined()) {
    if (root.numel() != 1)
      throw Error("backward: grad can be implicitly created only for one-element outputs, got shape " +
                  shape_str(root.sizes()));
    g = ones(root.sizes(), root.dtype()).to(root.device());
  } else if (g.sizes() != root.sizes()) {
    throw Error("backward: grad of shape " + shape_str(g.sizes()) + " for an output of shape " +
                shape_str(root.sizes()));
  }
  NoGradGuard no_grad;  // backward formulas compute values, not new history
  // Callbacks that hooks queue run at the end of this (outermost) pass.
  std::vector<std::function<void()>> callbacks;
  const bool outermost = final_callbacks == nullptr;
  if (outermost) final_callbacks = &callbacks;
  struct Reset {
    bool on;
    ~Reset() {
      if (on) final_callbacks = nullptr;
    }
  } reset{outermost};
  const auto& meta = root.autograd_meta();
  if (!meta->grad_fn) {
    accumulate(*meta, g.detach());
    if (!meta->post_accumulate_hooks.empty()) run_post_accumulate_hooks(*meta);
  } else {
    std::unordered_map<Node*, std::vector<Tensor>> seeds;
    seeds[meta->grad_fn.get()].resize(meta->grad_fn->num_outputs);
    seeds[meta->grad_fn.get()][meta->output_nr] = g.detach();
    run_backward(std::move(seeds), {}, [](const Edge& e, Tensor& gi) {
      if (!e.leaf) return false;
      accumulate(*e.leaf, std::move(gi));
      return true;
    }, retain_graph, /*leaf_hooks=*/true);
  }
  if (!outermost) return;
  // A callback may queue another (index loop: the vector may grow).
  for (size_t i = 0; i < callbacks.size(); ++i) {
    auto fn = std::move(callbacks[i]);
    fn();
  }
}

size_t add_post_accumulate_hook(const Tensor& leaf, PostAccumulateHook hook) {
  detail::check_defined("add_post_accumulate_hook", leaf);
  if (!leaf.requires_grad() || !leaf.is_leaf())
    throw Error("add_post_accumulate_hook: the tensor must be a leaf that requires grad");
  static std::atomic<size_t> next_id{1};
  const size_t id = next_id++;
  leaf.autograd_meta()->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void remove_post_accumulate_hook(const Tensor& leaf, size_t id) {
  if (!leaf.defined() || !leaf.autograd_meta()) return;
  auto& hooks = leaf.autograd_meta()->post_accumulate_hooks;
  std::erase_if(hooks, [id](const auto& h) { return h.first == id; });
}

void queue_callback(std::function<void()> fn) {
  if (!final_callbacks) throw Error("queue_callback: only a hook running inside backward() can queue a callback");
  final_callbacks->push_back(std::move(fn));
}

std::vector<Tensor> grad_at(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                            const std::vector<Edge>& targets) {
  NoGradGuard no_grad;
  std::vector<Tensor> result(targets.size());
  auto add = [&](size_t k, const Tensor& g) { result[k] = result[k].defined() ? result[k] + g : g.detach(); };
  // The target an edge (or an output's history) names, if any.
  auto target_of = [&](const Node* fn, size_t output_nr, const AutogradMeta* leaf) -> std::optional<size_t> {
    for (size_t k = 0; k < targets.size(); ++k) {
      const Edge& t = targets[k];
      if ((leaf && t.leaf.get() == leaf) || (fn && t.fn.get() == fn && t.output_nr == output_nr)) return k;
    }
    return std::nullopt;
  };
  std::unordered_set<const Node*> blocked;  // nothing upstream of a target runs
  for (const Edge& t : targets)
    if (t.fn) blocked.insert(t.fn.get());
  std::unordered_map<Node*, std::vector<Tensor>> seeds;
  for (size_t i = 0; i < outputs.size() && i < grad_outputs.size(); ++i) {
    if (!grad_outputs[i].defined() || !tracks_grad(outputs[i])) continue;
    const auto& meta = outputs[i].autograd_meta();
    if (auto k = target_of(meta->grad_fn.get(), meta->output_nr, meta->grad_fn ? nullptr : meta.get())) {
      add(*k, grad_outputs[i]);
    } else if (meta->grad_fn && !blocked.count(meta->grad_fn.get())) {
      std::vector<Tensor>& slots = seeds[meta->grad_fn.get()];
      slots.resize(meta->grad_fn->num_outputs);
      Tensor& slot = slots[meta->output_nr];
      slot = slot.defined() ? slot + grad_outputs[i].detach() : grad_outputs[i].detach();
    }
  }
  if (!seeds.empty())
    run_backward(std::move(seeds), blocked, [&](const Edge& e, Tensor& gi) {
      if (auto k = target_of(e.fn.get(), e.output_nr, e.leaf.get())) {
        add(*k, gi);
        return true;
      }
      return e.leaf != nullptr;  // another leaf: left alone
    }, /*retain_graph=*/true);
  return result;
}

void accumulate_grad(const Tensor& leaf, const Tensor& g) {
  const auto& meta = leaf.autograd_meta();
  if (!meta || !meta->requires_grad || meta->grad_fn)
    throw Error("accumulate_grad: the tensor must be a leaf that requires grad");
  if (!meta->post_accumulate_hooks.empty())
    throw Error("accumulate_grad: the tensor has post-accumulate hooks (DDP), which only backward() runs");
  NoGradGuard no_grad;
  accumulate(*meta, g.detach());
}

}  // namespace autograd

// ---- Tensor's autograd members ------------------------------------------------

bool Tensor::requires_grad() const { return autograd_ && autograd_->requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  detail::check_defined("requires_grad_", *this);
  if (autograd_ && autograd_->grad_fn) {
    if (!on) throw Error("requires_grad_: cannot turn off requires_grad of a non-leaf tensor; use detach()");
    return *this;
  }
  if (on && !is_floating(dtype_))
    throw Error("requires_grad_: only floating tensors can require grad, got " + std::string(dtype_name(dtype_)));
  if (!autograd_) autograd_ = std::make_shared<autograd::AutogradMeta>();
  autograd_->requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { return autograd_ ? autograd_->grad : Tensor(); }

void Tensor::zero_grad() {
  if (autograd_) autograd_->grad = Tensor();
}

bool Tensor::is_leaf() const { return !autograd_ || !autograd_->grad_fn; }

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.autograd_.reset();
  return t;
}

void Tensor::backward() const { autograd::backward(*this, Tensor(), false); }
void Tensor::backward(const Tensor& grad, bool retain_graph) const { autograd::backward(*this, grad, retain_graph); }

}  // namespace graph
