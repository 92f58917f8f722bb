#pragma once
// graph::trace: the tracing route from eager code to a graph (torch.jit.trace).
//
//   Tensor W = randn({4, 3});
//   auto step = [&](const Tensor& x) { return relu(matmul(x, W) * 0.5); };
//   TracedGraph tg = graph::trace(step, randn({2, 4}));
//   // tg.graph:  graph traced(%x0 : f32[2, 4], %param0 : f32[4, 3]) {
//   //              %matmul : f32[2, 3] = matmul(%x0, %param0) ...
//   // tg.params: {"param0": W}
//   std::vector<Tensor> y = tg.run({randn({2, 4})});   // the interpreter
//
// While `fn` runs on the example inputs, every eager op records one IR node
// (op-table names, attributes as documented at the top of ops.def), typed with
// the dtype and static shape it was observed with. Tensors an op reads that do
// not come from the inputs (captured weights, constants) become extra graph
// inputs "param0", "param1", ... whose values are kept in `params`; host
// scalars mixed in (x * 0.5) become constants. Ops whose results do not reach
// an output are dropped.
//
// What a trace cannot see: control flow. When a tensor derived from the inputs
// becomes a host value (`if (t)`, `while (t)`, `t.item<float>()`), the trace
// keeps only the path this input took; graph::trace warns, naming the source
// line (from the DWARF line table, via libdw), and records a TraceWarning.
// The plugin's [[graph::static]] lowers the source instead and keeps both
// branches.
//
// Tracing is per thread; autograd keeps working while tracing (the hooks only
// observe). [[graph::static]] functions run their eager bodies while a trace
// is recording (static.cpp), so that their ops are seen.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/tensor.h"

namespace graph {

// A value-dependent decision the trace froze.
struct TraceWarning {
  std::string file;      // the source file of the decision; empty when unknown
  int line = 0;          // 0 when unknown (no debug information)
  std::string function;  // the function that made it (demangled)
  std::string message;   // the whole warning, as printed
};

struct TraceOptions {
  std::string name = "traced";           // the graph's name
  std::vector<std::string> input_names;  // default: x0, x1, ...
  bool print_warnings = true;            // to stderr, once per source line per process
};

struct TracedGraph {
  std::unique_ptr<ir::Graph> graph;       // fn's inputs first, then the params
  std::map<std::string, Tensor> params;   // "param0" -> the captured tensor
  std::vector<TraceWarning> warnings;     // one per source line, in order

  // Runs the graph with the interpreter (graph::run): `inputs` bind fn's
  // inputs, `params` the rest.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
};

using TraceFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs `fn` once on `example_inputs`, recording its ops. Throws graph::Error
// when a trace is already active on this thread, when an op that has no
// op-table entry (naming it) computes a value the outputs depend on, and for
// whatever `fn` throws.
TracedGraph trace(const TraceFn& fn, std::vector<Tensor> example_inputs, TraceOptions options = {});
TracedGraph trace(const std::function<Tensor(const Tensor&)>& fn, const Tensor& example_input,
                  TraceOptions options = {});

namespace detail {

// ---- hooks in the eager entry points ------------------------------------------
// Each public op starts with
//   if (detail::tracing()) return detail::trace_op("op", {inputs}, {attrs}, [&] { return op(...); });
// trace_op runs the op with tracing suspended (so the ops it is made of, and
// its internal host reads, are not recorded) and then records one node.

class Tracer;
// The active tracer of this thread; null while none is, and while an op runs.
// initial-exec: testing it is one load from the thread pointer, with no call
// to __tls_get_addr, on every eager op.
extern constinit thread_local Tracer* active_tracer [[gnu::tls_model("initial-exec")]];
inline bool tracing() { return active_tracer != nullptr; }

using TraceInput = std::variant<Tensor, Scalar>;  // a Scalar becomes a constant
inline std::vector<int64_t> ints(const Shape& s) { return {s.begin(), s.end()}; }
// A Scalar argument as an attribute of its category (float, bool or int).
inline ir::AttrValue scalar_attr(const Scalar& v) {
  if (v.is_floating()) return v.to_double();
  if (v.dtype() == kBool) return v.to<bool>();
  return v.to_int();
}
// A reduction over `dims` of a tensor of rank `rank` (no dims: all of them):
// no attribute for a whole reduction, else dim (an int for one) and keepdim.
ir::Attributes reduce_attrs(const Shape& dims, bool keepdim, int64_t rank);
// max_pool2d / avg_pool2d: kernel, stride (absent when empty: the kernel's), padding.
ir::Attributes pool_attrs(const Shape& kernel, const Shape& stride, const Shape& padding);

// Records `op` (an op-table name; any other name is recorded as untraceable
// and fails the trace only if an output depends on it) producing `out`.
void record_op(Tracer& t, std::string_view op, const std::vector<TraceInput>& inputs, ir::Attributes attrs,
               const Tensor& out);

// Suspends tracing on this thread for its lifetime (exception safe).
class TraceSuspend {
 public:
  TraceSuspend() : saved_(active_tracer) { active_tracer = nullptr; }
  ~TraceSuspend() { active_tracer = saved_; }
  TraceSuspend(const TraceSuspend&) = delete;
  TraceSuspend& operator=(const TraceSuspend&) = delete;
  Tracer& tracer() const { return *saved_; }

 private:
  Tracer* saved_;
};

template <class F>
Tensor trace_op(std::string_view op, std::vector<TraceInput> inputs, ir::Attributes attrs, F&& run) {
  Tensor out;
  Tracer* t;
  {
    TraceSuspend suspend;
    t = &suspend.tracer();
    out = run();
  }
  record_op(*t, op, inputs, std::move(attrs), out);
  return out;
}

// `t` became a host value (kind: "bool" or "item") in the function that
// returns to `return_address`; warns if `t` derives from the inputs.
void trace_host_read(const Tensor& t, const char* kind, void* return_address);

}  // namespace detail
}  // namespace graph
