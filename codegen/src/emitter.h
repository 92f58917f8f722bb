#pragma once
// Private to codegen: the C++ text emitter shared by the graph-function
// writer (cpp.cpp) and the fused-loop writer (fusion_kernel.cpp).
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/ir/ir.h"
#include "graph/ir/output_reach.h"
#include "graph/ir/signature.h"
#include "graph/op_table.h"

namespace graph::codegen::detail {

// ---- C++ spellings of IR types --------------------------------------------
std::string cpp_type(const ir::Type& t);   // ::graph::Tensor, int64_t, double, bool
// cpp_type for a local holding an If or Loop output: host values may go
// unread (a gradient's reached flag, autodiff.cpp), so [[maybe_unused]].
std::string local_decl_type(const ir::Type& t);
const char* element_type(DType d);         // float, int64_t, bool
std::string dtype_expr(DType d);           // ::graph::DType::Float32, ...
std::string sanitize_identifier(const std::string& s);  // [A-Za-z0-9_] only
std::string loc_str(const ir::SourceLoc& loc);  // "model.cpp:12" or ""

// The dtype an elementwise node's inputs promote to (tensor dtypes first,
// then host scalars by category), as infer_types and the eager ops do.
// Precondition: every tensor input has a known dtype.
DType promoted_dtype(const ir::Node* n);

std::vector<const ir::Node*> node_list(const ir::Block* b);  // b's nodes, in order

// "graph_<name>" per unit, made unique within one generated file: the CPU
// function's name, and the prefix of its CUDA kernels' names.
std::vector<std::string> graph_fn_names(const std::vector<std::string>& graph_names);

// One fused elementwise loop: member nodes (in order; constants and
// scalar-only math among them run once, before the loop) over values
// defined outside it, storing `results` into the C++ locals of `outputs`.
struct LoopSpec {
  // Body nodes [begin, end) of FusionGroup `group`, storing the body's
  // returns into the group's outputs (callers may change both).
  LoopSpec(const ir::Node* group, size_t begin, size_t end);

  std::vector<const ir::Value*> reads;    // tensors are the loop's operands
  std::vector<const ir::Node*> members;
  std::vector<const ir::Value*> results;
  std::vector<const ir::Value*> outputs;
};

// The CUDA kernel of a fusion group (cuda_kernel.cpp): its operands are
// the outputs, then the tensor reads; `scalars` the host values the element
// body reads (group inputs and values hoisted before the loop), in order.
// eligible is false (and why says why) when the group cannot run as a
// generated kernel: an operand or compute dtype without a device type
// (f16/bf16), or more operands or scalars than FusedArgs holds.
struct KernelPlan {
  std::vector<const ir::Value*> tensors;  // outputs, then tensor inputs
  size_t n_out = 0;
  std::vector<const ir::Value*> scalars;
  bool eligible = true;
  std::string why;
};
KernelPlan kernel_plan(const LoopSpec& spec);
// A FusionGroup's kind attribute ("elementwise" when absent), and the fused
// loop each kind runs (fused_groups.cpp): all of an elementwise group; the
// ops after the GEMM of a matmul_epilogue; the producers of a reduce
// group's reduction. Throws for an unknown kind.
std::string fusion_kind(const ir::Node* n);
LoopSpec group_loop(const ir::Node* n);
// Whether one cuBLASLt GEMM with an epilogue computes a matmul_epilogue
// group (fused_groups.cpp): the GEMM first in the group, then at most one
// add of a group input (the bias; not after linear's own bias) and at most
// one relu, in that order, each reading the one before, the last the
// group's only output, float32. gelu is not matched: cuBLASLt's GELU
// epilogue is the tanh approximation and graph::gelu is the exact (erf)
// one. `why` says what did not match.
struct LtEpilogueMatch {
  bool matched = false;
  std::string why;
  const ir::Node* gemm = nullptr;
  const ir::Value* bias = nullptr;  // linear's bias or the add's operand; nullptr: none
  bool relu = false;
  std::string epilogue;  // "Bias", "Relu" or "ReluBias" (graph::detail::GemmEpilogue)
};
LtEpilogueMatch match_lt_epilogue(const ir::Node* group);
// Whether a reduce group runs as one loop nest (fused_groups.cpp): its
// reduction (sum, mean, amax or amin, constant dims and keepdim) is the
// group's last node and only output, of a float or double producer with at
// least one tensor operand and one non-hoisted op. The CPU writes the loop
// nest (Emitter::fused_reduction), the CUDA writer a fused reduce kernel.
struct ReduceMatch {
  bool matched = false;
  const ir::Node* reduction = nullptr;
  std::string kind;  // "Sum" (sum and mean), "Max" or "Min"
  std::string dims;  // a C++ braced list of int64_t ("{}": all dims)
  bool keepdim = false;
};
ReduceMatch match_fused_reduction(const ir::Node* group);
// Work in a group that does not depend on the element (constants and
// scalar-only arithmetic): it runs once, before the loop (fusion_kernel.cpp).
bool hoisted(const ir::Node* m);
// Kernel k of the graph function `fn`, and its registry key.
std::string kernel_name(const std::string& fn, size_t k);
std::string kernel_key(const std::string& mangled, const std::string& hash, size_t k);
// The fused reduce kernel of reduce group k (cuda_kernel.cpp), and its key.
std::string reduce_kernel_name(const std::string& fn, size_t k);
std::string reduce_kernel_key(const std::string& mangled, const std::string& hash, size_t k);

// `text` (generated code) with its comments dropped and its locals renamed in
// order of first appearance: the e_ (element values), t_ (block buffers) and
// v_ (scalar parameters) names, which come from the source and differ between
// copies of the same loop. Two loops with the same key compute the same.
std::string canonical_code(const std::string& text);

// The fused loops' kernel structs of one generated source, written once each
// at namespace scope: the groups of a forward, its forward for autograd and
// its backward often have the same loops, which the compiler would otherwise
// compile (three instruction sets each) once per copy.
//
// A dense loop's struct has entry points (kernel_entries), exported as the
// table `<name>_entries` (graph::detail::FusedEntries) with its host values
// in `<name>_scalars`: the graph functions name only those two, so the
// structs can be compiled in a unit of their own (generate_cpu_sources). A
// fused reduction's producer has no entry points: the reduction's own struct
// calls its run, in the graph functions' unit.
class KernelPool {
 public:
  // The name of the struct with these members (its body, indented one
  // level), added under a new name unless one whose members differ only in
  // their locals' names and comments is already there. scalar_fields: the
  // members of its scalars struct ("float s0; double s1;"), "" for none.
  std::string add(const std::string& members, const std::string& scalar_fields, bool entries);
  // Everything, for one unit: the scalars structs, the loops, their tables.
  std::string text() const { return scalars_ + loops_ + local_; }
  // For two units: what both declare (the scalars structs and the tables,
  // extern), what the loops' unit defines, and what stays with the graph
  // functions (the reductions' producers).
  std::string declarations() const { return scalars_ + externs_; }
  const std::string& loops() const { return loops_; }
  const std::string& local() const { return local_; }

 private:
  std::map<std::string, std::string> names_;
  std::string scalars_, externs_, loops_, local_;
};

class Emitter {
 public:
  // ---- text ----
  void line(const std::string& s);
  void open(const std::string& s);  // "s {" and indent
  void close(const std::string& tail = "");  // dedent and "}tail"
  void raw(const std::string& text) { out_ << text; }
  std::string take() { return out_.str(); }

  // ---- names ----
  // The C++ local holding `v`: its IR name sanitized and prefixed with v_,
  // made unique within the function.
  const std::string& name(const ir::Value* v);
  // Makes `v` spelled as `as` (a FusionGroup parameter reads its input).
  void alias(const ir::Value* v, const std::string& as) { names_[v] = as; }
  // A new unique identifier for generated helpers (loops, shapes).
  std::string fresh(const std::string& base);
  void reset_names();

  // ---- graphs, blocks, nodes (cpp.cpp) ----
  // The inputs are checked against `signature`, the one the driver made for
  // `g` (ir::compile); without one they are bound unchecked (a backward
  // graph, whose inputs the runtime made itself).
  // With `needs` (a backward graph's output reach) the function takes
  // `const bool* needed`, one flag per graph output, after n_in
  // (detail::BackwardFn), and does only the work wanted outputs need.
  void graph_function(const ir::Graph& g, const std::string& fn_name, const std::string& source,
                      const ir::Signature* signature, const ir::OutputReach* needs = nullptr);
  // The GraphBuffers object of graph function `fn_name`, and how many slots
  // the last graph_function took from it.
  static std::string buffers_name(const std::string& fn_name);
  // Its signature table (call_contract.h), written before it unless the
  // inputs go unchecked.
  static std::string signature_name(const std::string& fn_name);
  size_t slots() const { return slots_; }
  // An expression for a dense tensor of `shape` (a C++ Shape expression) and
  // `dtype` from the next slot of the function's buffers.
  std::string take_buffer(const std::string& shape, DType dtype);
  size_t next_slot() { return slots_++; }
  // The slot for fused-loop output `v`. A top-block local released at its
  // last use (top_block) takes the slot its latest released predecessor of
  // the same type held: that buffer was just written and read, so it is
  // still in cache, as the block eager's caching allocator hands out next.
  // Any other value gets a slot of its own. A shared slot is as safe as
  // one's own: take() hands out only a buffer no one else holds.
  size_t loop_slot(const ir::Value* v);
  // "const " for a local that is written once and read, "" for one that is
  // the graph's output: that one is moved into `out` at the end, and a const
  // local would be copied there (two reference counts per call).
  // A local released after its last use (top_block) is not const either.
  std::string constness(const ir::Value* v) {
    if (moved_outputs_.count(v)) return "";
    if (!releasable_.count(v)) return "const ";
    declared_mutable_.insert(v);
    return "";
  }
  // The top block, each tensor local it owns released after its last use.
  void top_block(const ir::Graph& g);
  void block(const ir::Block* b);
  void node(const ir::Node* n);
  void eager_elementwise(const ir::Node* n, const OpInfo& op);
  void scalar_elementwise(const ir::Node* n, const OpInfo& op);

  // ---- fused loops (fusion_kernel.cpp) ----
  void fusion_group(const ir::Node* n);  // kind elementwise (or none)
  // With a key prefix set ("<mangled>#<hash>"), each elementwise fusion
  // group first asks whether its inputs are on the CUDA device and then
  // runs its generated kernel (kernel_name(fn, k)) through the runtime.
  // Where the fused loops' kernel structs go (shared by the source's
  // functions); required before a function with a fused loop is written.
  void set_pool(KernelPool* pool) { pool_ = pool; }
  void set_cuda(const std::string& fn, const std::string& mangled, const std::string& hash) {
    cuda_fn_ = fn;
    cuda_mangled_ = mangled;
    cuda_hash_ = hash;
  }

  // ---- CUDA kernels (cuda_kernel.cpp) ----
  // The __global__ kernel, host launcher and registrar of elementwise group
  // `n`, numbered k in graph function `fn`.
  void cuda_kernel(const ir::Node* n, const std::string& fn, size_t k, const std::string& mangled,
                   const std::string& hash, const std::string& graph_label);
  // The fused reduce kernel of reduce group `n` (when match_fused_reduction
  // accepts it), after its elementwise kernel.
  void reduce_kernel(const ir::Node* n, const LoopSpec& spec, const KernelPlan& plan, const std::string& fn, size_t k,
                     const std::string& mangled, const std::string& hash, const std::vector<std::string>& scalar_notes,
                     const std::vector<std::string>& operand_notes);

  // ---- errors that point at the source ----
  // A C++ string literal appended to a graph::Error escaping node `n`:
  // " (at model.cpp:12:7, matmul in static graph 'model')". `what` names the
  // failing part ("matmul", "If condition").
  std::string where(const ir::Node* n, const std::string& what) const;
  // `expr` evaluated so that a graph::Error it throws carries where(n, what).
  std::string at_source(const ir::Node* n, const std::string& what, const std::string& expr) const;

 private:
  void guards(const ir::Graph& g, const std::string& fn_name, bool check_inputs);
  void constant(const ir::Node* n);
  void if_(const ir::Node* n);
  std::string condition(const ir::Node* n, const ir::Value* c, const std::string& what);
  void loop(const ir::Node* n);
  // eager_call.cpp: views, reductions, library and other ops as eager calls.
  std::string eager_call(const ir::Node* n, const OpInfo& op);
  // The backward kernel call of a gradient op (graph/detail/backward_kernels.h).
  std::string gradient_call(const ir::Node* n, const OpInfo& op);
  void eager_op(const ir::Node* n, const OpInfo& op);
  // A slice as a graph::detail::LazySlice: a fused loop reads it in place,
  // everything else through get() (the view Tensor, made once).
  void lazy_slice(const ir::Node* n);
  // How a fused loop names tensor operand v: the LazySlice local for a slice,
  // else name(v).
  std::string operand(const ir::Value* v);
  bool primitive(const ir::Node* n);  // undefined(), list_*: false for others
  void train_step_effect(const ir::Node* n);  // set_grads
  void optimizer_step(const ir::Node* n);      // optimizer_step
  void grad_sync(const ir::Node* n);           // grad_sync_start, grad_sync_wait
  // grad_functions.cpp: a gradient op (sum_to, OP_backward) as a call of its
  // backward kernel; false for other ops.
  bool gradient_op(const ir::Node* n);
  // grad_functions.cpp, for graph_function's `needs`: one bool local per
  // distinct set of outputs a top-block node (or a gradient op's output)
  // reaches; a top-block node run only when one of its outputs is wanted;
  // the build-time mask `build` of gradient op n narrowed at run time.
  void declare_needs(const ir::Graph& g);
  std::string needed_expr(const std::vector<size_t>& reach) const;
  void node_if_needed(const ir::Node* n);
  std::string runtime_mask(const ir::Node* n, const std::string& build) const;
  void reduce(const ir::Node* n, const OpInfo& op);

  // fusion_kernel.cpp
  std::string describe(const std::vector<const ir::Node*>& nodes) const;
  void declare_outputs(const LoopSpec& spec);
  void fused_elementwise(const LoopSpec& spec);
  void fused_loop(const LoopSpec& spec, const std::string& shape);
  void dense_path(const LoopSpec& spec, const std::vector<const ir::Value*>& tensor_params,
                  const std::vector<std::string>& out_t, const std::vector<std::string>& in_t);
  void locate_broadcast_error(const LoopSpec& spec);
  void cuda_dispatch(const LoopSpec& spec, const std::string& shape);
  void group_fused_loop(const LoopSpec& spec);
  std::string element_body(const LoopSpec& spec, const std::vector<std::string>& loads,
                           const std::vector<std::string>& stores, const std::string& indent);
  std::string dense_kernel(const LoopSpec& spec, const std::vector<const ir::Value*>& tensor_params,
                           const std::vector<std::string>& out_t, const std::vector<std::string>& in_t,
                           std::vector<std::string>& scalar_args, std::string* struct_name = nullptr);
  // Returns the scalars struct's fields ("" for none).
  std::string kernel_entries(const LoopSpec& spec, const std::vector<std::string>& out_t,
                             const std::vector<std::string>& in_t, const std::vector<std::string>& scalar_types,
                             const std::vector<std::string>& scalar_names);
  std::string stage_statements(const std::vector<const ir::Node*>& ops,
                               const std::vector<std::pair<const ir::Value*, std::string>>& sources,
                               const std::vector<std::pair<std::string, const ir::Value*>>& writes,
                               const std::string& indent);
  std::string scalar_call(const ir::Node* m, const std::unordered_map<const ir::Value*, std::string>& el,
                          const std::string& out);
  // fused_groups.cpp: FusionGroups of kind matmul_epilogue and reduce.
  void matmul_epilogue(const ir::Node* n);
  void gemm_call(const ir::Node* n);  // a matmul or linear through detail::gemm
  void reduce_group(const ir::Node* n);
  // The one-loop-nest path of a reduce group (fused_groups.cpp); false when
  // the group does not qualify (then the caller writes the two-step path).
  bool fused_reduction(const ir::Node* n, const LoopSpec& spec, const ir::Node* reduction);

  std::ostringstream out_;
  int indent_ = 0;
  std::string graph_name_;  // the graph being written, for messages
  size_t slots_ = 0;        // GraphBuffers slots taken so far
  // loop_slot: the slot each top-block loop output holds until its release,
  // and per type (Type::str), the slots released, the latest last.
  std::map<const ir::Value*, size_t> held_slot_;
  std::map<std::string, std::vector<size_t>> free_slots_;
  std::set<const ir::Value*> moved_outputs_;  // graph_function's outputs moved into `out`
  // Of those, the index in `out` of each a loop may write in place, and the
  // ones declare_outputs declared so (not moved at the end).
  std::map<const ir::Value*, size_t> direct_outputs_;
  std::set<const ir::Value*> written_outputs_;
  std::set<const ir::Value*> releasable_;      // top_block's candidates
  std::set<const ir::Value*> declared_mutable_;  // of those, the ones declared non-const
  std::unordered_map<const ir::Value*, std::string> names_;
  std::set<std::string> used_;
  std::string cuda_fn_, cuda_mangled_, cuda_hash_;  // set_cuda
  KernelPool* pool_ = nullptr;                       // set_pool
  size_t cuda_groups_ = 0;   // elementwise groups numbered so far
  bool cuda_pending_ = false;  // fusion_group -> the next fused_loop
  std::unordered_map<std::string, std::string> lazy_;  // "v_x.get()" -> "v_x" (LazySlice locals)
  const ir::OutputReach* needs_ = nullptr;             // graph_function's, while it writes
  const ir::Block* needs_top_ = nullptr;               // the top block of that graph
  std::map<std::vector<size_t>, std::string> need_locals_;  // declare_needs
  // fused_elementwise -> fused_loop: the group's FusedKernels already
  // declared, its scalar arguments, and the outputs' buffer slots (shared by
  // both paths).
  std::string dense_fn_;
  std::vector<std::string> dense_scalars_;
  std::vector<size_t> out_slots_;
};

}  // namespace graph::codegen::detail
