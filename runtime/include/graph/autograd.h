#pragma once
// Tape-based reverse-mode autograd for eager tensors.
//
// Every differentiable op, when grad mode is on and an input requires grad,
// records a Node on its result: the op's backward (a gradient formula from
// the op table, derivatives.h, or a named helper) and one Edge per input,
// pointing to the input's own Node or, for a leaf, to its AutogradMeta where
// gradients accumulate. Tensor::backward() runs the Nodes reachable from the
// result once each, in dependency order, summing gradients that meet.
//
// Saved tensors are detached (values only), so a Node never owns the Tensor
// it produced: no reference cycles. Nodes free their saved tensors after one
// backward pass unless retain_graph is set.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/tensor.h"

namespace graph::autograd {

struct Node;

// Runs once per backward() on a leaf, when the last gradient of that pass has
// been added into `grad` (torch's register_post_accumulate_grad_hook).
// graph::dist's DDP starts a bucket's all-reduce from it while the rest of
// the backward pass still runs.
using PostAccumulateHook = std::function<void(Tensor& grad)>;

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                    // accumulated gradient (leaves)
  std::shared_ptr<Node> grad_fn;  // the op that produced the tensor; null for leaves
  size_t output_nr = 0;           // which of grad_fn's outputs the tensor is
  std::vector<std::pair<size_t, PostAccumulateHook>> post_accumulate_hooks;  // leaves; by id
};

// The gradients of a Node's inputs from the gradient of its result; an
// undefined Tensor means "no gradient" (zero) for that input.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad)>;
// The same for a Node with several outputs (a static graph on the tape), from
// one gradient per output; an undefined one means no gradient reached it.
using MultiBackwardFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& grads)>;

struct Edge {
  std::shared_ptr<Node> fn;            // the input's producer, or
  std::shared_ptr<AutogradMeta> leaf;  // the leaf to accumulate into, or neither
  size_t output_nr = 0;                // which output of `fn` the input is
  Shape sizes;                         // the input's shape: gradients are summed to it
  DType dtype = kFloat32;              // and converted to its dtype
};

struct Node {
  std::string name;  // the op, for messages
  size_t num_outputs = 1;
  MultiBackwardFn backward;  // null once run (unless retain_graph)
  std::vector<Edge> next;
};

// Grad mode is per thread; NoGradGuard turns it off for its scope.
bool grad_mode_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// ---- for the autodiff pass's gradient kernels (runtime/src/grad_kernels.cpp) ----
// Sets grad mode for its scope. A gradient op runs its op's eager backward,
// which must record even when the backward graph itself runs with grad mode
// off (as it does inside an eager backward()).
class GradModeGuard {
 public:
  explicit GradModeGuard(bool on);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool prev_;
};
// ---- end of the autodiff block ----

// True when grad mode is on and some input requires grad: the op must record.
bool needs_grad(std::initializer_list<const Tensor*> inputs);

// Makes `out` the result of a recorded op over `inputs` (those that do not
// require grad get no edge).
void record(std::string name, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn backward);

// record() for an op with several outputs: one Node whose backward gets one
// gradient per output. Outputs that are not floating tensors get no history
// (their gradient is always undefined).
void record_multi(std::string name, const std::vector<Tensor*>& outs, const std::vector<Tensor>& inputs,
                  MultiBackwardFn backward);

// The two halves of record_unary below.
bool records_unary(const Tensor& out, const Tensor& in);
Tensor record_unary_now(std::string_view name, Tensor out, const Tensor& in,
                        std::function<Tensor(const Tensor&)> backward);

// record() for ops of one tensor input: records when `in` requires grad and
// `out` is floating, and returns `out`. A template so that an op that records
// nothing (no grad, the common case for views such as slice) builds no
// std::function (its captures would be copied to the heap and freed).
template <class F>
Tensor record_unary(std::string_view name, Tensor out, const Tensor& in, F&& backward) {
  if (!records_unary(out, in)) return out;
  return record_unary_now(name, std::move(out), in, std::forward<F>(backward));
}

// `grad` summed over the dims it was broadcast along, to `sizes`.
Tensor sum_to(const Tensor& grad, const Shape& sizes);

// Runs backward from `root` with initial gradient `grad` (ones for a
// one-element root when undefined).
void backward(const Tensor& root, const Tensor& grad, bool retain_graph);

// Adds `g` into leaf.grad() as backward() does (the first gradient is kept
// when nothing else holds its storage, else copied; later ones are added).
// A static train step's set_grads writes through it. Throws for a tensor that
// is not a leaf requiring grad, or that has post-accumulate hooks.
void accumulate_grad(const Tensor& leaf, const Tensor& g);

// Adds a post-accumulate hook to a leaf that requires grad; returns its id.
// Hooks run in backward() only (not in grad_at), in the order added, when
// the leaf's gradient for the pass is final: after the last edge into the
// leaf has passed, whether or not a gradient flowed along it.
size_t add_post_accumulate_hook(const Tensor& leaf, PostAccumulateHook hook);
void remove_post_accumulate_hook(const Tensor& leaf, size_t id);
// From a hook: runs `fn` when the outermost backward() finishes (torch's
// queue_callback), e.g. to wait for the all-reduces the hooks started.
void queue_callback(std::function<void()> fn);

// The gradients that `outputs`, seeded with `grad_outputs` (an undefined one:
// none), send to `targets` (each an input's edge: a producer's output or a
// leaf), as torch.autograd.grad does: no leaf's grad() changes, nothing
// upstream of a target runs, and the graph is kept (retain_graph). An
// undefined result: no gradient reached that target. GRAPH_CHECK compares a
// static graph's gradients with its eager body's through it.
std::vector<Tensor> grad_at(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                            const std::vector<Edge>& targets);

}  // namespace graph::autograd

namespace graph {
using autograd::NoGradGuard;
}
