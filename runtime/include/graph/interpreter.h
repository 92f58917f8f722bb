#pragma once
// The graph interpreter: runs any verified graph on the eager runtime,
// without generated code (graph-run, tracing, the autodiff pass's tests).
//
// Each block runs as a dataflow graph: a node becomes ready when every value
// it reads from the block (directly or from inside its nested blocks) has been
// computed, and ready nodes are taken in FIFO order by the calling thread and
// the workers of a shared thread pool (the seed's scheduling). Every node
// writes only its own outputs and every kernel is deterministic, so results do
// not depend on the number of threads or on timing.
//
// Eager autograd stays in effect: graph inputs that require grad give outputs
// with history (each node runs the eager op), in the caller's grad mode.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/ivalue.h"
#include "graph/tensor.h"

namespace graph {

struct RunOptions {
  // Threads that execute ready nodes, the caller included. 0: the
  // GRAPH_NUM_THREADS environment variable, else the hardware's cores.
  int threads = 0;
  // One flag per graph output; false: no caller wants it (the gradient of an
  // input that does not require grad). Empty: every output is wanted. A node
  // of the top block whose outputs reach only unwanted outputs does not run
  // (its outputs stay undefined), and a gradient op's grad_mask drops the
  // outputs that reach none wanted (ir/output_reach.h). So an unwanted output
  // may come back undefined.
  std::vector<bool> needed_outputs;
};

// Runs `g` (which must verify) on `inputs`, one per graph input, each of the
// input's kind; returns one value per graph output. Throws graph::Error for a
// wrong number or kind of inputs, and for any failing node, naming the op and
// the C++ line the node came from (as generated code does).
std::vector<IValue> run(const ir::Graph& g, std::vector<IValue> inputs, const RunOptions& options = {});

// A kernel: computes a node's outputs from its input values.
using Kernel = std::function<std::vector<IValue>(const ir::Node& n, std::span<const IValue> in)>;

namespace detail {
// The kernel for an op-table entry, or nullptr (interpreter_kernels.cpp).
const Kernel* find_kernel(std::string_view op);
// Kernels of the gradient ops the autodiff pass emits (GRAPH_BACKWARD_OP
// entries), or nullptr (grad_kernels.cpp).
const Kernel* find_backward_kernel(std::string_view op);

// Runs `k` on `n`. A node with attributes known at run time
// (ir/value_primitives.h) gets them from its inputs: the kernel sees a copy of
// the node with those attributes as constants, and only the op's own inputs.
// A gradient op whose output i nobody wants (bit i of `wanted` clear) sees
// its grad_mask with that bit cleared too (RunOptions::needed_outputs).
std::vector<IValue> run_kernel(const Kernel& k, const ir::Node& n, std::span<const IValue> in,
                               uint32_t wanted = ~uint32_t{0});
// An int list held in a 1-D int64 tensor (a `Shape` member passed to a graph).
std::vector<int64_t> int_list(const Tensor& t);

// Accessors that throw graph::Error naming the node on a kind mismatch.
const Tensor& tensor_arg(const ir::Node& n, std::span<const IValue> in, size_t i);
// An int, float or bool input as a Scalar; a 0-d tensor stays a tensor.
std::string describe(const IValue& v);  // "f32[2, 3]", "int 4", "list of 3"
}  // namespace detail

}  // namespace graph
