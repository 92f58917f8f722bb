// The fused-loop writer: one FusionGroup becomes one pass over the broadcast
// output shape.
//
// Precondition: the group verifies (elementwise ops and constants only, no
// reads from outside its block) and every tensor in it has a known dtype.
// Per element, inputs are loaded, converted to each op's compute type
// (op_table.h: compute_dtype) and chained through graph::scalar::<op>, the
// same bodies the eager kernels run, so fused and eager results agree.
//
// The group's kernels are a local struct: run, the dense loop (plain indexed
// loops over __restrict pointers that the compiler vectorizes), compiled for
// baseline x86-64, AVX2 and AVX-512 and picked at run time (graph/cpu_isa.h;
// bitwise the same results, no FMA contraction), and strided, the same body
// with per-operand strides. What drives them (the split across cores, the
// stride walk) is compiled once in the runtime (graph/detail/fused_loop.h):
// per group, a generated source holds only its loops and a few calls.
//
// First, before any shape or stride work, a fast path: when every tensor
// operand is dense with the first one's shape (graph::detail::operand_dense;
// slices, LazySlice, are read in place), run_fused_dense runs the dense
// kernel on the operands' pointers directly. Otherwise the loop shape is
// worked out (broadcast) and run_fused_strided walks it: one dense run when
// every operand is contiguous, else innermost runs with per-operand strides
// (broadcast and non-contiguous inputs), whose unit-stride runs take the
// dense kernel. No element index is ever divided.
//
// A group with two or more expensive ops (graph/op_cost.h: exp, tanh, div,
// ...) is compute-bound: one loop over all its ops keeps too many values
// live for the registers, and compilers vectorize it poorly. Its dense
// kernel is strip-mined into blocks of kBlock elements, with one simple loop
// per expensive op (the cheap ops join the loop before them) passing values
// through stack buffers that stay in L1. Same scalar calls in the same
// order, so the same results.
//
// Errors: operands that do not broadcast are reported as the eager op would
// report them, by the member op whose shapes disagree, plus its source line.
#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>
#include <unordered_map>

#include "emitter.h"
#include "graph/error.h"
#include "graph/op_cost.h"

namespace graph::codegen::detail {

bool hoisted(const ir::Node* m) {
  if (m->is(OpId::constant)) return true;
  for (const ir::Value* v : m->inputs())
    if (v->type().is_tensor()) return false;
  return true;
}

namespace {


// What a loop kernel reads a tensor input as: a bool tensor (0 or 1 per
// byte) as uint8_t, since GCC vectorizes no loop that converts a loaded bool
// to float, and a uint8_t it does (stage_statements keeps it uint8_t).
std::string loop_pointee(const std::string& element) { return element == "bool" ? "uint8_t" : element; }

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

std::vector<const ir::Node*> node_list(const ir::Block* b) {
  std::vector<const ir::Node*> out;
  for (const auto& n : b->nodes()) out.push_back(n.get());
  return out;
}

LoopSpec::LoopSpec(const ir::Node* group, size_t begin, size_t end) {
  const ir::Block* body = group->block(0);
  const std::vector<const ir::Node*> nodes = node_list(body);
  std::set<const ir::Value*> defined;
  for (size_t i = begin; i < end; ++i) {
    const ir::Node* m = nodes[i];
    for (const ir::Value* v : m->inputs())
      if (!defined.count(v) && std::find(reads.begin(), reads.end(), v) == reads.end()) reads.push_back(v);
    members.push_back(m);
    defined.insert(m->output());
  }
  results.assign(body->returns().begin(), body->returns().end());
  const auto outs = group->outputs();
  outputs.assign(outs.begin(), outs.end());
}

void Emitter::fusion_group(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  for (size_t i = 0; i < n->inputs().size(); ++i) alias(body->param(i), name(n->input(i)));
  const LoopSpec spec = group_loop(n);
  line("// fused loop: " + describe(spec.members));
  declare_outputs(spec);
  open("");
  group_fused_loop(spec);
  close();
}

// The one fused loop of a FusionGroup (any kind): group number
// cuda_groups_, which cuda_kernel.cpp numbers the same way.
void Emitter::group_fused_loop(const LoopSpec& spec) {
  cuda_pending_ = !cuda_fn_.empty();
  fused_elementwise(spec);
  cuda_pending_ = false;
  ++cuda_groups_;
}

// On the device: the group's generated kernel (the .graph.cu of this
// source), through graph::detail::cuda_fused. Groups the kernel writer
// skips (kernel_plan) keep the CPU loop, whose data_ptr refuses device
// tensors with a clear error.
void Emitter::cuda_dispatch(const LoopSpec& spec, const std::string& shape) {
  const KernelPlan plan = kernel_plan(spec);
  const size_t k = cuda_groups_;
  if (!plan.eligible) {
    line("// No CUDA kernel for this group: " + plan.why + ".");
    return;
  }
  std::vector<std::string> ins, outs, scalars;
  for (size_t j = 0; j < plan.tensors.size(); ++j) {
    const ir::Value* v = plan.tensors[j];
    if (j < plan.n_out) outs.push_back(dtype_expr(*v->type().dtype));
    else ins.push_back("&" + name(v));
  }
  for (const ir::Value* v : plan.scalars) scalars.push_back("::graph::detail::host_scalar(" + name(v) + ")");
  const std::string kernel = kernel_name(cuda_fn_, k);
  open("if (::graph::detail::any_on_cuda({" + join(ins, ", ") + "}))");
  line("// Inputs on the CUDA device: kernel " + kernel + " of the generated .graph.cu.");
  const std::string dev = fresh("on_device");
  // Errors name the kernel and, through at_source, the group's first op's line.
  const ir::Node* first = *std::find_if(spec.members.begin(), spec.members.end(), [](const ir::Node* m) { return !hoisted(m); });
  line("const std::vector<::graph::Tensor> " + dev + " = " +
       at_source(first, kernel,
                 "::graph::detail::cuda_fused(" + ir::quote(kernel_key(cuda_mangled_, cuda_hash_, k)) + ", " +
                     ir::quote(kernel) + ", " + shape + ", {" + join(outs, ", ") + "}, {" + join(ins, ", ") +
                     "}, {" + join(scalars, ", ") + "})") +
       ";");
  for (size_t j = 0; j < plan.n_out; ++j) line(name(spec.outputs[j]) + " = " + dev + "[" + std::to_string(j) + "];");
  --indent_;
  open("} else");
}

std::string Emitter::describe(const std::vector<const ir::Node*>& nodes) const {
  // "add, mul, relu (model.cpp:5, 6, 9)": the ops and the lines they came from.
  std::vector<std::string> ops, where;
  std::string last_file;
  std::set<std::pair<std::string, int>> seen;
  for (const ir::Node* m : nodes) {
    if (hoisted(m)) continue;
    ops.push_back(m->op());
    const ir::SourceLoc& l = m->loc();
    if (!l.valid() || !seen.insert({l.file, l.line}).second) continue;
    where.push_back(l.file == last_file ? std::to_string(l.line) : loc_str(l));
    last_file = l.file;
  }
  if (ops.empty()) throw Error("codegen: a FusionGroup without tensor ops");
  return join(ops, ", ") + (where.empty() ? "" : " (" + join(where, ", ") + ")");
}

void Emitter::declare_outputs(const LoopSpec& spec) {
  for (const ir::Value* v : spec.outputs) {
    if (!v->type().is_tensor() || !v->type().dtype)
      throw Error("codegen: a FusionGroup output must be a tensor of known dtype");
    // Released at its last use (top_block), so that its slot can serve
    // the next loop.
    if (releasable_.count(v)) declared_mutable_.insert(v);
    // A graph output is a reference to its place in `out`: no move into it
    // at the end (a Tensor move copies its two inline shapes, ~90
    // instructions of a one-op graph's call).
    if (auto it = direct_outputs_.find(v); it != direct_outputs_.end()) {
      written_outputs_.insert(v);
      line("::graph::Tensor& " + name(v) + " = out[" + std::to_string(it->second) + "].emplace<::graph::Tensor>();");
      continue;
    }
    line("::graph::Tensor " + name(v) + ";");
  }
}

void Emitter::fused_elementwise(const LoopSpec& spec) {
  for (const ir::Node* m : spec.members)
    if (hoisted(m)) node(m);

  // Which tensor operands each value reads, transitively: an output that
  // does not read them all may have a smaller shape than the loop.
  std::vector<size_t> tensor_reads;
  std::unordered_map<const ir::Value*, std::set<size_t>> reads;
  for (size_t i = 0; i < spec.reads.size(); ++i)
    if (spec.reads[i]->type().is_tensor()) {
      tensor_reads.push_back(i);
      reads[spec.reads[i]] = {i};
    }
  for (const ir::Node* m : spec.members)
    for (const ir::Value* in : m->inputs()) reads[m->output()].insert(reads[in].begin(), reads[in].end());

  auto sizes_of = [&](const std::set<size_t>& operands) {
    std::vector<std::string> s;
    for (size_t i : operands) s.push_back(name(spec.reads[i]) + ".sizes()");
    return "{" + join(s, ", ") + "}";
  };
  const ir::Node* first = *std::find_if(spec.members.begin(), spec.members.end(), [](const ir::Node* m) { return !hoisted(m); });
  const std::string first_op = ir::quote(first->op());
  const std::set<size_t> all(tensor_reads.begin(), tensor_reads.end());

  // The dense kernel (both paths below call it) and the outputs' buffer slots.
  std::vector<const ir::Value*> tensor_params;
  std::vector<std::string> out_t, in_t;
  for (size_t i : tensor_reads) {
    tensor_params.push_back(spec.reads[i]);
    in_t.push_back(element_type(*spec.reads[i]->type().dtype));
  }
  for (const ir::Value* v : spec.outputs) out_t.push_back(element_type(*v->type().dtype));
  dense_scalars_.clear();
  dense_fn_ = dense_kernel(spec, tensor_params, out_t, in_t, dense_scalars_);
  out_slots_.clear();
  for (const ir::Value* v : spec.outputs) out_slots_.push_back(loop_slot(v));
  if (!tensor_params.empty()) {
    dense_path(spec, tensor_params, out_t, in_t);
    --indent_;
    open("} else");
  }
  const std::string shape = fresh("shape");

  std::vector<std::string> smaller;
  for (const ir::Value* r : spec.results)
    if (reads[r] != all)
      smaller.push_back("::graph::cpu::broadcast_shapes(" + first_op + ", " + sizes_of(reads[r]) + ") != *" + shape);
  if (tensor_reads.size() == 1) {
    // One tensor operand: nothing to broadcast, nothing can fail.
    line("const ::graph::Shape " + shape + " = " + name(spec.reads[tensor_reads[0]]) + ".sizes();");
    fused_loop(spec, shape);
  } else if (smaller.empty()) {
    // Every output reads every input, so the operands broadcast together
    // exactly when each op's do; if they do not, some op fails in the replay.
    open("const ::graph::Shape " + shape + " = loop_shape(" + first_op + ", " + sizes_of(all) + ", [&]");
    locate_broadcast_error(spec);
    close(");");
    fused_loop(spec, shape);
  } else {
    // Outputs that read different inputs may have shapes that do not
    // broadcast with each other: then, or when an output is smaller than the
    // loop, the group runs op by op, and each op reports its own errors.
    line("const std::optional<::graph::Shape> " + shape + " = try_loop_shape(" + sizes_of(all) + ");");
    open("if (!" + shape + " || " + join(smaller, " || ") + ")");
    line("// The outputs' shapes differ from the loop's, or do not broadcast together: op by op.");
    for (const ir::Node* m : spec.members)
      if (!hoisted(m)) eager_elementwise(m, *m->table_op());
    for (size_t j = 0; j < spec.outputs.size(); ++j) line(name(spec.outputs[j]) + " = " + name(spec.results[j]) + ";");
    --indent_;
    open("} else");
    fused_loop(spec, "*" + shape);
    close();
  }
  if (!tensor_params.empty()) close();
}

// The fast path: every tensor operand dense with the first one's shape (no
// broadcast, no strides to walk), so that shape is the loop's and every
// output's, and no op can fail on shapes. The dense kernel runs on the
// operands' pointers (slices read in place) through run_fused_dense.
void Emitter::dense_path(const LoopSpec& spec, const std::vector<const ir::Value*>& tensor_params,
                         const std::vector<std::string>& out_t, const std::vector<std::string>& in_t) {
  const std::string shape = fresh("dense_shape");
  line("const ::graph::Shape& " + shape + " = ::graph::detail::operand_sizes(" + operand(tensor_params[0]) + ");");
  std::vector<std::string> dense;
  for (const ir::Value* p : tensor_params) dense.push_back("::graph::detail::operand_dense(" + operand(p) + ", " + shape + ")");
  open("if (" + join(dense, " && ") + ")");
  std::vector<std::string> ptrs;
  for (size_t j = 0; j < spec.outputs.size(); ++j) {
    const ir::Value* v = spec.outputs[j];
    line(name(v) + " = buffers.take(" + std::to_string(out_slots_[j]) + ", " + shape + ", " +
         dtype_expr(*v->type().dtype) + ");");
    ptrs.push_back("::graph::detail::bytes(" + name(v) + ".data_ptr<" + out_t[j] + ">())");
  }
  for (size_t k = 0; k < tensor_params.size(); ++k)
    ptrs.push_back("::graph::detail::bytes(::graph::detail::operand_data<" + in_t[k] + ">(" + operand(tensor_params[k]) +
                   "))");
  const std::string p = fresh("p");
  line("char* const " + p + "[] = {" + join(ptrs, ", ") + "};");
  line("::graph::detail::run_fused_dense(" + dense_fn_ + ", ::graph::detail::shape_numel(" + shape + "), " + p + ");");
}

// The body of loop_shape's locate(): each member op's broadcast, in order,
// on its operands' shapes, under the op's own name and source line, so the
// first op whose shapes disagree throws the eager op's message plus its line.
void Emitter::locate_broadcast_error(const LoopSpec& spec) {
  line("// The operands do not broadcast together: find the op whose shapes disagree.");
  std::unordered_map<const ir::Value*, std::string> shape_of;
  for (const ir::Value* p : spec.reads)
    if (p->type().is_tensor()) shape_of[p] = name(p) + ".sizes()";
  for (const ir::Node* m : spec.members) {
    if (hoisted(m)) continue;
    std::vector<std::string> operands;
    for (const ir::Value* v : m->inputs())
      if (v->type().is_tensor()) operands.push_back(shape_of.at(v));
    if (operands.size() == 1) {  // one tensor operand keeps its shape
      shape_of[m->output()] = operands[0];
      continue;
    }
    const std::string& v = m->output()->name();
    const std::string s = fresh("s_" + (v.empty() ? std::string("t") : sanitize_identifier(v)));
    line("const ::graph::Shape " + s + " = " +
         at_source(m, m->op(),
                   "::graph::cpu::broadcast_shapes(" + ir::quote(m->op()) + ", {" + join(operands, ", ") + "})") +
         ";");
    shape_of[m->output()] = s;
  }
}

// Allocates the outputs and runs the loop over `shape` through
// run_fused_strided (the stride walk is the runtime's; operands: outputs
// first, then the tensor inputs).
void Emitter::fused_loop(const LoopSpec& spec, const std::string& shape) {
  const bool cuda = cuda_pending_ && kernel_plan(spec).eligible;
  if (cuda_pending_) cuda_dispatch(spec, shape);
  cuda_pending_ = false;
  std::vector<std::string> operands;
  for (size_t j = 0; j < spec.outputs.size(); ++j) {
    const ir::Value* v = spec.outputs[j];
    line(name(v) + " = buffers.take(" + std::to_string(out_slots_.at(j)) + ", " + shape + ", " +
         dtype_expr(*v->type().dtype) + ");");
    operands.push_back("&" + name(v));
  }
  for (const ir::Value* p : spec.reads)
    if (p->type().is_tensor()) operands.push_back("&" + name(p));
  line("::graph::detail::run_fused_strided(" + dense_fn_ + ", " + shape + ", {" + join(operands, ", ") + "});");
  if (cuda) close();  // the else of cuda_dispatch
}

// Elements per block of a strip-mined kernel: the buffers of a block (a few
// values of 4 or 8 bytes each) stay in L1. On the 8-op chain (bench/,
// AVX-512, 1 thread) 256 ran 38 ms, 128 37-40 ms, 512 46 ms, 2048 44 ms.
constexpr int kBlock = 256;

// Writes, at the current position, a local struct holding the dense loop of
// `spec` as run(n, output pointers, input pointers, scalars the body reads).
// scalar_args receives the scalars to pass, in order. With struct_name (the
// fused reduction, which calls run itself) that is all, and the struct's name
// is returned. Otherwise the struct also gets the entry points of
// graph/detail/fused_loop.h (kernel_entries), and a FusedKernels naming them
// is declared after it; its name is returned.
std::string Emitter::dense_kernel(const LoopSpec& spec, const std::vector<const ir::Value*>& tensor_params,
                                  const std::vector<std::string>& out_t, const std::vector<std::string>& in_t,
                                  std::vector<std::string>& scalar_args, std::string* struct_name) {
  const size_t n_out = spec.outputs.size();
  std::vector<const ir::Node*> ops;
  for (const ir::Node* m : spec.members)
    if (!hoisted(m)) ops.push_back(m);

  // Parameters: n, outputs o<j>, tensor inputs i<k>, then the host scalars
  // (group inputs and hoisted values) under their own names.
  std::vector<std::string> params{"const int64_t n"}, args{"n"};
  std::unordered_map<const ir::Value*, std::string> load;  // tensor read -> its pointer
  for (size_t j = 0; j < n_out; ++j) {
    params.push_back(out_t[j] + "* __restrict o" + std::to_string(j));
    args.push_back("o" + std::to_string(j));
  }
  for (size_t k = 0; k < tensor_params.size(); ++k) {
    params.push_back("const " + loop_pointee(in_t[k]) + "* __restrict i" + std::to_string(k));
    args.push_back("i" + std::to_string(k));
    load[tensor_params[k]] = "i" + std::to_string(k);
  }
  std::set<const ir::Value*> seen;
  std::vector<std::string> scalar_types;
  for (const ir::Node* m : ops)
    for (const ir::Value* v : m->inputs())
      if (!v->type().is_tensor() && seen.insert(v).second) {
        params.push_back("const " + cpp_type(v->type()) + " " + name(v));
        args.push_back(name(v));
        scalar_args.push_back(name(v));
        scalar_types.push_back(cpp_type(v->type()));
      }

  // Stages: one loop each. With two or more expensive ops, a new stage
  // starts at each expensive op; otherwise one stage holds every op.
  std::vector<std::vector<const ir::Node*>> stages(1);
  size_t expensive = 0;
  for (const ir::Node* m : ops) expensive += expensive_op(*m->table_op());
  for (const ir::Node* m : ops) {
    if (expensive >= 2 && expensive_op(*m->table_op()) && !stages.back().empty()) stages.emplace_back();
    stages.back().push_back(m);
  }
  std::unordered_map<const ir::Value*, size_t> stage_of;
  for (size_t s = 0; s < stages.size(); ++s)
    for (const ir::Node* m : stages[s]) stage_of[m->output()] = s;
  // Values a later stage reads go through a block buffer.
  std::vector<const ir::Value*> buffered;
  std::unordered_map<const ir::Value*, std::string> buffer;
  for (size_t s = 0; s < stages.size(); ++s)
    for (const ir::Node* m : stages[s])
      for (const ir::Value* v : m->inputs()) {
        auto it = stage_of.find(v);
        if (it != stage_of.end() && it->second != s && !buffer.count(v)) {
          buffered.push_back(v);
          buffer[v] = fresh("t_" + (v->name().empty() ? std::string("t") : sanitize_identifier(v->name())));
        }
      }
  const bool blocked = stages.size() > 1;
  const std::string at = blocked ? "[b + i]" : "[i]";

  // The struct's members are written on their own, then the pool names the
  // struct (shared by the source's functions).
  if (!pool_) throw Error("codegen: a fused loop's kernel struct needs a KernelPool (Emitter::set_pool)");
  const int at_indent = indent_;
  indent_ = 1;
  std::ostringstream members;
  members.swap(out_);
  open("GRAPH_ISA_INLINE static void run(" + join(params, ", ") + ")");
  if (blocked) {
    line("// Strip-mined: " + std::to_string(expensive) + " expensive ops (graph/op_cost.h) make this loop");
    line("// compute-bound; blocks of " + std::to_string(kBlock) +
         " elements, one loop per expensive op, values between loops in L1.");
    open("for (int64_t b = 0; b < n; b += " + std::to_string(kBlock) + ")");
    line("const int64_t m = n - b < " + std::to_string(kBlock) + " ? n - b : " + std::to_string(kBlock) + ";");
    // Bools are kept as int32_t (stage_statements).
    for (const ir::Value* v : buffered) {
      const DType d = *v->type().dtype;
      line("alignas(64) " + std::string(d == DType::Bool ? "int32_t" : element_type(d)) + " " + buffer[v] + "[" +
           std::to_string(kBlock) + "];");
    }
  }
  for (size_t s = 0; s < stages.size(); ++s) {
    // Where this stage reads each value it does not compute.
    std::vector<std::pair<const ir::Value*, std::string>> sources;
    std::set<const ir::Value*> have;
    for (const ir::Node* m : stages[s]) {
      for (const ir::Value* v : m->inputs()) {
        if (!v->type().is_tensor() || have.count(v)) continue;
        auto st = stage_of.find(v);
        if (st != stage_of.end() && st->second == s) continue;
        have.insert(v);
        sources.emplace_back(v, st != stage_of.end() ? buffer.at(v) + "[i]" : load.at(v) + at);
      }
      have.insert(m->output());
    }
    // What it writes: buffers for later stages, and the results it computes
    // (results that are inputs are copied by the first stage).
    std::vector<std::pair<std::string, const ir::Value*>> writes;
    for (const ir::Node* m : stages[s])
      if (buffer.count(m->output())) writes.emplace_back(buffer[m->output()] + "[i]", m->output());
    for (size_t j = 0; j < spec.results.size(); ++j) {
      const ir::Value* r = spec.results[j];
      auto st = stage_of.find(r);
      if (st != stage_of.end() ? st->second == s : s == 0) {
        if (st == stage_of.end() && !have.count(r)) {
          have.insert(r);
          sources.emplace_back(r, load.at(r) + at);
        }
        writes.emplace_back("o" + std::to_string(j) + at, r);
      }
    }
    if (blocked) line("// " + describe(stages[s]));
    line("GRAPH_DENSE_LOOP  // no loop-carried dependence (loop_support.h)");
    open(std::string("for (int64_t i = 0; i < ") + (blocked ? "m" : "n") + "; ++i)");
    raw(stage_statements(stages[s], sources, writes, std::string(2 * indent_, ' ')));
    close();
  }
  if (blocked) close();
  close();
  const std::string fields = struct_name ? "" : kernel_entries(spec, out_t, in_t, scalar_types, scalar_args);
  members.swap(out_);
  indent_ = at_indent;
  const std::string kernel = pool_->add(members.str(), fields, !struct_name);
  if (struct_name) {
    *struct_name = kernel;
    return kernel;
  }
  std::string scalars = "nullptr";
  if (!scalar_args.empty()) {
    scalars = fresh(kernel + "_s");
    line("const " + kernel + "_scalars " + scalars + "{" + join(scalar_args, ", ") + "};");
    scalars = "&" + scalars;
  }
  std::vector<std::string> dtypes;
  for (const ir::Value* v : spec.outputs) dtypes.push_back(dtype_expr(*v->type().dtype));
  for (const ir::Value* v : tensor_params) dtypes.push_back(dtype_expr(*v->type().dtype));
  const std::string types = fresh(kernel + "_t"), fn = fresh(kernel + "_f");
  const std::string e = kernel + "_entries.";
  line("static constexpr ::graph::DType " + types + "[] = {" + join(dtypes, ", ") + "};");
  line("const ::graph::detail::FusedKernels " + fn + "{::graph::cpu::pick_isa(" + e + "baseline, " + e + "avx2, " + e +
       "avx512), " + e + "strided, " + scalars + ", " + types + "};");
  return fn;
}

std::string canonical_code(const std::string& text) {
  std::string out;
  std::unordered_map<std::string, std::string> renamed;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string::npos) break;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = i;
      while (e < text.size() && (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
      std::string id = text.substr(i, e - i);
      if (id.size() > 2 && id[1] == '_' && (id[0] == 'e' || id[0] == 't' || id[0] == 'v'))
        id = renamed.emplace(id, "#" + std::to_string(renamed.size())).first->second;
      out += id;
      i = e;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string KernelPool::add(const std::string& members, const std::string& scalar_fields, bool entries) {
  const std::string key = canonical_code(members) + "|" + scalar_fields + (entries ? "|entries" : "");
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  const std::string name = "kernel_" + std::to_string(names_.size());
  names_.emplace(key, name);
  if (!entries) {
    local_ += "\n// run: a fused reduction's producer, called by the reduction for each block.\n"
              "struct " + name + " {\n" + members + "};\n";
    return name;
  }
  if (!scalar_fields.empty()) scalars_ += "struct " + name + "_scalars { " + scalar_fields + " };\n";
  externs_ += "extern const ::graph::detail::FusedEntries " + name + "_entries;\n";
  loops_ += "\n// run: the dense loop; its entry points are compiled for each instruction set and\n"
            "// picked at run time (graph/cpu_isa.h; every variant gives the same bits).\n"
            "struct " + name + " {\n" +
            (scalar_fields.empty() ? "" : "  using scalars = " + name + "_scalars;\n") + members + "};\n" +
            "const ::graph::detail::FusedEntries " + name + "_entries{&" + name + "::baseline, &" + name + "::avx2, &" +
            name + "::avx512, &" + name + "::strided};\n";
  return name;
}

// Inside a dense_kernel struct, after run: the entry points FusedKernels
// holds, with the operand pointers untyped and the scalars in a struct (its
// fields are returned: the pool declares it, as <struct>_scalars).
// baseline/avx2/avx512 call run on [begin, end), compiled once per
// instruction set; strided is the same body with per-operand strides (the
// walk that calls it is graph::detail::run_fused_strided's).
std::string Emitter::kernel_entries(const LoopSpec& spec, const std::vector<std::string>& out_t,
                                    const std::vector<std::string>& in_t, const std::vector<std::string>& scalar_types,
                                    const std::vector<std::string>& scalar_names) {
  const size_t n_out = out_t.size();
  std::vector<std::string> fields, unpack, args{"end - begin"}, loads, stores, typed;
  for (size_t k = 0; k < scalar_types.size(); ++k) {
    fields.push_back(scalar_types[k] + " s" + std::to_string(k) + ";");
    unpack.push_back("const " + scalar_types[k] + " " + scalar_names[k] + " = sc.s" + std::to_string(k) + ";");
  }
  for (size_t j = 0; j < n_out + in_t.size(); ++j) {
    const std::string k = std::to_string(j);
    const bool out = j < n_out;
    const std::string t = out ? out_t[j] + "*" : "const " + loop_pointee(in_t[j - n_out]) + "*";
    const std::string local = out ? "o" + k : "i" + std::to_string(j - n_out);
    args.push_back("reinterpret_cast<" + t + ">(p[" + k + "]) + begin");
    typed.push_back(t + " " + local + " = reinterpret_cast<" + t + ">(p[" + k + "]);");
    (out ? stores : loads).push_back(local + "[i * st[" + k + "]]");
  }
  for (size_t k = 0; k < scalar_names.size(); ++k) args.push_back("sc.s" + std::to_string(k));
  const std::string sc = fields.empty() ? "" : "const scalars& sc = *static_cast<const scalars*>(s); ";
  const std::string params = "int64_t begin, int64_t end, char* const* p, [[maybe_unused]] const void* s";
  const std::string body = " { " + sc + "run(" + join(args, ", ") + "); }";
  line("GRAPH_ISA_KERNEL static void baseline(" + params + ")" + body);
  line("GRAPH_ISA_KERNEL GRAPH_TARGET_AVX2 static void avx2(" + params + ")" + body);
  line("GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static void avx512(" + params + ")" + body);
  open("static void strided(const int64_t n, char* const* p, const int64_t* st, [[maybe_unused]] const void* s)");
  if (!fields.empty()) line("const scalars& sc = *static_cast<const scalars*>(s);");
  for (const auto& u : unpack) line(u);
  for (const auto& t : typed) line(t);
  open("for (int64_t i = 0; i < n; ++i)");
  raw(element_body(spec, loads, stores, std::string(2 * indent_, ' ')));
  close();
  close();
  return join(fields, " ");
}

// The statements of one loop iteration: each value of `sources` read into a
// local, one graph::scalar call per member of `ops` (arguments converted to
// its compute type), then each write (target = value).
std::string Emitter::stage_statements(const std::vector<const ir::Node*>& ops,
                                      const std::vector<std::pair<const ir::Value*, std::string>>& sources,
                                      const std::vector<std::pair<std::string, const ir::Value*>>& writes,
                                      const std::string& indent) {
  std::unordered_map<const ir::Value*, std::string> el;
  std::set<std::string> used;
  auto local = [&](const ir::Value* v) {
    std::string base = "e_" + (v->name().empty() ? std::string("t") : sanitize_identifier(v->name()));
    std::string n = base;
    for (int i = 1; used.count(n); ++i) n = base + "_" + std::to_string(i);
    used.insert(n);
    return el[v] = n;
  };
  std::string out;
  for (const auto& [v, expr] : sources) {
    // A loaded bool stays an integer, 0 or 1: int32_t from a block buffer,
    // uint8_t from an input (loop_pointee). GCC vectorizes no loop that
    // converts a loaded bool to float.
    const bool from_buffer = expr.compare(0, 2, "t_") == 0;
    const DType d = *v->type().dtype;
    const std::string t = d != DType::Bool ? element_type(d) : from_buffer ? "int32_t" : "uint8_t";
    out += indent + "const " + t + " " + local(v) + " = " + expr + ";\n";
  }
  for (const ir::Node* m : ops) out += indent + scalar_call(m, el, local(m->output())) + "\n";
  for (const auto& [target, v] : writes) out += indent + target + " = " + el.at(v) + ";\n";
  return out;
}

// "const float e_y = ::graph::scalar::exp<float>(e_x);": member m on the
// element locals `el`, into local `out`.
std::string Emitter::scalar_call(const ir::Node* m, const std::unordered_map<const ir::Value*, std::string>& el,
                                 const std::string& out) {
  const OpInfo& op = *m->table_op();
  const DType compute = compute_dtype(op, promoted_dtype(m));
  const std::string ct = element_type(compute);
  std::string args;
  for (const ir::Value* v : m->inputs()) {
    if (!args.empty()) args += ", ";
    const DType vd = v->type().is_tensor() ? *v->type().dtype : DType::Float32;
    if (v->type().is_tensor() && vd == DType::Bool && (compute == DType::Float32 || compute == DType::Float64))
      // A mask (relu's `grad * (h > 0)`) to float through int32_t: GCC's
      // baseline x86-64 (SSE2) vectorizes no bool-to-float conversion
      // ("type conversion to/from bit-precision unsupported"), int32 to float
      // it does. Same value, 0 or 1.
      args += "static_cast<" + ct + ">(static_cast<int32_t>(" + el.at(v) + "))";
    else if (v->type().is_tensor())
      args += vd == compute ? el.at(v) : "static_cast<" + ct + ">(" + el.at(v) + ")";
    else
      args += cpp_type(v->type()) == ct ? name(v) : "static_cast<" + ct + ">(" + name(v) + ")";
  }
  return "const " + std::string(element_type(*m->output()->type().dtype)) + " " + out + " = ::graph::scalar::" +
         std::string(op.name) + "<" + ct + ">(" + args + ");";
}

// The statements for one element: loads, one graph::scalar call per member
// (arguments converted to its compute type), stores.
std::string Emitter::element_body(const LoopSpec& spec, const std::vector<std::string>& loads,
                                  const std::vector<std::string>& stores, const std::string& indent) {
  std::vector<std::pair<const ir::Value*, std::string>> sources;
  size_t k = 0;
  for (const ir::Value* p : spec.reads)
    if (p->type().is_tensor()) sources.emplace_back(p, loads[k++]);
  std::vector<const ir::Node*> ops;
  for (const ir::Node* m : spec.members)
    if (!hoisted(m)) ops.push_back(m);
  std::vector<std::pair<std::string, const ir::Value*>> writes;
  for (size_t j = 0; j < stores.size(); ++j) writes.emplace_back(stores[j], spec.results[j]);
  return stage_statements(ops, sources, writes, indent);
}

}  // namespace graph::codegen::detail
