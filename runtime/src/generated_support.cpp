// The out-of-line halves of graph/detail/generated_support.h: the input
// check every generated graph function and interpret mode run (one checker
// for both, reading the same signature table), and what a failing guard says.
#include "graph/detail/generated_support.h"
#include "graph/detail/grad_sync.h"
#include "graph/autograd.h"
#include "graph/optim.h"
#include "storage.h"

#include <cstdlib>
#include <mutex>
#include <string_view>
#include <typeinfo>
#include <unordered_set>

namespace graph::detail {

bool GraphBuffers::buffers_off = [] {
  const char* e = std::getenv("GRAPH_BUFFERS");
  return e && std::string_view(e) == "off";
}();

namespace {

// The C++ type each IValue alternative stands for, as messages name it.
std::string_view arg_kind_name(const IValue& a) {
  switch (a.index()) {
    case 0: return "a tensor";
    case 1: return "an int";
    case 2: return "a float";
    case 3: return "a bool";
    default: return "a list of tensors";
  }
}

std::string input_label(size_t index, std::string_view name) {
  return "input " + std::to_string(index) + " '" + std::string(name) + "'";
}

bool guard_fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

bool fail_kind(const IValue& a, size_t index, const InputGuard& g, std::string* why) {
  return guard_fail(why, input_label(index, g.name) + ": expected " + ir::input_kind_name(g.kind) + ", got " +
                             std::string(arg_kind_name(a)));
}

bool fail_tensor(const IValue& a, size_t index, const InputGuard& g, std::string* why) {
  const std::string want =
      input_label(index, g.name) + ": expected a " + std::string(dtype_name(g.dtype)) + " tensor, got ";
  const Tensor* t = std::get_if<Tensor>(&a);
  if (!t) return guard_fail(why, want + std::string(arg_kind_name(a)));
  if (!t->defined()) return guard_fail(why, want + "an undefined tensor");
  return guard_fail(why, want + std::string(dtype_name(t->dtype())));
}

// A tensor input of the table's dtype, rank and static sizes.
bool check_tensor(const IValue& a, size_t index, const InputGuard& g, std::string* why) {
  const Tensor* t = std::get_if<Tensor>(&a);
  if (g.may_be_undefined && t && !t->defined()) return true;
  if (!t || !t->defined() || t->dtype() != g.dtype) return fail_tensor(a, index, g, why);
  if (g.rank < 0) return true;
  if (t->dim() != g.rank)
    return guard_fail(why, input_label(index, g.name) + ": expected rank " + std::to_string(g.rank) + ", got shape " +
                               shape_str(t->sizes()));
  for (int64_t d = 0; g.sizes && d < g.rank; ++d)
    if (g.sizes[d] >= 0 && t->size(d) != g.sizes[d])
      return guard_fail(why, input_label(index, g.name) + ": expected size " + std::to_string(g.sizes[d]) +
                                 " in dim " + std::to_string(d) + ", got shape " + shape_str(t->sizes()));
  return true;
}

bool check_input(const IValue& a, size_t index, const InputGuard& g, std::string* why) {
  switch (g.kind) {
    case ir::InputKind::Tensor: return check_tensor(a, index, g, why);
    case ir::InputKind::AnyTensor: return std::holds_alternative<Tensor>(a) || fail_kind(a, index, g, why);
    case ir::InputKind::TensorList: return std::holds_alternative<TensorList>(a) || fail_kind(a, index, g, why);
    case ir::InputKind::Int: return std::holds_alternative<int64_t>(a) || fail_kind(a, index, g, why);
    case ir::InputKind::Float: return std::holds_alternative<double>(a) || fail_kind(a, index, g, why);
    case ir::InputKind::Bool: return std::holds_alternative<bool>(a) || fail_kind(a, index, g, why);
  }
  return fail_kind(a, index, g, why);
}

}  // namespace

bool fail_num_inputs(size_t got, size_t want, std::string* why) {
  return guard_fail(why, "expected " + std::to_string(want) + " inputs, got " + std::to_string(got));
}

bool check_inputs(const InputGuard* sig, size_t n, const IValue* in, size_t n_in, std::string* why) {
  if (!guard_num_inputs(n_in, n, why)) return false;
  for (size_t k = 0; k < n; ++k)
    if (!check_input(in[k], k, sig[k], why)) return false;
  return true;
}

}  // namespace graph::detail

namespace graph::detail {

namespace {

thread_local TakenGrads* taken_grads = nullptr;

// Whether gradient i may become its parameter's .grad as it is: it spans its
// whole storage, and no parameter, data tensor or other gradient shares it.
bool may_take(const Tensor& g, size_t i, const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
              const std::vector<Tensor>& data) {
  const auto& s = g.storage();
  if (!s || g.device() != kCPU || g.storage_offset() != 0 || !g.is_contiguous() ||
      static_cast<size_t>(g.numel()) * element_size(g.dtype()) != s->nbytes)
    return false;
  const auto shares = [&](const std::vector<Tensor>& ts, size_t skip) {
    for (size_t k = 0; k < ts.size(); ++k)
      if (k != skip && ts[k].defined() && ts[k].storage() == s) return true;
    return false;
  };
  return !shares(params, SIZE_MAX) && !shares(data, SIZE_MAX) && !shares(grads, i);
}

}  // namespace

void set_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& data) {
  // Everything is checked before any .grad changes.
  for (const Tensor& d : data)
    if (d.defined() && d.requires_grad())
      throw Error("static train step: a tensor argument requires grad; eager loss.backward() would write its .grad, "
                  "but the graph differentiates only the parameters it reads through 'this' or a module "
                  "(pass it .detach(), or run the step eagerly)");
  if (params.size() != grads.size()) throw Error("set_grads: " + std::to_string(params.size()) + " parameters, " +
                                                 std::to_string(grads.size()) + " gradients");
  bool any = false;
  for (size_t i = 0; i < params.size(); ++i) any = any || (params[i].requires_grad() && grads[i].defined());
  if (!any)
    throw Error("backward: the loss does not require grad (no parameter that reaches it requires grad) "
                "and has no grad_fn");
  // A parameter that does not require grad gets none, as in eager mode; a
  // DDP's parameter got its .grad from grad_sync_wait, which ran before.
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].requires_grad() || !grads[i].defined() || (any_grad_sync() && grad_sync_owns(params[i]))) continue;
    if (taken_grads && may_take(grads[i], i, params, grads, data) && !params[i].grad().defined() &&
        params[i].autograd_meta()->post_accumulate_hooks.empty() && !params[i].autograd_meta()->grad_fn) {
      params[i].autograd_meta()->grad = grads[i].detach();
      taken_grads->params_.push_back(params[i]);
      continue;
    }
    autograd::accumulate_grad(params[i], grads[i]);
  }
}

TakenGrads::TakenGrads() : prev_(taken_grads) { taken_grads = this; }

TakenGrads::~TakenGrads() { taken_grads = prev_; }

void TakenGrads::unshare(const IValue* out, size_t n_out) {
  for (Tensor& p : params_) {
    Tensor& g = p.autograd_meta()->grad;
    bool shared = false;
    const auto check = [&](const Tensor& t) { shared = shared || (t.defined() && t.storage() == g.storage()); };
    for (size_t k = 0; k < n_out; ++k) {
      if (const Tensor* t = std::get_if<Tensor>(&out[k])) check(*t);
      if (const TensorList* l = std::get_if<TensorList>(&out[k]))
        for (const Tensor& t : *l) check(t);
    }
    if (shared) g = g.clone();
  }
  params_.clear();
}

// The write-back of a member updated in place in a static forward (the
// assign primitive), for generated code and the interpreter alike.
void assign(const Tensor& dst, const Tensor& value) {
  if (!dst.defined()) throw Error("assign: the tensor the graph updates in place is undefined");
  if (value.storage() == dst.storage() && value.storage_offset() == dst.storage_offset() &&
      value.sizes() == dst.sizes() && value.strides() == dst.strides() && value.dtype() == dst.dtype())
    return;  // no path updated it: eager wrote nothing either
  // The eager in-place ops' refusals (inplace.cpp), which the graph's
  // functional ops did not make.
  if (dst.requires_grad() && autograd::grad_mode_enabled())
    throw Error("assign: the graph updates in place a tensor that requires grad while grad mode is on (the tape "
                "would see the new values); use NoGradGuard, or the out-of-place op");
  if (value.sizes() != dst.sizes())
    throw Error("assign: the value written back has shape " + shape_str(value.sizes()) +
                ", which is not the shape " + shape_str(dst.sizes()) + " of the tensor written in place");
  if (is_floating(value.dtype()) && !is_floating(dst.dtype()))
    throw Error("assign: the value written back has dtype " + std::string(dtype_name(value.dtype())) +
                ", which cannot be written into a " + std::string(dtype_name(dst.dtype())) + " tensor");
  NoGradGuard no_grad;  // a buffer update, as eager in-place ops under no_grad: not on the tape
  Tensor d = dst;
  d.copy_(value);  // bumps the version
}

}  // namespace graph::detail

// ---- the optimizer in a static train step -----------------------------------
namespace graph::detail {

struct OptimizerAccess {
  static void step_with(optim::Optimizer& o, const std::vector<Tensor>& grads) { o.step_with(grads); }
};

namespace {

std::mutex& optimizers_mutex() {
  static std::mutex mu;
  return mu;
}

std::unordered_set<const optim::Optimizer*>& live_optimizers() {
  static std::unordered_set<const optim::Optimizer*> live;
  return live;
}

// The optimizer behind a handle the guard accepted.
optim::Optimizer& optimizer_of(int64_t opt) {
  {
    std::lock_guard<std::mutex> lock(optimizers_mutex());
    if (opt != 0 && live_optimizers().count(reinterpret_cast<const optim::Optimizer*>(opt)))
      return *reinterpret_cast<optim::Optimizer*>(opt);
  }
  throw Error("static train step: the optimizer is null or was destroyed");
}

// One tensor, not merely equal values: .grad lives in the autograd metadata.
bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.storage() == b.storage() && a.storage_offset() == b.storage_offset() &&
         a.sizes() == b.sizes() && a.strides() == b.strides() && a.autograd_meta() == b.autograd_meta();
}

}  // namespace

void register_optimizer(const optim::Optimizer* opt, bool alive) {
  std::lock_guard<std::mutex> lock(optimizers_mutex());
  if (alive)
    live_optimizers().insert(opt);
  else
    live_optimizers().erase(opt);
}

int64_t optimizer_handle(const optim::Optimizer* opt) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(opt)); }

bool optimizer_guard(int64_t opt, std::string* why) {
  const optim::Optimizer* o = nullptr;
  {
    std::lock_guard<std::mutex> lock(optimizers_mutex());
    if (opt != 0 && live_optimizers().count(reinterpret_cast<const optim::Optimizer*>(opt)))
      o = reinterpret_cast<const optim::Optimizer*>(opt);
  }
  if (!o) return guard_fail(why, "the optimizer is null or was destroyed");
  // Exactly SGD or Adam: a subclass may override step(), which the graph would not call.
  const std::type_info& t = typeid(*o);
  if (t != typeid(optim::SGD) && t != typeid(optim::Adam))
    return guard_fail(why, "the optimizer is not exactly graph::optim::SGD or graph::optim::Adam, whose step() the "
                           "graph runs");
  return true;
}

void optimizer_zero_grad(int64_t opt) { optimizer_of(opt).zero_grad(); }

void optimizer_step(int64_t opt, const std::vector<Tensor>& params, const std::vector<Tensor>& grads) {
  optim::Optimizer& o = optimizer_of(opt);
  if (params.size() != grads.size())
    throw Error("optimizer_step: " + std::to_string(params.size()) + " parameters, " + std::to_string(grads.size()) +
                " gradients");
  // Each optimizer parameter's gradient: the graph's value when the graph
  // differentiated it (and it requires grad, as set_grads writes only
  // then), else its .grad, as eager step() reads it.
  std::vector<Tensor> g;
  g.reserve(o.parameters().size());
  for (const Tensor& p : o.parameters()) {
    Tensor gi = p.defined() ? p.grad() : Tensor();
    for (size_t k = 0; k < params.size(); ++k)
      if (same_tensor(p, params[k])) {
        gi = p.requires_grad() ? grads[k] : Tensor();
        break;
      }
    g.push_back(std::move(gi));
  }
  OptimizerAccess::step_with(o, g);
}

}  // namespace graph::detail
