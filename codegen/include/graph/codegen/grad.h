#pragma once
// Gradients of static graphs, made at build time (mixed execution).
//
// A [[graph::static]] function called with inputs that require grad becomes
// one node on the eager tape (runtime: graph/detail/static_autograd.h). For that the
// generator writes, next to the graph's own function, two more GraphFns:
//
//   <fn>_forward  (inputs...)                 -> (outputs..., saved...)
//   <fn>_backward (saved..., grad_outputs...) -> (one gradient per floating
//                                                tensor input)
//
// made by ir::compile (graph/ir/compile.h) from the graph before fusion, then
// optimized and fused like the graph itself. A graph autodiff refuses (dropout while
// training, a Loop inside a Loop) gets no functions but the reason, which the
// runtime reports under GRAPH_EXPLAIN=1 when a grad call runs eagerly.
#include <memory>
#include <string>
#include <vector>

#include "graph/ir/compile.h"

namespace graph::codegen {

// The gradient graphs ir::compile made (graph/ir/compile.h).
using GradientUnit = ir::GradientGraphs;

// Drops a gradient this back end cannot write (sets `unsupported` to why), so
// that an op without a backward kernel leaves grad calls eager, never the
// whole function.
void keep_printable_gradient(GradientUnit& u);

namespace detail {
// For generate_cpu_source (cpp.cpp): the C++ of <fn>_forward and
// <fn>_backward (nothing when unsupported), and of the CompiledGradient that
// registers them (or the reason) under the graph's (mangled name, body hash).
// Their fusion groups run their CUDA kernels (generate_cuda_source) under
// the keys "<mangled>#<hash>/forward/group<k>" and ".../backward/group<k>".
class KernelPool;  // emitter.h: the kernel structs the source's functions share
std::string gradient_functions(const GradientUnit& u, const std::string& fn, const std::string& source,
                               const std::string& mangled_name, const std::string& body_hash,
                               KernelPool* pool = nullptr);  // none: the structs lead the returned text
std::string gradient_registration(const GradientUnit& u, const std::string& fn, const std::string& mangled_name,
                                  const std::string& body_hash);
}  // namespace detail


}  // namespace graph::codegen
