// Mixed execution (static_autograd.h): a static graph as one node on the
// eager tape, its backward the backward graph generated at build time.
#include "graph/detail/static_autograd.h"
#include "input_walk.h"

#include <iterator>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/ops.h"

namespace graph::detail {

namespace {

struct GradientRegistry {
  std::mutex mu;
  std::vector<CompiledGradient*> gradients;
};

// Function-local so registrars in other translation units can run first.
GradientRegistry& gradient_registry() {
  static GradientRegistry r;
  return r;
}

bool fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

bool tracks_grad(const Tensor& t) { return t.defined() && t.requires_grad(); }

// Set while a forward runs for a backward (run_with_grad): graph_gemm.cpp
// then gives trained weights the eager GEMM rather than packing them.
thread_local bool t_forward_with_grad = false;

// What the backward needs to stand in a zero gradient for an output no
// gradient reached (the backward graph takes one defined tensor per output).
struct OutputInfo {
  bool tensor = false;
  Shape sizes;
  DType dtype = kFloat32;
};

Tensor zero_grad_for(const OutputInfo& o) { return o.tensor ? zeros(o.sizes, o.dtype) : zeros({}, kFloat32); }

}  // namespace

bool forward_with_grad() { return t_forward_with_grad; }

void register_gradient(CompiledGradient* g) {
  GradientRegistry& r = gradient_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.gradients.push_back(g);
}

const CompiledGradient* find_gradient(std::string_view mangled_name, std::string_view body_hash) {
  GradientRegistry& r = gradient_registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const CompiledGradient* g : r.gradients)
    if (mangled_name == g->mangled_name && body_hash == g->body_hash) return g;
  return nullptr;
}

bool grad_requested(const IValue* in, size_t n_in) {
  return autograd::grad_mode_enabled() && any_input_tensor(in, n_in, [](const Tensor& t) { return tracks_grad(t); });
}

bool run_with_grad(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, size_t n_out, std::string* why) {
  const CompiledGradient* d = find_gradient(g.mangled_name, g.body_hash);
  if (!d) return fail(why, "its inputs require grad and no gradient was generated for this graph");
  if (d->unsupported)
    return fail(why, std::string("its inputs require grad and the graph has no gradient: ") + d->unsupported);
  for (size_t i = 0; i < n_in; ++i)
    if (const auto* l = std::get_if<std::vector<Tensor>>(&in[i]))
      for (const Tensor& t : *l)
        if (tracks_grad(t))
          return fail(why, "input " + std::to_string(i) +
                               " is a list holding a tensor that requires grad; the graph's gradient reaches tensor "
                               "inputs only");

  // The forward records nothing itself: its one node is recorded below.
  std::vector<IValue> results(n_out + d->num_saved);
  {
    NoGradGuard no_grad;
    struct Flag {
      bool prev = t_forward_with_grad;
      Flag() { t_forward_with_grad = true; }
      ~Flag() { t_forward_with_grad = prev; }
    } flag;
    if (!d->forward(in, n_in, results.data(), why)) return fail(why, "a guard failed: " + (why ? *why : ""));
  }
  auto saved = std::make_shared<const std::vector<IValue>>(std::make_move_iterator(results.begin() + n_out),
                                                        std::make_move_iterator(results.end()));
  std::vector<OutputInfo> info(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    out[i] = std::move(results[i]);
    if (const Tensor* t = std::get_if<Tensor>(&out[i]); t && t->defined())
      info[i] = {true, t->sizes(), t->dtype()};
  }
  std::vector<Tensor> inputs;  // the edges: one per grad_input, none where grad is not required
  // Which gradients the backward computes: as eager ops ask only for those of
  // inputs that require grad (one spare element: never a zero-length array).
  std::shared_ptr<bool[]> needed = std::make_shared<bool[]>(d->num_grad_inputs + 1);
  for (size_t k = 0; k < d->num_grad_inputs; ++k) {
    inputs.push_back(std::get<Tensor>(in[d->grad_inputs[k]]));
    needed[k] = tracks_grad(inputs.back());
  }

  const std::string name = std::string("static graph (") + g.source + ")";
  auto backward = [d, saved, info, name, needed](const std::vector<Tensor>& grads) {
    std::vector<IValue> args(saved->begin(), saved->end());  // a copy: retain_graph may run it again
    for (size_t i = 0; i < info.size(); ++i) {
      const bool given = i < grads.size() && grads[i].defined();
      args.emplace_back(given ? (grads[i].dtype() == info[i].dtype ? grads[i] : grads[i].to(info[i].dtype))
                              : zero_grad_for(info[i]));
    }
    std::vector<IValue> results(d->num_grad_inputs);
    std::string why;
    if (!d->backward(args.data(), args.size(), needed.get(), results.data(), &why))
      throw Error("backward of the " + name + ": " + why);
    std::vector<Tensor> grads_in;
    for (IValue& r : results) grads_in.push_back(std::get<Tensor>(std::move(r)));
    return grads_in;
  };
  Tensor none;
  std::vector<Tensor*> outs;
  for (size_t i = 0; i < n_out; ++i) {
    Tensor* t = std::get_if<Tensor>(&out[i]);
    outs.push_back(t ? t : &none);
  }
  autograd::record_multi(name, outs, inputs, std::move(backward));
  return true;
}

}  // namespace graph::detail
