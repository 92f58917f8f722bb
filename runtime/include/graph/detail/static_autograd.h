#pragma once
// Mixed execution: a [[graph::static]] function inside eager autograd.
// Not public API (graph/detail/): generated code and the runtime use it.
//
// Called with grad mode on and a tensor input that requires grad, a static
// function runs the forward graph generated at build time (its outputs plus
// the values its backward needs) with grad mode off, and records ONE node on
// the eager tape for all its outputs. That node's backward runs the backward
// graph generated at build time (the autodiff pass, ir/autodiff.h) and hands
// each input that requires grad its gradient: arguments, and the members and
// globals the prologue passes (so an nn::Module with a static forward
// trains). Without grad nothing is recorded and the plain graph runs.
//
// The generator (codegen/grad.h) registers a CompiledGradient next to each
// CompiledGraph, under the same (mangled name, body hash); when autodiff
// refused the graph, it holds the reason and grad calls run the eager body
// (GRAPH_EXPLAIN=1 says why).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "graph/static.h"

namespace graph::detail {

// The generated backward: (saved..., grad_outputs...) -> (gradients of
// grad_inputs...). needed[k] says whether the gradient of grad_inputs[k] is
// wanted (its input requires grad); an unwanted one comes back undefined, and
// work that only it needs does not run (ir/output_reach.h).
using BackwardFn = bool (*)(const IValue* inputs, size_t num_inputs, const bool* needed, IValue* outputs,
                            std::string* why);

struct CompiledGradient {
  const char* mangled_name;
  const char* body_hash;
  GraphFn forward;      // (inputs...) -> (outputs..., saved...)
  BackwardFn backward;  // (saved..., grad_outputs...) -> (gradients of grad_inputs...)
  size_t num_saved;
  const size_t* grad_inputs;  // the inputs backward returns gradients of
  size_t num_grad_inputs;
  const char* unsupported;    // why there is no gradient; null when there is one
};

void register_gradient(CompiledGradient* g);
// The gradient registered for (mangled, hash), or nullptr.
const CompiledGradient* find_gradient(std::string_view mangled_name, std::string_view body_hash);

struct GradientRegistrar {
  explicit GradientRegistrar(CompiledGradient* g) { register_gradient(g); }
};

// True when grad mode is on and some tensor input requires grad (a list
// holding one counts too).
bool grad_requested(const IValue* in, size_t n_in);

// Runs `g` as one node on the tape: its forward, then records the backward.
// False (and why) when the eager body must run instead: no gradient was
// generated, autodiff refused the graph, a list input requires grad, or a
// guard failed.
bool run_with_grad(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, size_t n_out, std::string* why);

}  // namespace graph::detail
